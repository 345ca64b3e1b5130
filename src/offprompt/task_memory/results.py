"""What the memory's core calls return to each other: typed records, not dicts.

:class:`Stored` is the answer of :meth:`TaskMemory.store_output
<offprompt.task_memory.TaskMemory.store_output>`, the one write that every adapter's
offload goes through; :class:`NamespaceMetadata` is what
:meth:`TaskMemory.namespace_metadata <offprompt.task_memory.TaskMemory.namespace_metadata>`
says about a stored namespace. Artifacts (``InfoArtifact``/``ErrorArtifact``) are made
from them only at the Griptape-compatible edge, ``process_output``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from offprompt.task_memory.card import OutputStats

__all__ = ["NamespaceMetadata", "Stored", "Verdict", "store_failure"]

Verdict = Literal["stored", "small", "empty"]
"""``stored``: the output went off-prompt; ``small``: it passes unchanged (nothing
stored); ``empty``: it is empty or blank (nothing stored)."""


@dataclass(frozen=True)
class Stored:
    """The answer of ``store_output``: what happened to one tool output.

    Attributes:
        verdict: ``"stored"``, ``"small"`` or ``"empty"``.
        memory_name: The memory's name, as the reference sentence quotes it.
        namespace: Where it was stored; ``None`` unless ``verdict == "stored"``.
        text: What the model sees instead of the output: the reference sentence and its
            card when stored, the output itself when small, ``"tool output is empty"``
            when empty.
        stats: The card's statistics of what was stored (``None`` unless stored).
    """

    verdict: Verdict
    memory_name: str
    namespace: str | None
    text: str
    stats: OutputStats | None = None

    @property
    def stored(self) -> bool:
        """The output went off-prompt (``namespace`` and ``stats`` are set)."""
        return self.verdict == "stored"


def store_failure(tool: str, activity: str, exc: BaseException) -> str:
    """The one sentence for an output that could not be stored (no byte of the output)."""
    return f"could not store output of {tool}.{activity}: {exc}"


class NamespaceMetadata(BaseModel):
    """Where a stored namespace came from and how big it is.

    A frozen model; it also reads like the dict it replaces (``meta["tool"]``,
    ``meta.get("tool")``, ``"tool" in meta``, ``dict(meta.items())``), so code written
    against the dict keeps working.

    Attributes:
        namespace: The namespace.
        memory: The name of the ``TaskMemory`` that wrote it.
        tenant: The memory's tenant.
        tool, activity: The tool (and its activity) whose output it holds.
        created_at, updated_at: ISO times of the first and the last write.
        bytes: Size of what is stored.
        tokens: Its indexed token count (exact once indexed).
        chunks: Its indexed chunks.
        pages: Its pages at the memory's ``page_tokens``.
        artifacts: How many artifacts it holds.
        storage: ``"text"`` or ``"blob"``.
        sensitive: The card shows only its shape.
        subtasks: The ``ActionSubtaskMetaEntry`` dicts of the steps that stored it.
        stats: The card's statistics, an ``OutputStats`` dump (empty before indexing
            for a large output).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    memory: str
    tenant: str
    tool: str | None = None
    activity: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    bytes: int = 0
    tokens: int = 0
    chunks: int = 0
    pages: int = 0
    artifacts: int = 0
    storage: str
    sensitive: bool = False
    subtasks: list[dict[str, Any]] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)

    @property
    def output_stats(self) -> OutputStats | None:
        """``stats`` as :class:`OutputStats`, or ``None`` while there are none."""
        return OutputStats.model_validate(self.stats) if self.stats else None

    # The dict it replaces, read-only.
    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields

    def get(self, key: str, default: Any = None) -> Any:
        """``meta[key]``, or ``default`` for a key it does not have."""
        return getattr(self, key) if key in type(self).model_fields else default

    def keys(self) -> list[str]:
        """Its field names, as ``dict.keys`` would give them."""
        return list(type(self).model_fields)

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(name, value)`` pairs, as ``dict.items`` would give them."""
        return ((name, getattr(self, name)) for name in type(self).model_fields)
