"""LangGraph threads ⇄ offprompt messages, through a checkpointer.

A ``create_agent`` agent keeps its conversation in the ``messages`` channel of its
thread's latest checkpoint (LangChain message objects, tool calls included).
:func:`thread_to_messages` reads them out as offprompt :class:`Message`\\ s, e.g. to
store them in a ``ConversationMemory`` session or export them for LlamaIndex;
:func:`messages_to_thread` writes messages as the first checkpoint of a new thread, so
an agent compiled with the same checkpointer continues that conversation on its next
``invoke`` with the thread's id. Conversion goes through
:mod:`offprompt.interop.langchain`, so a thread → offprompt → thread round trip gives
back equal LangChain messages.

Works with any ``BaseCheckpointSaver`` (``InMemorySaver``, ``SqliteSaver``,
``PostgresSaver``...); the async twins need a saver with async methods
(``InMemorySaver``, ``AsyncSqliteSaver``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from offprompt.errors import NotFoundError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message
from offprompt_langchain.convert import from_langchain, to_langchain

__all__ = [
    "amessages_to_thread",
    "athread_to_messages",
    "messages_to_thread",
    "thread_to_messages",
]


def _config(thread_id: str, checkpoint_ns: str) -> RunnableConfig:
    if not isinstance(thread_id, str) or not thread_id:
        raise ValidationError(f"thread_id must be a non-empty str, got {thread_id!r}")
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}


def _check_saver(checkpointer: Any) -> None:
    if not isinstance(checkpointer, BaseCheckpointSaver):
        raise ValidationError(
            f"checkpointer must be a LangGraph BaseCheckpointSaver, got {type(checkpointer).__name__}"
        )


def _messages_of(
    found: CheckpointTuple | None,
    thread_id: str,
    messages_key: str,
    report: ConversionReport | None,
) -> list[Message]:
    if found is None:
        raise NotFoundError(f"thread {thread_id!r} has no checkpoint", thread_id=thread_id)
    values = found.checkpoint.get("channel_values") or {}
    raw = values.get(messages_key, [])
    if not isinstance(raw, list) or not all(isinstance(m, BaseMessage) for m in raw):
        raise ValidationError(
            f"thread {thread_id!r}: channel {messages_key!r} does not hold LangChain messages",
            thread_id=thread_id,
        )
    return from_langchain(raw, report)


def thread_to_messages(
    checkpointer: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    messages_key: str = "messages",
    checkpoint_ns: str = "",
    report: ConversionReport | None = None,
) -> list[Message]:
    """The messages of a thread's latest checkpoint, as offprompt messages.

    Args:
        checkpointer: The agent's checkpoint saver.
        thread_id: The thread (``config["configurable"]["thread_id"]``).
        messages_key: The state channel holding the messages.
        checkpoint_ns: The checkpoint namespace (``""`` for the top-level graph).
        report: Collects what could not be converted losslessly.

    Returns:
        The thread's messages, in order (an empty list if the channel is empty).

    Raises:
        NotFoundError: The thread has no checkpoint.
        ValidationError: The channel does not hold LangChain messages.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> saver = InMemorySaver()
        >>> _ = messages_to_thread(saver, "t1", [Message.user("hi")])
        >>> thread_to_messages(saver, "t1")[0].text
        'hi'
    """
    _check_saver(checkpointer)
    found = checkpointer.get_tuple(_config(thread_id, checkpoint_ns))
    return _messages_of(found, thread_id, messages_key, report)


async def athread_to_messages(
    checkpointer: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    messages_key: str = "messages",
    checkpoint_ns: str = "",
    report: ConversionReport | None = None,
) -> list[Message]:
    """Async twin of :func:`thread_to_messages` (uses the saver's ``aget_tuple``)."""
    _check_saver(checkpointer)
    found = await checkpointer.aget_tuple(_config(thread_id, checkpoint_ns))
    return _messages_of(found, thread_id, messages_key, report)


def _new_checkpoint(
    checkpointer: BaseCheckpointSaver[Any],
    messages: Sequence[Message],
    messages_key: str,
    report: ConversionReport | None,
) -> tuple[Checkpoint, CheckpointMetadata, dict[str, Any]]:
    if isinstance(messages, Message) or not all(isinstance(m, Message) for m in messages):
        raise ValidationError("messages must be a sequence of offprompt Message objects")
    version = checkpointer.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {messages_key: to_langchain(list(messages), report)}
    checkpoint["channel_versions"] = {messages_key: version}
    checkpoint["updated_channels"] = [messages_key]
    # Like a manual ``update_state``: no node has run, so nothing is pending and the
    # next invoke starts a fresh run from the thread's messages.
    metadata: CheckpointMetadata = {"source": "update", "step": -1, "parents": {}}
    return checkpoint, metadata, {messages_key: version}


def _refuse_existing(found: CheckpointTuple | None, thread_id: str) -> None:
    if found is not None:
        raise ValidationError(
            f"thread {thread_id!r} already has checkpoints; write to a new thread_id "
            "(or remove this one with checkpointer.delete_thread first)",
            thread_id=thread_id,
        )


def messages_to_thread(
    checkpointer: BaseCheckpointSaver[Any],
    thread_id: str,
    messages: Sequence[Message],
    *,
    messages_key: str = "messages",
    checkpoint_ns: str = "",
    report: ConversionReport | None = None,
) -> RunnableConfig:
    """Write messages as the first checkpoint of a new thread.

    An agent compiled with this checkpointer (``create_agent(..., checkpointer=...)``)
    then continues the conversation: ``agent.invoke({"messages": [new]}, config)`` sees
    these messages followed by ``new``.

    Args:
        checkpointer: The checkpoint saver the agent uses.
        thread_id: A thread with no checkpoints yet.
        messages: The conversation (system messages included as they are: note that
            ``create_agent`` adds its own ``system_prompt`` in front at each call).
        messages_key: The state channel holding the messages.
        checkpoint_ns: The checkpoint namespace (``""`` for the top-level graph).
        report: Collects what LangChain cannot carry.

    Returns:
        The config of the written checkpoint (pass it, or just the thread id, to the
        agent).

    Raises:
        ValidationError: The thread already has checkpoints, or an item is not a
            :class:`Message`.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> config = messages_to_thread(InMemorySaver(), "t1", [Message.user("hi")])
        >>> config["configurable"]["thread_id"]
        't1'
    """
    _check_saver(checkpointer)
    config = _config(thread_id, checkpoint_ns)
    _refuse_existing(checkpointer.get_tuple(config), thread_id)
    checkpoint, metadata, versions = _new_checkpoint(checkpointer, messages, messages_key, report)
    return checkpointer.put(config, checkpoint, metadata, versions)


async def amessages_to_thread(
    checkpointer: BaseCheckpointSaver[Any],
    thread_id: str,
    messages: Sequence[Message],
    *,
    messages_key: str = "messages",
    checkpoint_ns: str = "",
    report: ConversionReport | None = None,
) -> RunnableConfig:
    """Async twin of :func:`messages_to_thread` (uses the saver's ``aget_tuple``/``aput``)."""
    _check_saver(checkpointer)
    config = _config(thread_id, checkpoint_ns)
    _refuse_existing(await checkpointer.aget_tuple(config), thread_id)
    checkpoint, metadata, versions = _new_checkpoint(checkpointer, messages, messages_key, report)
    return await checkpointer.aput(config, checkpoint, metadata, versions)
