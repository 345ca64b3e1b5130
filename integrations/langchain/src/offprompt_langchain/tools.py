"""Off-prompt LangChain tools: wrap any tool, and give the model tools to read what was stored.

* :func:`offprompt_tool` wraps a ``BaseTool``, a ``@tool`` function or a plain callable.
  Outputs of at least ``min_tokens`` tokens (every output when ``sensitive``) go into a
  :class:`~offprompt.task_memory.TaskMemory`; the model sees the reference sentence, and
  ``ToolMessage.artifact`` carries a small JSON reference (see :data:`ARTIFACT_KEYS`).
* :func:`task_memory_tools` returns ``query_memory``, ``read_memory`` and
  ``summarize_memory``, the tools the model uses to get at stored outputs; their
  outputs are bounded in tokens.

The offloading helpers (:func:`offload` / :func:`aoffload`) are shared with
:class:`~offprompt_langchain.middleware.OffpromptMiddleware`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools.base import ArgsSchema
from langchain_core.utils.pydantic import TypeBaseModel
from pydantic import BaseModel, ConfigDict, Field

from offprompt.artifacts import BaseArtifact, ErrorArtifact, InfoArtifact, TextArtifact
from offprompt.errors import NotFoundError, OffpromptError, ValidationError
from offprompt.summarizers import TextSummarizer
from offprompt.task_memory import TaskMemory

__all__ = [
    "ACTIVITY",
    "DEFAULT_MIN_TOKENS",
    "OffpromptTool",
    "aoffload",
    "is_reference",
    "offload",
    "offprompt_tool",
    "task_memory_tools",
]

DEFAULT_MIN_TOKENS = 500
"""Outputs with fewer tokens reach the model as they are (unless ``sensitive``)."""

ACTIVITY = "run"
"""The activity named in reference sentences: ``Output of "{tool}.run" was stored ...``."""

ARTIFACT_KEYS = ("offprompt", "memory_name", "artifact_namespace", "tool", "tokens", "bytes")
"""Keys of the artifact of a stored output (``offprompt == "stored"``)."""

MEMORY_TOOL_NAMES = ("query_memory", "read_memory", "summarize_memory")

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# -- offloading (shared with the middleware) --------------------------------------------


def content_text(content: Any) -> str:
    """The text to store for a tool result's content.

    A string is stored as is (so it loads back byte-identical); a list of text blocks
    is joined; anything else (images, custom blocks, objects) as JSON.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(b, str)
        or (isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str))
        for b in content
    ):
        return "".join(b if isinstance(b, str) else b["text"] for b in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def new_namespace(tool_name: str) -> str:
    """A fresh namespace named after the tool, safe for every storage."""
    stem = _UNSAFE.sub("_", tool_name or "tool").replace("..", "_").strip("._")[:64]
    return f"{stem or 'tool'}-{uuid.uuid4().hex[:16]}"


def is_reference(artifact: Any) -> bool:
    """Whether a ``ToolMessage.artifact`` is the reference of an output already stored."""
    return isinstance(artifact, Mapping) and artifact.get("offprompt") == "stored"


def _passthrough(content: Any, text: str, tool_artifact: Any) -> tuple[Any, dict[str, Any]]:
    artifact: dict[str, Any] = {"offprompt": "inline", "bytes": len(text.encode("utf-8"))}
    if tool_artifact is not None:
        artifact["tool_artifact"] = tool_artifact
    return content, artifact


def _stored(
    result: InfoArtifact, meta: Mapping[str, Any], tool_name: str, tool_artifact: Any
) -> tuple[str, dict[str, Any]]:
    artifact: dict[str, Any] = {
        "offprompt": "stored",
        "memory_name": result.meta["memory_name"],
        "artifact_namespace": result.meta["artifact_namespace"],
        "tool": tool_name,
        "tokens": int(meta.get("tokens", 0)),
        "bytes": int(meta.get("bytes", 0)),
        "sensitive": bool(meta.get("sensitive", False)),
    }
    if tool_artifact is not None:
        artifact["tool_artifact"] = tool_artifact
    return result.value, artifact


def _prepare(tool_name: str, content: Any) -> tuple[str, TextArtifact]:
    text = content_text(content)
    return text, TextArtifact(value=text, name=new_namespace(tool_name))


def _check_result(result: BaseArtifact, tool_name: str) -> None:
    if isinstance(result, ErrorArtifact):
        # Nothing of the output goes to the model: the error names the problem only.
        raise ToolException(f"{tool_name}: its output could not be stored off-prompt: {result}")


def offload(
    task_memory: TaskMemory,
    tool_name: str,
    content: Any,
    *,
    min_tokens: int,
    sensitive: bool = False,
    tool_artifact: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Store a tool result's content if it is large or sensitive.

    Returns:
        ``(content the model sees, artifact)``: the reference sentence and the stored
        reference, or the content unchanged and ``{"offprompt": "inline", "bytes": n}``.

    Raises:
        ToolException: The output could not be stored (nothing of it is returned).
    """
    text, artifact = _prepare(tool_name, content)
    result = task_memory.process_output(
        tool_name, ACTIVITY, artifact, sensitive=sensitive, min_tokens=min_tokens
    )
    _check_result(result, tool_name)
    if isinstance(result, InfoArtifact) and "artifact_namespace" in result.meta:
        meta = task_memory.namespace_metadata(result.meta["artifact_namespace"])
        return _stored(result, meta, tool_name, tool_artifact)
    return _passthrough(content, text, tool_artifact)


async def aoffload(
    task_memory: TaskMemory,
    tool_name: str,
    content: Any,
    *,
    min_tokens: int,
    sensitive: bool = False,
    tool_artifact: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Async twin of :func:`offload` (storage runs in a worker thread)."""
    text, artifact = await asyncio.to_thread(_prepare, tool_name, content)
    result = await task_memory.aprocess_output(
        tool_name, ACTIVITY, artifact, sensitive=sensitive, min_tokens=min_tokens
    )
    _check_result(result, tool_name)
    if isinstance(result, InfoArtifact) and "artifact_namespace" in result.meta:
        meta = await task_memory.anamespace_metadata(result.meta["artifact_namespace"])
        return _stored(result, meta, tool_name, tool_artifact)
    return _passthrough(content, text, tool_artifact)


def check_min_tokens(min_tokens: Any) -> int:
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 0:
        raise ValidationError(f"min_tokens must be an int >= 0, got {min_tokens!r}")
    return min_tokens


def check_task_memory(task_memory: Any) -> TaskMemory:
    if not isinstance(task_memory, TaskMemory):
        raise ValidationError(
            f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
        )
    return task_memory


# -- the wrapper -------------------------------------------------------------------------


class OffpromptTool(BaseTool):
    """A tool whose large (or sensitive) outputs are stored off-prompt.

    Build it with :func:`offprompt_tool`. It shows the model exactly what the wrapped
    tool shows (name, description, argument schema); the wrapped tool parses and
    validates the input, and its errors are reported the way it reports them
    (``handle_tool_error`` / ``handle_validation_error`` are taken over from it).

    Attributes:
        tool: The wrapped tool (with its own error handling turned off: this tool
            applies it, so an error message is never stored as an output).
        task_memory: Where outputs go.
        min_tokens: Outputs with fewer tokens pass through, unless ``sensitive``.
        sensitive: Store every output, however small.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool: BaseTool
    task_memory: TaskMemory
    min_tokens: int = DEFAULT_MIN_TOKENS
    sensitive: bool = False
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    # The wrapped tool's schema is the schema: it parses the raw input itself.
    @property
    def args(self) -> dict[str, Any]:
        return self.tool.args

    @property
    def tool_call_schema(self) -> ArgsSchema:
        return self.tool.tool_call_schema

    def get_input_schema(self, config: RunnableConfig | None = None) -> TypeBaseModel:
        return self.tool.get_input_schema(config)

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (), {"tool_input": tool_input, "tool_call_id": tool_call_id}

    def _unpack(self, output: Any) -> tuple[bool, Any, Any]:
        """``(is_a_tool_message, content, artifact)`` of the wrapped tool's output."""
        if isinstance(output, ToolMessage):
            return True, output.content, output.artifact
        return False, output, None

    def _run(
        self,
        tool_input: str | dict[str, Any],
        tool_call_id: str | None,
        run_manager: CallbackManagerForToolRun | None = None,
        config: RunnableConfig | None = None,
    ) -> tuple[Any, Any]:
        output = self.tool.run(
            tool_input,
            callbacks=run_manager.get_child() if run_manager else None,
            config=config,
            tool_call_id=tool_call_id or f"offprompt-{uuid.uuid4().hex}",
        )
        is_message, content, tool_artifact = self._unpack(output)
        if not is_message:
            return output, None  # a Command or other ToolOutputMixin passes through as is
        return offload(
            self.task_memory,
            self.name,
            content,
            min_tokens=self.min_tokens,
            sensitive=self.sensitive,
            tool_artifact=tool_artifact,
        )

    async def _arun(
        self,
        tool_input: str | dict[str, Any],
        tool_call_id: str | None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        config: RunnableConfig | None = None,
    ) -> tuple[Any, Any]:
        output = await self.tool.arun(
            tool_input,
            callbacks=run_manager.get_child() if run_manager else None,
            config=config,
            tool_call_id=tool_call_id or f"offprompt-{uuid.uuid4().hex}",
        )
        is_message, content, tool_artifact = self._unpack(output)
        if not is_message:
            return output, None
        return await aoffload(
            self.task_memory,
            self.name,
            content,
            min_tokens=self.min_tokens,
            sensitive=self.sensitive,
            tool_artifact=tool_artifact,
        )


def _as_base_tool(tool: Any, description: str | None) -> BaseTool:
    if isinstance(tool, BaseTool):
        return tool
    if not callable(tool):
        raise ValidationError(
            f"offprompt_tool needs a BaseTool, a @tool function or a callable, got {type(tool).__name__}"
        )
    doc = inspect.getdoc(tool)
    if not description and not doc:
        name = getattr(tool, "__name__", type(tool).__name__)
        raise ValidationError(
            f"{name} has no docstring: pass description= so the model knows what the tool does"
        )
    if inspect.iscoroutinefunction(tool):
        return StructuredTool.from_function(coroutine=tool, description=description)
    return StructuredTool.from_function(func=tool, description=description)


def offprompt_tool(
    tool: BaseTool | Callable[..., Any],
    task_memory: TaskMemory,
    *,
    min_tokens: int = DEFAULT_MIN_TOKENS,
    sensitive: bool = False,
    description: str | None = None,
) -> OffpromptTool:
    """Wrap a tool so that its large or sensitive outputs never enter the prompt.

    The returned tool keeps the original's name, description, argument schema,
    ``return_direct`` and error handling, and uses ``response_format=
    "content_and_artifact"``: the model gets the reference sentence (or the output
    itself when it has fewer than ``min_tokens`` tokens and is not sensitive), and
    ``ToolMessage.artifact`` gets a small JSON dict: ``{"offprompt": "stored",
    "memory_name", "artifact_namespace", "tool", "tokens", "bytes", "sensitive"}``
    (or ``{"offprompt": "inline", "bytes"}``), plus ``"tool_artifact"`` when the
    wrapped tool had an artifact of its own. Errors of the wrapped tool are reported
    as it would report them and are never stored. Sync and async.

    Args:
        tool: A ``BaseTool`` (``@tool`` functions are ``BaseTool`` s) or a plain
            function (sync or async) with a docstring.
        task_memory: Where outputs are stored.
        min_tokens: Smaller outputs pass through (0 stores everything).
        sensitive: Store every output, whatever its size.
        description: For a plain function without a docstring.

    Raises:
        ValidationError: Not a tool or callable, no description, bad ``min_tokens``.

    Example:
        >>> from offprompt.task_memory import TaskMemory
        >>> def fetch_logs(node: str) -> str:
        ...     '''Fetch the logs of a node.'''
        ...     return "disk full " * 2000
        >>> memory = TaskMemory()
        >>> wrapped = offprompt_tool(fetch_logs, memory, min_tokens=100)
        >>> message = wrapped.invoke({"type": "tool_call", "id": "1", "name": "fetch_logs", "args": {"node": "n7"}})
        >>> message.content.startswith('Output of "fetch_logs.run" was stored in memory')
        True
        >>> message.artifact["tokens"] > 100
        True
    """
    check_task_memory(task_memory)
    check_min_tokens(min_tokens)
    base = _as_base_tool(tool, description)
    if isinstance(base, OffpromptTool):
        raise ValidationError(f"tool {base.name!r} is already an offprompt tool")
    # The wrapper applies the original error handling itself, so an error message is
    # reported once, with status="error", and never stored as if it were an output.
    inner = base.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})
    return OffpromptTool(
        name=base.name,
        description=base.description,
        args_schema=base.args_schema,
        return_direct=base.return_direct,
        handle_tool_error=base.handle_tool_error,
        handle_validation_error=base.handle_validation_error,
        extras=base.extras,
        tags=base.tags,
        metadata=base.metadata,
        tool=inner,
        task_memory=task_memory,
        min_tokens=min_tokens,
        sensitive=sensitive,
    )


# -- the memory tools --------------------------------------------------------------------


class _Target(BaseModel):
    memory_name: str = Field(
        description='The memory_name quoted in the reference, e.g. "TaskMemory".'
    )
    artifact_namespace: str = Field(description="The artifact_namespace quoted in the reference.")


class QueryMemoryInput(_Target):
    query: str = Field(description="What to look for in the stored output.")


class ReadMemoryInput(_Target):
    page: int = Field(default=1, ge=1, description="The page to read, from 1.")


class SummarizeMemoryInput(_Target):
    pass


class _MemoryReader:
    """Resolves references and bounds outputs for the three memory tools."""

    def __init__(
        self,
        memories: Sequence[TaskMemory],
        *,
        max_output_tokens: int,
        top_n: int,
        summarizer: TextSummarizer | None,
        summary_tokens: int,
    ) -> None:
        self.memories = {m.name: m for m in memories}
        self.max_output_tokens = max_output_tokens
        self.top_n = top_n
        self.summarizer = summarizer
        self.summary_tokens = summary_tokens
        self.tokenizer = memories[0].tokenizer

    def resolve(self, memory_name: str, namespace: str) -> TaskMemory:
        memory = self.memories.get(memory_name)
        if memory is None:
            known = ", ".join(f'"{n}"' for n in sorted(self.memories))
            raise ToolException(
                f'Unknown memory_name "{memory_name}". Use the memory_name quoted in the '
                f"reference ({known})."
            )
        try:
            memory.namespace_metadata(namespace)
        except (NotFoundError, OffpromptError):
            raise ToolException(
                f'Unknown artifact_namespace "{namespace}" in memory "{memory_name}". Use '
                "the artifact_namespace quoted in the reference, exactly."
            ) from None
        return memory

    def bound(self, text: str, hint: str = "") -> str:
        tokens = self.tokenizer.encode(text)
        if len(tokens) <= self.max_output_tokens:
            return text
        kept = self.tokenizer.decode(tokens[: self.max_output_tokens])
        return f"{kept}\n[... truncated: {len(tokens) - self.max_output_tokens} more tokens{hint}]"

    def format_hits(self, namespace: str, memory_name: str, hits: Sequence[BaseArtifact]) -> str:
        if not hits:
            return f'No passage of artifact_namespace "{namespace}" matches the query.'
        lines = [
            f'{len(hits)} passage(s) from artifact_namespace "{namespace}" '
            f'(memory_name "{memory_name}"), best first:'
        ]
        for index, hit in enumerate(hits, 1):
            lines.append(f"[{index}] (page {hit.meta.get('page')})\n{hit.to_text()}")
        return self.bound("\n\n".join(lines), "; use read_memory for whole pages")

    def query(self, memory_name: str, artifact_namespace: str, query: str) -> str:
        memory = self.resolve(memory_name, artifact_namespace)
        hits = memory.query(artifact_namespace, query, top_n=self.top_n)
        return self.format_hits(artifact_namespace, memory_name, list(hits.value))

    async def aquery(self, memory_name: str, artifact_namespace: str, query: str) -> str:
        memory = await asyncio.to_thread(self.resolve, memory_name, artifact_namespace)
        hits = await memory.aquery(artifact_namespace, query, top_n=self.top_n)
        return await asyncio.to_thread(
            self.format_hits, artifact_namespace, memory_name, list(hits.value)
        )

    def _page(self, memory: TaskMemory, namespace: str, page: int) -> str:
        try:
            found = memory.read(namespace, page, page_tokens=self.max_output_tokens)
        except ValidationError as exc:
            raise ToolException(str(exc)) from None
        pages = found.meta.get("pages", 1)
        header = f'Page {page} of {pages} of artifact_namespace "{namespace}":\n'
        return header + self.bound(found.value)

    def read(self, memory_name: str, artifact_namespace: str, page: int = 1) -> str:
        memory = self.resolve(memory_name, artifact_namespace)
        return self._page(memory, artifact_namespace, page)

    async def aread(self, memory_name: str, artifact_namespace: str, page: int = 1) -> str:
        memory = await asyncio.to_thread(self.resolve, memory_name, artifact_namespace)
        return await asyncio.to_thread(self._page, memory, artifact_namespace, page)

    def summarize(self, memory_name: str, artifact_namespace: str) -> str:
        memory = self.resolve(memory_name, artifact_namespace)
        summary = memory.summarize(
            artifact_namespace, self.summarizer, max_tokens=self.summary_tokens
        )
        return self.bound(summary.value)

    async def asummarize(self, memory_name: str, artifact_namespace: str) -> str:
        memory = await asyncio.to_thread(self.resolve, memory_name, artifact_namespace)
        summary = await memory.asummarize(
            artifact_namespace, self.summarizer, max_tokens=self.summary_tokens
        )
        return await asyncio.to_thread(self.bound, summary.value)


def task_memory_tools(
    task_memory: TaskMemory | Sequence[TaskMemory],
    *,
    max_output_tokens: int = 2000,
    top_n: int = 4,
    summarizer: TextSummarizer | None = None,
    summary_tokens: int = 300,
) -> list[BaseTool]:
    """The tools a model uses to get at outputs stored off-prompt.

    * ``query_memory(memory_name, artifact_namespace, query)``: the ``top_n`` best
      passages (hybrid retrieval), with their page numbers.
    * ``read_memory(memory_name, artifact_namespace, page=1)``: one page of the output,
      in order (pages of about ``max_output_tokens`` tokens, whole chunks).
    * ``summarize_memory(memory_name, artifact_namespace)``: a summary of the output
      (``summarizer``, extractive and offline by default).

    Every output is at most ``max_output_tokens`` tokens. An unknown memory name,
    namespace or page gives an error ``ToolMessage`` (``status="error"``) saying what
    to use instead; nothing is raised into the agent.

    Args:
        task_memory: One memory, or several (told apart by their ``name``).
        max_output_tokens: Bound of every output.
        top_n: Passages returned by ``query_memory``.
        summarizer: A ``TextSummarizer`` (e.g. ``LangChainSummarizer``).
        summary_tokens: Budget of ``summarize_memory``.

    Raises:
        ValidationError: No task memory, two with one name, or bad bounds.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "run", TextArtifact(value="disk full on node 7", name="logs-1"))
        >>> query, read, summarize = task_memory_tools(memory)
        >>> print(query.invoke({"memory_name": "TaskMemory", "artifact_namespace": "logs-1", "query": "node"}))
        1 passage(s) from artifact_namespace "logs-1" (memory_name "TaskMemory"), best first:
        <BLANKLINE>
        [1] (page 1)
        disk full on node 7
    """
    memories = [task_memory] if isinstance(task_memory, TaskMemory) else list(task_memory)
    if not memories:
        raise ValidationError("task_memory_tools needs at least one TaskMemory")
    for memory in memories:
        check_task_memory(memory)
    names = [m.name for m in memories]
    if len(set(names)) != len(names):
        raise ValidationError(f"two task memories share a name: {names}")
    for label, value, low in (
        ("max_output_tokens", max_output_tokens, 16),
        ("top_n", top_n, 1),
        ("summary_tokens", summary_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValidationError(f"{label} must be an int >= {low}, got {value!r}")
    reader = _MemoryReader(
        memories,
        max_output_tokens=max_output_tokens,
        top_n=top_n,
        summarizer=summarizer,
        summary_tokens=summary_tokens,
    )
    where = (
        "Use the memory_name and artifact_namespace quoted in a reference like "
        '\'Output of "tool.run" was stored in memory with memory_name "..." and '
        'artifact_namespace "..."\'.'
    )
    return [
        StructuredTool.from_function(
            func=reader.query,
            coroutine=reader.aquery,
            name="query_memory",
            description=(
                "Search a tool output that was stored in memory instead of being shown, and "
                f"return the passages that best answer `query`. {where}"
            ),
            args_schema=QueryMemoryInput,
            handle_tool_error=True,
        ),
        StructuredTool.from_function(
            func=reader.read,
            coroutine=reader.aread,
            name="read_memory",
            description=(
                "Read one page of a tool output that was stored in memory, in its original "
                f"order; pages start at 1. {where}"
            ),
            args_schema=ReadMemoryInput,
            handle_tool_error=True,
        ),
        StructuredTool.from_function(
            func=reader.summarize,
            coroutine=reader.asummarize,
            name="summarize_memory",
            description=f"Summarize a tool output that was stored in memory. {where}",
            args_schema=SummarizeMemoryInput,
            handle_tool_error=True,
        ),
    ]
