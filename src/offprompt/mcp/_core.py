"""The one module of ``offprompt.mcp`` that touches the off-prompt core.

The proxy and the memory server only call what is here: :class:`CoreBinding` applies
the core's one offload policy (:class:`~offprompt.task_memory.offload.OffloadPolicy`:
the reference sentence and card, the namespace rule, error outputs) and gives the
core's memory tools (:func:`~offprompt.task_memory.tools.memory_tool_specs`), the same
that LangChain and LlamaIndex expose. Everything else in the package speaks MCP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from offprompt.artifacts import ImageArtifact
from offprompt.errors import OffpromptError
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import (
    ACTIVITY,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MIN_TOKENS,
    MAX_INLINE_IMAGE_BYTES,
    Offloaded,
    OffloadPolicy,
    StoredReference,
    ToolContent,
    failure_text,
)
from offprompt.task_memory.tools import ToolResult, memory_tool_specs

__all__ = [
    "ACTIVITY",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MIN_TOKENS",
    "DESTRUCTIVE",
    "READ_ONLY",
    "WRITES",
    "CoreBinding",
    "FunctionTool",
    "MemoryTool",
    "Offloaded",
    "StoredReference",
    "ToolContent",
    "ToolResult",
    "open_task_memory",
]

#: MCP tool annotations: a tool that only reads what is stored.
READ_ONLY: dict[str, bool] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
#: A tool that adds to what is stored and deletes nothing.
WRITES: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
}
#: A tool that deletes what is stored.
DESTRUCTIVE: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": True,
    "openWorldHint": False,
}


class MemoryTool(Protocol):
    """A tool served by this process: the core's ``MemoryToolSpec`` or a :class:`FunctionTool`."""

    name: str
    description: str
    parameters: dict[str, Any]

    @property
    def annotations(self) -> dict[str, bool]:
        """MCP's tool annotations (``readOnlyHint``, ``destructiveHint`` ...)."""
        ...

    async def acall(self, **arguments: Any) -> ToolResult: ...


@dataclass
class FunctionTool:
    """A :class:`MemoryTool` made of a blocking function returning text (run in a thread).

    Arguments are checked against ``parameters`` (JSON schema) first; a mistake comes
    back as a short error result, never raised.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., str] = field(repr=False)
    annotations: dict[str, bool] = field(default_factory=lambda: dict(READ_ONLY))

    async def acall(self, **arguments: Any) -> ToolResult:
        import jsonschema

        try:
            jsonschema.validate(arguments, self.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            return ToolResult(
                f"Error: bad arguments for {self.name}{f' ({where})' if where else ''}: "
                f"{exc.message[:300]}",
                is_error=True,
            )
        try:
            return ToolResult(await asyncio.to_thread(self.function, **arguments))
        except OffpromptError as exc:
            return ToolResult(failure_text(exc), is_error=True)


class CoreBinding:
    """The core's offload policy and memory tools over one task memory, for MCP.

    Args:
        task_memory: Where outputs go (its scope bounds what the tools reach).
        min_tokens: Text with fewer tokens passes through (``None``:
            :data:`~offprompt.task_memory.offload.DEFAULT_MIN_TOKENS`).
        sensitive: Tools whose every result is stored, whatever its size.
        max_output_tokens: Bound of every memory-tool output and reference.
    """

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        min_tokens: int | None = None,
        sensitive: Sequence[str] = (),
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        self.task_memory = task_memory
        self.sensitive = frozenset(sensitive)
        self.policy = OffloadPolicy(
            task_memory,
            min_tokens=DEFAULT_MIN_TOKENS if min_tokens is None else min_tokens,
            sensitive=self.sensitive,
            max_output_tokens=max_output_tokens,
        )
        self.min_tokens = self.policy.min_tokens
        self.max_output_tokens = max_output_tokens

    def is_large_text(self, tool_name: str, text: str) -> bool:
        """Whether a text result may go off-prompt (the policy's decision, cheap: no
        storing, rarely counting)."""
        return self.policy.decide_text(tool_name, text).stores

    def offload_text(self, tool_name: str, text: str, *, is_error: bool = False) -> Offloaded:
        """The core policy on one text result (large or sensitive: stored, else unchanged).

        Raises:
            OffloadError: It could not be stored (the message holds none of it).
        """
        return self.policy.offload(tool_name, text, is_error=is_error)

    async def aoffload_text(
        self, tool_name: str, text: str, *, is_error: bool = False
    ) -> Offloaded:
        """Async twin of :meth:`offload_text`; small results skip the worker thread."""
        if not self.is_large_text(tool_name, text):
            return Offloaded(text, None)
        return await self.policy.aoffload(tool_name, text, is_error=is_error)

    async def aoffload_content(
        self, tool_name: str, block: ToolContent, *, is_error: bool = False
    ) -> Offloaded:
        """The core policy on one block of a result (text cheaply pre-checked here).

        Raises:
            OffloadError: It could not be stored (the message holds none of it).
        """
        if not block.is_binary:
            return await self.aoffload_text(tool_name, block.text, is_error=is_error)
        if not self.policy.decide_block(block, tool_name=tool_name):
            return Offloaded("", None)
        return await self.policy.aoffload_binary(tool_name, block)

    async def aimage(self, namespace: str) -> ImageArtifact | None:
        """The image ``namespace`` holds, as the model may see it: within the tools'
        ``max_output_tokens`` of pixels and :data:`MAX_INLINE_IMAGE_BYTES` (a smaller copy
        when the stored one is over; the stored one stays whole). ``None`` when it holds
        no single image, is unknown to this scope, or no size fits the budget.
        """

        def load() -> ImageArtifact | None:
            try:
                if self.task_memory.stats(namespace).kind != "image":
                    return None
                artifacts = self.task_memory.load_artifacts(namespace).value
            except OffpromptError:
                return None
            images = [a for a in artifacts if isinstance(a, ImageArtifact)]
            if len(images) != 1:
                return None
            return images[0].within(self.max_output_tokens, MAX_INLINE_IMAGE_BYTES)

        return await asyncio.to_thread(load)

    def memory_tools(self) -> list[MemoryTool]:
        """The core's memory tools over this task memory, each output bounded."""
        return list(memory_tool_specs(self.task_memory, max_output_tokens=self.max_output_tokens))


def open_task_memory(home: Path, scope: Scope | None) -> TaskMemory:
    """The task memory of an offprompt home (``HOME/qdrant``), in ``scope``'s partition.

    Any number of proxies and servers may open the same home at once (issue 29): the
    stored outputs are in ``HOME/qdrant/task.db`` and ``blobs/``, and each process
    indexes them for itself.

    Raises:
        OffpromptError: The home is not a directory, or its memory cannot be opened.
    """
    if home.exists() and not home.is_dir():
        raise OffpromptError(f"home {home} is not a directory")
    home.mkdir(parents=True, exist_ok=True)
    try:
        return TaskMemory(path=home / "qdrant", scope=scope)
    except Exception as exc:
        if isinstance(exc, OffpromptError):
            raise
        raise OffpromptError(f"cannot open the task memory in {home}: {exc}") from None
