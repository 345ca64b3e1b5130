"""Off-prompt LangChain tools: wrap any tool, and give the model tools to read what was stored.

* :func:`offprompt_tool` wraps a ``BaseTool``, a ``@tool`` function or a plain callable.
  Outputs of at least ``min_tokens`` tokens (every output when ``sensitive``) go into a
  :class:`~offprompt.task_memory.TaskMemory` through the core
  :class:`~offprompt.task_memory.offload.OffloadPolicy`; the model sees the reference,
  and ``ToolMessage.artifact`` carries the
  :class:`~offprompt.task_memory.offload.StoredReference` as a dict. Large (or
  sensitive) errors go through the same policy.
* :func:`task_memory_tools` returns the core memory tools (``query_memory``,
  ``grep_memory``, ``read_memory``, ``json_memory``, ``summarize_memory``) as LangChain
  tools; their outputs, errors included, are bounded in tokens.

This module only translates LangChain types to and from the core; the middleware
(:class:`~offprompt_langchain.middleware.OffpromptMiddleware`) uses the same helpers.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools.base import (  # private-ok: StructuredTool's own error rule, reused
    ArgsSchema,
    _handle_tool_error,
)
from langchain_core.utils.pydantic import TypeBaseModel
from pydantic import ConfigDict
from pydantic import ValidationError as PydanticValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from offprompt.errors import ValidationError
from offprompt.summarizers import TextSummarizer
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import (
    ACTIVITY,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MIN_TOKENS,
    Offloaded,
    OffloadError,
    OffloadPolicy,
    StoredReference,
    ToolContent,
    failure_text,
)
from offprompt.task_memory.tools import MemoryToolSpec, memory_tool_specs

__all__ = [
    "ACTIVITY",
    "DEFAULT_MIN_TOKENS",
    "OffpromptTool",
    "StoredReference",
    "is_reference",
    "offload_message",
    "offprompt_tool",
    "task_memory_tools",
]


# -- translating to and from the core policy ---------------------------------------------


def content_text(content: Any) -> str:
    """The text of a tool result's content: a string as is, else its text parts joined.

    Non-text parts (images, files, other blocks) are not in it: :func:`content_blocks`
    maps them onto the core's kinds.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part for part in map(_text_part, content) if part is not None)
    return json.dumps(content, ensure_ascii=False, default=str)


def _text_part(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if (
        isinstance(part, Mapping)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ):
        return str(part["text"])
    return None


def _binary_part(part: Mapping[str, Any]) -> ToolContent | None:
    """A LangChain image / audio / file block holding its bytes, as binary content.

    The standard blocks (``{"type": "image", "base64": ..., "mime_type": ...}``), the
    older ``source_type="base64"`` form, and OpenAI's ``image_url`` with a data URL.
    Blocks that only point elsewhere (a URL, a file id) hold nothing to store.
    """
    kind = part.get("type")
    default = {"image": "image/png", "audio": "audio/wav"}.get(
        str(kind), "application/octet-stream"
    )
    if kind in ("image", "audio", "file"):
        data = part.get("base64")
        if data is None and part.get("source_type") == "base64":
            data = part.get("data")
        if isinstance(data, str):
            mime_type = part.get("mime_type") or part.get("mimeType") or default
            return ToolContent.of_base64(data, str(mime_type))
        return ToolContent.of_data_url(part.get("url"))
    if kind == "image_url":
        image_url = part.get("image_url")
        url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
        return ToolContent.of_data_url(url)
    return None


def content_blocks(content: Any) -> tuple[list[ToolContent], list[Any]]:
    """A tool result's content mapped onto the core's :class:`ToolContent` kinds.

    Returns the blocks and, parallel to them, the parts each one stands for: the text
    parts (strings and ``{"type": "text"}`` blocks) are one text block, joined, so a
    string loads back byte-identical; an image, audio or file block holding its bytes
    is binary (stored as a blob, never as text); any other block is JSON; a block that
    only points elsewhere (an image URL) is JSON too, and small enough to pass.
    """
    if not isinstance(content, list):
        return [ToolContent.of_text(content_text(content))], [content]
    texts = [(i, part) for i, part in enumerate(content) if _text_part(part) is not None]
    blocks: list[ToolContent] = []
    parts: list[Any] = []
    for index, part in enumerate(content):
        if texts and index == texts[0][0]:
            blocks.append(ToolContent.of_text(content_text([p for _, p in texts])))
            parts.append([i for i, _ in texts])
        elif _text_part(part) is None:
            binary = _binary_part(part) if isinstance(part, Mapping) else None
            blocks.append(binary or ToolContent.of_json(part))
            parts.append([index])
    return blocks, parts


def _rebuilt(content: Any, parts: list[Any], results: Sequence[Offloaded]) -> Any:
    """``content`` with every stored part replaced by the text the policy gave."""
    if not isinstance(content, list):
        return results[0].text if results[0].reference is not None else content
    replaced: dict[int, dict[str, Any] | None] = {}
    for indices, result in zip(parts, results, strict=True):
        if result.reference is None:
            continue
        replaced[indices[0]] = {"type": "text", "text": result.text}
        replaced.update({i: None for i in indices[1:]})  # joined into the first one
    out = []
    for index, part in enumerate(content):
        if index not in replaced:
            out.append(part)
        elif replaced[index] is not None:
            out.append(replaced[index])
    return out


def is_reference(artifact: Any) -> bool:
    """Whether a ``ToolMessage.artifact`` is the reference of an output already stored."""
    return isinstance(artifact, Mapping) and artifact.get("offprompt") == "stored"


def _artifact(
    results: Sequence[Offloaded], blocks: Sequence[ToolContent], tool_artifact: Any
) -> dict[str, Any]:
    references = [r.reference.to_artifact() for r in results if r.reference is not None]
    artifact: dict[str, Any]
    if not references:
        size = sum(b.binary_size() if b.is_binary else len(b.text.encode("utf-8")) for b in blocks)
        artifact = {"offprompt": "inline", "bytes": size}
    else:
        artifact = dict(references[0])
        if len(references) > 1:
            artifact["references"] = references
    if tool_artifact is not None:
        artifact["tool_artifact"] = tool_artifact
    return artifact


def offload_message(policy: OffloadPolicy, message: ToolMessage, tool_name: str) -> ToolMessage:
    """``message`` with its content stored off-prompt if the policy says so.

    The content is mapped onto the core's kinds (:func:`content_blocks`): its text, and
    each image or file as a blob. A message left inline is returned unchanged; a stored
    one gets the reference(s) in place of what was stored and the
    :class:`StoredReference` dict (plus ``tool_artifact``, and ``references`` when
    several blocks were stored) as artifact. An error message (``status="error"``)
    goes through the same policy. When storing fails, the result is an error message
    with :func:`~offprompt.task_memory.offload.failure_text`, none of the output.
    """
    blocks, parts = content_blocks(message.content)
    try:
        results = policy.offload_content(
            message.name or tool_name,
            blocks,
            call_id=message.tool_call_id,
            is_error=message.status == "error",
        )
    except OffloadError as exc:
        return _failed(message, exc)
    return _translated(message, blocks, parts, results)


def _failed(message: ToolMessage, exc: OffloadError) -> ToolMessage:
    update = {"content": failure_text(exc), "status": "error", "artifact": None}
    return message.model_copy(update=update)


def _translated(
    message: ToolMessage,
    blocks: Sequence[ToolContent],
    parts: list[Any],
    results: Sequence[Offloaded],
) -> ToolMessage:
    """``message`` as the policy decided: unchanged when left inline, else the reference."""
    if all(r.reference is None for r in results):
        return message
    artifact = _artifact(results, blocks, message.artifact)
    content = _rebuilt(message.content, parts, results)
    return message.model_copy(update={"content": content, "artifact": artifact})


async def aoffload_message(
    policy: OffloadPolicy, message: ToolMessage, tool_name: str
) -> ToolMessage:
    """Async twin of :func:`offload_message` (storage in a worker thread)."""
    blocks, parts = content_blocks(message.content)
    try:
        results = await policy.aoffload_content(
            message.name or tool_name,
            blocks,
            call_id=message.tool_call_id,
            is_error=message.status == "error",
        )
    except OffloadError as exc:
        return _failed(message, exc)
    return _translated(message, blocks, parts, results)


def check_task_memory(task_memory: Any) -> TaskMemory:
    """``task_memory`` if it is an offprompt ``TaskMemory``; else ``ValidationError``."""
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
            applies it, after the offload policy has seen the error).
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

    def _policy(self) -> OffloadPolicy:
        return OffloadPolicy(self.task_memory, min_tokens=self.min_tokens, sensitive=self.sensitive)

    @staticmethod
    def _finish(
        output: ToolMessage, blocks: list[ToolContent], parts: list[Any], results: list[Offloaded]
    ) -> tuple[Any, Any]:
        content = _rebuilt(output.content, parts, results)
        return content, _artifact(results, blocks, output.artifact)

    def _error_text(self, exc: Exception) -> str:
        if isinstance(exc, ToolException) and self.handle_tool_error:
            return content_text(_handle_tool_error(exc, flag=self.handle_tool_error))
        return str(exc)

    def _stored_error(self, exc: Exception, stored: Offloaded, tool_call_id: str | None) -> Any:
        """What a large (or sensitive) error becomes once stored: never its full text."""
        assert stored.reference is not None
        if self.handle_tool_error and tool_call_id:
            message = ToolMessage(
                content=stored.text,
                artifact=stored.reference.to_artifact(),
                status="error",
                tool_call_id=tool_call_id,
                name=self.name,
            )
            return message, None
        # Raised on: the agent (or handle_tool_error) reports the reference, not the error.
        raise ToolException(stored.text) from None

    def _run(
        self,
        tool_input: str | dict[str, Any],
        tool_call_id: str | None,
        run_manager: CallbackManagerForToolRun | None = None,
        config: RunnableConfig | None = None,
    ) -> tuple[Any, Any]:
        policy = self._policy()
        try:
            output = self.tool.run(
                tool_input,
                callbacks=run_manager.get_child() if run_manager else None,
                config=config,
                tool_call_id=tool_call_id or f"offprompt-{uuid.uuid4().hex}",
            )
        except (PydanticValidationError, ValidationErrorV1):
            raise  # bad input from the model: handle_validation_error reports it
        except Exception as exc:
            error = self._error_text(exc)
            stored = self._offload(policy, error, tool_call_id, is_error=True)
            if stored.reference is None:
                raise
            return self._stored_error(exc, stored, tool_call_id)
        if not isinstance(output, ToolMessage):
            return output, None  # a Command or other ToolOutputMixin passes through as is
        blocks, parts = content_blocks(output.content)
        try:
            results = policy.offload_content(self.name, blocks, call_id=tool_call_id)
        except OffloadError as exc:
            return self._failure(exc, tool_call_id)
        return self._finish(output, blocks, parts, results)

    async def _arun(
        self,
        tool_input: str | dict[str, Any],
        tool_call_id: str | None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        config: RunnableConfig | None = None,
    ) -> tuple[Any, Any]:
        policy = self._policy()
        try:
            output = await self.tool.arun(
                tool_input,
                callbacks=run_manager.get_child() if run_manager else None,
                config=config,
                tool_call_id=tool_call_id or f"offprompt-{uuid.uuid4().hex}",
            )
        except (PydanticValidationError, ValidationErrorV1):
            raise  # bad input from the model: handle_validation_error reports it
        except Exception as exc:
            error = self._error_text(exc)
            stored = await self._aoffload(policy, error, tool_call_id, is_error=True)
            if stored.reference is None:
                raise
            return self._stored_error(exc, stored, tool_call_id)
        if not isinstance(output, ToolMessage):
            return output, None  # a Command or other ToolOutputMixin passes through as is
        blocks, parts = content_blocks(output.content)
        try:
            results = await policy.aoffload_content(self.name, blocks, call_id=tool_call_id)
        except OffloadError as exc:
            return self._failure(exc, tool_call_id)
        return self._finish(output, blocks, parts, results)

    def _failure(self, exc: OffloadError, tool_call_id: str | None) -> tuple[Any, Any]:
        """The output could not be stored: the core's failure text, none of the output.

        An error ``ToolMessage`` when the call has an id (what every adapter shows the
        model); raised as a ``ToolException`` with that text otherwise.
        """
        text = failure_text(exc)
        if tool_call_id:
            message = ToolMessage(
                content=text, status="error", tool_call_id=tool_call_id, name=self.name
            )
            return message, None
        raise ToolException(text) from None

    def _offload(
        self, policy: OffloadPolicy, text: str, call_id: str | None, *, is_error: bool = False
    ) -> Offloaded:
        try:
            return policy.offload(self.name, text, call_id=call_id, is_error=is_error)
        except OffloadError as exc:
            raise ToolException(failure_text(exc)) from None

    async def _aoffload(
        self, policy: OffloadPolicy, text: str, call_id: str | None, *, is_error: bool = False
    ) -> Offloaded:
        try:
            return await policy.aoffload(self.name, text, call_id=call_id, is_error=is_error)
        except OffloadError as exc:
            raise ToolException(failure_text(exc)) from None


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
    "content_and_artifact"``: the model gets the reference (or the output itself when
    it has fewer than ``min_tokens`` tokens and is not sensitive), and
    ``ToolMessage.artifact`` gets :meth:`StoredReference.to_artifact`: ``{"offprompt":
    "stored", "memory_name", "artifact_namespace", "tool", "activity", "kind", "bytes",
    "lines", "tokens", "tokens_estimated", "is_error", "sensitive"}`` (or
    ``{"offprompt": "inline", "bytes"}``), plus ``"tool_artifact"`` when the wrapped
    tool had an artifact of its own. Sync and async.

    Errors go through the same policy: an error of at least ``min_tokens`` tokens (any
    error, when ``sensitive``) is stored, and the model sees its first line, its size
    and the reference (a sensitive tool's error: its kind and size, never a line of it):
    as an error ``ToolMessage`` carrying the reference when the
    tool handles its errors (``handle_tool_error``, whatever the exception's type), else
    raised as a ``ToolException`` whose message is that text. Smaller errors are reported exactly
    as the wrapped tool reports them; bad input (argument validation) is never stored.

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
        >>> message.content.startswith('Output of "fetch_logs.call" was stored in memory')
        True
        >>> message.artifact["tokens"] > 100
        True
    """
    check_task_memory(task_memory)
    OffloadPolicy(task_memory, min_tokens=min_tokens, sensitive=sensitive)  # validates
    base = _as_base_tool(tool, description)
    if isinstance(base, OffpromptTool):
        raise ValidationError(f"tool {base.name!r} is already an offprompt tool")
    # The wrapper applies the original error handling itself, so an error is reported
    # once, with status="error", after the policy has seen it.
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


def _langchain_tool(spec: MemoryToolSpec) -> BaseTool:
    """A core memory tool as a LangChain tool: a mistake is a ``status="error"`` message."""

    def run(**arguments: Any) -> str:
        result = spec.call(**arguments)
        if result.is_error:
            raise ToolException(result.text)
        return result.text

    async def arun(**arguments: Any) -> str:
        result = await spec.acall(**arguments)
        if result.is_error:
            raise ToolException(result.text)
        return result.text

    # The JSON schema, not the pydantic model: the core validates the arguments, so a
    # bad argument gets the same bounded error text in every framework.
    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=spec.parameters,
        func=run,
        coroutine=arun,
        handle_tool_error=True,
    )


def task_memory_tools(
    task_memory: TaskMemory | Sequence[TaskMemory],
    *,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    top_n: int = 5,
    summarizer: TextSummarizer | None = None,
    summary_tokens: int | None = None,
    sql: bool = False,
) -> list[BaseTool]:
    """The tools a model uses to get at outputs stored off-prompt (the core's five, and
    ``sql_memory`` with ``sql=True``).

    * ``query_memory(memory_name, artifact_namespace, query, top_n=None)``: the best
      passages (hybrid retrieval), with their page numbers.
    * ``grep_memory(memory_name, artifact_namespace, pattern, regex=False,
      ignore_case=False, context=0, max_matches=20)``: matching lines, numbered.
    * ``read_memory(memory_name, artifact_namespace, page=None, start_line=None,
      end_line=None)``: a page, or a line range.
    * ``json_memory(memory_name, artifact_namespace, expression=None)``: the JSON
      outline, or the value of a JMESPath expression.
    * ``summarize_memory(memory_name, artifact_namespace)``: a summary (``summarizer``,
      extractive and offline by default).

    Names, arguments, descriptions and answers are those of
    :func:`offprompt.task_memory.tools.memory_tool_specs` (LlamaIndex's
    ``TaskMemoryToolSpec`` gives the same). Every answer, errors included, is at most
    ``max_output_tokens`` tokens; a mistake (unknown memory name or namespace, bad
    pattern, page out of range) gives an error ``ToolMessage`` (``status="error"``)
    saying what to use instead; nothing is raised into the agent.

    Args:
        task_memory: One memory, or several (told apart by their ``name``).
        max_output_tokens: Bound of every output.
        top_n: Passages ``query_memory`` returns unless the model asks otherwise.
        summarizer: A ``TextSummarizer`` (e.g. ``LangChainSummarizer``).
        summary_tokens: Budget of ``summarize_memory``.
        sql: Add ``sql_memory(references, query)``, SQL over stored outputs on DuckDB
            (needs ``offprompt[sql]``; see ``TaskMemory.sql``).

    Raises:
        ValidationError: No task memory, two with one name, or bad bounds.
        OffpromptError: ``sql=True`` without DuckDB installed.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "call", TextArtifact(value="disk full on node 7", name="logs-1"))
        >>> query, grep, read, json_memory, summarize = task_memory_tools(memory)
        >>> print(query.invoke({"memory_name": "TaskMemory", "artifact_namespace": "logs-1", "query": "node"}))
        1 passage(s) from artifact_namespace "logs-1" (memory_name "TaskMemory"), best first:
        <BLANKLINE>
        [1] (page 1)
        disk full on node 7
    """
    specs = memory_tool_specs(
        task_memory,
        summarizer=summarizer,
        max_output_tokens=max_output_tokens,
        top_n=top_n,
        summary_tokens=summary_tokens,
        sql=sql,
    )
    return [_langchain_tool(spec) for spec in specs]
