"""``HybridMemory``: sensory -> short-term -> long-term memory, as in DB-GPT.

A write enters :class:`SensoryMemory`; what passes its importance gate enters
short-term memory; what short-term memory hands on (overflow, evictions, merged
enhancements and their insights) is written to :class:`LongTermMemory`. A read pulls
the best fragments from long-term memory, feeds them back into short-term memory as
retrievals (they enhance what is buffered there; anything that then leaves is saved to
long-term memory) and returns them followed by the buffered short-term fragments of the
same scope.

Differences from DB-GPT: :meth:`HybridMemory.write_batch` writes through to long-term
memory unless ``to_long_term=False`` (DB-GPT's batch write, meant for recovery, never
does); :meth:`HybridMemory.flush` moves everything buffered into long-term memory
(call it when a session ends); reads return only short-term fragments of the read's
scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from offprompt.errors import ValidationError
from offprompt.longterm.fragment import (
    DiscardedMemoryFragments,
    MemoryFragment,
    Scope,
    merge_scopes,
)
from offprompt.longterm.long_term import LongTermMemory
from offprompt.longterm.scoring import ImportanceScorer
from offprompt.longterm.sensory import SensoryMemory
from offprompt.longterm.short_term import EnhancedShortTermMemory, ShortTermMemory
from offprompt.retention import RetentionPolicy

__all__ = ["HybridMemory"]


class HybridMemory:
    """Sensory, short-term and long-term memory working as one.

    Args:
        sensory: The first buffer (``SensoryMemory()`` if omitted).
        short_term: The middle buffer (an :class:`EnhancedShortTermMemory` sharing the
            long-term store's embedder and the long-term memory's clock, with the
            offline extractive insight extractor, if omitted).
        long_term: The durable memory (an in-memory :class:`LongTermMemory` if omitted).
        importance_scorer: Scores insights (default: the long-term memory's scorer).
        importance_weight: Multiplies insight scores (DB-GPT's hybrid weight, 0.9).

    Example:
        >>> memory = HybridMemory(short_term=ShortTermMemory(buffer_size=1))
        >>> for text in ["I am vegetarian", "I live in Lyon"]:
        ...     _ = memory.write(MemoryFragment(observation=text, scope=Scope(user="u1")))
        >>> [f.observation for f in memory.read("what do I eat?", k=1, scope=Scope(user="u1"))][0]
        'I am vegetarian'
        >>> memory.close()
    """

    def __init__(
        self,
        sensory: SensoryMemory | None = None,
        short_term: ShortTermMemory | None = None,
        long_term: LongTermMemory | None = None,
        *,
        importance_scorer: ImportanceScorer | None = None,
        importance_weight: float = 0.9,
    ) -> None:
        if not 0 <= importance_weight <= 1:
            raise ValidationError(
                f"importance_weight must be within [0, 1], got {importance_weight}"
            )
        self.long_term = long_term if long_term is not None else LongTermMemory()
        self._owns_long_term = long_term is None
        self.sensory = sensory if sensory is not None else SensoryMemory()
        self.short_term = (
            short_term
            if short_term is not None
            else EnhancedShortTermMemory(
                embedder=self.long_term.store.embedder, clock=self.long_term.clock
            )
        )
        self.importance_scorer = importance_scorer or self.long_term.importance_scorer
        self.importance_weight = importance_weight

    # ------------------------------------------------------------------ write

    def _weighted(
        self, insights: list[MemoryFragment], scores: list[float | None]
    ) -> list[MemoryFragment]:
        return [
            f
            if s is None
            else f.model_copy(update={"importance": min(max(s * self.importance_weight, 0.0), 1.0)})
            for f, s in zip(insights, scores, strict=True)
        ]

    def _through_short_term(
        self, passed: DiscardedMemoryFragments | None
    ) -> DiscardedMemoryFragments:
        out = DiscardedMemoryFragments()
        for fragment in passed.fragments if passed else []:
            out.extend(self.short_term.write(fragment))
        return out

    async def _athrough_short_term(
        self, passed: DiscardedMemoryFragments | None
    ) -> DiscardedMemoryFragments:
        out = DiscardedMemoryFragments()
        for fragment in passed.fragments if passed else []:
            out.extend(await self.short_term.awrite(fragment))
        return out

    def _save(self, leaving: DiscardedMemoryFragments) -> list[MemoryFragment]:
        if not leaving:
            return []
        scores = [
            None if f.importance is not None else self.importance_scorer.score(f)
            for f in leaving.insights
        ]
        return self.long_term.write_batch(
            [*leaving.fragments, *self._weighted(leaving.insights, scores)]
        )

    async def _asave(self, leaving: DiscardedMemoryFragments) -> list[MemoryFragment]:
        if not leaving:
            return []
        scores = [
            None if f.importance is not None else await self.importance_scorer.ascore(f)
            for f in leaving.insights
        ]
        return await self.long_term.awrite_batch(
            [*leaving.fragments, *self._weighted(leaving.insights, scores)]
        )

    def write(self, fragment: MemoryFragment, *, to_long_term: bool = True) -> list[MemoryFragment]:
        """Write ``fragment`` through the three memories; returns what reached long-term memory."""
        leaving = self._through_short_term(self.sensory.write(fragment))
        return self._save(leaving) if to_long_term else []

    async def awrite(
        self, fragment: MemoryFragment, *, to_long_term: bool = True
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`write`."""
        leaving = await self._athrough_short_term(await self.sensory.awrite(fragment))
        return await self._asave(leaving) if to_long_term else []

    def write_batch(
        self, fragments: Sequence[MemoryFragment], *, to_long_term: bool = True
    ) -> list[MemoryFragment]:
        """:meth:`write` each fragment in order; returns everything that reached long-term memory."""
        out: list[MemoryFragment] = []
        for fragment in fragments:
            out.extend(self.write(fragment, to_long_term=to_long_term))
        return out

    async def awrite_batch(
        self, fragments: Sequence[MemoryFragment], *, to_long_term: bool = True
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`write_batch`."""
        out: list[MemoryFragment] = []
        for fragment in fragments:
            out.extend(await self.awrite(fragment, to_long_term=to_long_term))
        return out

    def flush(self) -> list[MemoryFragment]:
        """Move every buffered sensory and short-term fragment into long-term memory."""
        pending = [*self.short_term.drain(), *self.sensory.drain()]
        return self.long_term.write_batch(pending) if pending else []

    async def aflush(self) -> list[MemoryFragment]:
        """Async twin of :meth:`flush`."""
        pending = [*self.short_term.drain(), *self.sensory.drain()]
        return await self.long_term.awrite_batch(pending) if pending else []

    # ------------------------------------------------------------------ read

    def _with_short_term(
        self, found: list[MemoryFragment], scope: Scope | None
    ) -> list[MemoryFragment]:
        visible = merge_scopes(self.long_term.scope, scope)
        seen = {(f.observation, f.scope) for f in found}
        extra = [
            f
            for f in self.short_term.fragments
            if visible.matches(f.scope) and (f.observation, f.scope) not in seen
        ]
        return [*found, *extra]

    def read(
        self, observation: str, k: int = 5, *, scope: Scope | None = None
    ) -> list[MemoryFragment]:
        """Long-term fragments for ``observation`` (best first), then the buffered
        short-term fragments of ``scope``; the long-term ones are fed back into
        short-term memory as retrievals."""
        found = self.long_term.read(observation, k, scope=scope)
        leaving = DiscardedMemoryFragments()
        for fragment in found:
            leaving.extend(self.short_term.write(fragment, retrieval=True))
        self._save(leaving)
        return self._with_short_term(found, scope)

    async def aread(
        self, observation: str, k: int = 5, *, scope: Scope | None = None
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`read`."""
        found = await self.long_term.aread(observation, k, scope=scope)
        leaving = DiscardedMemoryFragments()
        for fragment in found:
            leaving.extend(await self.short_term.awrite(fragment, retrieval=True))
        await self._asave(leaving)
        return self._with_short_term(found, scope)

    # ------------------------------------------------------------------ maintenance

    def reflect(
        self,
        fragments: Sequence[MemoryFragment] | None = None,
        *,
        recent: int = 20,
        scope: Scope | None = None,
    ) -> list[MemoryFragment]:
        """Insights from recent long-term fragments (see :meth:`LongTermMemory.reflect`)."""
        return self.long_term.reflect(fragments, recent=recent, scope=scope)

    async def areflect(
        self,
        fragments: Sequence[MemoryFragment] | None = None,
        *,
        recent: int = 20,
        scope: Scope | None = None,
    ) -> list[MemoryFragment]:
        """Async twin of :meth:`reflect`."""
        return await self.long_term.areflect(fragments, recent=recent, scope=scope)

    def clear(self, *, scope: Scope | None = None) -> int:
        """Empty both buffers (every scope) and delete ``scope``'s long-term fragments; returns how many."""
        self.sensory.clear()
        self.short_term.clear()
        return self.long_term.clear(scope=scope)

    async def aclear(self, *, scope: Scope | None = None) -> int:
        """Async twin of :meth:`clear`."""
        self.sensory.clear()
        self.short_term.clear()
        return await self.long_term.aclear(scope=scope)

    def forget(self, scope: Scope) -> int:
        """Delete everything held for ``scope``: its buffered sensory and short-term
        fragments and its long-term fragments (with derived insights); returns how many.

        The :class:`offprompt.forget.Forgettable` hook, so
        ``forget(scope, participants=[hybrid])`` works; see :meth:`LongTermMemory.forget`.

        Example:
            >>> memory = HybridMemory()
            >>> _ = memory.write(MemoryFragment(observation="u1 is vegan", scope=Scope(user="u1")))
            >>> memory.forget(Scope(user="u1")) >= 1
            True
            >>> memory.close()
        """
        if not isinstance(scope, Scope):
            raise ValidationError(
                f"forget(scope) takes an offprompt Scope, got {type(scope).__name__}"
            )
        visible = merge_scopes(self.long_term.scope, scope)
        buffered = self.sensory.forget(visible) + self.short_term.forget(visible)
        return buffered + self.long_term.forget(scope)

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
        """Apply a retention policy to the long-term fragments (see :meth:`LongTermMemory.prune`)."""
        return self.long_term.prune(policy, scope=scope, now=now)

    async def aprune(
        self,
        policy: RetentionPolicy | None = None,
        *,
        scope: Scope | None = None,
        now: datetime | None = None,
    ) -> int:
        """Async twin of :meth:`prune`."""
        return await self.long_term.aprune(policy, scope=scope, now=now)

    def close(self) -> None:
        """Close the long-term memory if this hybrid memory created it."""
        if self._owns_long_term:
            self.long_term.close()
