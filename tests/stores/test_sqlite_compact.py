"""SQLiteStore schema 4: compact message bodies, state rows stored once by key, one
transaction for many calls, and schema-3 files opened and carried forward."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.messages import Message, ToolCall
from offprompt.stores import InMemoryStore, SQLiteStore
from offprompt.stores._bodies import COMPRESS_FROM
from offprompt.stores.sqlite import MIGRATIONS, SCHEMA_VERSION

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _messages() -> list[Message]:
    when = datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=timezone.utc)
    return [
        Message.system("be brief", id="m1", created_at=when),
        Message.user(
            [
                TextArtifact(value="look", name="named part", meta={"k": 1}),
                ImageArtifact(value=PNG, format="png"),
            ],
            meta={"_langchain": {"type": "human", "fields": {}}},
        ),
        Message.assistant(
            tool_calls=[ToolCall(id="call-1", name="search", arguments={"q": "x" * 40})]
        ),
        Message.tool("a long tool result, " * 40, tool_call_id="call-1", name="search"),
        Message.assistant("", name="bot", tool_call_id=None),
        Message.user(TextArtifact(value="with a reference", reference="https://example.com")),
    ]


def _bodies(path: Path) -> list[tuple[str, object]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT role, body FROM offprompt_messages ORDER BY seq").fetchall()


def test_compact_bodies_read_back_equal_and_long_ones_are_compressed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    messages = _messages()
    store.append("s", messages, [1] * len(messages))
    assert [s.message for s in store.read("s")] == messages
    assert [s.message for s in SQLiteStore(tmp_path / "m.db").read("s")] == messages
    stored = _bodies(tmp_path / "m.db")
    short = [body for _, body in stored if isinstance(body, str)]
    assert short and all('"role"' not in body and '"meta":{}' not in body for body in short)
    tool = next(body for role, body in stored if role == "tool")
    assert isinstance(tool, bytes) and len(tool) < 200  # 800 characters of JSON, deflated
    assert b"a long tool result" not in tool
    assert all(
        isinstance(body, bytes)
        for body, m in zip((b for _, b in stored), messages, strict=True)
        if len(m.model_dump_json()) > 2 * COMPRESS_FROM
    )


def test_a_schema_3_file_opens_and_moves_forward(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for step in (1, 2, 3):
        MIGRATIONS[step](conn)
    conn.execute("INSERT INTO offprompt_meta VALUES ('schema_version', '3')")
    old = [Message.user("from schema 3"), Message.assistant("an answer " * 30)]
    for seq, message in enumerate(old):
        conn.execute(
            "INSERT INTO offprompt_messages (tenant, user_id, agent, run, session_id, seq,"
            " role, tokens, appended_at, body) VALUES ('', 'bob', '', '', 's', ?, ?, 3, 1.0, ?)",
            (seq, message.role, message.model_dump_json()),
        )
    conn.execute("INSERT INTO offprompt_sessions VALUES ('', 'bob', '', '', 's', 2, 0, 2, 1.0)")
    conn.execute(
        "INSERT INTO offprompt_state (tenant, user_id, agent, run, session_id, key, value)"
        " VALUES ('', 'bob', '', '', 's', 'k', '{\"v\": 1}')"
    )
    conn.commit()
    conn.close()
    from offprompt.scope import Scope

    bob = Scope(user="bob")
    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION == 5  # v5: task outputs
    assert [s.message for s in store.read("s", scope=bob)] == old  # full bodies still read
    assert store.get_state("s", "k", scope=bob) == {"v": 1}
    assert store.append("s", [Message.user("new")], [1], scope=bob) == [2]
    assert [s.message.text for s in store.read("s", scope=bob)][-1] == "new"
    assert [i.sessions for i in [store.forget_scope(Scope(user="bob"))]] == [1]
    assert store.read("s", scope=bob) == [] and store.get_state("s", "k", scope=bob) is None
    with sqlite3.connect(path) as check:
        sql = check.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'offprompt_state'"
        ).fetchone()[0]
        assert "WITHOUT ROWID" in sql
        indexes = {
            r[0]: r[1]
            for r in check.execute("SELECT name, sql FROM sqlite_master WHERE type='index'")
        }
        assert "user_id <> ''" in indexes["offprompt_state_user"]
        plan = check.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM offprompt_messages"
            " WHERE user_id = ? AND user_id <> ''",
            ("bob",),
        ).fetchall()
        assert "offprompt_messages_user" in str(plan)  # forget by user still uses it


def test_transaction_commits_all_or_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    with store.transaction():
        store.set_state("s", "a", 1)
        with store.transaction():  # nested: part of the outer one
            store.append("s", [Message.user("hi")], [1])
        store.set_state("s", "b", 2)
        assert store.get_state("s", "a") == 1  # reads inside see the writes
    assert store.state_keys("s") == ["a", "b"] and store.count("s") == 1
    with pytest.raises(RuntimeError), store.transaction():
        store.set_state("s", "c", 3)
        store.append("s", [Message.user("lost")], [1])
        raise RuntimeError("boom")
    assert store.state_keys("s") == ["a", "b"] and store.count("s") == 1
    other = SQLiteStore(tmp_path / "m.db")  # another connection sees the committed state
    assert other.state_keys("s") == ["a", "b"]
    memory = InMemoryStore()
    with memory.transaction():  # stores without transactions run the calls one by one
        memory.set_state("s", "a", 1)
    assert memory.get_state("s", "a") == 1


@pytest.mark.parametrize("prefix", ["", "a", "a/", "ü", "a\U0010ffff", "b"])
def test_state_keys_by_prefix_is_a_key_range(tmp_path: Path, prefix: str) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    keys = ["a", "a/1", "a/2", "a0", "ab", "a\U0010ffff", "a\U0010ffffz", "b", "ü", "üx", "ý"]
    for key in keys:
        store.set_state("s", key, key)
    assert store.state_keys("s", prefix) == sorted(k for k in keys if k.startswith(prefix))


def test_bytes_state_values_are_kept_as_they_are(tmp_path: Path) -> None:
    from offprompt.scope import Scope

    store = SQLiteStore(tmp_path / "m.db")
    assert store.binary_state and store.scoped(Scope(user="u")).binary_state
    assert not InMemoryStore().binary_state
    store.set_state("s", "raw", b"\x00\x01\xff not json")
    store.set_state("s", "doc", {"a": [1]})
    again = SQLiteStore(tmp_path / "m.db")
    assert again.get_state("s", "raw") == b"\x00\x01\xff not json"
    assert again.get_state("s", "doc") == {"a": [1]}
    assert again.state_keys("s") == ["doc", "raw"]
