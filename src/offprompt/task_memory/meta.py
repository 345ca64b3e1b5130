"""``MetaMemory``: what produced each stored output, readable by later steps."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from offprompt.errors import ValidationError

__all__ = ["ActionSubtaskMetaEntry", "MetaMemory"]


@dataclass
class ActionSubtaskMetaEntry:
    """The step that called a tool: its reasoning, the actions it took and their answer.

    Attributes:
        thought: The model's reasoning before acting.
        actions: The tool calls, as JSON text or a short description.
        answer: What the step concluded; ``TaskMemory.process_output`` fills in the
            reference sentence when it is empty.
    """

    thought: str
    actions: str
    answer: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionSubtaskMetaEntry:
        """Rebuild an entry from ``to_dict()`` output; ``DeserializationError`` on a bad shape."""
        try:
            return cls(
                thought=str(data["thought"]),
                actions=str(data["actions"]),
                answer=str(data.get("answer") or ""),
                meta=dict(data.get("meta") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise ValidationError(
                f"ActionSubtaskMetaEntry needs thought, actions, answer: {exc}"
            ) from None

    def to_text(self) -> str:
        """The entry as prompt text: thought, actions and answer, one line each."""
        return f"Thought: {self.thought}\nActions: {self.actions}\nAnswer: {self.answer}"


class MetaMemory:
    """An ordered, thread-safe log of :class:`ActionSubtaskMetaEntry` records.

    Example:
        >>> memory = MetaMemory()
        >>> memory.add_entry(ActionSubtaskMetaEntry("need logs", "fetch_logs()", "stored"))
        >>> len(memory.entries)
        1
    """

    def __init__(self) -> None:
        self._entries: list[ActionSubtaskMetaEntry] = []
        self._lock = threading.Lock()

    @property
    def entries(self) -> list[ActionSubtaskMetaEntry]:
        """A copy of the entries, oldest first."""
        with self._lock:
            return list(self._entries)

    def add_entry(self, entry: ActionSubtaskMetaEntry) -> None:
        """Append ``entry``; ``ValidationError`` unless it is an ``ActionSubtaskMetaEntry``."""
        if not isinstance(entry, ActionSubtaskMetaEntry):
            raise ValidationError(
                f"MetaMemory entries must be ActionSubtaskMetaEntry, got {type(entry).__name__}"
            )
        with self._lock:
            self._entries.append(entry)

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._entries.clear()

    def to_text(self) -> str:
        """Every entry's text, separated by blank lines."""
        return "\n\n".join(e.to_text() for e in self.entries)
