"""``SensoryMemory``: the first, tiny buffer of perceptions (DB-GPT's ``SensoryMemory``).

Fragments gather until the buffer overflows; then every buffered fragment is scored
(``importance = scorer.score(f) * importance_weight``) and those at or above
``threshold_to_short_term`` are handed to short-term memory, the rest are forgotten,
and the buffer starts empty again. With ``buffer_size=0`` (DB-GPT's default) each
fragment passes straight through the scoring gate.

Differences from DB-GPT: a fragment whose ``importance`` the caller already set keeps
it (DB-GPT always re-scores); an exact duplicate observation (same text and scope)
already in the buffer is not buffered twice (DB-GPT keeps both).
"""

from __future__ import annotations

import threading

from offprompt.errors import ValidationError
from offprompt.longterm.fragment import DiscardedMemoryFragments, MemoryFragment, Scope
from offprompt.longterm.scoring import HeuristicImportanceScorer, ImportanceScorer

__all__ = ["SensoryMemory"]


class SensoryMemory:
    """A buffer of ``buffer_size`` fragments with an importance gate towards short-term memory.

    Args:
        buffer_size: Fragments held before the buffer is flushed through the gate.
        importance_weight: Multiplies the scorer's ``[0, 1]`` rating.
        threshold_to_short_term: Minimum weighted importance to pass the gate.
        importance_scorer: Rates fragments; :class:`HeuristicImportanceScorer` by default.

    Example:
        >>> sensory = SensoryMemory(buffer_size=0)
        >>> passed = sensory.write(MemoryFragment(observation="I always fly with Lufthansa"))
        >>> [f.observation for f in passed.fragments]
        ['I always fly with Lufthansa']
        >>> sensory.write(MemoryFragment(observation="ok")) is None
        True
    """

    def __init__(
        self,
        buffer_size: int = 0,
        importance_weight: float = 0.9,
        threshold_to_short_term: float = 0.1,
        *,
        importance_scorer: ImportanceScorer | None = None,
    ) -> None:
        if not isinstance(buffer_size, int) or buffer_size < 0:
            raise ValidationError(f"buffer_size must be an int >= 0, got {buffer_size!r}")
        if not 0 <= importance_weight <= 1:
            raise ValidationError(
                f"importance_weight must be within [0, 1], got {importance_weight}"
            )
        if not 0 <= threshold_to_short_term <= 1:
            raise ValidationError(
                f"threshold_to_short_term must be within [0, 1], got {threshold_to_short_term}"
            )
        self.buffer_size = buffer_size
        self.importance_weight = importance_weight
        self.threshold_to_short_term = threshold_to_short_term
        self.importance_scorer: ImportanceScorer = importance_scorer or HeuristicImportanceScorer()
        self._fragments: list[MemoryFragment] = []
        self._lock = threading.RLock()

    @property
    def fragments(self) -> list[MemoryFragment]:
        """The buffered fragments, oldest first (a copy)."""
        with self._lock:
            return list(self._fragments)

    def __len__(self) -> int:
        return len(self._fragments)

    def _add(self, fragment: MemoryFragment) -> list[MemoryFragment] | None:
        """Buffer ``fragment``; on overflow return (and empty) the whole buffer."""
        if not isinstance(fragment, MemoryFragment):
            raise ValidationError(f"expected a MemoryFragment, got {type(fragment).__name__}")
        with self._lock:
            key = (fragment.observation, fragment.scope)
            if not any((f.observation, f.scope) == key for f in self._fragments):
                self._fragments.append(fragment)
            if len(self._fragments) <= self.buffer_size:
                return None
            out, self._fragments = self._fragments, []
            return out

    def _gate(
        self, fragments: list[MemoryFragment], scores: list[float | None]
    ) -> DiscardedMemoryFragments | None:
        passed = []
        for fragment, score in zip(fragments, scores, strict=True):
            if score is not None:
                fragment = fragment.model_copy(
                    update={"importance": _clamp(score * self.importance_weight)}
                )
            if (fragment.importance or 0.0) >= self.threshold_to_short_term:
                passed.append(fragment)
        return DiscardedMemoryFragments(fragments=passed) if passed else None

    def write(self, fragment: MemoryFragment) -> DiscardedMemoryFragments | None:
        """Buffer ``fragment``; returns the fragments passed on to short-term memory, or None."""
        out = self._add(fragment)
        if out is None:
            return None
        scores = [
            None if f.importance is not None else self.importance_scorer.score(f) for f in out
        ]
        return self._gate(out, scores)

    async def awrite(self, fragment: MemoryFragment) -> DiscardedMemoryFragments | None:
        """Async twin of :meth:`write` (awaits the scorer's ``ascore``)."""
        out = self._add(fragment)
        if out is None:
            return None
        scores = [
            None if f.importance is not None else await self.importance_scorer.ascore(f)
            for f in out
        ]
        return self._gate(out, scores)

    def read(self, observation: str | None = None) -> list[MemoryFragment]:
        """The buffered fragments (sensory memory has no ranking)."""
        return self.fragments

    def clear(self) -> list[MemoryFragment]:
        """Empty the buffer; returns what it held."""
        with self._lock:
            out, self._fragments = self._fragments, []
            return out

    def drain(self) -> list[MemoryFragment]:
        """Empty the buffer without the gate (used to flush a session into long-term memory)."""
        return self.clear()

    async def aclear(self) -> list[MemoryFragment]:
        """Async twin of :meth:`clear`."""
        return self.clear()

    def forget(self, scope: Scope) -> int:
        """Drop the buffered fragments ``scope`` selects; returns how many."""
        with self._lock:
            kept = [f for f in self._fragments if not scope.matches(f.scope)]
            removed = len(self._fragments) - len(kept)
            self._fragments = kept
            return removed


def _clamp(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)
