"""Short-term memories: a FIFO buffer and DB-GPT's similarity-enhanced buffer.

:class:`ShortTermMemory` keeps the ``buffer_size`` most recent fragments (an exact
duplicate replaces its older copy) and hands the oldest to long-term memory when it
overflows, with insights about them if it has an :class:`InsightExtractor`.

:class:`EnhancedShortTermMemory` follows DB-GPT's ``EnhancedShortTermMemory`` (after
YuLan-Rec's memory): each new fragment is compared with every buffered one by cosine
similarity of their embeddings, squashed by a sigmoid, ``p = 1 / (1 + exp(-cos))``.
If ``p >= enhance_similarity_threshold`` (and, when ``stochastic``, a uniform draw is
``< p``) the buffered fragment is *enhanced*: its count goes up and the new fragment is
remembered as one of its enhancements. A fragment enhanced ``enhance_threshold`` times
is merged with its enhancements into one fragment (observations joined by ``"; "``,
the original's importance), insights are extracted from the merge, and both leave for
long-term memory. On overflow the fragment with the lowest ``(importance,
enhance_count)`` (never the newest) is evicted.

Differences from DB-GPT, on purpose:

* Fragments are only compared with fragments of the same :class:`Scope`, so two users'
  memories are never merged together.
* The evicted fragment is handed to long-term memory (DB-GPT's enhanced write drops it).
* An exact duplicate (same text and scope) enhances the buffered copy but is not buffered
  a second time; the merged observation lists each distinct text once.
* The overflow of the plain buffer hands over the *oldest* fragments (DB-GPT's slice
  hands over the wrong ones after trimming).
* ``stochastic=False`` makes enhancement deterministic (``p >= threshold`` suffices).
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

import numpy as np

from offprompt.errors import ValidationError
from offprompt.longterm.fragment import Clock, DiscardedMemoryFragments, MemoryFragment, Scope
from offprompt.longterm.scoring import ExtractiveInsightExtractor, InsightExtractor
from offprompt.vectors.embedders import Embedder, HashingEmbedder

__all__ = ["EnhancedShortTermMemory", "ShortTermMemory", "cosine_similarity", "sigmoid"]


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between ``a`` and ``b`` (0.0 if either is the zero vector)."""
    va = np.asarray(a, dtype=np.float64)
    vb = np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValidationError(
            f"cannot compare vectors of {va.shape[0]} and {vb.shape[0]} dimensions"
        )
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(va, vb) / (na * nb))


def sigmoid(x: float) -> float:
    """``1 / (1 + exp(-x))``."""
    return 1.0 / (1.0 + math.exp(-x))


@dataclass
class _Plan:
    """What a write decided, before insights are extracted (so sync and async share it)."""

    merged: list[MemoryFragment] = field(default_factory=list)
    groups: list[list[MemoryFragment]] = field(default_factory=list)
    evicted: list[MemoryFragment] = field(default_factory=list)


class ShortTermMemory:
    """The ``buffer_size`` most recent fragments; the oldest move on to long-term memory.

    Args:
        buffer_size: Fragments kept.
        insight_extractor: If given, insights are extracted from each overflow batch.
        clock: Time of insight fragments, and of fragments written without explicit
            times (see :meth:`MemoryFragment.timed_at`); the wall clock if omitted.

    Example:
        >>> stm = ShortTermMemory(buffer_size=1)
        >>> stm.write(MemoryFragment(observation="first")) is None
        True
        >>> [f.observation for f in stm.write(MemoryFragment(observation="second")).fragments]
        ['first']
    """

    def __init__(
        self,
        buffer_size: int = 5,
        *,
        insight_extractor: InsightExtractor | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValidationError(f"buffer_size must be an int >= 1, got {buffer_size!r}")
        self.buffer_size = buffer_size
        self.insight_extractor = insight_extractor
        self.clock: Clock = clock or (lambda: datetime.now(timezone.utc))
        self._fragments: list[MemoryFragment] = []
        self._lock = threading.RLock()

    @property
    def fragments(self) -> list[MemoryFragment]:
        """The buffered fragments, oldest first (a copy)."""
        with self._lock:
            return list(self._fragments)

    short_term_memories = fragments

    def __len__(self) -> int:
        return len(self._fragments)

    @staticmethod
    def _check(fragment: MemoryFragment) -> None:
        if not isinstance(fragment, MemoryFragment):
            raise ValidationError(f"expected a MemoryFragment, got {type(fragment).__name__}")

    def _timed(self, fragment: MemoryFragment) -> MemoryFragment:
        """``fragment`` on this memory's clock unless it has explicit times."""
        self._check(fragment)
        return fragment.timed_at(self.clock())

    def _plan(self, fragment: MemoryFragment, retrieval: bool) -> _Plan:
        self._check(fragment)
        with self._lock:
            key = (fragment.observation, fragment.scope)
            kept = [f for f in self._fragments if (f.observation, f.scope) != key]
            kept.append(fragment)
            overflow = max(0, len(kept) - self.buffer_size)
            plan = _Plan(evicted=kept[:overflow])
            self._fragments = kept[overflow:]
            if plan.evicted and self.insight_extractor is not None:
                plan.groups.append(plan.evicted)
            return plan

    def _insight_fragments(
        self, groups: list[list[MemoryFragment]], texts: list[list[str]]
    ) -> list[MemoryFragment]:
        now = self.clock()
        out = []
        for group, lines in zip(groups, texts, strict=True):
            for line in lines:
                if line.strip():
                    out.append(
                        MemoryFragment.build(
                            line,
                            now=now,
                            is_insight=True,
                            scope=group[0].scope,
                            meta={"insight_of": [f.id for f in group]},
                        )
                    )
        return out

    def _result(self, plan: _Plan, texts: list[list[str]]) -> DiscardedMemoryFragments | None:
        result = DiscardedMemoryFragments(
            fragments=[*plan.merged, *plan.evicted],
            insights=self._insight_fragments(plan.groups, texts),
        )
        return result if result else None

    def write(
        self, fragment: MemoryFragment, *, retrieval: bool = False
    ) -> DiscardedMemoryFragments | None:
        """Buffer ``fragment``; returns what leaves for long-term memory, or None.

        ``retrieval=True`` marks a fragment read back from long-term memory (DB-GPT's
        ``WriteOperation.RETRIEVAL``); the plain buffer treats it like any other.
        """
        plan = self._plan(self._timed(fragment), retrieval)
        extractor = self.insight_extractor
        texts = [extractor.extract(g) for g in plan.groups] if extractor is not None else []
        return self._result(plan, texts)

    async def awrite(
        self, fragment: MemoryFragment, *, retrieval: bool = False
    ) -> DiscardedMemoryFragments | None:
        """Async twin of :meth:`write` (awaits the extractor's ``aextract``)."""
        plan = await self._aplan(self._timed(fragment), retrieval)
        extractor = self.insight_extractor
        texts = [await extractor.aextract(g) for g in plan.groups] if extractor is not None else []
        return self._result(plan, texts)

    async def _aplan(self, fragment: MemoryFragment, retrieval: bool) -> _Plan:
        return self._plan(fragment, retrieval)

    def read(self, observation: str | None = None) -> list[MemoryFragment]:
        """The buffered fragments, oldest first."""
        return self.fragments

    def clear(self) -> list[MemoryFragment]:
        """Empty the buffer; returns what it held."""
        with self._lock:
            out, self._fragments = self._fragments, []
            return out

    def drain(self) -> list[MemoryFragment]:
        """Empty the buffer, returning its fragments (to flush them into long-term memory)."""
        return self.clear()

    async def aclear(self) -> list[MemoryFragment]:
        """Async twin of :meth:`clear`."""
        return self.clear()

    def forget(self, scope: Scope) -> int:
        """Drop the buffered fragments ``scope`` selects (and their state); returns how many."""
        with self._lock:
            keep = [i for i, f in enumerate(self._fragments) if not scope.matches(f.scope)]
            removed = len(self._fragments) - len(keep)
            if removed:
                self._keep(keep)
            return removed

    def _keep(self, indexes: list[int]) -> None:
        self._fragments = [self._fragments[i] for i in indexes]


class EnhancedShortTermMemory(ShortTermMemory):
    """Short-term memory that merges often-repeated observations into insights (DB-GPT).

    Args:
        buffer_size: Fragments kept.
        enhance_similarity_threshold: Minimum ``sigmoid(cosine)`` for an enhancement.
            Note ``sigmoid(1.0) = 0.731``: with the default 0.7 only near-duplicates
            (cosine >= 0.85) enhance each other.
        enhance_threshold: Enhancements after which a fragment is merged and moved on.
        embedder: Embeds fragments without an embedding (``HashingEmbedder`` default).
        insight_extractor: Extracts insights from each merge: the offline
            :class:`~offprompt.longterm.ExtractiveInsightExtractor` by default (so the
            path "repeated observation -> insight in long-term memory" works offline),
            an LLM-backed one from an adapter, or None for no insights.
        stochastic: Also require a uniform draw ``< p``, as DB-GPT does.
        rng: The random source for ``stochastic`` (seed it for reproducible runs).
        clock: Time of merged and insight fragments.

    Example:
        >>> stm = EnhancedShortTermMemory(enhance_threshold=2, stochastic=False)
        >>> for _ in range(2):
        ...     _ = stm.write(MemoryFragment(observation="user asks for dark mode"))
        >>> out = stm.write(MemoryFragment(observation="user asks for dark mode"))
        >>> out.fragments[0].meta["enhancements"]
        2
    """

    def __init__(
        self,
        buffer_size: int = 10,
        enhance_similarity_threshold: float = 0.7,
        enhance_threshold: int = 3,
        *,
        embedder: Embedder | None = None,
        insight_extractor: InsightExtractor | Literal["extractive"] | None = "extractive",
        stochastic: bool = True,
        rng: random.Random | None = None,
        clock: Clock | None = None,
    ) -> None:
        extractor = (
            ExtractiveInsightExtractor() if insight_extractor == "extractive" else insight_extractor
        )
        super().__init__(buffer_size, insight_extractor=extractor, clock=clock)
        if not 0 <= enhance_similarity_threshold <= 1:
            raise ValidationError(
                f"enhance_similarity_threshold must be within [0, 1], got {enhance_similarity_threshold}"
            )
        if not isinstance(enhance_threshold, int) or enhance_threshold < 1:
            raise ValidationError(
                f"enhance_threshold must be an int >= 1, got {enhance_threshold!r}"
            )
        self.enhance_similarity_threshold = enhance_similarity_threshold
        self.enhance_threshold = enhance_threshold
        self.embedder: Embedder = embedder or HashingEmbedder()
        self.stochastic = stochastic
        self.rng = rng or random.Random()
        self._embeddings: list[list[float]] = []
        self._counts: list[int] = []
        self._enhancements: list[list[MemoryFragment]] = []

    def enhance_counts(self) -> list[int]:
        """Enhancement count of each buffered fragment, aligned with :attr:`fragments`."""
        with self._lock:
            return list(self._counts)

    def _with_embedding(
        self, fragment: MemoryFragment, vector: list[float] | None
    ) -> MemoryFragment:
        if fragment.embedding is not None:
            if len(fragment.embedding) != self.embedder.dimensions:
                raise ValidationError(
                    f"fragment {fragment.id} has a {len(fragment.embedding)}-dimensional embedding; "
                    f"the embedder makes {self.embedder.dimensions}"
                )
            return fragment
        assert vector is not None
        return fragment.model_copy(update={"embedding": list(vector)})

    def write(
        self, fragment: MemoryFragment, *, retrieval: bool = False
    ) -> DiscardedMemoryFragments | None:
        """Compare, enhance, merge and buffer ``fragment``; returns what leaves, or None.

        ``retrieval=True`` (a fragment read back from long-term memory) enhances buffered
        fragments but is not buffered itself, as in DB-GPT.
        """
        self._check(fragment)
        vector = (
            None
            if fragment.embedding is not None
            else self.embedder.embed_documents([fragment.observation])[0]
        )
        return super().write(self._with_embedding(fragment, vector), retrieval=retrieval)

    async def awrite(
        self, fragment: MemoryFragment, *, retrieval: bool = False
    ) -> DiscardedMemoryFragments | None:
        """Async twin of :meth:`write` (``aembed_documents``, ``aextract``)."""
        self._check(fragment)
        vector = (
            None
            if fragment.embedding is not None
            else (await self.embedder.aembed_documents([fragment.observation]))[0]
        )
        return await super().awrite(self._with_embedding(fragment, vector), retrieval=retrieval)

    def _plan(self, fragment: MemoryFragment, retrieval: bool) -> _Plan:
        assert fragment.embedding is not None
        plan = _Plan()
        with self._lock:
            duplicate = False
            for idx, memory in enumerate(self._fragments):
                if memory.scope != fragment.scope:
                    continue
                if memory.observation == fragment.observation:
                    duplicate = True
                p = sigmoid(cosine_similarity(self._embeddings[idx], fragment.embedding))
                if p >= self.enhance_similarity_threshold and (
                    not self.stochastic or self.rng.random() < p
                ):
                    self._counts[idx] += 1
                    self._enhancements[idx].append(fragment)
            merged_into = False
            keep: list[int] = []
            now = self.clock()
            for idx, memory in enumerate(self._fragments):
                if self._counts[idx] < self.enhance_threshold:
                    keep.append(idx)
                    continue
                group = [memory, *self._enhancements[idx]]
                merged_into = merged_into or any(f is fragment for f in group)
                texts = list(dict.fromkeys(f.observation for f in group))
                merged = MemoryFragment.build(
                    "; ".join(texts),
                    now=now,
                    importance=memory.importance,
                    scope=memory.scope,
                    meta={
                        **memory.meta,
                        "merged_from": [f.id for f in group],
                        "enhancements": self._counts[idx],
                    },
                )
                plan.merged.append(merged)
                if self.insight_extractor is not None:
                    plan.groups.append([merged])
            self._keep(keep)
            if not retrieval and not duplicate and not merged_into:
                self._fragments.append(fragment)
                self._embeddings.append(list(fragment.embedding))
                self._counts.append(0)
                self._enhancements.append([])
                plan.evicted.extend(self._evict())
        return plan

    def _keep(self, indexes: list[int]) -> None:
        self._fragments = [self._fragments[i] for i in indexes]
        self._embeddings = [self._embeddings[i] for i in indexes]
        self._counts = [self._counts[i] for i in indexes]
        self._enhancements = [self._enhancements[i] for i in indexes]

    def _evict(self) -> list[MemoryFragment]:
        evicted: list[MemoryFragment] = []
        while len(self._fragments) > self.buffer_size:
            candidates = range(len(self._fragments) - 1)  # never the newest
            pop = min(
                candidates, key=lambda i: (self._fragments[i].importance or 0.0, self._counts[i], i)
            )
            gone = self._fragments[pop]
            evicted.append(gone)
            self._keep([i for i in range(len(self._fragments)) if i != pop])
            # enhancements by the evicted fragment no longer count (as DB-GPT does)
            for i, group in enumerate(self._enhancements):
                left = [f for f in group if f.observation != gone.observation]
                self._counts[i] -= len(group) - len(left)
                self._enhancements[i] = left
        return evicted

    def clear(self) -> list[MemoryFragment]:
        """Empty the buffer and the enhancement state; returns the fragments it held."""
        with self._lock:
            out = self._fragments
            self._fragments, self._embeddings, self._counts, self._enhancements = [], [], [], []
            return out
