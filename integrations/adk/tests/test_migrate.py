"""offprompt.interop.adk on real ADK JSON: the events of a real Runner run, as ADK's
SQLite session service stores them, go to offprompt Messages and back unchanged; and
offprompt's own messages become events ADK reads."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from offprompt_adk.testing import ScriptedLlm, function_call

from offprompt.artifacts import BlobArtifact, JsonArtifact
from offprompt.cli import EXIT_OK, main
from offprompt.errors import ValidationError
from offprompt.interop.adk import (
    message_to_event,
    messages_from_events,
    messages_to_events,
    read_sqlite_sessions,
    session_key,
    write_sqlite_sessions,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def _adk_events(tmp_path: Path) -> list[str]:
    """The rows of ADK's own SqliteSessionService after a real run (event_data JSON)."""
    db = tmp_path / "adk.db"
    service = SqliteSessionService(str(db))
    llm = ScriptedLlm(script=[function_call("add", {"a": 2, "b": 3}), "It is 5."])
    agent = LlmAgent(name="calc", model=llm, tools=[add])
    runner = Runner(app=App(name="calc_app", root_agent=agent), session_service=service)
    session = await service.create_session(app_name="calc_app", user_id="u")
    message = types.Content(
        role="user",
        parts=[
            types.Part.from_text(text="2+3? see ü"),
            types.Part.from_bytes(data=b"\x00\xffimg", mime_type="image/png"),
        ],
    )
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    await runner.close()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT event_data FROM events ORDER BY timestamp, rowid").fetchall()
    return [row[0] for row in rows]


async def test_real_adk_events_round_trip(tmp_path: Path) -> None:
    rows = await _adk_events(tmp_path)
    events = [json.loads(row) for row in rows]
    messages = messages_from_events(events)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0].text == "2+3? see ü"
    # The image's bytes are stored once: in the message's part, not again in the event.
    assert messages[0].content[1].value == b"\x00\xffimg"
    assert base64.urlsafe_b64encode(b"\x00\xffimg").decode() not in json.dumps(messages[0].meta)
    call = messages[1].tool_calls[0]
    assert (call.name, call.arguments) == ("add", {"a": 2, "b": 3})
    assert messages[2].tool_call_id == call.id
    assert json.loads(messages[2].text) == {"result": 5}
    assert messages[3].text == "It is 5." and messages[3].name == "calc"
    # Back: the very JSON ADK stored, and ADK reads it as the same Event.
    again = messages_to_events(messages)
    assert again == events
    for row, event in zip(rows, again, strict=True):
        assert Event.model_validate_json(json.dumps(event)) == Event.model_validate_json(row)
    # Through JSON (a file, another process) too.
    reloaded = [Message.model_validate_json(m.model_dump_json()) for m in messages]
    assert messages_to_events(reloaded) == events


def test_offprompt_messages_become_events_adk_reads() -> None:
    messages = [
        Message.user("What is 2+3?"),
        Message.assistant(
            "", tool_calls=[{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]
        ),
        Message.tool('{"result": 5}', tool_call_id="c1", name="add"),
        Message.assistant("5.", name="calc"),
    ]
    report = ConversionReport()
    events = [Event.model_validate(e) for e in messages_to_events(messages, report=report)]
    assert not report
    assert events[0].author == "user" and events[0].content.parts[0].text == "What is 2+3?"
    assert events[1].get_function_calls()[0].args == {"a": 2, "b": 3}
    response = events[2].get_function_responses()[0]
    assert (response.id, response.name, response.response) == ("c1", "add", {"result": 5})
    assert events[3].author == "calc" and events[3].content.role == "model"
    assert [e.id for e in events] == [m.id for m in messages]


def test_bytes_go_as_inline_data_and_the_rest_is_reported() -> None:
    blob = BlobArtifact(value=b"\x00\xff%PDF?>", mime_type="application/pdf")
    message = Message(
        role="user", content=["look", blob, JsonArtifact(value={"k": 1})], meta={"mine": 1}
    )
    report = ConversionReport()
    event = Event.model_validate(message_to_event(message, report=report))
    assert event.content.parts[0].text == "look"
    assert event.content.parts[1].inline_data == types.Blob(
        data=blob.value, mime_type="application/pdf"
    )
    assert {loss.what for loss in report.losses} == {"meta", "content[2] (JsonArtifact)"}
    # And ADK's own JSON of bytes comes in as the same bytes.
    back = messages_from_events([json.loads(event.model_dump_json(exclude_none=True))])[0]
    assert back.content[1].value == blob.value


async def test_adk_sqlite_file_reads_and_writes_back(tmp_path: Path) -> None:
    rows = await _adk_events(tmp_path)
    sessions = read_sqlite_sessions(tmp_path / "adk.db")
    ((key, messages),) = sessions.items()
    app, user, session_id = key.split("/")
    assert (app, user) == ("calc_app", "u")
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]

    # Written into a new file, ADK's own service reads the same events.
    moved = {session_key("calc_app", "u2", session_id): messages}
    assert write_sqlite_sessions(tmp_path / "copy.db", moved) == len(rows)
    service = SqliteSessionService(str(tmp_path / "copy.db"))
    copied = await service.get_session(app_name="calc_app", user_id="u2", session_id=session_id)
    assert [e.model_dump() for e in copied.events] == [
        Event.model_validate_json(row).model_dump() for row in rows
    ]
    # ... and appends to it as to any session of its own.
    await service.append_event(copied, Event(author="user", timestamp=copied.last_update_time + 1))
    # Writing the same session again is refused, and nothing is written.
    with pytest.raises(ValidationError, match="already in the file"):
        write_sqlite_sessions(tmp_path / "copy.db", moved)
    assert len(read_sqlite_sessions(tmp_path / "copy.db")[next(iter(moved))]) == len(rows) + 1


async def test_cli_migrates_an_adk_sqlite_file(tmp_path: Path) -> None:
    rows = await _adk_events(tmp_path)
    out = tmp_path / "events.json"
    code = main(
        [
            "--home",
            str(tmp_path / "home"),
            "migrate",
            "--from",
            "adk-sqlite",
            "--to",
            "adk",
            str(tmp_path / "adk.db"),
            str(out),
        ]
    )
    assert code == EXIT_OK
    assert json.loads(out.read_text(encoding="utf-8")) == [json.loads(row) for row in rows]
