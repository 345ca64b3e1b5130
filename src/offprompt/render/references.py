"""Find the off-prompt reference sentence in message text, and describe namespaces.

Task memory answers a large tool output with exactly this sentence (see DESIGN.md)::

    Output of "{tool}.{activity}" was stored in memory with memory_name "{memory}" and artifact_namespace "{namespace}".

The renderers highlight it and show the stored namespace's size next to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offprompt.artifacts import TextArtifact
from offprompt.messages import Message

__all__ = [
    "REFERENCE_PATTERN",
    "NamespaceInfo",
    "OffpromptReference",
    "find_references",
    "message_references",
]

#: The reference sentence. ``source`` is ``"{tool}.{activity}"``; a tool name may itself
#: contain dots, so the activity is whatever follows the last dot.
REFERENCE_PATTERN = re.compile(
    r'Output of "(?P<source>[^"\n]*)" was stored in memory with memory_name '
    r'"(?P<memory>[^"\n]*)" and artifact_namespace "(?P<namespace>[^"\n]*)"\.'
)


@dataclass(frozen=True)
class OffpromptReference:
    """One reference sentence found in a text.

    Attributes:
        tool: The tool whose output was stored.
        activity: The tool's activity (method) name; empty if the source had no dot.
        memory: The task memory's name.
        namespace: Where the output is stored.
        sentence: The sentence as it appears in the text.
        start: Offset of the sentence in the text.
        end: Offset just past the sentence.
    """

    tool: str
    activity: str
    memory: str
    namespace: str
    sentence: str
    start: int
    end: int

    @property
    def source(self) -> str:
        """What produced the output: ``"tool.activity"``, or the tool alone."""
        return f"{self.tool}.{self.activity}" if self.activity else self.tool


@dataclass(frozen=True)
class NamespaceInfo:
    """What task memory knows about a namespace, for display.

    Attributes:
        namespace: The namespace.
        bytes: Size of the stored output in bytes, if known.
        tokens: Size in tokens, if known.
        tool: The tool that produced it, if known.
        activity: The tool's activity, if known.
        storage: The storage kind (``"text"``, ``"blob"``...), if known.
        created_at: When it was stored (ISO text), if known.
    """

    namespace: str
    bytes: int | None = None
    tokens: int | None = None
    tool: str | None = None
    activity: str | None = None
    storage: str | None = None
    created_at: str | None = None

    @classmethod
    def from_metadata(cls, namespace: str, metadata: Mapping[str, Any]) -> NamespaceInfo:
        """Build from ``TaskMemory.namespace_metadata(namespace)``; unknown keys are ignored.

        Example:
            >>> NamespaceInfo.from_metadata("ns", {"bytes": 10, "tool": "Web"}).bytes
            10
        """

        def _int(key: str) -> int | None:
            value = metadata.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def _str(key: str) -> str | None:
            value = metadata.get(key)
            return None if value is None else str(value)

        return cls(
            namespace=namespace,
            bytes=_int("bytes"),
            tokens=_int("tokens"),
            tool=_str("tool"),
            activity=_str("activity"),
            storage=_str("storage"),
            created_at=_str("created_at"),
        )

    def size_text(self) -> str:
        """``"5.2 MiB, 1,234,567 tokens"``, or ``"size unknown"``."""
        parts = []
        if self.bytes is not None:
            parts.append(human_bytes(self.bytes))
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        return ", ".join(parts) or "size unknown"


def human_bytes(count: int) -> str:
    """``1536`` → ``"1.5 KiB"`` (powers of 1024, so binary units, one decimal).

    Example:
        >>> human_bytes(5 * 1024 * 1024)
        '5.0 MiB'
    """
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # unreachable; keeps type checkers calm


def find_references(text: str) -> list[OffpromptReference]:
    """Every reference sentence in ``text``, in order.

    Example:
        >>> ref = find_references('Output of "Web.fetch" was stored in memory with '
        ...     'memory_name "TaskMemory" and artifact_namespace "ns1".')[0]
        >>> ref.tool, ref.activity, ref.namespace
        ('Web', 'fetch', 'ns1')
    """
    found = []
    for match in REFERENCE_PATTERN.finditer(text):
        tool, dot, activity = match["source"].rpartition(".")
        if not dot:
            tool, activity = match["source"], ""
        found.append(
            OffpromptReference(
                tool=tool,
                activity=activity,
                memory=match["memory"],
                namespace=match["namespace"],
                sentence=match[0],
                start=match.start(),
                end=match.end(),
            )
        )
    return found


def message_references(messages: Iterable[Message]) -> list[OffpromptReference]:
    """The references in the text parts of ``messages``, in order."""
    refs: list[OffpromptReference] = []
    for message in messages:
        for part in message.content:
            if isinstance(part, TextArtifact):
                refs.extend(find_references(part.value))
    return refs


def split_text(text: str) -> Sequence[str | OffpromptReference]:
    """``text`` cut into plain pieces and the references between them."""
    pieces: list[str | OffpromptReference] = []
    position = 0
    for ref in find_references(text):
        if ref.start > position:
            pieces.append(text[position : ref.start])
        pieces.append(ref)
        position = ref.end
    if position < len(text):
        pieces.append(text[position:])
    return pieces
