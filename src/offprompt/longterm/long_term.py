"""``LongTermMemory``: time-weighted recall of fragments stored in Qdrant (DB-GPT's model).

Each fragment is one point of a :class:`~offprompt.vectors.QdrantVectorStore` namespace.
Its payload holds what scoring and filtering need::

    fragment_id, importance, is_insight, created_ms, last_accessed_ts,
    forgotten, merged, mem_user / mem_agent / mem_session (when set), meta

``read`` scores like DB-GPT's time-weighted retriever::

    score = similarity + (1 - decay_rate) ** hours_since_last_access + importance

where ``similarity`` is the cosine similarity of the query and fragment embeddings
(Qdrant's dense score, in ``[-1, 1]``), ``hours_since_last_access`` is
``max(0, now - last_accessed_at)`` in hours (``now`` from the injectable clock), and
``importance`` is the fragment's ``[0, 1]`` importance. A pool of the
``max(k * candidate_factor, min_candidates)`` most similar fragments is fetched, the
pool is rescored, and the best ``k`` are returned; their ``last_accessed_at`` becomes
``now`` (in the store too). Forgotten and merged fragments are skipped.

Scope (user / agent / session) and the forgotten / merged flags are payload conditions
inside the Qdrant query itself, never a filter applied afterwards in Python. The flags
are stored as integers 0 / 1: the embedded engine's ``MatchValue`` turns a Python bool
into an integer, so a boolean payload would never match a boolean condition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from offprompt.errors import NotFoundError, ValidationError
from offprompt.longterm.fragment import Clock, MemoryFragment, Scope, utc
from offprompt.longterm.scoring import (
    ExtractiveInsightExtractor,
    HeuristicImportanceScorer,
    ImportanceScorer,
    InsightExtractor,
)
from offprompt.vectors import Hit, QdrantVectorStore, VectorRecord, validate_namespace

__all__ = ["LongTermMemory", "ScoredFragment"]

_SCOPE_KEYS = {"user": "mem_user", "agent": "mem_agent", "session": "mem_session"}
_INDEXES = {
    "fragment_id": "keyword",
    "mem_user": "keyword",
    "mem_agent": "keyword",
    "mem_session": "keyword",
    "forgotten": "integer",
    "merged": "integer",
    "is_insight": "integer",
    "created_ms": "integer",
}


@dataclass(frozen=True)
class ScoredFragment:
    """A fragment returned by :meth:`LongTermMemory.search` with its score's parts.

    ``score == similarity + recency + importance``.
    """

    fragment: MemoryFragment
    score: float
    similarity: float
    recency: float
    importance: float


def _now() -> datetime:
    return datetime.now(timezone.utc)


class LongTermMemory:
    """Fragments in Qdrant, recalled by similarity, recency of access and importance.

    Args:
        vector_store: Where fragments live; an embedded in-memory store if omitted
            (then owned, and closed by :meth:`close`).
        decay_rate: Recency decays as ``(1 - decay_rate) ** hours`` (in ``[0, 1)``).
        clock: Returns "now"; the wall clock (UTC) if omitted.
        namespace: Vector-store namespace of the fragments.
        scope: Default scope laid under every read, write and clear.
        importance_scorer: Scores fragments written without an importance.
        insight_extractor: Used by :meth:`reflect`.
        candidate_factor: Pool size multiplier for :meth:`read`.
        min_candidates: Smallest pool :meth:`read` rescores.

    Example:
        >>> ltm = LongTermMemory()
        >>> _ = ltm.write(MemoryFragment(observation="Alice prefers window seats",
        ...                              scope=Scope(user="alice")))
        >>> [f.observation for f in ltm.read("seat preference", k=1, scope=Scope(user="alice"))]
        ['Alice prefers window seats']
        >>> ltm.read("seat preference", scope=Scope(user="bob"))
        []
        >>> ltm.close()
    """

    def __init__(
        self,
        vector_store: QdrantVectorStore | None = None,
        *,
        decay_rate: float = 0.01,
        clock: Clock | None = None,
        namespace: str = "longterm",
        scope: Scope | None = None,
        importance_scorer: ImportanceScorer | None = None,
        insight_extractor: InsightExtractor | None = None,
        candidate_factor: int = 4,
        min_candidates: int = 20,
    ) -> None:
        if not isinstance(decay_rate, (int, float)) or not 0 <= decay_rate < 1:
            raise ValidationError(f"decay_rate must be within [0, 1), got {decay_rate!r}")
        if candidate_factor < 1 or min_candidates < 1:
            raise ValidationError("candidate_factor and min_candidates must be >= 1")
        self.namespace = validate_namespace(namespace)
        self._owned = vector_store is None
        self.store = vector_store if vector_store is not None else QdrantVectorStore()
        self.decay_rate = float(decay_rate)
        self.clock: Clock = clock or _now
        self.scope = scope or Scope()
        self.importance_scorer: ImportanceScorer = importance_scorer or HeuristicImportanceScorer()
        self.insight_extractor: InsightExtractor = insight_extractor or ExtractiveInsightExtractor()
        self.candidate_factor = candidate_factor
        self.min_candidates = min_candidates
        for key, kind in _INDEXES.items():
            self.store.create_payload_index(key, kind)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"LongTermMemory(namespace={self.namespace!r}, decay_rate={self.decay_rate}, store={self.store!r})"

    # ------------------------------------------------------------------ helpers

    def now(self) -> datetime:
        """The clock's current time, as aware UTC."""
        return utc(self.clock())

    def _scope(self, scope: Scope | None) -> Scope:
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError(f"scope must be a Scope, got {type(scope).__name__}")
        return self.scope.merged(scope)

    @staticmethod
    def _scope_filter(scope: Scope) -> dict[str, Any]:
        return {_SCOPE_KEYS[k]: v for k, v in scope.parts().items()}

    def _live_filter(self, scope: Scope | None, *, include_insights: bool = True) -> dict[str, Any]:
        flt: dict[str, Any] = {"forgotten": 0, "merged": 0}
        flt.update(self._scope_filter(self._scope(scope)))
        if not include_insights:
            flt["is_insight"] = 0
        return flt

    def _prepared(
        self, fragments: Sequence[MemoryFragment], scores: Sequence[float | None]
    ) -> list[MemoryFragment]:
        out = []
        for fragment, score in zip(fragments, scores, strict=True):
            update: dict[str, Any] = {}
            if score is not None:
                update["importance"] = min(max(float(score), 0.0), 1.0)
            merged_scope = self.scope.merged(fragment.scope)
            if merged_scope != fragment.scope:
                update["scope"] = merged_scope
            out.append(fragment.model_copy(update=update) if update else fragment)
        return out

    def _check(self, fragments: Sequence[MemoryFragment]) -> list[MemoryFragment]:
        if isinstance(fragments, MemoryFragment) or not isinstance(fragments, Sequence):
            raise ValidationError("write_batch expects a sequence of MemoryFragment")
        dims = self.store.embedder.dimensions
        for i, fragment in enumerate(fragments):
            if not isinstance(fragment, MemoryFragment):
                raise ValidationError(
                    f"fragment {i} must be a MemoryFragment, got {type(fragment).__name__}"
                )
            if fragment.embedding is not None and len(fragment.embedding) != dims:
                raise ValidationError(
                    f"fragment {fragment.id} has a {len(fragment.embedding)}-dimensional embedding; "
                    f"the store's embedder makes {dims}"
                )
        return list(fragments)

    def _record(self, fragment: MemoryFragment) -> VectorRecord:
        payload: dict[str, Any] = {
            "fragment_id": fragment.id,
            "importance": float(fragment.importance or 0.0),
            "is_insight": int(fragment.is_insight),
            "created_ms": int(fragment.created_at.timestamp() * 1000),
            "last_accessed_ts": fragment.accessed_at.timestamp(),
            "forgotten": 0,
            "merged": 0,
            "meta": fragment.meta,
        }
        payload.update(self._scope_filter(fragment.scope))
        return VectorRecord(
            id=fragment.id, text=fragment.observation, payload=payload, vector=fragment.embedding
        )

    @staticmethod
    def _fragment(
        record_id: str, text: str, payload: Mapping[str, Any], accessed: datetime | None = None
    ) -> MemoryFragment:
        scope = Scope(
            **{k: payload[v] for k, v in _SCOPE_KEYS.items() if payload.get(v) is not None}
        )
        return MemoryFragment(
            id=record_id,
            observation=text,
            importance=float(payload.get("importance", 0.0)),
            is_insight=bool(payload.get("is_insight", False)),
            last_accessed_at=accessed
            or datetime.fromtimestamp(float(payload["last_accessed_ts"]), tz=timezone.utc),
            scope=scope,
            meta=dict(payload.get("meta") or {}),
        )

    def _rescore(self, hits: list[Hit], k: int, now: datetime) -> list[ScoredFragment]:
        scored = []
        now_ts = now.timestamp()
        for hit in hits:
            hours = max(0.0, (now_ts - float(hit.payload["last_accessed_ts"])) / 3600.0)
            recency = (1.0 - self.decay_rate) ** hours
            importance = float(hit.payload.get("importance", 0.0))
            scored.append((hit.score + recency + importance, hit, recency, importance))
        scored.sort(key=lambda t: (-t[0], t[1].id))
        return [
            ScoredFragment(
                fragment=self._fragment(hit.id, hit.text, hit.payload, accessed=now),
                score=total,
                similarity=hit.score,
                recency=recency,
                importance=importance,
            )
            for total, hit, recency, importance in scored[:k]
        ]

    def _pool(self, observation: str, k: int) -> int:
        if not isinstance(observation, str) or not observation.strip():
            raise ValidationError("observation (the read query) must be a non-empty str")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValidationError(f"k must be an int >= 1, got {k!r}")
        return max(k * self.candidate_factor, self.min_candidates)

    # ------------------------------------------------------------------ write

    def write(self, fragment: MemoryFragment) -> MemoryFragment:
        """Store ``fragment`` (scored first if it has no importance); returns what was stored.

        Raises:
            ValidationError: not a fragment, or its embedding has the wrong size.
        """
        return self.write_batch([fragment])[0]

    def write_batch(self, fragments: Sequence[MemoryFragment]) -> list[MemoryFragment]:
        """Store ``fragments`` in one upsert; all are validated before anything is written."""
        items = self._check(fragments)
        scores = [
            None if f.importance is not None else self.importance_scorer.score(f) for f in items
        ]
        prepared = self._prepared(items, scores)
        if prepared:
            self.store.upsert(self.namespace, [self._record(f) for f in prepared])
        return prepared

    async def awrite(self, fragment: MemoryFragment) -> MemoryFragment:
        """Async twin of :meth:`write`."""
        return (await self.awrite_batch([fragment]))[0]

    async def awrite_batch(self, fragments: Sequence[MemoryFragment]) -> list[MemoryFragment]:
        """Async twin of :meth:`write_batch` (awaits the scorer's ``ascore``)."""
        items = self._check(fragments)
        scores = [
            None if f.importance is not None else await self.importance_scorer.ascore(f)
            for f in items
        ]
        prepared = self._prepared(items, scores)
        if prepared:
            await self.store.aupsert(self.namespace, [self._record(f) for f in prepared])
        return prepared

    # ------------------------------------------------------------------ read

    def search(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
        touch: bool = True,
    ) -> list[ScoredFragment]:
        """The ``k`` best fragments for ``observation`` with their score parts.

        See the module docs for the formula. ``touch=False`` leaves access times alone.
        """
        pool = self._pool(observation, k)
        flt = self._live_filter(scope, include_insights=include_insights)
        hits = self.store.search(self.namespace, observation, top_n=pool, filter=flt, mode="dense")
        now = self.now()
        result = self._rescore(hits, k, now)
        if touch and result:
            self.store.set_payload(
                self.namespace,
                [r.fragment.id for r in result],
                {"last_accessed_ts": now.timestamp()},
            )
        return result

    def read(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
    ) -> list[MemoryFragment]:
        """The ``k`` fragments that score best for ``observation`` (best first).

        ``score = similarity + (1 - decay_rate) ** hours_since_last_access + importance``
        over a pool of the most similar fragments; the returned ones are marked accessed
        now. ``scope`` (laid over the memory's default scope) is a hard Qdrant filter.

        Raises:
            ValidationError: empty ``observation`` or ``k < 1``.
        """
        return [
            r.fragment
            for r in self.search(observation, k, scope=scope, include_insights=include_insights)
        ]

    async def asearch(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
        touch: bool = True,
    ) -> list[ScoredFragment]:
        """Async twin of :meth:`search`."""
        pool = self._pool(observation, k)
        flt = self._live_filter(scope, include_insights=include_insights)
        hits = await self.store.asearch(
            self.namespace, observation, top_n=pool, filter=flt, mode="dense"
        )
        now = self.now()
        result = self._rescore(hits, k, now)
        if touch and result:
            await self.store.aset_payload(
                self.namespace,
                [r.fragment.id for r in result],
                {"last_accessed_ts": now.timestamp()},
            )
        return result

    async def aread(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`read`."""
        found = await self.asearch(observation, k, scope=scope, include_insights=include_insights)
        return [r.fragment for r in found]

    def get(self, fragment_id: str) -> MemoryFragment:
        """The stored fragment ``fragment_id`` (forgotten and merged ones included).

        Raises:
            NotFoundError: no such fragment in this memory (within the default scope).
        """
        flt = {"fragment_id": fragment_id, **self._scope_filter(self.scope)}
        found = self.store.scroll(self.namespace, filter=flt)
        if not found:
            raise NotFoundError(
                f"no fragment {fragment_id!r} in long-term memory {self.namespace!r}"
            )
        r = found[0]
        return self._fragment(r.id, r.text, r.payload)

    def fragments(
        self, *, scope: Scope | None = None, include_inactive: bool = False
    ) -> list[MemoryFragment]:
        """Every fragment in ``scope``, oldest first (forgotten / merged only if asked)."""
        flt = self._scope_filter(self._scope(scope))
        if not include_inactive:
            flt.update({"forgotten": 0, "merged": 0})
        records = self.store.scroll(self.namespace, filter=flt)
        records.sort(key=lambda r: r.id)  # ids are time-ordered, also within one millisecond
        return [self._fragment(r.id, r.text, r.payload) for r in records]

    def count(self, *, scope: Scope | None = None) -> int:
        """How many live (not forgotten, not merged) fragments ``scope`` holds."""
        return self.store.count(self.namespace, filter=self._live_filter(scope))

    # ------------------------------------------------------------------ maintenance

    def _flag(self, ids: Sequence[str], key: str) -> None:
        if isinstance(ids, str):
            raise ValidationError(f"{key}: give a list of fragment ids, not one str")
        self.store.set_payload(self.namespace, list(ids), {key: 1})

    def forget(self, ids: Sequence[str]) -> None:
        """Mark fragments forgotten: kept in the store, never returned by reads."""
        self._flag(ids, "forgotten")

    def mark_merged(self, ids: Sequence[str]) -> None:
        """Mark fragments merged into another one: kept, never returned by reads."""
        self._flag(ids, "merged")

    async def aforget(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`forget`."""
        await asyncio.to_thread(self.forget, ids)

    def _recent(self, scope: Scope | None, recent: int) -> list[MemoryFragment]:
        if not isinstance(recent, int) or recent < 1:
            raise ValidationError(f"recent must be an int >= 1, got {recent!r}")
        flt = self._live_filter(scope, include_insights=False)
        records = self.store.scroll(self.namespace, filter=flt)
        records.sort(key=lambda r: r.id)
        return [self._fragment(r.id, r.text, r.payload) for r in records[-recent:]]

    @staticmethod
    def _by_scope(fragments: Sequence[MemoryFragment]) -> list[list[MemoryFragment]]:
        groups: dict[Scope, list[MemoryFragment]] = {}
        for fragment in fragments:
            if not isinstance(fragment, MemoryFragment):
                raise ValidationError(
                    f"reflect expects MemoryFragment items, got {type(fragment).__name__}"
                )
            groups.setdefault(fragment.scope, []).append(fragment)
        return list(groups.values())

    def _insights(self, group: Sequence[MemoryFragment], texts: list[str]) -> list[MemoryFragment]:
        now = self.now()
        return [
            MemoryFragment.build(
                text,
                now=now,
                is_insight=True,
                scope=group[0].scope,
                meta={"insight_of": [f.id for f in group]},
            )
            for text in texts
            if text.strip()
        ]

    def reflect(
        self,
        fragments: Sequence[MemoryFragment] | None = None,
        *,
        recent: int = 20,
        scope: Scope | None = None,
    ) -> list[MemoryFragment]:
        """Store and return insights about ``fragments`` (default: the ``recent`` newest
        non-insight fragments in ``scope``).

        Fragments are grouped by scope and the insight extractor runs once per group,
        so an insight never mixes two users' memories; each insight gets its group's
        scope and lists its sources in ``meta["insight_of"]``.
        """
        source = list(fragments) if fragments is not None else self._recent(scope, recent)
        insights: list[MemoryFragment] = []
        for group in self._by_scope(source):
            insights.extend(self._insights(group, self.insight_extractor.extract(group)))
        return self.write_batch(insights)

    async def areflect(
        self,
        fragments: Sequence[MemoryFragment] | None = None,
        *,
        recent: int = 20,
        scope: Scope | None = None,
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`reflect` (awaits the extractor's ``aextract``)."""
        source = (
            list(fragments)
            if fragments is not None
            else await asyncio.to_thread(self._recent, scope, recent)
        )
        insights: list[MemoryFragment] = []
        for group in self._by_scope(source):
            insights.extend(self._insights(group, await self.insight_extractor.aextract(group)))
        return await self.awrite_batch(insights)

    def clear(self, *, scope: Scope | None = None) -> int:
        """Delete every fragment in ``scope`` (all of them without one); returns how many."""
        flt = self._scope_filter(self._scope(scope))
        return self.store.delete(self.namespace, filter=flt or None)

    async def aclear(self, *, scope: Scope | None = None) -> int:
        """Async twin of :meth:`clear`."""
        flt = self._scope_filter(self._scope(scope))
        return await self.store.adelete(self.namespace, filter=flt or None)

    def close(self) -> None:
        """Close the vector store if this memory created it."""
        if self._owned:
            self.store.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
