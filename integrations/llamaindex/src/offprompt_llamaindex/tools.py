"""Off-prompt tools for LlamaIndex: large or sensitive outputs go to task memory.

* :func:`offprompt_tool` wraps a ``FunctionTool``, any ``BaseTool`` / ``AsyncBaseTool``,
  or a plain (sync or async) function. Its output is stored in a
  :class:`~offprompt.task_memory.TaskMemory` when it has at least ``min_tokens`` tokens
  or when the tool is ``sensitive``; the model then sees only the reference sentence
  (``Output of "tool.call" was stored in memory with memory_name "..." and
  artifact_namespace "..."``), and ``ToolOutput.raw_output`` carries the reference as a
  dict (memory name, namespace, size).
* :class:`TaskMemoryToolSpec` gives the model ``query_memory``, ``read_memory`` and
  ``summarize_memory`` to look into what was stored, each with a bounded answer.

Only the text of an output goes off-prompt; image and other non-text blocks of a
``ToolOutput`` are passed through unchanged.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import TextBlock
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, adapt_to_async_tool

from offprompt.artifacts import BaseArtifact, ErrorArtifact, InfoArtifact, TextArtifact
from offprompt.errors import NotFoundError, ValidationError
from offprompt.summarizers import TextSummarizer
from offprompt.task_memory import TaskMemory

__all__ = ["ACTIVITY", "OffpromptTool", "TaskMemoryToolSpec", "offprompt_tool"]

# The activity named in references: a LlamaIndex tool has one entry point, its call.
ACTIVITY = "call"


def _text_of(output: ToolOutput) -> str:
    return "".join(b.text for b in output.blocks if isinstance(b, TextBlock))


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
        min_tokens: int,
        sensitive: bool,
    ) -> None:
        # FunctionTool.__init__ wants a function to introspect; we delegate to a tool, so
        # set what FunctionTool's users (agents, to_langchain_tool) read ourselves.
        self.tool = tool
        self.task_memory = task_memory
        self.min_tokens = min_tokens
        self.sensitive = sensitive
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

    def _namespace(self) -> str:
        name = self.metadata.name or "tool"
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:100]
        return f"{safe}-{uuid.uuid4().hex[:16]}"

    def _artifact(self, output: ToolOutput) -> TextArtifact | None:
        if output.is_error:
            return None  # errors are reported as the tool reported them
        text = _text_of(output)
        return TextArtifact(value=text, name=self._namespace()) if text.strip() else None

    def _finish(
        self, output: ToolOutput, artifact: TextArtifact, result: BaseArtifact
    ) -> ToolOutput:
        tool_name = self.metadata.get_name()
        if isinstance(result, ErrorArtifact):
            # Storing failed: report it; never fall back to showing the output.
            return ToolOutput(
                content=f"Error: {result.value}",
                tool_name=tool_name,
                raw_input=output.raw_input,
                raw_output=result.value,
                is_error=True,
            )
        if not isinstance(result, InfoArtifact) or "artifact_namespace" not in result.meta:
            return output  # small enough, or empty: unchanged
        reference = {
            "memory_name": result.meta["memory_name"],
            "artifact_namespace": result.meta["artifact_namespace"],
            "tool": tool_name,
            "activity": ACTIVITY,
            "bytes": len(artifact.value.encode("utf-8")),
            "characters": len(artifact.value),
            "sensitive": self.sensitive,
            "reference": result.value,
        }
        other = [b for b in output.blocks if not isinstance(b, TextBlock)]
        return ToolOutput(
            blocks=[TextBlock(text=str(result.value)), *other],
            tool_name=tool_name,
            raw_input=output.raw_input,
            raw_output=reference,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Run the wrapped tool; store its output off-prompt if large or sensitive."""
        output = self.tool.call(*args, **kwargs)
        artifact = self._artifact(output)
        if artifact is None:
            return output
        result = self.task_memory.process_output(
            self.metadata.get_name(),
            ACTIVITY,
            artifact,
            sensitive=self.sensitive,
            min_tokens=self.min_tokens,
        )
        return self._finish(output, artifact, result)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Async twin of :meth:`call` (storage runs in a worker thread)."""
        output = await self.tool.acall(*args, **kwargs)
        artifact = self._artifact(output)
        if artifact is None:
            return output
        result = await self.task_memory.aprocess_output(
            self.metadata.get_name(),
            ACTIVITY,
            artifact,
            sensitive=self.sensitive,
            min_tokens=self.min_tokens,
        )
        return self._finish(output, artifact, result)


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
        When an output is stored, its ``ToolOutput`` content is the reference sentence
        and ``raw_output`` is ``{"memory_name", "artifact_namespace", "tool",
        "activity", "bytes", "characters", "sensitive", "reference"}``. Errors of the
        wrapped tool propagate as its own errors do (agents turn them into
        ``ToolOutput(is_error=True)``); an ``is_error`` output is never stored.

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
    if not isinstance(task_memory, TaskMemory):
        raise ValidationError(
            f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
        )
    threshold = task_memory.min_tokens if min_tokens is None else min_tokens
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise ValidationError(f"min_tokens must be a non-negative int, got {min_tokens!r}")
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
    return OffpromptTool(wrapped, task_memory, min_tokens=threshold, sensitive=bool(sensitive))


class TaskMemoryToolSpec(BaseToolSpec):
    """Tools that let the model look into task memory: query, read a page, summarize.

    ``to_tool_list()`` gives ``query_memory``, ``read_memory`` and ``summarize_memory``
    as ``FunctionTool`` s with sync and async versions. Every answer is at most
    ``max_output_tokens`` tokens. An unknown namespace raises
    :class:`~offprompt.errors.NotFoundError` naming the known ones, which an agent
    reports to the model as the tool's error.

    Args:
        task_memory: The memory to read.
        max_output_tokens: Bound of every answer.
        max_top_n: Most chunks ``query_memory`` returns, whatever the model asks.
        summarizer: Used by ``summarize_memory``; offprompt's extractive summarizer if
            omitted (a :class:`~offprompt_llamaindex.LlamaIndexSummarizer` uses an LLM).

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "call", TextArtifact(value="disk full on node 7", name="logs-1"))
        >>> spec = TaskMemoryToolSpec(memory)
        >>> [t.metadata.name for t in spec.to_tool_list()]
        ['query_memory', 'read_memory', 'summarize_memory']
        >>> "node 7" in spec.query_memory("logs-1", "which node?")
        True
    """

    spec_functions = [
        ("query_memory", "aquery_memory"),
        ("read_memory", "aread_memory"),
        ("summarize_memory", "asummarize_memory"),
    ]

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        max_output_tokens: int = 2000,
        max_top_n: int = 10,
        summarizer: TextSummarizer | None = None,
    ) -> None:
        if not isinstance(task_memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
            )
        for name, value in (("max_output_tokens", max_output_tokens), ("max_top_n", max_top_n)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{name} must be an int >= 1, got {value!r}")
        self.task_memory = task_memory
        self.max_output_tokens = max_output_tokens
        self.max_top_n = max_top_n
        self.summarizer = summarizer

    # -- shared helpers -------------------------------------------------------------------
    def _bound(self, text: str) -> str:
        tokenizer = self.task_memory.tokenizer
        tokens = tokenizer.encode(text)
        if len(tokens) <= self.max_output_tokens:
            return text
        note = "\n[... cut to the tool's output limit]"
        keep = max(1, self.max_output_tokens - tokenizer.count(note))
        return str(tokenizer.decode(tokens[:keep])) + note

    def _check(self, namespace: Any) -> str:
        if not isinstance(namespace, str) or not namespace.strip():
            raise ValidationError(f"namespace must be a non-empty string, got {namespace!r}")
        known = self.task_memory.namespaces()
        if namespace not in known:
            listed = ", ".join(f'"{n}"' for n in known[:20]) or "none"
            more = f" (and {len(known) - 20} more)" if len(known) > 20 else ""
            raise NotFoundError(
                f'Unknown artifact_namespace "{namespace}" in memory '
                f'"{self.task_memory.name}". Known namespaces: {listed}{more}.'
            )
        return namespace

    def _top_n(self, top_n: Any) -> int:
        if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
            raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
        return min(top_n, self.max_top_n)

    def _format_hits(self, namespace: str, query: str, hits: list[BaseArtifact]) -> str:
        if not hits:
            return f'No passage of "{namespace}" matches {query!r}.'
        parts = [
            f"[{i}] (page {h.meta.get('page', '?')})\n{h.to_text()}" for i, h in enumerate(hits, 1)
        ]
        return self._bound("\n\n".join(parts))

    def _format_page(self, page: TextArtifact) -> str:
        header = f"[page {page.meta.get('page', 1)} of {page.meta.get('pages', 1)}]\n"
        return self._bound(header + page.value)

    def _page_tokens(self) -> int:
        return min(self.task_memory.page_tokens, self.max_output_tokens)

    # -- the tools ------------------------------------------------------------------------
    def query_memory(self, namespace: str, query: str, top_n: int = 5) -> str:
        """Search a stored tool output for the passages that best answer a question.

        Args:
            namespace: The artifact_namespace given in the tool's reference.
            query: What to look for.
            top_n: How many passages to return.
        """
        namespace = self._check(namespace)
        hits = self.task_memory.query(namespace, query, self._top_n(top_n))
        return self._format_hits(namespace, query, list(hits.value))

    async def aquery_memory(self, namespace: str, query: str, top_n: int = 5) -> str:
        """Async twin of ``query_memory``."""
        namespace = await self._acheck(namespace)
        hits = await self.task_memory.aquery(namespace, query, self._top_n(top_n))
        return self._format_hits(namespace, query, list(hits.value))

    def read_memory(self, namespace: str, page: int = 1) -> str:
        """Read one page of a stored tool output, in its original order.

        Args:
            namespace: The artifact_namespace given in the tool's reference.
            page: The page number, from 1; the answer says how many pages there are.
        """
        namespace = self._check(namespace)
        return self._format_page(self.task_memory.read(namespace, page, self._page_tokens()))

    async def aread_memory(self, namespace: str, page: int = 1) -> str:
        """Async twin of ``read_memory``."""
        namespace = await self._acheck(namespace)
        text = await self.task_memory.aread(namespace, page, self._page_tokens())
        return self._format_page(text)

    def summarize_memory(self, namespace: str) -> str:
        """Summarize a stored tool output.

        Args:
            namespace: The artifact_namespace given in the tool's reference.
        """
        namespace = self._check(namespace)
        summary = self.task_memory.summarize(
            namespace, self.summarizer, max_tokens=self.max_output_tokens
        )
        return self._bound(summary.value)

    async def asummarize_memory(self, namespace: str) -> str:
        """Async twin of ``summarize_memory``."""
        namespace = await self._acheck(namespace)
        summary = await self.task_memory.asummarize(
            namespace, self.summarizer, max_tokens=self.max_output_tokens
        )
        return self._bound(summary.value)

    async def _acheck(self, namespace: Any) -> str:
        import asyncio

        return await asyncio.to_thread(self._check, namespace)
