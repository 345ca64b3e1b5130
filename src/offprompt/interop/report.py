"""``ConversionReport``: what a conversion could not carry, reported instead of dropped."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loss:
    """One thing a target format could not carry.

    Attributes:
        where: Which item, e.g. ``"message 3"`` or ``"session abc / message 7"``.
        what: The field or part, e.g. ``"content[1] (ImageArtifact)"``.
        reason: Why it could not be carried.
    """

    where: str
    what: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what} not carried ({self.reason})"


@dataclass
class ConversionReport:
    """Collects :class:`Loss` entries during an import or export.

    A conversion that loses nothing returns an empty report (``bool(report)`` is false).
    """

    source: str = ""
    target: str = ""
    losses: list[Loss] = field(default_factory=list)
    converted: int = 0

    def lost(self, where: str, what: str, reason: str) -> None:
        """Record that ``what`` at ``where`` could not be carried, and why."""
        self.losses.append(Loss(where, what, reason))

    def __bool__(self) -> bool:
        return bool(self.losses)

    def summary(self) -> str:
        """One line for people: how much was converted, and what was lost."""
        head = f"{self.converted} item(s) converted {self.source} -> {self.target}".strip()
        if not self.losses:
            return f"{head}; nothing lost"
        lines = [f"{head}; {len(self.losses)} thing(s) the target cannot carry:"]
        lines += [f"  - {loss}" for loss in self.losses]
        return "\n".join(lines)
