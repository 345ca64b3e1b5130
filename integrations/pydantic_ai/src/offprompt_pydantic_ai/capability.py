"""``OffpromptCapability``: large tool returns go to task memory, the model gets a reference.

A pydantic-ai ``AbstractCapability``: its ``after_tool_execute`` hook hands every tool
return to offprompt's one offload decision (:class:`~offprompt.task_memory.OffloadPolicy`),
so a return of ``min_tokens`` tokens or more is stored in the TaskMemory and the model
sees the reference sentence and card instead; smaller ones pass unchanged. Its toolset
holds the five memory tools (``query_memory``, ``grep_memory``, ``read_memory``,
``json_memory``, ``summarize_memory``), defined once in the core, with which the model
reads what was stored.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic_ai import FunctionToolset, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AgentToolset
from pydantic_core import to_json

from offprompt.errors import OffloadError, ValidationError
from offprompt.task_memory import MEMORY_TOOL_NAMES, TaskMemory, memory_tool_specs
from offprompt.task_memory.offload import (
    DEFAULT_MIN_TOKENS,
    OffloadPolicy,
    StoredReference,
    failure_text,
)
from offprompt.task_memory.tools import MemoryToolSpec

__all__ = ["OFFLOAD_METADATA_KEY", "OffpromptCapability", "memory_tools"]

OFFLOAD_METADATA_KEY = "offprompt"
"""The key of a stored return's :class:`StoredReference` (as a dict) in
``ToolReturn.metadata``, which the application sees and the model does not."""


def _tool(spec: MemoryToolSpec) -> Tool[Any]:
    async def run(**arguments: Any) -> str:
        return await spec.arun(**arguments)

    run.__name__ = spec.name
    return Tool.from_schema(run, spec.name, spec.description, spec.parameters)


def memory_tools(task_memory: TaskMemory, **options: Any) -> list[Tool[Any]]:
    """The five memory tools over ``task_memory`` as pydantic-ai ``Tool`` s.

    Args:
        task_memory: The memory the model reads.
        **options: Passed to :func:`~offprompt.task_memory.tools.memory_tool_specs`
            (``summarizer``, ``max_output_tokens``, ``top_n``, ``summary_tokens``).

    Example:
        >>> memory = TaskMemory()
        >>> [tool.name for tool in memory_tools(memory)]
        ['query_memory', 'grep_memory', 'read_memory', 'json_memory', 'summarize_memory']
        >>> memory.close()
    """
    return [_tool(spec) for spec in memory_tool_specs(task_memory, **options)]


def _as_text(value: object) -> str | None:
    """The text the model would see for a return value; None for what is not text or JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview, BaseException)):
        return None
    try:
        return to_json(value).decode("utf-8")
    except Exception:  # not JSON-able (a BinaryContent, an object): leave it to pydantic-ai
        return None


class OffpromptCapability(AbstractCapability[Any]):
    """Keep large tool returns off the prompt, and give the model the memory tools.

    Args:
        task_memory: Where large returns are stored (the caller closes it).
        min_tokens: Returns with fewer tokens pass through unchanged; 0 stores every
            non-empty one. Default :data:`~offprompt.task_memory.offload.DEFAULT_MIN_TOKENS`
            (the measured break-even of storing an output).

    A stored return becomes ``ToolReturn(return_value=<reference and card>,
    metadata={"offprompt": <StoredReference dict>, ...})``; the return's own
    ``content`` and ``metadata`` are kept. The memory tools' own answers are never
    stored again, and an exception a tool returns passes through.

    Example:
        >>> memory = TaskMemory()
        >>> sorted(OffpromptCapability(memory).get_toolset().tools)
        ['grep_memory', 'json_memory', 'query_memory', 'read_memory', 'summarize_memory']
        >>> memory.close()
    """

    def __init__(self, task_memory: TaskMemory, *, min_tokens: int | None = None) -> None:
        if not isinstance(task_memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
            )
        self.task_memory = task_memory
        self.policy = OffloadPolicy(
            task_memory, min_tokens=DEFAULT_MIN_TOKENS if min_tokens is None else min_tokens
        )
        self._toolset: FunctionToolset[Any] = FunctionToolset(
            memory_tools(task_memory), id="offprompt_memory"
        )

    def __repr__(self) -> str:
        return f"OffpromptCapability({self.task_memory!r}, min_tokens={self.policy.min_tokens})"

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not spec-serializable: it holds a live TaskMemory."""
        return None

    def get_toolset(self) -> AgentToolset[Any] | None:
        """The five memory tools."""
        return self._toolset

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        result: Any,
    ) -> Any:
        """Store a large return and give the model its reference; return others unchanged."""
        if call.tool_name in MEMORY_TOOL_NAMES:
            return result
        wrapped = isinstance(result, ToolReturn)
        value = result.return_value if wrapped else result
        text = _as_text(value)
        if text is None:
            return result
        try:
            offloaded = await self.policy.aoffload(
                call.tool_name, text, call_id=call.tool_call_id or None
            )
        except OffloadError as exc:
            return failure_text(exc)
        if offloaded.reference is None:
            return result
        return _stored(result if wrapped else None, offloaded.text, offloaded.reference)


def _stored(original: ToolReturn | None, text: str, reference: StoredReference) -> ToolReturn:
    """The return the model sees: the reference, the original's other fields kept."""
    metadata: dict[str, Any] = {}
    if original is not None and isinstance(original.metadata, dict):
        metadata.update(original.metadata)
    elif original is not None and original.metadata is not None:
        metadata["original_metadata"] = original.metadata
    metadata[OFFLOAD_METADATA_KEY] = reference.to_artifact()
    if original is None:
        return ToolReturn(return_value=text, metadata=metadata)
    return dataclasses.replace(original, return_value=text, metadata=metadata)
