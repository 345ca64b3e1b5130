"""Off-prompt tools for LlamaIndex: large or sensitive outputs go to task memory.

* :func:`offprompt_tool` wraps a ``FunctionTool``, any ``BaseTool`` / ``AsyncBaseTool``,
  or a plain (sync or async) function. Its output goes through the core
  :class:`~offprompt.task_memory.offload.OffloadPolicy`: stored in a
  :class:`~offprompt.task_memory.TaskMemory` when it has at least ``min_tokens`` tokens
  or when the tool is ``sensitive``; the model then sees the reference (``Output of
  "tool.call" was stored in memory with memory_name "..." and artifact_namespace
  "..."``, then the card), and ``ToolOutput.raw_output`` carries the
  :class:`~offprompt.task_memory.offload.StoredReference` dict. Large (or sensitive)
  errors, raised or returned, go through the same policy.
* :class:`TaskMemoryToolSpec` gives the model the core memory tools (``query_memory``,
  ``grep_memory``, ``read_memory``, ``json_memory``, ``summarize_memory``), each with
  a bounded answer.

A ``ToolOutput``'s text blocks are one text output; each image, audio or document
block holding its bytes is decided on its own and, when large (or sensitive), stored
as a blob (never as text) and replaced by its reference, as in every adapter. This
module only translates LlamaIndex types to and from the core.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import AudioBlock, DocumentBlock, ImageBlock, TextBlock
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, adapt_to_async_tool

from offprompt.errors import ValidationError
from offprompt.summarizers import TextSummarizer
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import (
    ACTIVITY,
    DEFAULT_MAX_OUTPUT_TOKENS,
    Offloaded,
    OffloadError,
    OffloadPolicy,
    ToolContent,
    failure_text,
)
from offprompt.task_memory.tools import MemoryToolSpec, ToolResult, memory_tool_specs

__all__ = ["ACTIVITY", "OffpromptTool", "TaskMemoryToolSpec", "offprompt_tool"]


def _binary_of(block: Any) -> ToolContent | None:
    """An image, audio or document block holding its bytes inline, else ``None``.

    A block that only names a URL or a path holds nothing to store: it passes through,
    never downloaded or read (as in the LlamaIndex memory).
    """
    data: Any
    if isinstance(block, ImageBlock):
        data, mime_type = block.image, block.image_mimetype or "image/png"
    elif isinstance(block, AudioBlock):
        data, mime_type = block.audio, f"audio/{block.format or 'wav'}"
    elif isinstance(block, DocumentBlock):
        data, mime_type = block.data, block.document_mimetype or "application/octet-stream"
    else:
        return None
    if isinstance(data, (bytes, bytearray)) and data:
        return ToolContent.of_base64(bytes(data).decode("ascii"), mime_type)
    return None


def content_blocks(output: ToolOutput) -> tuple[list[ToolContent], list[list[int]]]:
    """A ``ToolOutput``'s blocks mapped onto the core's :class:`ToolContent` kinds.

    Returns the blocks and, parallel to them, the indices of the output blocks each
    stands for: the ``TextBlock`` s are one text block, joined (as LangChain's text
    parts are); an ``ImageBlock``, ``AudioBlock`` or ``DocumentBlock`` holding its
    bytes inline is binary (stored as a blob); other blocks (a URL or a path only
    among them) pass through unchanged.
    """
    texts = [i for i, b in enumerate(output.blocks) if isinstance(b, TextBlock)]
    blocks: list[ToolContent] = []
    parts: list[list[int]] = []
    for index, block in enumerate(output.blocks):
        if texts and index == texts[0]:
            joined = "".join(output.blocks[i].text for i in texts)  # type: ignore[union-attr]
            blocks.append(ToolContent.of_text(joined))
            parts.append(texts)
        elif not isinstance(block, TextBlock):
            binary = _binary_of(block)
            if binary is not None:
                blocks.append(binary)
                parts.append([index])
    if not texts:  # an output with no text block: its (empty) text is still decided
        blocks.insert(0, ToolContent.of_text(""))
        parts.insert(0, [])
    return blocks, parts


class OffpromptTool(FunctionTool):
    """A LlamaIndex tool whose large or sensitive outputs are stored off-prompt.

    Build it with :func:`offprompt_tool`. It is a ``FunctionTool`` (so agents inject a
    workflow ``Context`` exactly as for the tool it wraps) with the wrapped tool's
    metadata: name, description, ``fn_schema``, ``return_direct``.

    Attributes:
        tool: The wrapped tool (a plain function is wrapped in a ``FunctionTool`` first).
        task_memory: Where outputs are stored.
        min_tokens: Outputs with fewer tokens pass through unless ``sensitive``.
        sensitive: Store every non-empty output, whatever its size.
    """

    def __init__(
        self,
        tool: AsyncBaseTool,
        task_memory: TaskMemory,
        *,
        min_tokens: int | None,
        sensitive: bool,
    ) -> None:
        # FunctionTool.__init__ wants a function to introspect; we delegate to a tool, so
        # set what FunctionTool's users (agents, to_langchain_tool) read ourselves.
        self.tool = tool
        self.task_memory = task_memory
        self.policy = OffloadPolicy(task_memory, min_tokens=min_tokens, sensitive=sensitive)
        self.min_tokens = self.policy.min_tokens
        self.sensitive = self.policy.sensitive
        self._metadata = tool.metadata
        inner = tool if isinstance(tool, FunctionTool) else None
        self.requires_context = bool(inner and inner.requires_context)
        self.ctx_param_name = inner.ctx_param_name if inner else None
        self.partial_params = {}
        self._field_defaults = {}
        self._callback = None
        self._async_callback = None
        self._real_fn = inner.real_fn if inner else self.call
        self._fn = lambda *a, **k: self.call(*a, **k).content
        self._async_fn = self._acontent

    async def _acontent(self, *args: Any, **kwargs: Any) -> str:
        return (await self.acall(*args, **kwargs)).content

    def __repr__(self) -> str:
        return (
            f"OffpromptTool({self.metadata.name!r}, min_tokens={self.min_tokens}, "
            f"sensitive={self.sensitive})"
        )

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    def _name(self) -> str:
        return self.metadata.get_name()

    def _finish(
        self, output: ToolOutput, parts: list[list[int]], results: list[Offloaded]
    ) -> ToolOutput:
        references = [r.reference.to_artifact() for r in results if r.reference is not None]
        if not references:
            return output  # small enough, or empty: unchanged
        replaced: dict[int, Any] = {}
        for indices, result in zip(parts, results, strict=True):
            if result.reference is not None and indices:
                replaced[indices[0]] = TextBlock(text=result.text)
                replaced.update({i: None for i in indices[1:]})  # joined into the first
        blocks = [replaced.get(i, b) for i, b in enumerate(output.blocks)]
        raw_output = dict(references[0])
        if len(references) > 1:
            raw_output["references"] = references
        return ToolOutput(
            blocks=[b for b in blocks if b is not None],
            tool_name=self._name(),
            raw_input=output.raw_input,
            raw_output=raw_output,
            is_error=output.is_error,
        )

    def _failed(self, exc: OffloadError, raw_input: dict[str, Any]) -> ToolOutput:
        # Storing failed: report it; never fall back to showing the output.
        return ToolOutput(
            content=failure_text(exc),
            tool_name=self._name(),
            raw_input=raw_input,
            raw_output=str(exc),
            is_error=True,
        )

    def _error_output(self, exc: Exception, stored: Offloaded, kwargs: Any) -> ToolOutput:
        assert stored.reference is not None
        return ToolOutput(
            content=stored.text,
            tool_name=self._name(),
            raw_input={"kwargs": kwargs},
            raw_output=stored.reference.to_artifact(),
            is_error=True,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Run the wrapped tool; store its output (or error) off-prompt if large or sensitive."""
        try:
            output = self.tool.call(*args, **kwargs)
        except Exception as exc:
            try:
                stored = self.policy.offload(self._name(), str(exc), is_error=True)
            except OffloadError as failure:
                return self._failed(failure, {"kwargs": kwargs})
            if stored.reference is None:
                raise  # a short error: the agent reports it as LlamaIndex does
            return self._error_output(exc, stored, kwargs)
        blocks, parts = content_blocks(output)
        try:
            results = self.policy.offload_content(self._name(), blocks, is_error=output.is_error)
        except OffloadError as failure:
            return self._failed(failure, output.raw_input)
        return self._finish(output, parts, results)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Async twin of :meth:`call` (storage runs in a worker thread)."""
        try:
            output = await self.tool.acall(*args, **kwargs)
        except Exception as exc:
            try:
                stored = await self.policy.aoffload(self._name(), str(exc), is_error=True)
            except OffloadError as failure:
                return self._failed(failure, {"kwargs": kwargs})
            if stored.reference is None:
                raise
            return self._error_output(exc, stored, kwargs)
        blocks, parts = content_blocks(output)
        try:
            results = await self.policy.aoffload_content(
                self._name(), blocks, is_error=output.is_error
            )
        except OffloadError as failure:
            return self._failed(failure, output.raw_input)
        return self._finish(output, parts, results)


def offprompt_tool(
    tool: BaseTool | Callable[..., Any],
    task_memory: TaskMemory,
    *,
    min_tokens: int | None = None,
    sensitive: bool = False,
) -> OffpromptTool:
    """Wrap ``tool`` so that large or sensitive outputs are stored off-prompt.

    Args:
        tool: A ``FunctionTool``, any ``BaseTool`` / ``AsyncBaseTool``, or a plain
            function (sync or async; its docstring and signature make the schema).
        task_memory: Where outputs are stored.
        min_tokens: Outputs with at least this many tokens are stored; smaller ones
            pass through. Defaults to ``task_memory.min_tokens``.
        sensitive: Store every non-empty output whatever its size, so its text never
            reaches the model.

    Returns:
        An :class:`OffpromptTool` with the same name, description and ``fn_schema``.
        When an output is stored, its ``ToolOutput`` content is the reference and
        ``raw_output`` is the :class:`~offprompt.task_memory.offload.StoredReference`
        dict (``memory_name``, ``artifact_namespace``, ``tool``, ``activity``, ``kind``,
        ``bytes``, ``lines``, ``tokens``, ``is_error``, ``sensitive`` ...). Errors go
        through the same policy: a large (or sensitive) error, raised or returned as
        ``is_error``, becomes ``ToolOutput(is_error=True)`` with its first line, its
        size and the reference (a sensitive tool's error: its kind and size, never a
        line of it); a short one is raised or returned as the wrapped tool
        does (agents turn a raised error into ``ToolOutput(is_error=True)``).

    Raises:
        ValidationError: ``tool`` is neither a tool nor a callable, ``task_memory`` is
            not a ``TaskMemory``, or ``min_tokens`` is negative.

    Example:
        >>> from offprompt.task_memory import TaskMemory
        >>> def fetch_report(day: str) -> str:
        ...     '''The full report of a day.'''
        ...     return "all good " * 2000
        >>> tool = offprompt_tool(fetch_report, TaskMemory(), min_tokens=500)
        >>> out = tool.call(day="monday")
        >>> out.content.startswith('Output of "fetch_report.call" was stored'), out.raw_output["bytes"]
        (True, 18000)
    """
    OffloadPolicy(task_memory, min_tokens=min_tokens, sensitive=sensitive)  # validates
    if isinstance(tool, OffpromptTool):
        raise ValidationError(f"tool {tool.metadata.name!r} is already an OffpromptTool")
    if isinstance(tool, BaseTool):
        wrapped = adapt_to_async_tool(tool)
    elif callable(tool):
        if inspect.iscoroutinefunction(tool):
            wrapped = FunctionTool.from_defaults(async_fn=tool)
        else:
            wrapped = FunctionTool.from_defaults(fn=tool)
    else:
        raise ValidationError(
            f"offprompt_tool needs a LlamaIndex tool or a callable, got {type(tool).__name__}"
        )
    if not wrapped.metadata.name:
        raise ValidationError("the tool has no name; give its ToolMetadata a name")
    return OffpromptTool(wrapped, task_memory, min_tokens=min_tokens, sensitive=bool(sensitive))


class _MemoryTool(FunctionTool):
    """A core memory tool as a LlamaIndex tool: a mistake is ``ToolOutput(is_error=True)``."""

    def __init__(self, spec: MemoryToolSpec) -> None:
        # The core validates the arguments; fn_schema only tells the model about them.
        self.spec = spec
        self._metadata = ToolMetadata(
            name=spec.name, description=spec.description, fn_schema=spec.args_model
        )
        self.requires_context = False
        self.ctx_param_name = None
        self.partial_params = {}
        self._field_defaults = {}
        self._callback = None
        self._async_callback = None
        self._real_fn = spec.run
        self._fn = spec.run
        self._async_fn = spec.arun

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    def _output(self, result: ToolResult, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            content=result.text,
            tool_name=self.spec.name,
            raw_input={"kwargs": arguments},
            raw_output=result.text,
            is_error=result.is_error,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Run the memory tool (keyword arguments only, as agents call it)."""
        if args:
            return self._output(
                ToolResult(f"Error: {self.spec.name} takes keyword arguments only", True), kwargs
            )
        return self._output(self.spec.call(**kwargs), kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Async twin of :meth:`call`."""
        if args:
            return self.call(*args, **kwargs)
        return self._output(await self.spec.acall(**kwargs), kwargs)


class TaskMemoryToolSpec(BaseToolSpec):
    """The core memory tools for LlamaIndex agents, over one task memory or several.

    ``to_tool_list()`` gives ``query_memory``, ``grep_memory``, ``read_memory``,
    ``json_memory`` and ``summarize_memory`` (sync and async), with the names, argument
    names, descriptions and answers of
    :func:`offprompt.task_memory.tools.memory_tool_specs` (LangChain's
    ``task_memory_tools`` gives the same). Every answer, errors included, is at most
    ``max_output_tokens`` tokens. A mistake of the model (unknown namespace, bad
    pattern, page out of range) is answered with ``ToolOutput(is_error=True)`` and a
    short message; an unknown namespace's message names no other namespace.

    The methods ``query_memory(...)`` etc. (and ``aquery_memory(...)``) run a tool
    directly with keyword arguments and return its text.

    The arguments are those of LangChain's ``task_memory_tools``, with the same meaning.

    Args:
        task_memory: One memory, or several (told apart by their ``name``: the model
            passes the reference's ``memory_name``, and may omit it with one memory).
        max_output_tokens: Bound of every answer.
        top_n: Passages ``query_memory`` returns unless the model asks otherwise.
        summarizer: Used by ``summarize_memory``; offprompt's extractive summarizer if
            omitted (a :class:`~offprompt_llamaindex.LlamaIndexSummarizer` uses an LLM).
        summary_tokens: Budget of ``summarize_memory`` (about ``max_output_tokens`` by
            default).

    Attributes:
        task_memory: The first memory given.
        task_memories: Every memory given, in order.

    Raises:
        ValidationError: No task memory, two with one name, or bad bounds.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "call", TextArtifact(value="disk full on node 7", name="logs-1"))
        >>> spec = TaskMemoryToolSpec(memory)
        >>> [t.metadata.name for t in spec.to_tool_list()]
        ['query_memory', 'grep_memory', 'read_memory', 'json_memory', 'summarize_memory']
        >>> "node 7" in spec.query_memory(artifact_namespace="logs-1", query="which node?")
        True
    """

    spec_functions = [
        ("query_memory", "aquery_memory"),
        ("grep_memory", "agrep_memory"),
        ("read_memory", "aread_memory"),
        ("json_memory", "ajson_memory"),
        ("summarize_memory", "asummarize_memory"),
    ]

    def __init__(
        self,
        task_memory: TaskMemory | Sequence[TaskMemory],
        *,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        top_n: int = 5,
        summarizer: TextSummarizer | None = None,
        summary_tokens: int | None = None,
    ) -> None:
        specs = memory_tool_specs(
            task_memory,
            summarizer=summarizer,
            max_output_tokens=max_output_tokens,
            top_n=top_n,
            summary_tokens=summary_tokens,
        )
        memories = [task_memory] if isinstance(task_memory, TaskMemory) else list(task_memory)
        self.task_memory = memories[0]
        self.task_memories = memories
        self.max_output_tokens = max_output_tokens
        self.specs = {spec.name: spec for spec in specs}

    def to_tool_list(  # type: ignore[override]
        self,
        spec_functions: list[str | tuple[str, str]] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The memory tools (all five, or those named in ``spec_functions``)."""
        if func_to_metadata_mapping:
            raise ValidationError("the memory tools' metadata is fixed by the core specs")
        names = [n if isinstance(n, str) else n[0] for n in (spec_functions or self.specs)]
        unknown = [n for n in names if n not in self.specs]
        if unknown:
            raise ValidationError(f"no memory tool named {unknown}; have {list(self.specs)}")
        return [_MemoryTool(self.specs[n]) for n in names]

    def _run(self, name: str, arguments: dict[str, Any]) -> str:
        return self.specs[name].run(**arguments)

    async def _arun(self, name: str, arguments: dict[str, Any]) -> str:
        return await self.specs[name].arun(**arguments)

    def query_memory(self, **arguments: Any) -> str:
        """Run ``query_memory`` with keyword arguments; its text."""
        return self._run("query_memory", arguments)

    async def aquery_memory(self, **arguments: Any) -> str:
        """Async twin of :meth:`query_memory`."""
        return await self._arun("query_memory", arguments)

    def grep_memory(self, **arguments: Any) -> str:
        """Run ``grep_memory`` with keyword arguments; its text."""
        return self._run("grep_memory", arguments)

    async def agrep_memory(self, **arguments: Any) -> str:
        """Async twin of :meth:`grep_memory`."""
        return await self._arun("grep_memory", arguments)

    def read_memory(self, **arguments: Any) -> str:
        """Run ``read_memory`` with keyword arguments; its text."""
        return self._run("read_memory", arguments)

    async def aread_memory(self, **arguments: Any) -> str:
        """Async twin of :meth:`read_memory`."""
        return await self._arun("read_memory", arguments)

    def json_memory(self, **arguments: Any) -> str:
        """Run ``json_memory`` with keyword arguments; its text."""
        return self._run("json_memory", arguments)

    async def ajson_memory(self, **arguments: Any) -> str:
        """Async twin of :meth:`json_memory`."""
        return await self._arun("json_memory", arguments)

    def summarize_memory(self, **arguments: Any) -> str:
        """Run ``summarize_memory`` with keyword arguments; its text."""
        return self._run("summarize_memory", arguments)

    async def asummarize_memory(self, **arguments: Any) -> str:
        """Async twin of :meth:`summarize_memory`."""
        return await self._arun("summarize_memory", arguments)
