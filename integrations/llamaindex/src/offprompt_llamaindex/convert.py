"""LlamaIndex ``ChatMessage`` ⇄ offprompt :class:`~offprompt.messages.Message`.

A thin layer: ``ChatMessage.model_dump(mode="json")`` and ``ChatMessage.model_validate``
produce and read the JSON shape, and :mod:`offprompt.interop.llamaindex` converts it.
The mapping (roles, blocks, tool calls, what rides in ``meta``) is documented there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from pydantic import ValidationError as PydanticValidationError

from offprompt.adapter_kit import describe_pydantic_error
from offprompt.errors import ValidationError
from offprompt.interop.llamaindex import (
    message_from_llamaindex_dict,
    message_to_llamaindex_dict,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message

__all__ = ["from_llamaindex", "message_from_llamaindex", "message_to_llamaindex", "to_llamaindex"]


def _dump(message: ChatMessage | Mapping[str, Any], where: str) -> Mapping[str, Any]:
    if isinstance(message, ChatMessage):
        try:
            return message.model_dump(mode="json")
        except Exception as exc:  # a non-serialisable object in additional_kwargs
            raise ValidationError(f"{where}: cannot serialise the ChatMessage: {exc}") from None
    if isinstance(message, Mapping):
        return message
    raise ValidationError(
        f"{where}: expected a llama_index ChatMessage, got {type(message).__name__}"
    )


def message_from_llamaindex(
    message: ChatMessage | Mapping[str, Any], report: ConversionReport | None = None
) -> Message:
    """One ``ChatMessage`` (or its ``model_dump`` dict) → :class:`Message`.

    Example:
        >>> from llama_index.core.llms import ChatMessage
        >>> message_from_llamaindex(ChatMessage(role="developer", content="be brief")).role
        'system'
    """
    return message_from_llamaindex_dict(_dump(message, "message"), report=report)


def message_to_llamaindex(message: Message, report: ConversionReport | None = None) -> ChatMessage:
    """One :class:`Message` → ``ChatMessage``.

    Raises:
        ValidationError: LlamaIndex refuses the result, e.g. an ``ImageBlock`` path that
            does not exist (``ImageBlock.path`` must name an existing file).

    Example:
        >>> message_to_llamaindex(Message.user("hi")).content
        'hi'
    """
    return _validate(message_to_llamaindex_dict(message, report=report), "message")


def _validate(data: dict[str, Any], where: str) -> ChatMessage:
    try:
        return ChatMessage.model_validate(data)
    except PydanticValidationError as exc:
        raise ValidationError(
            f"{where}: LlamaIndex refuses it: {describe_pydantic_error('ChatMessage', exc)}"
        ) from None


def from_llamaindex(
    messages: Sequence[ChatMessage | Mapping[str, Any]], report: ConversionReport | None = None
) -> list[Message]:
    """Convert LlamaIndex chat messages to offprompt messages.

    Args:
        messages: ``ChatMessage`` objects (any role, any blocks) or their ``model_dump`` dicts.
        report: Collects tool calls in shapes that could not be understood (they are kept
            verbatim in ``meta`` either way).

    Returns:
        One :class:`Message` per input message, in order. Converting them back with
        :func:`to_llamaindex` gives equal ``ChatMessage`` objects.

    Raises:
        ValidationError: An item is not a ``ChatMessage`` or cannot be serialised.
        DeserializationError: A dict is malformed (unknown role, bad block).

    Example:
        >>> from llama_index.core.llms import ChatMessage
        >>> [m.text for m in from_llamaindex([ChatMessage(role="user", content="hi")])]
        ['hi']
    """
    if isinstance(messages, (ChatMessage, Mapping, str)):
        raise ValidationError(
            f"from_llamaindex expects a list of messages, got one {type(messages).__name__}; "
            "use message_from_llamaindex for a single message"
        )
    if report is not None and not report.source:
        report.source, report.target = "llamaindex", "offprompt"
    return [
        message_from_llamaindex_dict(_dump(m, f"message {i}"), report=report, where=f"message {i}")
        for i, m in enumerate(messages)
    ]


def to_llamaindex(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[ChatMessage]:
    """Convert offprompt messages to LlamaIndex ``ChatMessage`` objects.

    Tool calls come back in the representation they arrived in (``ToolCallBlock`` or
    ``additional_kwargs["tool_calls"]``); messages from elsewhere get ``ToolCallBlock``
    blocks, llama-index-core 0.14's own representation. Nothing is added to
    ``additional_kwargs`` beyond ``tool_call_id`` and ``name``.

    Args:
        messages: The messages.
        report: Collects what a ``ChatMessage`` cannot carry (foreign ``meta``, artifact
            types with no block, which are sent as their text).

    Example:
        >>> from offprompt.messages import ToolCall
        >>> out = to_llamaindex([Message.assistant("", tool_calls=[ToolCall(id="c1", name="f")])])
        >>> out[0].blocks[-1].tool_name
        'f'
    """
    if isinstance(messages, Message):
        raise ValidationError(
            "to_llamaindex expects a list of messages, got one Message; "
            "use message_to_llamaindex for a single message"
        )
    if report is not None and not report.source:
        report.source, report.target = "offprompt", "llamaindex"
    return [
        _validate(
            message_to_llamaindex_dict(m, report=report, where=f"message {i}"), f"message {i}"
        )
        for i, m in enumerate(messages)
    ]
