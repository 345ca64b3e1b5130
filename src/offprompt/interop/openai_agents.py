"""OpenAI Agents SDK session items, in and out. Never imports the SDK.

A session of the OpenAI Agents SDK (``agents.memory.Session``) holds a list of
Responses-API input items: plain dicts such as ``{"role": "user", "content": "hi"}``,
``{"type": "message", "role": "assistant", "content": [{"type": "output_text", ...}]}``,
``{"type": "function_call", "call_id": ..., "name": ..., "arguments": "{...}"}``,
``{"type": "function_call_output", "call_id": ..., "output": ...}`` and
``{"type": "reasoning", ...}``. ``SQLiteSession`` stores each one as ``json.dumps(item)``
in one row of ``agent_messages``.

One item is one :class:`~offprompt.messages.Message`:

* a message item (``role`` user, assistant, system or developer) → a message of that
  role (developer → system), its text parts → :class:`TextArtifact`, inline images
  (``input_image`` with a ``data:`` URL) → :class:`ImageArtifact`, inline files
  (``input_file`` with ``file_data``) → :class:`BlobArtifact`, every other part (images
  by URL or file id, refusals, audio) → a :class:`JsonArtifact` holding the part as it is;
* ``function_call`` / ``custom_tool_call`` → an assistant message with one
  :class:`ToolCall` (``call_id``, ``name``, the parsed ``arguments``; a custom tool's
  ``input`` as ``{"input": ...}``);
* ``function_call_output`` / ``custom_tool_call_output`` → a tool message answering
  ``call_id``, its ``output`` (a string, or a list of parts) as content;
* every other item (``reasoning``, hosted tool calls, computer, shell and MCP items,
  ``item_reference``, compaction items, types of later SDK versions) → an assistant
  message with no content and the item kept as it is.

What a ``Message`` has no field for (the item's ``type``, ``id``, ``status``, the key
order, a part's ``annotations`` or ``detail``) rides in the reserved
``meta["_openai_agents"]`` entry of the message and of each part; the big values (text,
image bytes, tool outputs) are stored once, in the parts. Each conversion is checked
by exporting it again: an item whose export would differ in any byte of its JSON is
kept whole in ``meta["_openai_agents"]["item"]`` instead, so item → Message → item
gives back the item exactly (``json.dumps`` of both is equal), by construction.

Messages that did not come from the SDK are written as the items the SDK itself
accepts: ``{"role": ..., "content": ...}`` messages (``input_text`` / ``input_image``
parts when there are images), one ``function_call`` per tool call and a
``function_call_output`` per tool message. What no item can carry (a message's
``name``, foreign ``meta``, artifacts with no part equivalent) is listed in the
:class:`ConversionReport` when one is given.

Example:
    >>> item = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'}
    >>> message = message_from_item(item)
    >>> message.role, message.tool_calls[0].arguments
    ('assistant', {'a': 1})
    >>> message_to_items(message) == [item]
    True
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import os
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offprompt._validation import check_json_depth, ensure_json, loads_json
from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ImageArtifact,
    JsonArtifact,
    TextArtifact,
)
from offprompt.errors import DeserializationError, SerializationError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "IMAGE_URL_META",
    "MESSAGES_TABLE",
    "RESERVED",
    "SESSIONS_TABLE",
    "is_sqlite_file",
    "item_json",
    "message_from_item",
    "message_to_items",
    "messages_from_items",
    "messages_to_items",
    "native_item",
    "read_sqlite_sessions",
    "write_sqlite_sessions",
]

#: Reserved key in ``Message.meta`` and artifact ``meta`` holding SDK-only details.
RESERVED = "_openai_agents"
#: ``meta`` key naming the URL of an image part that is not stored inline (as in the
#: LangChain and LlamaIndex converters).
IMAGE_URL_META = "image_url"

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = ("input_text", "output_text", "text")
_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def item_json(item: Any) -> str:
    """The JSON text of an item as ``SQLiteSession`` stores it (``json.dumps(item)``)."""
    return json.dumps(item)


# -- item -> Message --------------------------------------------------------------------


def messages_from_items(
    items: Sequence[Mapping[str, Any]], report: ConversionReport | None = None
) -> list[Message]:
    """Turn session items into offprompt messages, one message per item.

    Args:
        items: The items, as ``Session.get_items()`` returns them.
        report: Counts the conversion (nothing is ever lost going in).

    Raises:
        DeserializationError: ``items`` is not a list of JSON objects.
        SerializationError: An item holds a value that is not JSON.

    Example:
        >>> [m.role for m in messages_from_items([{"role": "user", "content": "hi"}])]
        ['user']
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise DeserializationError(
            f"OpenAI Agents items must be a list of dicts, got {type(items).__name__}"
        )
    _begin(report, "openai-agents", "offprompt")
    return [message_from_item(item, report, where=f"item {i}") for i, item in enumerate(items)]


def message_from_item(
    item: Mapping[str, Any], report: ConversionReport | None = None, *, where: str = "item"
) -> Message:
    """Turn one session item into a :class:`Message` that gives it back exactly.

    Args:
        item: A Responses-API input item (a JSON object).
        report: Counts the conversion.
        where: How errors name this item.

    Raises:
        DeserializationError: ``item`` is not a JSON object.
        SerializationError: ``item`` holds a value that is not JSON.

    Example:
        >>> message_from_item({"role": "developer", "content": "Be brief."}).role
        'system'
    """
    if not isinstance(item, Mapping):
        raise DeserializationError(
            f"OpenAI Agents {where} must be a dict, got {type(item).__name__}", where=where
        )
    try:
        data: dict[str, Any] = ensure_json(dict(item), field=where)
    except SerializationError as exc:
        raise SerializationError(f"OpenAI Agents {where} is not JSON: {exc}") from None
    if json.dumps(data) != json.dumps(dict(item)):
        raise SerializationError(
            f"OpenAI Agents {where} changes when stored as JSON (e.g. non-string keys or a "
            "tuple); it cannot be stored losslessly"
        )
    message = _build(data, where)
    if item_json(_export_native(message)) != item_json(data):
        message = _verbatim(message, data)
    if report is not None:
        report.converted += 1
    return message


def _build(item: dict[str, Any], where: str) -> Message:
    kind = item.get("type")
    role = item.get("role")
    try:
        if kind in (None, "message") and isinstance(role, str) and role in _ROLES:
            return _message_item(item, _ROLES[role], where)
        if kind in _CALLS:
            return _call_item(item)
        if kind in _OUTPUTS and isinstance(item.get("call_id"), str) and item["call_id"]:
            return _output_item(item, where)
    except (ValidationError, SerializationError):
        pass  # a field the neutral view cannot hold (odd text): kept whole below
    return Message(role="assistant", meta={RESERVED: {"item": item}})


def _message_item(item: dict[str, Any], role: str, where: str) -> Message:
    return _with_parts(item, "content", role, where)


def _output_item(item: dict[str, Any], where: str) -> Message:
    return _with_parts(item, "output", "tool", where, tool_call_id=item["call_id"])


def _with_parts(item: dict[str, Any], key: str, role: str, where: str, **fields: Any) -> Message:
    """A message whose parts are ``item[key]`` (a string or a list of parts); the rest of
    the item, key order included, is the template the export fills back in."""
    value = item.get(key)
    template = {k: (None if k == key else v) for k, v in item.items()}
    if isinstance(value, str):
        parts: list[BaseArtifact] = [TextArtifact(value=value)] if value else []
        shape = {"template": template, "text": True}
    elif isinstance(value, list):
        parts = [_part_in(p, f"{where} {key}[{i}]") for i, p in enumerate(value)]
        shape = {"template": template}
    else:
        raise ValidationError(f"{key} is neither a string nor a list")
    return Message(role=role, content=parts, meta={RESERVED: shape}, **fields)


def _call_item(item: dict[str, Any]) -> Message:
    calls: list[ToolCall] = []
    call_id, name = item.get("call_id"), item.get("name")
    if isinstance(call_id, str) and isinstance(name, str) and name:
        if item.get("type") == "custom_tool_call":
            arguments: Any = {"input": item.get("input")}
        else:
            arguments = item.get("arguments")
        try:
            calls = [ToolCall(id=call_id, name=name, arguments=arguments)]
        except ValidationError:
            calls = []  # arguments that are no JSON object: the item itself keeps them
    return Message(role="assistant", tool_calls=calls, meta={RESERVED: {"item": item}})


def _part_in(part: Any, where: str) -> BaseArtifact:
    if isinstance(part, str):
        return TextArtifact(value=part, meta={RESERVED: {"str": True}})
    if not isinstance(part, dict):
        return JsonArtifact(value=part, meta={RESERVED: {"raw": True}})
    kind = part.get("type")
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return TextArtifact(value=part["text"], meta={RESERVED: _template(part, "text")})
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        inline = _inline(part, "image_url", image=True)
        if inline is not None:
            return inline
        return JsonArtifact(
            value=part, meta={RESERVED: {"raw": True}, IMAGE_URL_META: part["image_url"]}
        )
    if kind == "input_file" and isinstance(part.get("file_data"), str):
        inline = _inline(part, "file_data", image=False)
        if inline is not None:
            return inline
    return JsonArtifact(value=part, meta={RESERVED: {"raw": True}})


def _template(part: dict[str, Any], key: str) -> dict[str, Any]:
    return {"part": {k: (None if k == key else v) for k, v in part.items()}, "key": key}


def _inline(part: dict[str, Any], key: str, *, image: bool) -> BaseArtifact | None:
    """The data URL at ``part[key]`` as an Image/BlobArtifact, or None if it would not
    come back byte-identical."""
    url = part[key]
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, _, raw = url.partition(";base64,")
    mime = head[len("data:") :] or "application/octet-stream"
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(data).decode("ascii") != raw:
        return None
    meta = {RESERVED: {**_template(part, key), "prefix": head + ";base64,"}}
    if image:
        try:
            return ImageArtifact(value=data, meta=meta)
        except ValidationError:
            pass  # bytes pillow cannot read: kept as a blob of the stated type
    return BlobArtifact(value=data, mime_type=mime, meta=meta)


def _verbatim(message: Message, item: dict[str, Any]) -> Message:
    """``message`` (its neutral view kept for other frameworks) with the whole item."""
    return message.model_copy(update={"meta": {RESERVED: {"item": item}}})


# -- Message -> item --------------------------------------------------------------------


def native_item(message: Message) -> dict[str, Any] | None:
    """The item ``message`` was converted from, or ``None`` for a message from elsewhere.

    Example:
        >>> native_item(message_from_item({"role": "user", "content": "hi"}))
        {'role': 'user', 'content': 'hi'}
        >>> native_item(Message.user("hi")) is None
        True
    """
    reserved = message.meta.get(RESERVED)
    if not isinstance(reserved, Mapping):
        return None
    if isinstance(reserved.get("item"), dict) or isinstance(reserved.get("template"), dict):
        return _export_native(message)
    return None


def _export_native(message: Message) -> dict[str, Any]:
    reserved = message.meta[RESERVED]
    whole = reserved.get("item")
    if isinstance(whole, dict):
        return copy.deepcopy(whole)
    item: dict[str, Any] = copy.deepcopy(reserved["template"])
    key = "output" if message.role == "tool" else "content"
    if reserved.get("text"):
        item[key] = "".join(p.value for p in message.content if isinstance(p, TextArtifact))
    else:
        item[key] = [_part_out(p) for p in message.content]
    return item


def _part_out(part: BaseArtifact) -> Any:
    reserved = part.meta.get(RESERVED)
    if isinstance(reserved, Mapping):
        if reserved.get("str") and isinstance(part, TextArtifact):
            return part.value
        if reserved.get("raw") and isinstance(part, JsonArtifact):
            return copy.deepcopy(part.value)
        template, key = reserved.get("part"), reserved.get("key")
        if isinstance(template, dict) and isinstance(key, str):
            out = copy.deepcopy(template)
            if isinstance(part, TextArtifact):
                out[key] = part.value
            elif isinstance(part, BlobArtifact):
                out[key] = str(reserved.get("prefix", "")) + part.base64
            return out
    return _plain_part(part, None, "")


def messages_to_items(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Turn offprompt messages into session items (``Session.add_items`` input).

    Messages that came from the SDK give back their item exactly; others become the
    plain items the SDK accepts (an assistant message with tool calls becomes its text
    item, if any, then one ``function_call`` per call).

    Args:
        messages: The messages, in order.
        report: Collects what no item can carry (see the module docstring).

    Example:
        >>> messages_to_items([Message.user("hi")])
        [{'role': 'user', 'content': 'hi'}]
    """
    _begin(report, "offprompt", "openai-agents")
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        items.extend(message_to_items(message, report, where=f"message {index}"))
    return items


def message_to_items(
    message: Message, report: ConversionReport | None = None, *, where: str = "message"
) -> list[dict[str, Any]]:
    """The item(s) of one :class:`Message` (see :func:`messages_to_items`).

    Example:
        >>> message_to_items(Message.tool("42", tool_call_id="c1"))
        [{'type': 'function_call_output', 'call_id': 'c1', 'output': '42'}]
    """
    if not isinstance(message, Message):
        raise ValidationError(f"{where} must be a Message, got {type(message).__name__}")
    native = native_item(message)
    if report is not None:
        report.converted += 1
    if native is not None:
        return [native]
    if report is not None:
        for key in message.meta:
            report.lost(where, f"meta[{key!r}]", "an OpenAI Agents item has no such field")
        if message.name is not None:
            report.lost(where, "name", "an OpenAI Agents item has no author name")
    if message.role == "tool":
        return [_plain_output(message, report, where)]
    items: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        items.append(_plain_message(message, report, where))
    if message.tool_calls and message.role != "assistant" and report is not None:
        report.lost(where, "tool_calls", f"written as function calls after a {message.role} item")
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments, ensure_ascii=False),
            }
        )
    return items


def _plain_message(message: Message, report: ConversionReport | None, where: str) -> dict[str, Any]:
    parts = message.content
    if all(isinstance(p, TextArtifact) for p in parts):
        text = "".join(p.value for p in parts if isinstance(p, TextArtifact))
        return {"role": message.role, "content": text}
    text_kind = "output_text" if message.role == "assistant" else "input_text"
    content = [
        _plain_part(p, report, f"{where} content[{i}]", text_kind) for i, p in enumerate(parts)
    ]
    return {"role": message.role, "content": content}


def _plain_output(message: Message, report: ConversionReport | None, where: str) -> dict[str, Any]:
    if message.tool_call_id is None and report is not None:
        report.lost(where, "tool_call_id", "a function_call_output needs one; '' used")
    parts = message.content
    output: Any
    if all(isinstance(p, TextArtifact) for p in parts):
        output = "".join(p.value for p in parts if isinstance(p, TextArtifact))
    else:
        output = [_plain_part(p, report, f"{where} content[{i}]") for i, p in enumerate(parts)]
    return {"type": "function_call_output", "call_id": message.tool_call_id or "", "output": output}


def _plain_part(
    part: BaseArtifact, report: ConversionReport | None, where: str, text_kind: str = "input_text"
) -> dict[str, Any]:
    if isinstance(part, TextArtifact):
        return {"type": text_kind, "text": part.value}
    if isinstance(part, ImageArtifact):
        return {"type": "input_image", "image_url": part.to_data_url(), "detail": "auto"}
    if isinstance(part, BlobArtifact):
        data_url = f"data:{part.mime_type};base64,{part.base64}"
        return {"type": "input_file", "file_data": data_url}
    url = part.meta.get(IMAGE_URL_META)
    if isinstance(url, str):
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if report is not None:
        report.lost(where, type(part).__name__, "no OpenAI Agents content part; sent as its text")
    return {"type": text_kind, "text": part.to_text()}


def _begin(report: ConversionReport | None, source: str, target: str) -> None:
    if report is not None:
        report.source = report.source or source
        report.target = report.target or target


# -- SQLiteSession files ----------------------------------------------------------------

#: The tables ``agents.SQLiteSession`` creates (its ``sessions_table`` and
#: ``messages_table`` defaults), and their schema, as the SDK writes it.
SESSIONS_TABLE = "agent_sessions"
MESSAGES_TABLE = "agent_messages"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {SESSIONS_TABLE} ("
    " session_id TEXT PRIMARY KEY,"
    " created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,"
    " updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
    f"CREATE TABLE IF NOT EXISTS {MESSAGES_TABLE} ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " session_id TEXT NOT NULL,"
    " message_data TEXT NOT NULL,"
    " created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,"
    f" FOREIGN KEY (session_id) REFERENCES {SESSIONS_TABLE} (session_id) ON DELETE CASCADE)",
    f"CREATE INDEX IF NOT EXISTS idx_{MESSAGES_TABLE}_session_id"
    f" ON {MESSAGES_TABLE} (session_id, id)",
)
_SQLITE_HEADER = b"SQLite format 3\x00"
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` starts with the SQLite file header."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(name) for (name,) in rows}


def read_sqlite_sessions(
    path: str | os.PathLike[str], report: ConversionReport | None = None
) -> dict[str, list[Message]]:
    """The sessions of a file written by ``agents.SQLiteSession`` (or ``AsyncSQLiteSession``,
    ``AdvancedSQLiteSession``: the same two tables), as offprompt messages.

    Sessions come in the order of their first item, then sessions without items; items
    by row id, as ``SQLiteSession.get_items`` returns them, each message's
    ``created_at`` the row's. A row whose ``message_data`` is not a JSON object is
    skipped, as ``SQLiteSession`` skips it, and listed in ``report``. The file is opened
    read-only.

    Raises:
        DeserializationError: The file is not SQLite, or has no ``agent_messages`` table.
    """
    if not is_sqlite_file(path):
        raise DeserializationError(f"{os.fspath(path)} is not an SQLite database file")
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    _begin(report, "openai-agents-sqlite", "offprompt")
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise DeserializationError(f"cannot open {os.fspath(path)}: {exc}") from None
    try:
        tables = _tables(conn)
        if MESSAGES_TABLE not in tables:
            listed = ", ".join(sorted(tables)) or "none"
            raise DeserializationError(
                f"{os.fspath(path)} has no {MESSAGES_TABLE} table (an OpenAI Agents "
                f"SQLiteSession file has one); its tables: {listed}"
            )
        rows = conn.execute(
            f"SELECT id, session_id, message_data, created_at FROM {MESSAGES_TABLE} ORDER BY id"
        ).fetchall()
        empty = (
            conn.execute(
                f"SELECT session_id FROM {SESSIONS_TABLE} WHERE session_id NOT IN "
                f"(SELECT session_id FROM {MESSAGES_TABLE}) ORDER BY created_at, session_id"
            ).fetchall()
            if SESSIONS_TABLE in tables
            else []
        )
    except sqlite3.Error as exc:
        raise DeserializationError(f"cannot read {os.fspath(path)}: {exc}") from None
    finally:
        conn.close()
    sessions: dict[str, list[Message]] = {}
    for row_id, session_id, data, created in rows:
        where = f"session {session_id!r} / row {row_id}"
        messages = sessions.setdefault(str(session_id), [])
        try:
            item = json.loads(data)
        except (json.JSONDecodeError, TypeError):
            if report is not None:
                report.lost(where, "message_data", "not valid JSON; skipped, as SQLiteSession does")
            continue
        except RecursionError:
            item = None  # nested past what Python parses: check_json_depth names the limit
            loads_json(data, what=where)
        check_json_depth(item, what=where)
        if not isinstance(item, dict):
            if report is not None:
                report.lost(where, "message_data", "not a JSON object, so no session item")
            continue
        message = message_from_item(item, report, where=where)
        when = _row_time(created)
        if when is not None:
            message = message.model_copy(update={"created_at": when})
        messages.append(message)
    for (session_id,) in empty:
        sessions.setdefault(str(session_id), [])
    return sessions


def _row_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def write_sqlite_sessions(
    path: str | os.PathLike[str],
    sessions: Mapping[str, Sequence[Message]],
    report: ConversionReport | None = None,
) -> int:
    """Write ``sessions`` into a ``SQLiteSession`` file; return the number of items written.

    A new file is built beside ``path`` and renamed into place, so a failure leaves no
    file. An existing file must be an SQLite database; the sessions are added to it in
    one transaction, next to the sessions it holds, and a session that already has items
    there is refused (nothing is written). Each item's ``created_at`` is its message's.

    Raises:
        ValidationError: ``path`` exists and is not SQLite, or a session already has items.
    """
    target = Path(path)
    batches = {
        session_id: [
            (item, message.created_at)
            for index, message in enumerate(messages)
            for item in message_to_items(
                message, report, where=f"session {session_id!r} / message {index}"
            )
        ]
        for session_id, messages in sessions.items()
    }
    _begin(report, "offprompt", "openai-agents-sqlite")
    if target.exists():
        if not is_sqlite_file(target) and target.stat().st_size > 0:
            raise ValidationError(f"{target} exists and is not an SQLite database; not overwritten")
        return _write_into(target, batches, existing=True)
    parent = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    try:
        written = _write_into(Path(tmp), batches, existing=False)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return written


def _write_into(
    path: Path, batches: Mapping[str, list[tuple[dict[str, Any], datetime]]], *, existing: bool
) -> int:
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                conn.execute(statement)
            if existing:
                for session_id in batches:
                    (count,) = conn.execute(
                        f"SELECT COUNT(*) FROM {MESSAGES_TABLE} WHERE session_id = ?", (session_id,)
                    ).fetchone()
                    if count:
                        raise ValidationError(
                            f"{path} already holds {count} items of session {session_id!r}; "
                            "nothing written (pick another --session or another file)"
                        )
            written = 0
            for session_id, rows in batches.items():
                conn.execute(
                    f"INSERT OR IGNORE INTO {SESSIONS_TABLE} (session_id) VALUES (?)", (session_id,)
                )
                conn.executemany(
                    f"INSERT INTO {MESSAGES_TABLE} (session_id, message_data, created_at) "
                    "VALUES (?, ?, ?)",
                    [
                        (
                            session_id,
                            item_json(item),
                            when.astimezone(timezone.utc).strftime(_TIME_FORMAT),
                        )
                        for item, when in rows
                    ],
                )
                written += len(rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise ValidationError(f"cannot write {path}: {exc}") from None
    finally:
        conn.close()
    return written
