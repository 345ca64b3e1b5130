"""pydantic-ai message histories, in and out. Never imports pydantic-ai.

pydantic-ai persists a conversation as the JSON of ``ModelMessagesTypeAdapter``
(``result.all_messages_json()``), or of ``ConversationTypeAdapter`` (a whole
``Conversation``: ``{"messages": [...], "usage": ..., "conversation_id": ...,
"deferred_tool_requests": ...}``). Each message is ``{"kind": "request", "parts": [...]}``
or ``{"kind": "response", "parts": [...]}``, each part tagged by ``part_kind``.

Going in, one ``ModelMessage`` becomes one or more :class:`~offprompt.messages.Message` s:

* a response → an assistant message: its ``text`` parts as text, its ``tool-call``
  parts as :class:`ToolCall` s (``tool_call_id``, ``tool_name``, the arguments);
* a request → one message per part: ``system-prompt`` → system, ``user-prompt`` →
  user (its text; other content kept in the raw message), ``tool-return`` and a
  ``retry-prompt`` for a tool → a tool message answering ``tool_call_id``, other parts →
  a user message with their text when they have one.

The first message made from a ``ModelMessage`` keeps that message exactly, as JSON, in
``meta["_pydantic_ai"]["message"]``; the others are marked ``{"part_of": True}``. So
JSON → Message → JSON gives back every message exactly (equal JSON), by construction.

Messages that did not come from pydantic-ai are written as the messages pydantic-ai
accepts as ``message_history``: system and user messages as requests with a
``system-prompt`` / ``user-prompt`` part, assistant messages as responses with ``text``
and ``tool-call`` parts, tool messages as ``tool-return`` parts; consecutive ones share
one request, as pydantic-ai itself sends a system prompt with the first user prompt and
parallel calls' returns together. What those cannot carry
(images and other non-text parts, a message's ``name`` or foreign ``meta``) is listed in
the :class:`ConversionReport` when one is given.

Example:
    >>> raw = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]}]
    >>> messages = messages_from_model_messages(raw)
    >>> messages[0].role, messages[0].text
    ('user', 'hi')
    >>> messages_to_model_messages(messages) == raw
    True
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from offprompt._validation import loads_json
from offprompt.artifacts import TextArtifact
from offprompt.errors import DeserializationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "RESERVED",
    "messages_from_model_messages",
    "messages_to_model_messages",
    "model_messages_json",
]

RESERVED = "_pydantic_ai"
"""The ``meta`` key holding a message's pydantic-ai original."""

_SOURCE = "pydantic-ai"
_WHAT = "pydantic-ai messages"


def _load(data: Any) -> list[Any]:
    """The list of message dicts in ``data`` (JSON text, a list, or a Conversation dict)."""
    if isinstance(data, (str, bytes, bytearray)):
        data = loads_json(bytes(data) if isinstance(data, bytearray) else data, what=_WHAT)
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if isinstance(data, Mapping) or not isinstance(data, Sequence):
        raise DeserializationError(
            f"pydantic-ai messages must be a JSON list of messages, got {type(data).__name__}"
        )
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or item.get("kind") not in ("request", "response"):
            raise DeserializationError(
                f"message {i} is not a pydantic-ai message (a dict whose kind is "
                f"'request' or 'response')"
            )
        if not isinstance(item.get("parts"), list):
            raise DeserializationError(f"message {i} has no list of parts")
    return list(data)


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if content is None:
        return None
    return json.dumps(content, ensure_ascii=False)


def _arguments(args: Any) -> dict[str, Any]:
    if isinstance(args, Mapping):
        return dict(args)
    if isinstance(args, str) and args.strip():
        try:
            parsed = json.loads(args)
        except ValueError:
            return {"_raw": args}
        return parsed if isinstance(parsed, dict) else {"_raw": args}
    return {}


def _from_response(item: Mapping[str, Any]) -> list[Message]:
    texts = [
        TextArtifact(value=p["content"])
        for p in item["parts"]
        if isinstance(p, Mapping) and p.get("part_kind") == "text" and p.get("content")
    ]
    calls = [
        ToolCall(
            id=str(p.get("tool_call_id") or ""),
            name=str(p.get("tool_name") or "tool"),
            arguments=_arguments(p.get("args")),
        )
        for p in item["parts"]
        if isinstance(p, Mapping) and p.get("part_kind") == "tool-call"
    ]
    return [Message(role="assistant", content=texts, tool_calls=calls)]


def _from_part(part: Any) -> Message | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("part_kind")
    text = _text(part.get("content"))
    content = [TextArtifact(value=text)] if text else []
    if kind == "system-prompt":
        return Message(role="system", content=content)
    if (
        kind in ("tool-return", "retry-prompt")
        and part.get("tool_call_id")
        and part.get("tool_name")
    ):
        return Message(
            role="tool",
            content=content,
            tool_call_id=str(part["tool_call_id"]),
            name=str(part["tool_name"]),
        )
    if kind == "user-prompt" and not isinstance(part.get("content"), str):
        content = []  # images, audio, documents: kept in the raw message
    return Message(role="user", content=content)


def _from_request(item: Mapping[str, Any]) -> list[Message]:
    made = [m for m in (_from_part(p) for p in item["parts"]) if m is not None]
    return made or [Message(role="user")]


def messages_from_model_messages(
    data: Any, report: ConversionReport | None = None
) -> list[Message]:
    """Turn pydantic-ai messages into offprompt messages.

    Args:
        data: ``ModelMessagesTypeAdapter`` JSON (text or parsed), or a ``Conversation``'s.
        report: Counts the conversion (nothing is lost going in).

    Raises:
        DeserializationError: ``data`` is not a list of pydantic-ai messages.
    """
    items = _load(data)
    _begin(report, _SOURCE, "offprompt")
    out: list[Message] = []
    for item in items:
        made = _from_response(item) if item["kind"] == "response" else _from_request(item)
        made[0].meta[RESERVED] = {"message": copy.deepcopy(dict(item))}
        for extra in made[1:]:
            extra.meta[RESERVED] = {"part_of": True}
        out.extend(made)
        if report is not None:
            report.converted += 1
    return out


# -- Message -> pydantic-ai ---------------------------------------------------------------


def _foreign_losses(message: Message, report: ConversionReport | None, where: str) -> None:
    if report is None:
        return
    for i, part in enumerate(message.content):
        if not isinstance(part, TextArtifact):
            report.lost(where, f"content[{i}] ({type(part).__name__})", "only text is written")
    if message.name and message.role != "tool":
        report.lost(where, "name", "a pydantic-ai message has no author name")
    foreign = sorted(k for k in message.meta if k != RESERVED)
    if foreign:
        report.lost(where, f"meta {foreign}", "a pydantic-ai message has no such field")


def _foreign(message: Message, names: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """The kind and parts of the pydantic-ai message a foreign ``message`` becomes."""
    text = message.text
    if message.role == "assistant":
        parts: list[dict[str, Any]] = [{"part_kind": "text", "content": text}] if text else []
        parts += [
            {
                "part_kind": "tool-call",
                "tool_name": c.name,
                "args": c.arguments,
                "tool_call_id": c.id,
            }
            for c in message.tool_calls
        ]
        return "response", parts
    if message.role == "tool":
        name = message.name or names.get(message.tool_call_id or "", "tool")
        return "request", [
            {
                "part_kind": "tool-return",
                "tool_name": name,
                "content": text,
                "tool_call_id": message.tool_call_id or "",
            }
        ]
    kind = "system-prompt" if message.role == "system" else "user-prompt"
    return "request", [{"part_kind": kind, "content": text}]


def messages_to_model_messages(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Turn offprompt messages into pydantic-ai messages (``ModelMessagesTypeAdapter``
    ``dump_python(mode="json")`` dicts: ``ModelMessagesTypeAdapter.validate_python`` takes
    them, and so does ``message_history=`` once validated).

    Args:
        messages: The messages; those from :func:`messages_from_model_messages` come back
            exactly.
        report: Lists what foreign messages cannot carry.
    """
    _begin(report, "offprompt", _SOURCE)
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    merge = False  # the last dict out is a request made here, open to more parts
    for i, message in enumerate(messages):
        names.update({c.id: c.name for c in message.tool_calls})
        kept = message.meta.get(RESERVED)
        if isinstance(kept, Mapping) and isinstance(kept.get("message"), Mapping):
            out.append(copy.deepcopy(dict(kept["message"])))
            merge = False
        elif isinstance(kept, Mapping) and kept.get("part_of"):
            continue
        else:
            _foreign_losses(message, report, f"message {i}")
            kind, parts = _foreign(message, names)
            if merge and kind == "request":
                out[-1]["parts"].extend(parts)
            else:
                out.append({"kind": kind, "parts": parts})
            merge = kind == "request"
        if report is not None:
            report.converted += 1
    return out


def model_messages_json(messages: Sequence[Message], report: ConversionReport | None = None) -> str:
    """:func:`messages_to_model_messages` as JSON text (what ``ModelMessagesTypeAdapter.validate_json`` reads)."""
    return json.dumps(messages_to_model_messages(messages, report), ensure_ascii=False)


def _begin(report: ConversionReport | None, source: str, target: str) -> None:
    if report is not None:
        report.source = report.source or source
        report.target = report.target or target
