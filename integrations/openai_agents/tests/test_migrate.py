"""``offprompt migrate`` / ``import`` / ``export`` read and write the SQLite file of the
SDK's ``SQLiteSession``: files written by the real ``SQLiteSession`` are read, and the
files written are read back by the real ``SQLiteSession``. The command runs in a
subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from offprompt_openai_agents import OffpromptSession
from test_lossless import ITEMS

from offprompt.interop.openai_agents import read_sqlite_sessions, write_sqlite_sessions
from offprompt.interop.report import ConversionReport


def _offprompt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OFFPROMPT_HOME", "OFFPROMPT_DEBUG")}
    env.update(COLUMNS="200", NO_COLOR="1", PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "offprompt.cli", "--home", str(cwd / "home"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


async def _sdk_file(path: Path, sessions: dict[str, list[Any]]) -> None:
    for session_id, items in sessions.items():
        session = SQLiteSession(session_id, path)
        await session.add_items(items)
        session.close()


async def _sdk_items(path: Path, session_id: str) -> list[Any]:
    session = SQLiteSession(session_id, path)
    try:
        return await session.get_items()
    finally:
        session.close()


def _dumps(items: list[Any]) -> list[str]:
    return [json.dumps(i) for i in items]


async def test_sqlite_to_sqlite_gives_the_sdk_back_every_item(tmp_path: Path) -> None:
    source, out = tmp_path / "agents.db", tmp_path / "copy.db"
    await _sdk_file(source, {"conv-1": ITEMS, "conv-2": [{"role": "user", "content": "other"}]})
    done = _offprompt(
        "migrate",
        "--from",
        "openai-agents-sqlite",
        "--to",
        "openai-agents-sqlite",
        str(source),
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"{len(ITEMS) + 1} item(s) converted openai-agents-sqlite -> offprompt; nothing lost"
        in done.stdout
    )
    assert _dumps(await _sdk_items(out, "conv-1")) == _dumps(ITEMS)
    assert await _sdk_items(out, "conv-2") == [{"role": "user", "content": "other"}]
    # The rows keep their times; the schema is the SDK's own.
    with sqlite3.connect(source) as a, sqlite3.connect(out) as b:
        times = "SELECT created_at FROM agent_messages ORDER BY id"
        assert a.execute(times).fetchall() == b.execute(times).fetchall()
        tables = "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'agent_%' ORDER BY name"
        assert b.execute(tables).fetchall() == [("agent_messages",), ("agent_sessions",)]


async def test_to_langchain_and_back_into_an_existing_sdk_file(tmp_path: Path) -> None:
    source = tmp_path / "agents.db"
    conversation = [
        {"role": "user", "content": "What is 2+3?"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"type": "function_call_output", "call_id": "c1", "output": "5"},
        {"role": "assistant", "content": "5"},
    ]
    await _sdk_file(source, {"conv-1": conversation})
    done = _offprompt(
        "migrate",
        "--from",
        "openai-agents-sqlite",
        "--to",
        "langchain",
        "--session",
        "conv-1",
        str(source),
        "lc.json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    langchain = json.loads((tmp_path / "lc.json").read_text())
    assert [m["type"] for m in langchain] == ["human", "ai", "tool", "ai"]
    assert langchain[1]["data"]["tool_calls"][0]["args"] == {"a": 2, "b": 3}

    # Back into the same file as another session, next to the original one.
    def langchain_into_source(session_id: str) -> subprocess.CompletedProcess[str]:
        return _offprompt(
            *("migrate", "--from", "langchain", "--to", "openai-agents-sqlite"),
            *("--session", session_id, "lc.json", str(source)),
            cwd=tmp_path,
        )

    done = langchain_into_source("from-lc")
    assert done.returncode == 0, done.stderr
    assert await _sdk_items(source, "from-lc") == conversation
    assert await _sdk_items(source, "conv-1") == conversation
    # A session that already has items there is refused; the file is unchanged.
    before = source.read_bytes()
    done = langchain_into_source("conv-1")
    assert done.returncode == 1
    assert "already holds 4 items of session 'conv-1'; nothing written" in done.stderr
    assert source.read_bytes() == before


async def test_import_into_offprompt_then_the_session_reads_it_and_export_writes_it(
    tmp_path: Path,
) -> None:
    source = tmp_path / "agents.db"
    await _sdk_file(source, {"conv-1": ITEMS})
    done = _offprompt("import", "--format", "openai-agents-sqlite", str(source), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"imported {len(ITEMS)} messages" in done.stdout
    session = OffpromptSession("conv-1", path=tmp_path / "home" / "memory.db")
    try:
        assert _dumps(await session.get_items()) == _dumps(ITEMS)
    finally:
        session.close()
    done = _offprompt(
        "export", "conv-1", "--format", "openai-agents-sqlite", "exported.db", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert _dumps(await _sdk_items(tmp_path / "exported.db", "conv-1")) == _dumps(ITEMS)


async def test_wrong_files_get_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE things (x)")
    await _sdk_file(tmp_path / "agents.db", {"s": [{"role": "user", "content": "hi"}]})
    cases = [
        (
            ["--from", "openai-agents-sqlite", "--to", "langchain", "notes.txt", "o.json"],
            "notes.txt is not a valid openai-agents-sqlite file: notes.txt is not an SQLite database file",
        ),
        (
            ["--from", "openai-agents-sqlite", "--to", "langchain", "other.db", "o.json"],
            "has no agent_messages table (an OpenAI Agents SQLiteSession file has one); its tables: things",
        ),
        (
            ["--from", "langchain", "--to", "langchain", "agents.db", "o.json"],
            "agents.db is an SQLite database, not langchain text (an OpenAI Agents SQLiteSession file? try --from openai-agents-sqlite)",
        ),
        (
            [
                "--from",
                "openai-agents-sqlite",
                "--to",
                "openai-agents-sqlite",
                "agents.db",
                "notes.txt",
            ],
            "notes.txt exists and is not an SQLite database; not overwritten",
        ),
    ]
    for args, message in cases:
        done = _offprompt("migrate", *args, cwd=tmp_path)
        assert done.returncode == 1 and message in done.stderr, done.stderr
    assert (tmp_path / "notes.txt").read_text() == "hello"
    assert not (tmp_path / "o.json").exists()


async def test_rows_sqlitesession_skips_are_reported_not_imported(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    await _sdk_file(path, {"s": [{"role": "user", "content": "valid"}]})
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', 'not json {')"
        )
        conn.execute(
            """INSERT INTO agent_messages (session_id, message_data) VALUES ('s', '"a string"')"""
        )
    report = ConversionReport()
    sessions = read_sqlite_sessions(path, report)
    assert [m.text for m in sessions["s"]] == ["valid"]
    assert [loss.reason for loss in report.losses] == [
        "not valid JSON; skipped, as SQLiteSession does",
        "not a JSON object, so no session item",
    ]
    assert await _sdk_items(path, "s") == [{"role": "user", "content": "valid"}, "a string"]


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    # A session key SQLite cannot bind fails inside the write transaction, after the
    # temporary file was made: neither it nor the target is left behind.
    from offprompt.errors import ValidationError
    from offprompt.messages import Message

    with pytest.raises(ValidationError, match="cannot write"):
        write_sqlite_sessions(tmp_path / "new.db", {object(): [Message.user("hi")]})  # type: ignore[dict-item]
    assert list(tmp_path.iterdir()) == []
