"""``OffpromptHistory``: every pydantic-ai run recorded whole on an offprompt store.

A capability: at ``after_run`` it records the run (its ``RunRecord``: run id,
conversation id, agent name, start time) and the messages the run added, so nothing a
compaction in a later run drops from the live context is lost. (A compaction that
rewrites the history inside a run, before it ends, such as ``SummarizingCompaction``
with a low ``max_messages``, leaves ``after_run`` only the compacted messages: pair it
with the harness's ``StepPersistence`` for those runs.) It is also the harness's
``HistorySource`` (``list_runs``, ``run_history``), which ``ConversationSearch`` reads,
and it keeps a whole ``pydantic_ai.Conversation`` (messages, usage, deferred tool
requests) with :meth:`~OffpromptHistory.save` / :meth:`~OffpromptHistory.load`.

Each ``ModelMessage`` is one offprompt :class:`~offprompt.messages.Message` in the
session ``session_id``: its readable text as content (so offprompt's own search and
views see it), and the message exactly as ``ModelMessagesTypeAdapter`` writes it, with
its run, in ``meta["_pydantic_ai"]``, from which it is read back unchanged.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import pydantic
from pydantic_ai import Conversation, ConversationTypeAdapter, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResult

# The harness's own rule for "compaction artifacts" (SummarizingCompaction's marked
# summaries, and the legacy summary system prompt), so run_history leaves out exactly what
# its SnapshotHistorySource leaves out; an application's own CompactionPart stays.
from pydantic_ai_harness.conversation_search._source import without_summary_artifacts
from pydantic_ai_harness.step_persistence import RunRecord

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.conversation.opening import open_memory
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.stores import BaseStore, release_store

__all__ = ["DEFAULT_SESSION", "RESERVED", "OffpromptHistory"]

RESERVED = "_pydantic_ai"
"""The ``Message.meta`` key holding the pydantic-ai message and its run."""

DEFAULT_SESSION = "pydantic-ai"
"""The session the runs go to when no ``session_id`` is given."""

_RUN_ADAPTER: pydantic.TypeAdapter[RunRecord] = pydantic.TypeAdapter(RunRecord)
_CONVERSATION_SUFFIX = ".conversation"


def _text_of(message: ModelMessage) -> str:
    """A readable rendering of a message's text, tool calls and tool returns."""
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, (TextPart, UserPromptPart)) and isinstance(part.content, str):
            lines.append(part.content)
        elif isinstance(part, ToolCallPart):
            lines.append(f"{part.tool_name}({part.args_as_json_str()})")
        elif isinstance(part, ToolReturnPart):
            lines.append(f"{part.tool_name} -> {part.model_response_str()}")
    return "\n".join(lines)


def _role(message: ModelMessage) -> str:
    if isinstance(message, ModelResponse):
        return "assistant"
    if message.parts and all(isinstance(p, ToolReturnPart) for p in message.parts):
        return "tool"
    return "user"


def _to_offprompt(message: ModelMessage, run: dict[str, Any]) -> Message:
    text = _text_of(message)
    raw = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    return Message(
        role=_role(message),
        content=[TextArtifact(value=text)] if text else [],
        meta={RESERVED: {"run": run, "message": raw}},
    )


def _same_conversation(run: RunRecord, other: RunRecord) -> bool:
    return run.conversation_id is not None and run.conversation_id == other.conversation_id


class OffpromptHistory(AbstractCapability[Any]):
    """Record every run of an agent, read them back as the harness's ``HistorySource``.

    Args:
        session_id: The offprompt session the runs are kept in
            (:data:`DEFAULT_SESSION` when omitted).
        path: A SQLite file (shared per file in this process); with neither ``path``
            nor ``store``, offprompt's default file.
        store: Any offprompt conversation store (the caller closes it).

    Example:
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.models.test import TestModel
        >>> import asyncio, tempfile, pathlib
        >>> history = OffpromptHistory(path=pathlib.Path(tempfile.mkdtemp()) / "runs.db")
        >>> agent = Agent(TestModel(custom_output_text="hi"), capabilities=[history])
        >>> result = agent.run_sync("hello")
        >>> [run.run_id for run in asyncio.run(history.list_runs())] == [result.run_id]
        True
        >>> history.close()
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        store: BaseStore | None = None,
    ) -> None:
        self._owns_store = store is None
        self.memory: ConversationMemory = open_memory(
            DEFAULT_SESSION if session_id is None else session_id, store=store, path=path
        )
        self.session_id: str = self.memory.session_id
        self._store: BaseStore = self.memory.store
        self._conversation = ConversationMemory(self._store, self.session_id + _CONVERSATION_SUFFIX)
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"OffpromptHistory(session_id={self.session_id!r}, store={self._store!r})"

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not spec-serializable: it holds an open store."""
        return None

    # -- the capability -----------------------------------------------------------------

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Record the run and the messages it added."""
        agent = ctx.agent
        run = RunRecord(
            run_id=result.run_id,
            conversation_id=result.conversation_id,
            agent_name=getattr(agent, "name", None),
        )
        await self.add_run(run, result.new_messages())
        return result

    # -- the HistorySource --------------------------------------------------------------

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        """Every recorded run (of ``conversation_id``, when given), oldest first."""
        runs = await anyio.to_thread.run_sync(self._runs)
        if conversation_id is not None:
            runs = [run for run in runs if run.conversation_id == conversation_id]
        return sorted(runs, key=lambda run: run.started_at)

    async def run_history(self, *, run_id: str) -> list[ModelMessage]:
        """A run's whole history: the messages of its conversation's runs up to it and its
        own, in order, compaction artifacts left out; ``[]`` for an unknown ``run_id``."""
        return await anyio.to_thread.run_sync(self.run_history_sync, run_id)

    # -- writing --------------------------------------------------------------------------

    async def add_run(self, run: RunRecord, messages: Sequence[ModelMessage]) -> None:
        """Record ``run`` with ``messages`` (appended to what the run already has)."""
        await anyio.to_thread.run_sync(self.add_run_sync, run, list(messages))

    def add_run_sync(self, run: RunRecord, messages: Sequence[ModelMessage]) -> None:
        """Blocking twin of :meth:`add_run`."""
        if not isinstance(run, RunRecord):
            raise ValidationError(f"run must be a RunRecord, got {type(run).__name__}")
        record = _RUN_ADAPTER.dump_python(run, mode="json")
        items = [_to_offprompt(message, record) for message in messages]
        self._check_open()
        self.memory.add_messages(items)

    # -- reading --------------------------------------------------------------------------

    def _records(self) -> list[tuple[RunRecord, dict[str, Any]]]:
        self._check_open()
        found: list[tuple[RunRecord, dict[str, Any]]] = []
        runs: dict[str, RunRecord] = {}
        for message in self.memory.messages():
            entry = message.meta.get(RESERVED)
            if not isinstance(entry, dict):
                continue
            run_id = entry["run"]["run_id"]
            run = runs.get(run_id) or _RUN_ADAPTER.validate_python(entry["run"])
            runs[run_id] = run
            found.append((run, entry["message"]))
        return found

    def _runs(self) -> list[RunRecord]:
        seen: dict[str, RunRecord] = {}
        for run, _ in self._records():
            seen.setdefault(run.run_id, run)
        return list(seen.values())

    def run_history_sync(self, run_id: str) -> list[ModelMessage]:
        """Blocking twin of :meth:`run_history`."""
        records = self._records()
        target = next((run for run, _ in records if run.run_id == run_id), None)
        if target is None:
            return []
        raw: list[dict[str, Any]] = []
        reached = False
        for run, message in records:
            if run.run_id == run_id:
                reached = True
                raw.append(message)
            elif not reached and _same_conversation(run, target):
                raw.append(message)
        return without_summary_artifacts(ModelMessagesTypeAdapter.validate_python(raw))

    # -- whole conversations ------------------------------------------------------------

    async def save(self, conversation: Conversation) -> None:
        """Keep ``conversation`` whole (messages, usage, id, deferred tool requests),
        replacing the one saved before."""
        await anyio.to_thread.run_sync(self.save_sync, conversation)

    def save_sync(self, conversation: Conversation) -> None:
        """Blocking twin of :meth:`save`."""
        if not isinstance(conversation, Conversation):
            raise ValidationError(
                f"conversation must be a pydantic_ai Conversation, got {type(conversation).__name__}"
            )
        data = ConversationTypeAdapter.dump_python(conversation, mode="json")
        text = "\n".join(_text_of(message) for message in conversation.messages)
        message = Message(
            role="system",
            content=[TextArtifact(value=text)] if text else [],
            meta={RESERVED: {"conversation": data}},
        )
        self._check_open()
        with self._store.transaction():
            self._conversation.replace([message])

    async def load(self) -> Conversation | None:
        """The conversation last saved, exactly; None when none was."""
        return await anyio.to_thread.run_sync(self.load_sync)

    def load_sync(self) -> Conversation | None:
        """Blocking twin of :meth:`load`."""
        self._check_open()
        stored = self._conversation.messages()
        if not stored:
            return None
        return ConversationTypeAdapter.validate_python(stored[-1].meta[RESERVED]["conversation"])

    # -- closing --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValidationError("this OffpromptHistory is closed")

    def close(self) -> None:
        """Give back the store opened from ``path=`` (a ``store=`` stays open). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owns_store:
            release_store(self._store)
