"""``OffpromptMiddleware``: off-prompt memory for ``langchain.agents.create_agent``.

One middleware, three jobs, each optional:

1. **Off-prompt tool results** (always): ``wrap_tool_call`` / ``awrap_tool_call`` pass
   every tool result (errors included, a ``Command`` carrying tool messages too)
   through the core :class:`~offprompt.task_memory.offload.OffloadPolicy`: one of at
   least ``min_tokens`` tokens is stored in a :class:`~offprompt.task_memory.TaskMemory`
   and the ``ToolMessage`` gets the reference instead, with the
   :class:`~offprompt.task_memory.offload.StoredReference` dict as artifact. The
   middleware contributes the core memory tools (``query_memory``, ``grep_memory``,
   ``read_memory``, ``json_memory``, ``summarize_memory``) so the model can get at what
   was stored.
2. **Budgeted model input** (``max_tokens``): ``wrap_model_call`` sends the model the
   newest whole runs that fit, chosen by the core's ``select_window`` as
   ``ConversationMemory.window`` chooses them (system prompt kept, a tool result never
   separated from its call), over the cached token counts of the call's messages: no
   store is built per call. The graph state
   and its checkpoints keep every message; only the model's input is cut. With a
   ``summarizer``, runs older than the last ``keep_runs`` are folded into a running
   summary (``SummaryConversationMemory``) appended to the system prompt, instead of
   being dropped.
3. **Durable record** (``memory``): every message of the agent's thread is appended,
   once, to the session named by the LangGraph ``thread_id`` (the memory's own session
   without a checkpointer) in that memory's store, after each turn (``record="turn"``,
   Griptape's per-structure strategy) or after each model and tool step
   (``record="step"``, per-task). The LangChain history and the LlamaIndex adapter read
   the same session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from offprompt.adapter_kit import (
    ESCAPED_SURROGATES_META,
    escape_in_run,
    has_lone_surrogate,
)
from offprompt.conversation import ConversationMemory, SummaryConversationMemory, Window
from offprompt.conversation.memory import is_final_answer
from offprompt.conversation.window import RunIndex, select_window, window_trace_fields
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import BaseStore, InMemoryStore, SessionVersion
from offprompt.stores.base import ScopedStore
from offprompt.summarizers import Summarizer
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MIN_TOKENS,
    OffloadPolicy,
)
from offprompt.tokens import Tokenizer
from offprompt.trace import TraceEvent, Tracer, emit_safely
from offprompt_langchain.convert import from_langchain, message_from_langchain
from offprompt_langchain.tools import (
    aoffload_message,
    check_task_memory,
    is_reference,
    offload_message,
    task_memory_tools,
)

__all__ = ["OffpromptMiddleware"]

logger = logging.getLogger("offprompt.langchain")

_CACHE_SIZE = 20_000  # token counts of messages, by content fingerprint
_SHADOWS = 256  # threads whose running summary is kept in this process
_TRIM_SESSION = "trim"


def _fingerprint(message: BaseMessage) -> Hashable | None:
    if not message.id:
        return None
    content = message.content
    # str hashes are cached on the object, so re-checking a long message is cheap.
    body = content if isinstance(content, str) else json.dumps(content, default=str)
    # Only AI messages have tool calls; getattr on another pydantic message raises
    # inside pydantic first, which costs more than the rest of the fingerprint.
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    return (
        type(message).__name__,
        message.id,
        hash(body),
        len(body),
        json.dumps(calls, default=str) if calls else None,
    )


#: ``Message.meta`` flag on a recorded message whose lone surrogates were escaped.
ESCAPED_META = ESCAPED_SURROGATES_META


def _has_lone_surrogate(message: BaseMessage) -> bool:
    return has_lone_surrogate(
        [
            message.content,
            message.id,
            message.name,
            message.additional_kwargs,
            getattr(message, "tool_calls", None),
            getattr(message, "tool_call_id", None),
        ]
    )


def _valid_unicode(message: BaseMessage) -> tuple[BaseMessage, bool]:
    """``message``, or a copy with each lone surrogate written as its ``\\udXXX`` escape.

    The core's rule for text arriving inside an agent run
    (:func:`offprompt._validation.escape_in_run`): refusing would crash a run that
    works without offprompt, so the middleware escapes in its own copy (the agent's
    messages are untouched), logs a warning and flags the recorded message
    (``meta["offprompt_escaped_surrogates"]``): the stored text is visibly altered,
    never silently.
    """
    if not _has_lone_surrogate(message):
        return message, False
    escaped, _ = escape_in_run(message.model_dump(), what=f"{type(message).__name__} {message.id}")
    return type(message).model_validate(escaped), True


def thread_id_of(runtime: Any) -> str | None:
    """The LangGraph thread id of the running graph, if it has one."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread:
        return str(thread)
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable", {})
    except RuntimeError:  # not inside a runnable context
        return None
    value = configurable.get("thread_id")
    return str(value) if value else None


class _Recorder:
    """Appends the messages of a thread to a conversation session, each one once.

    Which messages a session already holds is known by their LangChain ids (kept as
    the offprompt ``Message.id``), cached per session and caught up from the store
    whenever its version moved, so recording is idempotent, survives restarts and
    tolerates other processes appending.
    """

    def __init__(self, memory: ConversationMemory) -> None:
        self.memory = memory
        self.store: BaseStore = memory.store
        if memory.scope is not None:
            # A thread is recorded as its own session inside the memory's partition
            # (tenant, user, agent, run), not in the memory's scoped session.
            inner = memory.store
            while isinstance(inner, ScopedStore):
                inner = inner.inner
            partition = {k: v for k, v in memory.scope.fields().items() if k != "session"}
            self.store = ScopedStore(inner, Scope(**partition))
        self._seen: dict[str, tuple[SessionVersion, set[str]]] = {}
        self._memories: dict[str, ConversationMemory] = {memory.session_id: memory}
        self._lock = threading.Lock()

    def _memory_for(self, session_id: str) -> ConversationMemory:
        memory = self._memories.get(session_id)
        if memory is None:
            memory = ConversationMemory(self.store, session_id, tokenizer=self.memory.tokenizer)
            self._memories[session_id] = memory
        return memory

    def _known_ids(self, session_id: str) -> set[str]:
        version = self.store.version(session_id)
        cached = self._seen.get(session_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        if cached is not None and cached[0].epoch == version.epoch:
            fresh = self.store.read(session_id, start=cached[0].next_seq)
            return cached[1] | {s.message.id for s in fresh}
        return {s.message.id for s in self.store.read(session_id)}

    def redundant(self) -> bool:
        """True when this run's checkpointer is an ``OffpromptSaver`` on the same store:
        it already keeps the thread, each message once, as this very session."""
        from langgraph.config import get_config

        from offprompt_langchain.checkpoint import OffpromptSaver

        try:
            saver = get_config().get("configurable", {}).get("__pregel_checkpointer")
        except RuntimeError:  # not inside a LangGraph run
            return False
        if not isinstance(saver, OffpromptSaver):
            return False
        mine, theirs = self.store, getattr(saver.store, "inner", saver.store)
        here, there = getattr(mine, "path", None), getattr(theirs, "path", None)
        if theirs is mine:
            return True
        return (
            isinstance(here, Path) and isinstance(there, Path) and here.resolve() == there.resolve()
        )

    def record(self, session_id: str, messages: Sequence[BaseMessage]) -> int:
        """Append the messages the session does not hold yet; returns how many."""
        with self._lock:
            memory = self._memory_for(session_id)
            known = self._known_ids(memory.session_id)
            new = [m for m in messages if not m.id or m.id not in known]
            if new:
                valid = [_valid_unicode(m) for m in new]
                converted = from_langchain([m for m, _ in valid])
                for message, (_, escaped) in zip(converted, valid, strict=True):
                    if escaped:
                        message.meta[ESCAPED_META] = True
                memory.add_messages(converted)
                known = known | {m.id for m in new if m.id}
            self._seen[memory.session_id] = (self.store.version(memory.session_id), known)
            return len(new)


class _Shadow:
    """A thread's messages mirrored into a SummaryConversationMemory (this process only)."""

    def __init__(self, memory: SummaryConversationMemory) -> None:
        self.memory = memory
        self.fingerprints: list[Hashable | None] = []

    def diverged(self, fingerprints: list[Hashable | None]) -> bool:
        known = self.fingerprints
        return (
            len(fingerprints) < len(known)
            or fingerprints[: len(known)] != known
            or any(f is None for f in known)
        )


class OffpromptMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Agent middleware that keeps large tool results, long histories and the record off-prompt.

    Args:
        task_memory: Where large tool results are stored.
        min_tokens: Tool results with fewer tokens reach the model as they are.
        sensitive: Store every tool result, whatever its size.
        max_tokens: Budget of the model's input messages (system prompt included, tool
            schemas not); ``None`` sends every message.
        summarizer: Fold runs older than the last ``keep_runs`` into a running summary
            (e.g. ``LangChainSummarizer(model)`` or ``ExtractiveSummarizer()``); needs
            ``max_tokens``.
        keep_runs: Runs kept verbatim when summarizing.
        memory: Record the thread into ``memory``'s store, session = the thread id.
        record: ``"turn"`` (after each agent run) or ``"step"`` (after every model
            call and before the next, so tool results are recorded as they arrive).
        memory_tools: Add the five memory tools (those of ``task_memory_tools``).
        max_output_tokens: Bound of the memory tools' outputs.
        tokenizer: Counts tokens for the budget (tiktoken ``o200k_base``).
        tracer: Receives the ``window`` and ``summary`` trace events of the budgeted input
            (e.g. :class:`~offprompt_langchain.tracing.OffpromptCallbackTracer`, which forwards
            them to the run's callbacks); give the task memory its own ``tracer=`` for
            ``offload`` / ``query`` events.

    Attributes:
        tools: The memory tools this middleware contributes to the agent.
        task_memory: The task memory.
        memory: The conversation memory the thread is recorded into, if any.

    Raises:
        ValidationError: A bad argument (e.g. ``summarizer`` without ``max_tokens``).

    Example:
        >>> from langchain.agents import create_agent
        >>> from offprompt.task_memory import TaskMemory
        >>> from offprompt_langchain.testing import ScriptedChatModel
        >>> agent = create_agent(
        ...     ScriptedChatModel(script=["Hi!"]),
        ...     tools=[],
        ...     middleware=[OffpromptMiddleware(TaskMemory(), max_tokens=4000)],
        ... )
        >>> agent.invoke({"messages": [("user", "hello")]})["messages"][-1].content
        'Hi!'
    """

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        task_memory: TaskMemory,
        *,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        sensitive: bool = False,
        max_tokens: int | None = None,
        summarizer: Summarizer | None = None,
        keep_runs: int = 2,
        memory: ConversationMemory | None = None,
        record: Literal["turn", "step"] = "turn",
        memory_tools: bool = True,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        tokenizer: Tokenizer | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        super().__init__()
        self.tracer = tracer
        self.task_memory = check_task_memory(task_memory)
        self.policy = OffloadPolicy(task_memory, min_tokens=min_tokens, sensitive=sensitive)
        self.min_tokens = self.policy.min_tokens
        self.sensitive = self.policy.sensitive
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValidationError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
        if summarizer is not None and max_tokens is None:
            raise ValidationError("summarizer needs max_tokens: it only acts on the budgeted input")
        if isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 0:
            raise ValidationError(f"keep_runs must be an int >= 0, got {keep_runs!r}")
        if record not in ("turn", "step"):
            raise ValidationError(f"record must be 'turn' or 'step', got {record!r}")
        if memory is not None and not isinstance(memory, ConversationMemory):
            raise ValidationError(
                f"memory must be a ConversationMemory, got {type(memory).__name__}"
            )
        self.max_tokens = max_tokens
        self.summarizer = summarizer
        self.keep_runs = keep_runs
        self.memory = memory
        self.record = record
        self.tools: list[BaseTool] = (
            task_memory_tools(task_memory, max_output_tokens=max_output_tokens)
            if memory_tools
            else []
        )
        self._own_tools = {t.name for t in self.tools}
        if tokenizer is None:
            from offprompt.tokens import default_tokenizer

            tokenizer = default_tokenizer()
        self.tokenizer = tokenizer
        self._counts: OrderedDict[Hashable, tuple[Message, int]] = OrderedDict()
        self._shadows: OrderedDict[str, _Shadow] = OrderedDict()
        self._lock = threading.Lock()
        self._recorder = _Recorder(memory) if memory is not None else None

    # == 1. tool results ===================================================================
    def _skip(self, request: ToolCallRequest) -> bool:
        return request.tool_call.get("name") in self._own_tools

    def _candidate(self, message: Any) -> bool:
        # Errors are candidates too: a large error goes off-prompt like any output. A
        # result holding lone surrogates too: it is stored with them escaped (the core's
        # rule for text arriving inside a run, see _storable).
        return isinstance(message, ToolMessage) and not is_reference(message.artifact)

    @staticmethod
    def _storable(message: ToolMessage) -> ToolMessage:
        stored, _ = _valid_unicode(message)
        assert isinstance(stored, ToolMessage)
        return stored

    def _offload_message(self, message: ToolMessage, fallback_name: str) -> ToolMessage:
        return offload_message(self.policy, self._storable(message), fallback_name)

    async def _aoffload_message(self, message: ToolMessage, fallback_name: str) -> ToolMessage:
        return await aoffload_message(self.policy, self._storable(message), fallback_name)

    @staticmethod
    def _command_messages(result: Command[Any]) -> list[Any] | None:
        update = result.update
        if isinstance(update, dict) and isinstance(update.get("messages"), list):
            return list(update["messages"])
        return None

    @staticmethod
    def _with_messages(result: Command[Any], messages: list[Any]) -> Command[Any]:
        assert isinstance(result.update, dict)
        return dataclasses.replace(result, update={**result.update, "messages": messages})

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool, then store its result off-prompt if it is large."""
        result = handler(request)
        if self._skip(request):
            return result
        name = str(request.tool_call.get("name") or "tool")
        if isinstance(result, ToolMessage):
            return self._offload_message(result, name) if self._candidate(result) else result
        messages = self._command_messages(result) if isinstance(result, Command) else None
        if messages is None:
            return result
        assert isinstance(result, Command)
        return self._with_messages(
            result,
            [self._offload_message(m, name) if self._candidate(m) else m for m in messages],
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async twin of :meth:`wrap_tool_call` (storage in a worker thread)."""
        result = await handler(request)
        if self._skip(request):
            return result
        name = str(request.tool_call.get("name") or "tool")
        if isinstance(result, ToolMessage):
            if self._candidate(result):
                return await self._aoffload_message(result, name)
            return result
        messages = self._command_messages(result) if isinstance(result, Command) else None
        if messages is None:
            return result
        assert isinstance(result, Command)
        updated = [
            await self._aoffload_message(m, name) if self._candidate(m) else m for m in messages
        ]
        return self._with_messages(result, updated)

    # == 2. the model's input ================================================================
    def _counted(self, message: BaseMessage) -> tuple[Message, int]:
        key = _fingerprint(message)
        if key is not None:
            with self._lock:
                hit = self._counts.get(key)
                if hit is not None:
                    self._counts.move_to_end(key)
                    return hit
        converted = message_from_langchain(_valid_unicode(message)[0])
        entry = (converted, self.tokenizer.count_message(converted))
        if key is not None:
            with self._lock:
                self._counts[key] = entry
                while len(self._counts) > _CACHE_SIZE:
                    self._counts.popitem(last=False)
        return entry

    def _reserve(self, system: SystemMessage | None) -> int:
        assert self.max_tokens is not None
        tokens = self._counted(system)[1] if system is not None else 0
        if tokens >= self.max_tokens:
            logger.warning(
                "the system prompt alone (%d tokens) fills max_tokens (%d); only the newest "
                "run is sent",
                tokens,
                self.max_tokens,
            )
            return self.max_tokens - 1
        return tokens

    def _select(
        self, messages: list[AnyMessage], roles: Sequence[str], window: Window, extra: int
    ) -> list[AnyMessage]:
        """Map a window over ``messages`` back to the LangChain messages it keeps.

        The window is the pinned system messages (those before the first user message),
        ``extra`` generated messages (the summary), then a suffix of whole runs.
        """
        first_user = roles.index("user")
        pinned = [m for m, r in zip(messages[:first_user], roles, strict=False) if r == "system"]
        if window.overflow:
            last_user = len(roles) - 1 - list(roles)[::-1].index("user")
            logger.warning(
                "not even the newest run fits in max_tokens=%d; it is sent whole (over "
                "budget) so the agent keeps its tool results",
                self.max_tokens,
            )
            return pinned + messages[last_user:]
        body = len(window) - len(pinned) - extra
        if body <= 0:
            # the window's rule: an answered newest run that does not fit is left out whole
            return pinned
        start = len(messages) - body
        if roles[start] != "user":
            return pinned + messages[len(messages) - 1 - list(roles)[::-1].index("user") :]
        return pinned + messages[start:]

    def _plan(self, messages: list[AnyMessage], system: SystemMessage | None) -> list[AnyMessage]:
        counted = [self._counted(m) for m in messages]
        roles = [m.role for m, _ in counted]
        if "user" not in roles:
            return messages  # nothing to cut at: no run starts
        assert self.max_tokens is not None
        index = RunIndex.of(roles, (c for _, c in counted))
        plan = select_window(
            index,
            self.max_tokens - self._reserve(system),
            newest_answered=lambda: is_final_answer(counted[-1][0]),
            overflow="run",
        )
        if plan.overflow and plan.end > plan.start:
            logger.warning(
                "not even the newest run fits in max_tokens=%d; it is sent whole (over "
                "budget) so the agent keeps its tool results",
                self.max_tokens,
            )
        if self.tracer is not None:
            kept = [*plan.pinned, *plan.body]
            included = [{"seq": p, "role": roles[p], "tokens": counted[p][1]} for p in kept]
            fields = window_trace_fields(
                plan, included, before_seq=plan.start if plan.end > plan.start else None
            )
            emit_safely(self.tracer, TraceEvent("window", session_id=_TRIM_SESSION, **fields))
        return [messages[p] for p in plan.pinned] + messages[plan.start : plan.end]

    def _shadow(
        self, thread: str, messages: Sequence[BaseMessage]
    ) -> tuple[_Shadow, list[Message], list[Hashable | None]]:
        """The thread's shadow memory, the messages it is missing (reset if diverged), and
        the fingerprints to remember once they are added."""
        fingerprints = [_fingerprint(m) for m in messages]
        with self._lock:
            shadow = self._shadows.get(thread)
            if shadow is None:
                shadow = _Shadow(
                    SummaryConversationMemory(
                        InMemoryStore(),
                        "thread",
                        summarizer=self.summarizer,
                        offset=self.keep_runs,
                        tokenizer=self.tokenizer,
                        tracer=self.tracer,
                    )
                )
                self._shadows[thread] = shadow
            self._shadows.move_to_end(thread)
            while len(self._shadows) > _SHADOWS:
                self._shadows.popitem(last=False)
        if shadow.diverged(fingerprints):
            shadow.memory.clear()
            shadow.fingerprints = []
        new = messages[len(shadow.fingerprints) :]
        return shadow, [self._counted(m)[0] for m in new], fingerprints

    def _apply_summary(
        self,
        request: ModelRequest[Any],
        messages: list[AnyMessage],
        window: Window,
    ) -> ModelRequest[Any]:
        summaries = [m for m in window if m.meta.get("offprompt_summary")]
        roles = [self._counted(m)[0].role for m in messages]
        if "user" not in roles:
            return request
        kept = self._select(messages, roles, window, len(summaries))
        system = request.system_message
        if summaries:
            text = summaries[0].text
            if system is None:
                system = SystemMessage(content=text)
            elif isinstance(system.content, str):
                system = SystemMessage(content=f"{system.content}\n\n{text}")
            else:
                blocks = [*system.content, {"type": "text", "text": text}]
                system = SystemMessage(content=blocks)
        return request.override(messages=kept, system_message=system)

    def _trimmed(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        messages = list(request.messages)
        if self.max_tokens is None or not messages:
            return request
        if self.summarizer is None:
            kept = self._plan(messages, request.system_message)
            return request if len(kept) == len(messages) else request.override(messages=kept)
        shadow, new, fingerprints = self._shadow(thread_id_of(request.runtime) or "", messages)
        if new:
            shadow.memory.add_messages(new)
        shadow.fingerprints = fingerprints
        window = shadow.memory.window(
            self.max_tokens, reserve=self._reserve(request.system_message)
        )
        return self._apply_summary(request, messages, window)

    async def _atrimmed(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        messages = list(request.messages)
        if self.max_tokens is None or not messages:
            return request
        if self.summarizer is None:
            kept = await asyncio.to_thread(self._plan, messages, request.system_message)
            return request if len(kept) == len(messages) else request.override(messages=kept)
        thread = thread_id_of(request.runtime) or ""
        shadow, new, fingerprints = await asyncio.to_thread(self._shadow, thread, messages)
        if new:
            await shadow.memory.aadd_messages(new)
        shadow.fingerprints = fingerprints
        reserve = await asyncio.to_thread(self._reserve, request.system_message)
        window = await shadow.memory.awindow(self.max_tokens, reserve=reserve)
        return await asyncio.to_thread(self._apply_summary, request, messages, window)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Send the model the budgeted window of the conversation (the state keeps all)."""
        return handler(self._trimmed(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(await self._atrimmed(request))

    # == 3. the record =======================================================================
    def _record(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        if self._recorder is None or self._recorder.redundant():
            return
        assert self.memory is not None
        session = thread_id_of(runtime) or self.memory.session_id
        self._recorder.record(session, list(state.get("messages", [])))

    async def _arecord(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        if self._recorder is None or self._recorder.redundant():
            return
        session = thread_id_of(runtime)  # read here: the config context is this task's
        assert self.memory is not None
        await asyncio.to_thread(
            self._recorder.record, session or self.memory.session_id, list(state["messages"])
        )

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        if self.record == "step":
            self._record(state, runtime)
        return None

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        if self.record == "step":
            await self._arecord(state, runtime)
        return None

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        if self.record == "step":
            self._record(state, runtime)
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        if self.record == "step":
            await self._arecord(state, runtime)
        return None

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self._record(state, runtime)
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        await self._arecord(state, runtime)
        return None
