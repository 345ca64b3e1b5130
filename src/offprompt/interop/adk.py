"""Google ADK session events, in and out. Never imports ADK.

An ADK session (``google.adk.sessions.Session``) is a list of ``Event`` s; its database
and SQLite services store each one as ``event.model_dump_json(exclude_none=True)``: a
JSON object with ``id``, ``invocation_id``, ``author`` (``"user"`` or an agent's name),
``timestamp`` (POSIX seconds), ``actions`` and ``content`` (``{"role": "user" |
"model", "parts": [...]}``, each part a ``text``, ``function_call``,
``function_response``, ``inline_data`` ... object).

One event is one :class:`~offprompt.messages.Message`:

* an event whose parts hold a ``function_response`` → a ``tool`` message answering the
  first response's ``id``, its content the response as JSON text;
* an event by ``user`` (or with content role ``user``) → a ``user`` message;
* any other event → an ``assistant`` message named after its author, one
  :class:`ToolCall` per ``function_call`` part;
* the text parts become :class:`TextArtifact` s, inline data (images, files)
  :class:`BlobArtifact` s.

The event itself rides whole in the reserved ``meta["_adk"]["event"]`` entry, so event
→ Message → event gives back the event exactly (its JSON is equal), by construction.
Messages that did not come from ADK are written as the events ADK accepts (``author``
``user`` or the message's ``name``, a ``content`` with text, ``function_call`` and
``function_response`` and ``inline_data`` parts); what no event can carry (foreign
``meta``, other artifacts) is
listed in the :class:`ConversionReport` when one is given.

Example:
    >>> event = {"id": "e1", "invocation_id": "i1", "author": "user", "timestamp": 1.5,
    ...          "content": {"role": "user", "parts": [{"text": "hi"}]}}
    >>> message = message_from_event(event)
    >>> message.role, message.text
    ('user', 'hi')
    >>> message_to_event(message) == event
    True
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from offprompt._tool_call import ToolCall
from offprompt.artifacts import BlobArtifact, ImageArtifact, TextArtifact
from offprompt.errors import ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message

__all__ = [
    "RESERVED",
    "message_from_event",
    "message_to_event",
    "messages_from_events",
    "messages_to_events",
]

#: The ``Message.meta`` key of what only ADK has (the whole event).
RESERVED = "_adk"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _parts(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content")
    if not isinstance(content, Mapping):
        return []
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise ValidationError("an ADK event's content.parts must be a list")
    return [_snake_keys(part) for part in parts if isinstance(part, Mapping)]


def _snake_keys(part: Mapping[str, Any]) -> dict[str, Any]:
    """A part with ADK's camelCase keys (its API's JSON) as the snake_case it stores."""
    snake = {_CAMEL.sub("_", str(key)).lower(): value for key, value in part.items()}
    if isinstance(snake.get("inline_data"), Mapping):
        snake["inline_data"] = {
            _CAMEL.sub("_", str(k)).lower(): v for k, v in snake["inline_data"].items()
        }
    return snake


def _part_in(part: Mapping[str, Any]) -> TextArtifact | BlobArtifact | None:
    """A text part as text, an inline-data part as its bytes; other parts ride in the event."""
    if isinstance(part.get("text"), str):
        return TextArtifact(value=part["text"])
    inline = part.get("inline_data")
    if isinstance(inline, Mapping) and isinstance(inline.get("data"), str):
        try:
            data = base64.urlsafe_b64decode(inline["data"].replace("+", "-").replace("/", "_"))
        except (binascii.Error, ValueError):
            return None
        return BlobArtifact(
            value=data, mime_type=str(inline.get("mime_type") or "application/octet-stream")
        )
    return None


def _created_at(event: Mapping[str, Any]) -> datetime:
    stamp = event.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), timezone.utc)
    return datetime.now(timezone.utc)


def message_from_event(event: Mapping[str, Any], *, where: str = "event") -> Message:
    """One ADK event (its JSON object) as a Message that gives it back exactly.

    Raises:
        ValidationError: ``event`` is not a JSON object, or its content is malformed.
    """
    if not isinstance(event, Mapping):
        raise ValidationError(f"{where}: an ADK event must be a JSON object, got {event!r}")
    try:
        kept = json.loads(json.dumps(event, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{where}: the ADK event is not JSON: {exc}") from None
    parts = _parts(event)
    texts = [part for part in map(_part_in, parts) if part is not None]
    fields: dict[str, Any] = {"meta": {RESERVED: {"event": kept}}, "created_at": _created_at(event)}
    if isinstance(event.get("id"), str) and event["id"]:
        fields["id"] = event["id"]
    author = event.get("author")
    responses = [
        p["function_response"] for p in parts if isinstance(p.get("function_response"), Mapping)
    ]
    if responses:
        first = responses[0]
        body = [
            TextArtifact(value=json.dumps(r.get("response"), ensure_ascii=False)) for r in responses
        ]
        return Message(
            role="tool",
            content=body,
            tool_call_id=str(first.get("id") or ""),
            name=str(first.get("name") or "") or None,
            **fields,
        )
    role = (
        (event.get("content") or {}).get("role")
        if isinstance(event.get("content"), Mapping)
        else None
    )
    if author == "user" or role == "user":
        return Message(role="user", content=texts, **fields)
    calls = [
        ToolCall(
            id=str(c.get("id") or ""),
            name=str(c.get("name") or "tool"),
            arguments=dict(c.get("args") or {}),
        )
        for c in (p["function_call"] for p in parts if isinstance(p.get("function_call"), Mapping))
    ]
    name = author if isinstance(author, str) and author else None
    return Message(role="assistant", content=texts, tool_calls=calls, name=name, **fields)


def messages_from_events(events: Sequence[Mapping[str, Any]]) -> list[Message]:
    """ADK events (JSON objects, oldest first) as Messages, one each."""
    if isinstance(events, (str, bytes, Mapping)):
        raise ValidationError("messages_from_events takes a list of ADK events")
    return [message_from_event(event, where=f"event {i}") for i, event in enumerate(events)]


def native_event(message: Message) -> dict[str, Any] | None:
    """The ADK event a message was made from, or ``None`` if it came from elsewhere."""
    kept = message.meta.get(RESERVED)
    if isinstance(kept, Mapping) and isinstance(kept.get("event"), Mapping):
        return copy.deepcopy(dict(kept["event"]))
    return None


def _plain_parts(
    message: Message, report: ConversionReport | None, where: str
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for index, part in enumerate(message.content):
        if isinstance(part, TextArtifact):
            if message.role == "tool":
                continue
            parts.append({"text": part.value})
        elif isinstance(part, (BlobArtifact, ImageArtifact)) and message.role != "tool":
            data = base64.urlsafe_b64encode(part.value).decode("ascii")
            mime = part.mime_type or (
                f"image/{part.format}" if isinstance(part, ImageArtifact) else ""
            )
            parts.append(
                {"inline_data": {"data": data, "mime_type": mime or "application/octet-stream"}}
            )
        elif report is not None:
            report.lost(
                where,
                f"content[{index}] ({type(part).__name__})",
                "an ADK event has text and inline-data parts only",
            )
    if message.role == "tool":
        response: Any = message.text
        with contextlib.suppress(ValueError):
            response = json.loads(message.text)
        if not isinstance(response, dict):
            response = {"result": response}
        reply = {
            "id": message.tool_call_id or "",
            "name": message.name or "tool",
            "response": response,
        }
        parts.append({"function_response": reply})
    for call in message.tool_calls:
        parts.append({"function_call": {"id": call.id, "name": call.name, "args": call.arguments}})
    return parts


def message_to_event(
    message: Message, *, report: ConversionReport | None = None, where: str = "message"
) -> dict[str, Any]:
    """A Message as an ADK event JSON object (``Event.model_validate`` reads it).

    A message made by :func:`message_from_event` gives back its event exactly; any other
    is written as a plain event, with what it cannot carry listed in ``report``.
    """
    native = native_event(message)
    if native is not None:
        return native
    if report is not None and message.meta:
        report.lost(where, "meta", "an ADK event has no field for foreign metadata")
    author = "user" if message.role == "user" else (message.name or "model")
    if message.role == "tool":
        author = "user"
    role = "user" if message.role in ("user", "tool") else "model"
    return {
        "id": message.id,
        "invocation_id": "",
        "author": author,
        "timestamp": message.created_at.timestamp(),
        "content": {"role": role, "parts": _plain_parts(message, report, where)},
    }


def messages_to_events(
    messages: Sequence[Message], *, report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Messages as ADK event JSON objects, one each, in order."""
    return [
        message_to_event(m, report=report, where=f"message {i}") for i, m in enumerate(messages)
    ]
