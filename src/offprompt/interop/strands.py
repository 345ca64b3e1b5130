"""Strands Agents session messages, in and out. Never imports Strands.

Strands keeps a conversation as Bedrock-style messages, ``{"role": "user" | "assistant",
"content": [block, ...]}``, whose blocks are ``{"text": ...}``, ``{"toolUse":
{"toolUseId", "name", "input"}}``, ``{"toolResult": {"toolUseId", "status", "content":
[...]}}``, images, documents, reasoning and so on. Its session repositories store each
one as a ``SessionMessage.to_dict()``: ``{"message": ..., "message_id": n,
"redact_message": ..., "created_at": ..., "updated_at": ...}``, bytes written
``{"__bytes_encoded__": true, "data": base64}`` (``FileSessionManager``'s
``message_<n>.json`` files, :class:`offprompt_strands.OffpromptSessionRepository`'s
records).

One Strands message becomes offprompt :class:`~offprompt.messages.Message` s:

* a user message made only of ``toolResult`` blocks → one tool message per result
  (``tool_call_id`` the ``toolUseId``), its text parts → :class:`TextArtifact`, other
  parts (``json``, images, documents) → a :class:`JsonArtifact` holding the part as it is;
* any other message → one message of its role: ``text`` blocks → :class:`TextArtifact`,
  ``toolUse`` blocks → :class:`ToolCall` s, every other block → a :class:`JsonArtifact`
  holding the block as it is.

What a ``Message`` has no field for (a result's ``status``, the session message's
``message_id``, ``redact_message`` and times) rides in ``meta["_strands"]``. Each
conversion is checked by exporting it again: a message whose export would differ is kept
whole in ``meta["_strands"]["message"]`` instead, so Strands → offprompt → Strands gives
back the message exactly (its JSON is equal), by construction.

Messages that did not come from Strands are written as the messages Strands itself
accepts; consecutive tool messages become one user message of ``toolResult`` blocks.

Example:
    >>> data = {"role": "assistant", "content": [
    ...     {"text": "Looking."},
    ...     {"toolUse": {"toolUseId": "t1", "name": "search", "input": {"q": "x"}}}]}
    >>> [message] = messages_from_strands([data])
    >>> message.text, message.tool_calls[0].name
    ('Looking.', 'search')
    >>> messages_to_strands([message]) == [data]
    True
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from offprompt.artifacts import BaseArtifact, JsonArtifact, TextArtifact
from offprompt.errors import DeserializationError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "RESERVED",
    "message_from_strands",
    "messages_from_strands",
    "messages_to_session_messages",
    "messages_to_strands",
]

#: The ``meta`` key this module keeps Strands-only fields under.
RESERVED = "_strands"

_SESSION_FIELDS = ("message_id", "redact_message", "created_at", "updated_at")


def _check_message(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise DeserializationError(
            f"{where}: a Strands message is a JSON object, got {data!r}"[:300]
        )
    if data.get("role") not in ("user", "assistant"):
        raise DeserializationError(
            f"{where}: role must be 'user' or 'assistant', got {data.get('role')!r}"
        )
    content = data.get("content")
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        raise DeserializationError(f"{where}: content must be a list of JSON objects")
    try:
        json.dumps(data)
    except (TypeError, ValueError) as exc:
        raise DeserializationError(
            f"{where}: not JSON ({exc}); pass SessionMessage.to_dict()"
        ) from None
    return copy.deepcopy(dict(data))


def _is_results(content: list[dict[str, Any]]) -> bool:
    return bool(content) and all(set(block) == {"toolResult"} for block in content)


def _part_in(part: dict[str, Any]) -> BaseArtifact:
    if set(part) == {"text"} and isinstance(part["text"], str):
        return TextArtifact(value=part["text"])
    return JsonArtifact(value=part)


def _outer_meta(data: dict[str, Any]) -> dict[str, Any]:
    """The message's fields beyond role and content (``tracking_id``, ``metadata``), in order."""
    fields = {k: v for k, v in data.items() if k not in ("role", "content")}
    return (
        {"fields": fields, "keys": list(data)}
        if fields or list(data) != ["role", "content"]
        else {}
    )


def _result_messages(data: dict[str, Any]) -> list[Message]:
    messages = []
    for block in data["content"]:
        result = block["toolResult"]
        parts = result.get("content") or []
        fields = {k: v for k, v in result.items() if k not in ("toolUseId", "content")}
        messages.append(
            Message(
                role="tool",
                tool_call_id=str(result.get("toolUseId", "")),
                content=[_part_in(dict(p)) for p in parts if isinstance(p, Mapping)],
                meta={RESERVED: {"result": fields, "result_keys": list(result)}},
            )
        )
    messages[0].meta[RESERVED].update(_outer_meta(data))
    return messages


def _plain_message(data: dict[str, Any]) -> Message:
    parts: list[BaseArtifact] = []
    calls: list[ToolCall] = []
    for block in data["content"]:
        use = block.get("toolUse") if set(block) == {"toolUse"} else None
        if isinstance(use, Mapping) and isinstance(use.get("input"), Mapping):
            calls.append(
                ToolCall(id=use["toolUseId"], name=use["name"], arguments=dict(use["input"]))
            )
        else:
            parts.append(_part_in(block))
    outer = _outer_meta(data)
    meta = {RESERVED: outer} if outer else {}
    return Message(role=data["role"], content=parts, tool_calls=calls, meta=meta)


def _convert(message: dict[str, Any]) -> list[Message]:
    """``message`` as offprompt messages, or kept whole when the export would differ."""
    try:
        if _is_results(message["content"]):
            built = _result_messages(message)
        else:
            built = [_plain_message(message)]
        if json.dumps(_export(built)) == json.dumps([message]):
            return built
    except (ValidationError, KeyError, TypeError):
        pass  # a block this module cannot split: kept whole below
    return [Message(role=message["role"], meta={RESERVED: {"message": message}})]


def message_from_strands(data: Mapping[str, Any], *, where: str = "message") -> list[Message]:
    """The offprompt messages of one Strands message (or ``SessionMessage.to_dict()``).

    Raises:
        DeserializationError: ``data`` is not a Strands message in its JSON form.
    """
    session: dict[str, Any] = {}
    if isinstance(data, Mapping) and "message" in data and "role" not in data:
        session = {k: data[k] for k in _SESSION_FIELDS if k in data}
        data = data["message"]
    built = _convert(_check_message(data, where))
    if session:
        built[0].meta.setdefault(RESERVED, {})["session"] = session
        stamp = session.get("created_at")
        if isinstance(stamp, str):
            with contextlib.suppress(ValueError):
                built[0].created_at = datetime.fromisoformat(stamp)
    return built


def messages_from_strands(
    messages: Sequence[Mapping[str, Any]], *, where: str = "messages"
) -> list[Message]:
    """The offprompt messages of a Strands conversation (messages or session messages)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise DeserializationError(f"{where} must be a list of Strands messages")
    out: list[Message] = []
    for index, data in enumerate(messages):
        out.extend(message_from_strands(data, where=f"{where}[{index}]"))
    return out


def _part_out(part: BaseArtifact, report: ConversionReport | None, where: str) -> dict[str, Any]:
    if isinstance(part, JsonArtifact) and isinstance(part.value, dict):
        return copy.deepcopy(part.value)
    if not isinstance(part, TextArtifact) and report is not None:
        report.lost(where, type(part).__name__, "written as its text: Strands has no such block")
    return {"text": part.to_text()}


def _ordered(values: dict[str, Any], keys: Any) -> dict[str, Any]:
    """``values`` in the key order ``keys`` (a list kept from the input), if it fits."""
    if isinstance(keys, list) and sorted(keys) == sorted(values):
        return {k: values[k] for k in keys}
    return values


def _reserved(message: Message) -> dict[str, Any]:
    kept = message.meta.get(RESERVED)
    return kept if isinstance(kept, dict) else {}


def _tool_block(message: Message, report: ConversionReport | None, where: str) -> dict[str, Any]:
    reserved = _reserved(message)
    fields = reserved.get("result") or {"status": "success"}
    result = {"toolUseId": message.tool_call_id or "", **fields}
    result["content"] = [_part_out(p, report, where) for p in message.content]
    return {"toolResult": _ordered(result, reserved.get("result_keys"))}


def _outer(role: str, content: list[dict[str, Any]], first: Message) -> dict[str, Any]:
    reserved = _reserved(first)
    message = {"role": role, "content": content, **(reserved.get("fields") or {})}
    return _ordered(message, reserved.get("keys"))


def _export(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    first: Message | None = None
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.role == "tool":
            first = first if pending else message
            pending.append(_tool_block(message, report, where))
            continue
        if pending and first is not None:
            out.append(_outer("user", pending, first))
            pending = []
        kept = _reserved(message).get("message")
        if isinstance(kept, dict):
            out.append(copy.deepcopy(kept))
            continue
        role = "user" if message.role == "system" else message.role
        if message.role == "system" and report is not None:
            report.lost(
                where,
                "role system",
                "written as a user message: Strands keeps the system prompt apart",
            )
        content = [_part_out(p, report, where) for p in message.content]
        for call in message.tool_calls:
            content.append(
                {"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}}
            )
        out.append(_outer(role, content, message))
    if pending and first is not None:
        out.append(_outer("user", pending, first))
    return out


def messages_to_strands(
    messages: Sequence[Message], *, report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Strands messages (JSON) for offprompt ``messages``; consecutive tool messages become
    one user message of ``toolResult`` blocks. What Strands cannot hold goes in ``report``."""
    return _export(list(messages), report)


def messages_to_session_messages(
    messages: Sequence[Message], *, report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """``SessionMessage.to_dict()`` records for ``messages``, numbered from 0 (a session
    message read in keeps its own ``message_id``, ``redact_message`` and times)."""
    out: list[dict[str, Any]] = []
    groups: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and groups and groups[-1][-1].role == "tool":
            groups[-1].append(message)
        else:
            groups.append([message])
    for number, group in enumerate(groups):
        [strands_message] = _export(group, report)
        session = _reserved(group[0]).get("session") or {}
        stamp = group[0].created_at.isoformat()
        record = {
            "message": strands_message,
            "message_id": session.get("message_id", number),
            "redact_message": session.get("redact_message"),
            "created_at": session.get("created_at", stamp),
            "updated_at": session.get("updated_at", stamp),
        }
        out.append(record)
    return out
