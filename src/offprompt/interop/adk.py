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

The event itself rides in the reserved ``meta["_adk"]["event"]`` entry, its inline
bytes taken out (they are in the message's ``BlobArtifact`` s, stored once, and
``meta["_adk"]["blobs"]`` says where they go back), so event → Message → event gives
back the event exactly (its JSON is equal).
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
import os
import re
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from offprompt._tool_call import ToolCall
from offprompt._validation import check_json_depth, loads_json
from offprompt.artifacts import BlobArtifact, ImageArtifact, TextArtifact
from offprompt.errors import DeserializationError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message

__all__ = [
    "RESERVED",
    "message_from_event",
    "message_to_event",
    "messages_from_events",
    "messages_to_events",
    "read_sqlite_sessions",
    "session_key",
    "split_session_key",
    "write_sqlite_sessions",
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


def _move_blobs(kept: dict[str, Any], content: list[Any], fields: dict[str, Any]) -> None:
    """Take each inline part's bytes out of the kept event: the message's BlobArtifact at
    ``content`` position holds them, so they are stored once. Only bytes whose base64
    re-encodes to the very string are moved; ``native_event`` puts them back."""
    parts = kept.get("content", {}).get("parts") if isinstance(kept.get("content"), dict) else None
    if not isinstance(parts, list):
        return
    moved: list[list[Any]] = []
    position = 0
    for index, raw in enumerate(parts):
        if not isinstance(raw, dict) or _part_in(_snake_keys(raw)) is None:
            continue
        artifact = content[position]
        key = "inline_data" if "inline_data" in raw else "inlineData"
        inline = raw.get(key)
        same = (
            isinstance(artifact, BlobArtifact)
            and isinstance(inline, dict)
            and inline.get("data") == base64.urlsafe_b64encode(artifact.value).decode("ascii")
        )
        if same and isinstance(inline, dict):
            inline["data"] = None
            moved.append([index, position, key])
        position += 1
    if moved:
        fields["meta"][RESERVED]["blobs"] = moved


def _created_at(event: Mapping[str, Any]) -> datetime:
    stamp = event.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), timezone.utc)
    return datetime.now(timezone.utc)


def message_from_event(
    event: Mapping[str, Any], *, where: str = "event", report: ConversionReport | None = None
) -> Message:
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
    if report is not None:
        report.converted += 1
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
    _move_blobs(kept, texts, fields)
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


def messages_from_events(
    events: Sequence[Mapping[str, Any]], report: ConversionReport | None = None
) -> list[Message]:
    """ADK events (JSON objects, oldest first) as Messages, one each."""
    if isinstance(events, (str, bytes, Mapping)):
        raise ValidationError("messages_from_events takes a list of ADK events")
    _begin(report, "adk", "offprompt")
    return [
        message_from_event(event, where=f"event {i}", report=report)
        for i, event in enumerate(events)
    ]


def _begin(report: ConversionReport | None, source: str, target: str) -> None:
    if report is not None:
        report.source = report.source or source
        report.target = report.target or target


def native_event(message: Message) -> dict[str, Any] | None:
    """The ADK event a message was made from, or ``None`` if it came from elsewhere."""
    kept = message.meta.get(RESERVED)
    if not isinstance(kept, Mapping) or not isinstance(kept.get("event"), Mapping):
        return None
    event = copy.deepcopy(dict(kept["event"]))
    for index, position, key in kept.get("blobs") or []:
        artifact = message.content[position] if position < len(message.content) else None
        if isinstance(artifact, BlobArtifact):
            data = base64.urlsafe_b64encode(artifact.value).decode("ascii")
            event["content"]["parts"][index][key]["data"] = data
    return event


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
    if report is not None:
        report.converted += 1
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
    _begin(report, "offprompt", "adk")
    return [
        message_to_event(m, report=report, where=f"message {i}") for i, m in enumerate(messages)
    ]


# -- ADK's SqliteSessionService file ---------------------------------------------------

_ADK_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS app_states (app_name TEXT PRIMARY KEY, state TEXT NOT NULL,"
    " update_time REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS user_states (app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
    " state TEXT NOT NULL, update_time REAL NOT NULL, PRIMARY KEY (app_name, user_id))",
    "CREATE TABLE IF NOT EXISTS sessions (app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
    " id TEXT NOT NULL, state TEXT NOT NULL, create_time REAL NOT NULL,"
    " update_time REAL NOT NULL, PRIMARY KEY (app_name, user_id, id))",
    "CREATE TABLE IF NOT EXISTS events (id TEXT NOT NULL, app_name TEXT NOT NULL,"
    " user_id TEXT NOT NULL, session_id TEXT NOT NULL, invocation_id TEXT NOT NULL,"
    " timestamp REAL NOT NULL, event_data TEXT NOT NULL,"
    " PRIMARY KEY (app_name, user_id, session_id, id), FOREIGN KEY (app_name, user_id,"
    " session_id) REFERENCES sessions(app_name, user_id, id) ON DELETE CASCADE)",
)
_DEFAULT_APP = "offprompt"
_DEFAULT_USER = "user"


def session_key(app_name: str, user_id: str, session_id: str) -> str:
    """The one offprompt session name of an ADK session: ``app/user/session``, each part
    percent-encoded (so a ``/`` inside one never splits it)."""
    return "/".join(quote(part, safe="") for part in (app_name, user_id, session_id))


def split_session_key(key: str) -> tuple[str, str, str]:
    """``(app_name, user_id, session_id)`` of a :func:`session_key`; another name is a
    session of app ``offprompt`` and user ``user``."""
    parts = key.split("/")
    if len(parts) == 3 and all(parts):
        app, user, session = (unquote(part) for part in parts)
        return app, user, session
    return _DEFAULT_APP, _DEFAULT_USER, key


def read_sqlite_sessions(
    path: str | os.PathLike[str], report: ConversionReport | None = None
) -> dict[str, list[Message]]:
    """The sessions of a file of ADK's ``SqliteSessionService``, as offprompt messages.

    Each session is named by :func:`session_key`; its events come by timestamp (ties by
    row), as ``get_session`` returns them. A row whose ``event_data`` is not a JSON object
    is skipped and listed in ``report``. The file is opened read-only.

    Raises:
        DeserializationError: The file is not SQLite, or has no ADK ``events`` table.
    """
    source = Path(path)
    _begin(report, "adk-sqlite", "offprompt")
    try:
        with open(source, "rb") as handle:
            is_sqlite = handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        is_sqlite = False
    if not is_sqlite:
        raise DeserializationError(f"{os.fspath(path)} is not an SQLite database file")
    try:
        conn = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
            if "event_data" not in columns:
                raise DeserializationError(
                    f"{os.fspath(path)} has no events table with event_data (a file of "
                    "ADK's SqliteSessionService has one)"
                )
            sessions_rows = conn.execute(
                "SELECT app_name, user_id, id FROM sessions ORDER BY create_time, rowid"
            ).fetchall()
            rows = conn.execute(
                "SELECT app_name, user_id, session_id, event_data FROM events"
                " ORDER BY timestamp, rowid"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise DeserializationError(f"cannot read {os.fspath(path)}: {exc}") from None
    sessions: dict[str, list[Message]] = {session_key(*row): [] for row in sessions_rows}
    for index, (app, user, session, data) in enumerate(rows):
        key = session_key(app, user, session)
        where = f"session {key!r} / event {index}"
        try:
            event = json.loads(data)
        except (json.JSONDecodeError, TypeError):
            event = None
        except RecursionError:  # nested past what Python parses: loads_json names the limit
            event = loads_json(data, what=where)
        check_json_depth(event, what=where)
        if not isinstance(event, dict):
            if report is not None:
                report.lost(where, "event_data", "not a JSON object; skipped")
            continue
        sessions.setdefault(key, []).append(message_from_event(event, where=where, report=report))
    return sessions


def write_sqlite_sessions(
    path: str | os.PathLike[str],
    sessions: Mapping[str, Sequence[Message]],
    report: ConversionReport | None = None,
) -> int:
    """Write ``sessions`` into a file ADK's ``SqliteSessionService`` reads; return the
    number of events written.

    Each session's app, user and id come from its name (:func:`split_session_key`). It is
    one transaction: a session already in the file is refused and nothing is written.

    Raises:
        ValidationError: ``path`` exists and is not SQLite, or a session is already there.
    """
    target = Path(path)
    _begin(report, "offprompt", "adk-sqlite")
    if target.exists() and target.stat().st_size > 0:
        with open(target, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                raise ValidationError(
                    f"{target} exists and is not an SQLite database; not overwritten"
                )
    conn = sqlite3.connect(str(target), timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            written = _write_adk(conn, sessions, report)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    return written


def _write_adk(
    conn: sqlite3.Connection,
    sessions: Mapping[str, Sequence[Message]],
    report: ConversionReport | None,
) -> int:
    for statement in _ADK_SCHEMA:
        conn.execute(statement)
    written = 0
    for key, messages in sessions.items():
        app, user, session = split_session_key(key)
        found = conn.execute(
            "SELECT 1 FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (app, user, session),
        ).fetchone()
        if found:
            raise ValidationError(
                f"session {session!r} of user {user!r} in app {app!r} is already in the file;"
                " nothing written"
            )
        events = messages_to_events(messages, report=report)
        stamps = [float(e.get("timestamp") or 0.0) for e in events]
        now = max(stamps, default=datetime.now(timezone.utc).timestamp())
        conn.execute(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
            " VALUES (?, ?, ?, '{}', ?, ?)",
            (app, user, session, min(stamps, default=now), now),
        )
        conn.executemany(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp,"
            " event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    str(e.get("id") or ""),
                    app,
                    user,
                    session,
                    str(e.get("invocation_id") or ""),
                    stamp,
                    json.dumps(e, ensure_ascii=False),
                )
                for e, stamp in zip(events, stamps, strict=True)
            ],
        )
        written += len(events)
    return written
