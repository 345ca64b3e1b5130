"""``LongTermMemory``: time-weighted recall of fragments stored in Qdrant (DB-GPT's model).

Each fragment is one point of a :class:`~offprompt.vectors.QdrantVectorStore` namespace.
Its payload holds what scoring and filtering need::

    fragment_id, importance, is_insight, created_ms, last_accessed_ts,
    forgotten, merged, mem_user / mem_agent / mem_session (when set), meta

``read`` scores like DB-GPT's time-weighted retriever::

    score = similarity + (1 - decay_rate) ** hours_since_last_access + importance

over a candidate pool, where ``hours_since_last_access`` is ``max(0, now -
last_accessed_at)`` in hours (``now`` from the injectable clock) and ``importance`` is
the fragment's ``[0, 1]`` importance.

The pool is the ``max(k * candidate_factor, min_candidates)`` best fragments, chosen
by ``mode``:

* ``"hybrid"`` (default) - a dense (embedder) and a BM25 sparse ranking of that many
  fragments each, fused by weighted reciprocal rank fusion (:mod:`offprompt.vectors.fusion`):
  Qdrant's formula with the store's ``fusion_weights`` and ``RRF_K``, the fusion task
  memory's queries get. It
  is computed here rather than inside Qdrant because the two rankings answer
  different queries (see feedback below). ``similarity`` is the fused score
  calibrated to ``[0, 1]``: ``rrf / rrf_max``, where the weighted RRF is
  ``rrf = sum_i 1 / (rank_i / w_i + RRF_K - 1)`` (``rank_i`` from 1 in retriever
  ``i``'s ranking, no term if the fragment is not in it) and ``rrf_max`` is the same
  sum with every ``rank_i = 1``. ``1.0`` means "ranked first by both retrievers"; the
  scale does not depend on the query, the collection or the embedder.
* ``"sparse"`` - the BM25 ranking alone; ``similarity = RRF_K / (RRF_K + rank - 1)``,
  the same calibration with one unweighted retriever (1, 2/3, 1/2, ...).
* ``"dense"`` - the embedder alone (earlier versions' only mode); ``similarity`` is the
  cosine of query and fragment embeddings, in ``[-1, 1]``.

With ``feedback=n`` (default 1) the ``n`` best BM25 fragments (dense ones in
``"dense"`` mode) are fetched first and their terms widen the query of the BM25
ranking at a fraction of its weight (pseudo-relevance feedback, see
:meth:`~offprompt.vectors.BM25WordEncoder.encode_query`): a fact restated in other
words in a later session shares the names and places of the best first hit, not the
question's words.
The dense ranking keeps the question alone, so an embedding model is asked what the
user asked. ``feedback=0`` skips the first query. ``benchmarks/RESULTS_longterm_recall.md``
measures every mode with and without feedback next to ``rank_bm25``.

The pool is rescored and the best ``k`` are returned; their ``last_accessed_at``
becomes ``now`` (in the store too). Forgotten and merged fragments are skipped.

Stored memories of earlier versions: their points already carry a BM25 sparse vector
(``QdrantVectorStore.upsert`` has always encoded one when the store has
``sparse=True``, the default). Stores written before the word analyzer hold it over
tiktoken ids (the ``"sparse"`` vector); the store keeps reading and writing those
with the old encoder, so they read back unchanged (``tests/vectors/test_analyzer.py``
opens one written by the last version before the analyzer); new stores index analyzer terms (``"words"``). A store
created with ``sparse=False`` has no sparse vectors: its reads fall back to
``"dense"`` (and cosine similarity). ``tests/longterm/test_recall.py`` reads a store
written by an earlier version.

Times: a fragment written without explicit times (see
:meth:`MemoryFragment.timed_at`) is re-timed with this memory's clock, so recency is
measured on the same clock as reads.

Scope and the forgotten / merged flags are payload conditions inside the Qdrant query
itself, never a filter applied afterwards in Python to a truncated result. (The dense
ranking of a scoped read is narrowed by its scope key in the embedded engine, see
``narrow_by`` of :meth:`~offprompt.vectors.QdrantVectorStore.search`: same fragments,
the rest of the filter checked on the engine's best candidates, the full filter again
when they do not suffice.) The scope is the one
:class:`~offprompt.scope.Scope` every offprompt store takes, stored in this memory's own
keyword-indexed payload keys ``mem_tenant``, ``mem_user``, ``mem_agent``,
``mem_session`` and ``mem_run`` (absent when unset). The vector store's own partition
(:meth:`~offprompt.vectors.QdrantVectorStore.with_scope`) does not fit long-term memory:
it is an exact partition (an unset field is ``""`` and must match ``""``), whereas a
long-term read is a selector - ``Scope(user="alice")`` recalls alice's fragments from
every session and agent - and fragments of many scopes share one memory. Pass a
``with_tenant`` / ``with_scope`` view as ``vector_store`` to add that hard partition on
top. The flags are stored as integers 0 / 1 (as written by earlier versions, so stored
memories keep working); the vector store matches real bools on both engines too.

Privacy and retention: :meth:`LongTermMemory.forget` deletes a subject's fragments (and
insights derived from them) and satisfies :class:`offprompt.forget.Forgettable`;
``retention=`` (a :class:`~offprompt.retention.RetentionPolicy`) bounds what a scope
holds, applied by :meth:`LongTermMemory.prune` and on write. Reads emit a
``longterm_read`` :class:`~offprompt.trace.TraceEvent` with every candidate's
similarity, recency and importance, and why the dropped ones were dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from offprompt.errors import NotFoundError, ValidationError
from offprompt.longterm.fragment import Clock, MemoryFragment, Scope, merge_scopes, utc
from offprompt.longterm.payload import INDEXES, scope_filter, stored_tokens, to_fragment, to_records
from offprompt.longterm.ranking import (
    Ranked,
    ReadPlan,
    ScoredFragment,
    candidates,
    check_mode,
    rank,
    read_event,
    scored_fragments,
)
from offprompt.longterm.scoring import (
    ExtractiveInsightExtractor,
    HeuristicImportanceScorer,
    ImportanceScorer,
    InsightExtractor,
)
from offprompt.names import validate_namespace
from offprompt.retention import Retained, RetentionPolicy, evict
from offprompt.tokens import Tokenizer, default_tokenizer
from offprompt.trace import InMemoryTracer, TraceEvent, Tracer, emit_safely
from offprompt.vectors import Hit, QdrantVectorStore, Range, VectorRecord
from offprompt.vectors.store import SearchMode

__all__ = ["LongTermMemory", "ScoredFragment"]

#: Fragment ids per filtered delete when chasing insights derived from forgotten ones.
_ID_BATCH = 256


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
        scope: Default :class:`~offprompt.scope.Scope` laid under every read, write,
            clear, forget and prune (its set fields win unless the call sets them too).
        importance_scorer: Scores fragments written without an importance.
        insight_extractor: Used by :meth:`reflect`.
        candidate_factor: Pool size multiplier for :meth:`read`.
        min_candidates: Smallest pool :meth:`read` rescores.
        mode: How the pool is retrieved: ``"hybrid"`` (dense + BM25 sparse, fused),
            ``"sparse"`` or ``"dense"``; a read may override it.
        feedback: Best first-pass fragments whose text widens the BM25 query for the
            pool (pseudo-relevance feedback); ``0`` for a single query.
        tracer: Receives a ``write`` event per write, a ``longterm_read`` event per read
            and an ``evict`` event per prune that deleted something
            (an :class:`~offprompt.trace.InMemoryTracer` if omitted).
        retention: Bounds each scope's fragments (``max_age`` since last access,
            ``max_count``, ``max_tokens``); see :meth:`prune`.
        tokenizer: Counts observation tokens (trace costs and ``max_tokens``).

    Attributes:
        store: The vector store.
        scope: The default scope.
        tracer: The tracer events go to.
        retention: The retention policy, or ``None`` (unbounded).

    Example:
        >>> ltm = LongTermMemory()
        >>> _ = ltm.write(MemoryFragment(observation="Alice prefers window seats",
        ...                              scope=Scope(user="alice")))
        >>> [f.observation for f in ltm.read("seat preference", k=1, scope=Scope(user="alice"))]
        ['Alice prefers window seats']
        >>> ltm.read("seat preference", scope=Scope(user="bob"))
        []
        >>> ltm.tracer.events("longterm_read")[0].detail["returned"]
        1
        >>> ltm.forget(Scope(user="alice"))
        1
        >>> ltm.close()
    """

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        vector_store: QdrantVectorStore | None = None,
        *,
        decay_rate: float = 0.01,
        clock: Clock | None = None,
        namespace: str = "longterm",
        scope: Scope | None = None,
        importance_scorer: ImportanceScorer | None = None,
        insight_extractor: InsightExtractor | None = None,
        candidate_factor: int = 2,
        min_candidates: int = 10,
        mode: SearchMode = "hybrid",
        feedback: int = 1,
        tracer: Tracer | None = None,
        retention: RetentionPolicy | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if not isinstance(decay_rate, (int, float)) or not 0 <= decay_rate < 1:
            raise ValidationError(f"decay_rate must be within [0, 1), got {decay_rate!r}")
        if candidate_factor < 1 or min_candidates < 1:
            raise ValidationError("candidate_factor and min_candidates must be >= 1")
        if not isinstance(feedback, int) or isinstance(feedback, bool) or feedback < 0:
            raise ValidationError(f"feedback must be an int >= 0, got {feedback!r}")
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError(
                f"scope must be an offprompt.scope.Scope, got {type(scope).__name__}"
            )
        if retention is not None and not isinstance(retention, RetentionPolicy):
            raise ValidationError(
                f"retention must be a RetentionPolicy, got {type(retention).__name__}"
            )
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
        self.mode: SearchMode = self._mode(mode)
        self.feedback = feedback
        self.tracer: Tracer = tracer if tracer is not None else InMemoryTracer(256)
        self.retention = retention
        self.tokenizer: Tokenizer = tokenizer or default_tokenizer()
        for key, kind in INDEXES.items():
            self.store.create_payload_index(key, kind)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"LongTermMemory(namespace={self.namespace!r}, decay_rate={self.decay_rate}, store={self.store!r})"

    # ------------------------------------------------------------------ helpers

    def now(self) -> datetime:
        """The clock's current time, as aware UTC."""
        return utc(self.clock())

    def _scope(self, scope: Scope | None) -> Scope:
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError(
                f"scope must be an offprompt.scope.Scope, got {type(scope).__name__}"
            )
        return merge_scopes(self.scope, scope)

    @staticmethod
    def _scope_filter(scope: Scope) -> dict[str, Any]:
        return scope_filter(scope)

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
        now = self.now()
        for fragment, score in zip(fragments, scores, strict=True):
            update: dict[str, Any] = {}
            if score is not None:
                update["importance"] = min(max(float(score), 0.0), 1.0)
            merged_scope = merge_scopes(self.scope, fragment.scope)
            if merged_scope != fragment.scope:
                update["scope"] = merged_scope
            out.append(fragment.timed_at(now, update))
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

    def _records(self, fragments: Sequence[MemoryFragment]) -> list[VectorRecord]:
        return to_records(fragments, self.store.sparse_encoder, self.tokenizer)

    @staticmethod
    def _mode(mode: object) -> SearchMode:
        return check_mode(mode)

    def _read_mode(self, mode: SearchMode | None) -> SearchMode:
        """The mode a read uses: ``mode`` or the memory's, ``"dense"`` without sparse vectors."""
        chosen = self.mode if mode is None else self._mode(mode)
        if chosen != "dense" and self.store.sparse_encoder is None:
            if chosen == "sparse":
                raise ValidationError("mode='sparse' needs a vector store created with sparse=True")
            return "dense"
        return chosen

    def _pool(self, observation: str, k: int) -> int:
        if not isinstance(observation, str) or not observation.strip():
            raise ValidationError("observation (the read query) must be a non-empty str")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValidationError(f"k must be an int >= 1, got {k!r}")
        return max(k * self.candidate_factor, self.min_candidates)

    def _tokens(self, text: str, payload: Mapping[str, Any]) -> int:
        return stored_tokens(text, payload, self.tokenizer)

    def _plan(
        self,
        observation: str,
        k: int,
        scope: Scope | None,
        include_insights: bool,
        mode: SearchMode | None,
    ) -> ReadPlan:
        """What a read queries and how it ranks (validates its arguments)."""
        pool = self._pool(observation, k)
        resolved = self._scope(scope)
        flt = self._live_filter(scope, include_insights=include_insights)
        return ReadPlan(
            observation=observation,
            k=k,
            pool=pool,
            scope=resolved,
            filter=flt,
            mode=self._read_mode(mode),
            include_insights=include_insights,
            feedback=self.feedback,
        )

    def _settle(
        self, plan: ReadPlan, rankings: list[list[Hit]]
    ) -> tuple[list[Ranked], list[ScoredFragment], datetime]:
        """The ranked pool of a read, its best ``k`` and the "now" they were read at."""
        now = self.now()
        pooled = candidates(rankings, plan.mode, plan.pool, self.store.fusion_weights)
        ranked = rank(pooled, now, self.decay_rate)
        return ranked, scored_fragments(ranked, plan.k, now), now

    def _emit_read(self, plan: ReadPlan, ranked: list[Ranked]) -> None:
        event = read_event(
            plan,
            ranked,
            tokens=lambda hit: self._tokens(hit.text, hit.payload),
            namespace=self.namespace,
            decay_rate=self.decay_rate,
        )
        emit_safely(self.tracer, event)

    def _emit_write(
        self, written: Sequence[MemoryFragment], records: Sequence[VectorRecord]
    ) -> None:
        scopes = {f.scope for f in written}
        scope = next(iter(scopes)) if len(scopes) == 1 else self.scope
        emit_safely(
            self.tracer,
            TraceEvent(
                "write",
                session_id=scope.session,
                scope=scope.fields(),
                tokens=sum(int(r.payload["tokens"]) for r in records),
                included=[
                    {
                        "id": f.id,
                        "tokens": r.payload["tokens"],
                        "importance": r.payload["importance"],
                        "is_insight": f.is_insight,
                    }
                    for f, r in zip(written, records, strict=True)
                ],
                detail={"namespace": self.namespace, "memory": "longterm"},
            ),
        )

    # ------------------------------------------------------------------ write

    def write(self, fragment: MemoryFragment) -> MemoryFragment:
        """Store ``fragment`` (scored first if it has no importance); returns what was stored.

        Raises:
            ValidationError: not a fragment, or its embedding has the wrong size.
        """
        return self.write_batch([fragment])[0]

    def write_batch(self, fragments: Sequence[MemoryFragment]) -> list[MemoryFragment]:
        """Store ``fragments`` in one upsert; all are validated before anything is written.

        With a ``retention`` policy that applies on write, each written scope is pruned
        afterwards (see :meth:`prune`).
        """
        items = self._check(fragments)
        scores = [
            None if f.importance is not None else self.importance_scorer.score(f) for f in items
        ]
        prepared = self._prepared(items, scores)
        if prepared:
            records = self._records(prepared)
            self.store.upsert(self.namespace, records)
            self._emit_write(prepared, records)
            if self.retention is not None and self.retention.on_write:
                for scope in dict.fromkeys(f.scope for f in prepared):
                    self._prune(self.retention, scope, None)
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
            records = await asyncio.to_thread(self._records, prepared)
            await self.store.aupsert(self.namespace, records)
            self._emit_write(prepared, records)
            if self.retention is not None and self.retention.on_write:
                for scope in dict.fromkeys(f.scope for f in prepared):
                    await asyncio.to_thread(self._prune, self.retention, scope, None)
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
        mode: SearchMode | None = None,
    ) -> list[ScoredFragment]:
        """The ``k`` best fragments for ``observation`` with their score parts.

        See the module docs for the formula and the modes. ``touch=False`` leaves
        access times alone; ``mode`` overrides the memory's mode for this read.
        Emits a ``longterm_read`` trace event.
        """
        plan = self._plan(observation, k, scope, include_insights, mode)
        first_query = plan.first_query()
        first = self.store.search(self.namespace, observation, **first_query) if first_query else []
        rankings = [
            self.store.search(self.namespace, text, **query) for text, query in plan.queries(first)
        ]
        ranked, result, now = self._settle(plan, rankings)
        if touch and result:
            self.store.set_payload(
                self.namespace,
                [r.fragment.id for r in result],
                {"last_accessed_ts": now.timestamp()},
            )
        self._emit_read(plan, ranked)
        return result

    def read(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
        mode: SearchMode | None = None,
    ) -> list[MemoryFragment]:
        """The ``k`` fragments that score best for ``observation`` (best first).

        ``score = similarity + (1 - decay_rate) ** hours_since_last_access + importance``
        over a pool of the best fragments of a hybrid (or ``mode``) query; the returned
        ones are marked accessed now. ``scope`` (laid over the memory's default scope)
        is a hard Qdrant filter. Emits a ``longterm_read`` trace event (scores of every
        candidate; why the others were dropped).

        Raises:
            ValidationError: empty ``observation``, ``k < 1`` or an unknown ``mode``.
        """
        found = self.search(
            observation, k, scope=scope, include_insights=include_insights, mode=mode
        )
        return [r.fragment for r in found]

    async def asearch(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
        touch: bool = True,
        mode: SearchMode | None = None,
    ) -> list[ScoredFragment]:
        """Async twin of :meth:`search`."""
        plan = self._plan(observation, k, scope, include_insights, mode)
        first_query = plan.first_query()
        first = (
            await self.store.asearch(self.namespace, observation, **first_query)
            if first_query
            else []
        )
        rankings = [
            await self.store.asearch(self.namespace, text, **query)
            for text, query in plan.queries(first)
        ]
        ranked, result, now = self._settle(plan, rankings)
        if touch and result:
            await self.store.aset_payload(
                self.namespace,
                [r.fragment.id for r in result],
                {"last_accessed_ts": now.timestamp()},
            )
        await asyncio.to_thread(self._emit_read, plan, ranked)
        return result

    async def aread(
        self,
        observation: str,
        k: int = 5,
        *,
        scope: Scope | None = None,
        include_insights: bool = True,
        mode: SearchMode | None = None,
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`read`."""
        found = await self.asearch(
            observation, k, scope=scope, include_insights=include_insights, mode=mode
        )
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
        return to_fragment(r.id, r.text, r.payload)

    def fragments(
        self, *, scope: Scope | None = None, include_inactive: bool = False
    ) -> list[MemoryFragment]:
        """Every fragment in ``scope``, oldest first (forgotten / merged only if asked)."""
        flt = self._scope_filter(self._scope(scope))
        if not include_inactive:
            flt.update({"forgotten": 0, "merged": 0})
        records = self.store.scroll(self.namespace, filter=flt)
        records.sort(key=lambda r: r.id)  # ids are time-ordered, also within one millisecond
        return [to_fragment(r.id, r.text, r.payload) for r in records]

    def count(self, *, scope: Scope | None = None, include_inactive: bool = False) -> int:
        """How many fragments ``scope`` holds: live ones (not forgotten, not merged), or all."""
        if include_inactive:
            flt = self._scope_filter(self._scope(scope))
            return self.store.count(self.namespace, filter=flt or None)
        return self.store.count(self.namespace, filter=self._live_filter(scope))

    # ------------------------------------------------------------------ maintenance

    def _flag(self, ids: Sequence[str], key: str) -> None:
        if isinstance(ids, (str, Scope)):
            raise ValidationError(f"{key}: give a list of fragment ids")
        self.store.set_payload(self.namespace, list(ids), {key: 1})

    def mark_forgotten(self, ids: Sequence[str]) -> None:
        """Hide fragments: kept in the store, never returned by reads (use :meth:`forget`
        to delete a subject's data)."""
        self._flag(ids, "forgotten")

    def mark_merged(self, ids: Sequence[str]) -> None:
        """Mark fragments merged into another one: kept, never returned by reads."""
        self._flag(ids, "merged")

    async def amark_forgotten(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`mark_forgotten`."""
        await asyncio.to_thread(self.mark_forgotten, ids)

    def forget(self, scope: Scope) -> int:
        """Delete every fragment ``scope`` selects, and every insight derived from them.

        ``scope`` is a selector laid over the memory's default scope: ``Scope(user="u1")``
        deletes u1's fragments of every session and agent - live, forgotten and merged
        ones, and the insights distilled from them, wherever they are stored. This is
        the :class:`offprompt.forget.Forgettable` hook, so
        ``forget(scope, participants=[memory])`` includes long-term memory; as that
        protocol says, the empty ``Scope()`` (``forget(..., all=True)``) deletes every
        fragment of this memory. Derived insights go first, so a crash midway leaves
        a re-run that finishes the job.

        Returns:
            How many points were deleted (``0``: already gone).

        Raises:
            ValidationError: ``scope`` is not a :class:`~offprompt.scope.Scope`.

        Example:
            >>> ltm = LongTermMemory()
            >>> _ = ltm.write(MemoryFragment(observation="u1 likes tea", scope=Scope(user="u1")))
            >>> ltm.forget(Scope(user="u1")), ltm.forget(Scope(user="u1"))
            (1, 0)
            >>> ltm.close()
        """
        if not isinstance(scope, Scope):
            raise ValidationError(
                "forget(scope) deletes a subject's fragments and takes an offprompt Scope; "
                f"got {type(scope).__name__} (to hide fragments by id use mark_forgotten)"
            )
        selected = self._scope(scope)
        flt = self._scope_filter(selected)
        ids = [
            r.id
            for batch in self.store.iter_scroll(self.namespace, filter=flt or None)
            for r in batch
        ]
        removed = 0
        base = self._scope_filter(self.scope)
        for start in range(0, len(ids), _ID_BATCH):
            chunk = ids[start : start + _ID_BATCH]
            removed += self.store.delete(self.namespace, filter={**base, "meta.insight_of": chunk})
        removed += self.store.delete(self.namespace, filter=flt or None)
        return removed

    async def aforget(self, scope: Scope) -> int:
        """Async twin of :meth:`forget`."""
        return await asyncio.to_thread(self.forget, scope)

    def prune(
        self,
        policy: RetentionPolicy | None = None,
        *,
        scope: Scope | None = None,
        now: datetime | None = None,
    ) -> int:
        """Apply a retention policy to the fragments ``scope`` selects; returns how many
        were deleted.

        Fragments are ordered by their last write or recall (``last_accessed_at``, a
        read refreshes it; then by id) and :func:`offprompt.retention.evict` decides,
        as for every tier: ``max_age`` deletes fragments neither written nor recalled
        for that long; ``max_count`` and ``max_tokens`` delete the least recently
        accessed ones until the rest fits, never the most recent one.
        Deletion happens in the store by id or by a range filter; an ``evict`` trace
        event lists what went and why.

        Args:
            policy: The bounds; the memory's ``retention`` if omitted.
            scope: What to bound (laid over the default scope); on write, each
                written fragment's scope is pruned.
            now: "Now" for ``max_age`` (the memory's clock if omitted).

        Raises:
            ValidationError: no policy given and the memory has none.

        Example:
            >>> from offprompt.retention import Retained, RetentionPolicy, evict
            >>> ltm = LongTermMemory(retention=RetentionPolicy(max_count=2))
            >>> for i in range(5):
            ...     _ = ltm.write(MemoryFragment(observation=f"fact {i}", scope=Scope(user="u")))
            >>> ltm.count(scope=Scope(user="u"))
            2
            >>> ltm.close()
        """
        chosen = policy if policy is not None else self.retention
        if chosen is None:
            raise ValidationError("prune needs a RetentionPolicy (policy= or retention=)")
        if not isinstance(chosen, RetentionPolicy):
            raise ValidationError(f"policy must be a RetentionPolicy, got {type(chosen).__name__}")
        return self._prune(chosen, self._scope(scope), now)

    async def aprune(
        self,
        policy: RetentionPolicy | None = None,
        *,
        scope: Scope | None = None,
        now: datetime | None = None,
    ) -> int:
        """Async twin of :meth:`prune`."""
        return await asyncio.to_thread(self.prune, policy, scope=scope, now=now)

    def _prune(self, policy: RetentionPolicy, scope: Scope, now: datetime | None) -> int:
        flt = self._scope_filter(merge_scopes(self.scope, scope))
        now_ts = (utc(now) if now is not None else self.now()).timestamp()
        cutoff = policy.cutoff(now_ts)
        aged = {**flt, "last_accessed_ts": Range(lt=cutoff)} if cutoff is not None else None
        if policy.max_tokens is None and (
            policy.max_count is None
            or self.store.count(self.namespace, filter=flt or None) <= policy.max_count
        ):
            selected = aged  # only age can evict: read the expired fragments alone
        else:
            selected = flt
        if selected is None:
            return 0
        records = [
            r
            for batch in self.store.iter_scroll(self.namespace, filter=selected or None)
            for r in batch
        ]
        records.sort(key=lambda r: (float(r.payload.get("last_accessed_ts", 0.0)), r.id))
        items = [
            Retained(
                r.id,
                self._tokens(r.text, r.payload),
                float(r.payload.get("last_accessed_ts", 0.0)),
            )
            for r in records
        ]
        evicted = evict(items, policy, now=now_ts)
        dropped: list[dict[str, Any]] = [{"id": e.id, "reason": e.reason} for e in evicted]
        removed = 0
        if aged is not None and any(e.reason == "max_age" for e in evicted):
            # by the filter, so a fragment recalled meanwhile stays
            removed += self.store.delete(self.namespace, filter=aged)
        doomed = [e.id for e in evicted if e.reason != "max_age"]
        for start in range(0, len(doomed), _ID_BATCH):
            removed += self.store.delete(self.namespace, ids=doomed[start : start + _ID_BATCH])
        if dropped:
            resolved = merge_scopes(self.scope, scope)
            emit_safely(
                self.tracer,
                TraceEvent(
                    "evict",
                    session_id=resolved.session,
                    scope=resolved.fields(),
                    dropped=dropped,
                    detail={"namespace": self.namespace, "memory": "longterm"},
                ),
            )
        return removed

    def _recent(self, scope: Scope | None, recent: int) -> list[MemoryFragment]:
        if not isinstance(recent, int) or recent < 1:
            raise ValidationError(f"recent must be an int >= 1, got {recent!r}")
        flt = self._live_filter(scope, include_insights=False)
        records = self.store.scroll(self.namespace, filter=flt)
        records.sort(key=lambda r: r.id)
        return [to_fragment(r.id, r.text, r.payload) for r in records[-recent:]]

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
        scope and lists its sources in ``meta["insight_of"]`` (so :meth:`forget` of
        the sources deletes it too).
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
