"""LangChain messages ⇄ offprompt :class:`~offprompt.messages.Message`.

A thin layer: LangChain's own ``messages_to_dict`` / ``messages_from_dict`` produce and
read the JSON shape, and :mod:`offprompt.interop.langchain` converts that shape. The
mapping (roles, content blocks, what rides in ``meta``) is documented there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    BaseMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.messages.utils import MessageLikeRepresentation

from offprompt.errors import DeserializationError, ValidationError
from offprompt.interop.langchain import (
    message_from_langchain_dict,
    message_to_langchain_dict,
    messages_to_langchain_dicts,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message

__all__ = ["from_langchain", "message_from_langchain", "message_to_langchain", "to_langchain"]


def from_langchain(
    messages: Sequence[MessageLikeRepresentation], report: ConversionReport | None = None
) -> list[Message]:
    """Convert LangChain messages to offprompt messages.

    Args:
        messages: ``BaseMessage`` objects of any type (chunks included), or anything
            ``convert_to_messages`` accepts (``("user", "hi")`` tuples, role dicts,
            strings).
        report: If given, values that cannot be stored as JSON are dropped and listed
            here instead of raising.

    Returns:
        One :class:`Message` per input message, in order.

    Raises:
        ValidationError: An item is not a message or message-like value.
        SerializationError: A field holds a non-JSON value and no ``report`` was given.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from_langchain([HumanMessage("hi")])[0].role
        'user'
    """
    if isinstance(messages, (str, BaseMessage)):
        raise ValidationError(
            f"from_langchain expects a list of messages, got one {type(messages).__name__}; "
            "use message_from_langchain for a single message"
        )
    try:
        converted = convert_to_messages(messages)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ValidationError(f"not LangChain messages: {exc}") from None
    if report is not None:
        report.source = report.source or "langchain"
        report.target = report.target or "offprompt"
    return [
        message_from_langchain_dict(message_to_dict(m), report, where=f"message {i}")
        for i, m in enumerate(converted)
    ]


def message_from_langchain(message: BaseMessage, report: ConversionReport | None = None) -> Message:
    """Convert one LangChain message.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> message_from_langchain(AIMessage("4")).text
        '4'
    """
    if not isinstance(message, BaseMessage):
        raise ValidationError(f"expected a LangChain BaseMessage, got {type(message).__name__}")
    return message_from_langchain_dict(message_to_dict(message), report)


def to_langchain(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[BaseMessage]:
    """Convert offprompt messages to LangChain messages.

    Messages that came from LangChain come back equal to the originals (same type,
    chunk class, ids, metadata and content blocks). Others become the plain message
    type of their role with standard content blocks.

    Args:
        messages: offprompt messages.
        report: Collects what LangChain cannot carry (see
            :mod:`offprompt.interop.langchain`).

    Example:
        >>> from offprompt.messages import Message
        >>> type(to_langchain([Message.assistant("hello")])[0]).__name__
        'AIMessage'
    """
    return _rebuild(messages_to_langchain_dicts(messages, report))


def message_to_langchain(message: Message, report: ConversionReport | None = None) -> BaseMessage:
    """Convert one offprompt message.

    Example:
        >>> from offprompt.messages import Message
        >>> message_to_langchain(Message.system("Be brief.")).type
        'system'
    """
    return _rebuild([message_to_langchain_dict(message, report)])[0]


def _rebuild(dicts: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for item in dicts:
        try:
            message = messages_from_dict([item])[0]
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise DeserializationError(f"LangChain refused a converted message: {exc}") from None
        data = item["data"]
        if message.model_dump() != data:
            # LangChain's validators are not idempotent for a few chunk shapes (an
            # AIMessageChunk re-derives tool_calls from tool_call_chunks). The data was
            # valid when LangChain dumped it, so rebuild exactly that object.
            message = type(message).model_construct(**data)
        out.append(message)
    return out
