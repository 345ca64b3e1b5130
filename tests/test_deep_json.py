"""Deeply nested JSON is refused with an error naming the limit, never a RecursionError
(issue 14 item 6): the JSON helpers, artifacts, messages, tool calls and the CLI importers."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from offprompt._validation import MAX_JSON_DEPTH, ensure_json, loads_json
from offprompt.artifacts import BaseArtifact, ListArtifact, TextArtifact
from offprompt.cli import EXIT_FAILURE, main
from offprompt.cli.formats import FORMATS
from offprompt.errors import DeserializationError, SerializationError, ValidationError
from offprompt.messages import Message, ToolCall

LIMIT = f"deeper than {MAX_JSON_DEPTH} levels"


def nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return [value]


def nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200_000])
def test_loads_json_names_the_limit(depth: int) -> None:
    with pytest.raises(DeserializationError, match=LIMIT):
        loads_json(nested_text(depth), what="input")
    assert loads_json(nested_text(MAX_JSON_DEPTH), what="input") is not None


def test_ensure_json_names_the_limit() -> None:
    for depth in (MAX_JSON_DEPTH + 1, 5_000):
        with pytest.raises(SerializationError, match=LIMIT):
            ensure_json(nested(depth), field="meta")
    assert ensure_json(nested(MAX_JSON_DEPTH), field="meta") == nested(MAX_JSON_DEPTH)


def deep_list_artifact(depth: int) -> dict[str, object]:
    data: dict[str, object] = TextArtifact(value="leaf").to_dict()
    for _ in range(depth):
        data = {"type": "ListArtifact", "value": [data]}
    return data


def test_artifacts_and_messages_from_deep_dicts_are_refused() -> None:
    with pytest.raises(DeserializationError, match=LIMIT):
        BaseArtifact.from_dict(deep_list_artifact(5_000))
    with pytest.raises(DeserializationError, match=LIMIT):
        Message.from_dict({"role": "user", "content": [deep_list_artifact(5_000)]})
    with pytest.raises(DeserializationError, match=LIMIT):
        Message.from_json(json.dumps({"role": "user", "meta": {"x": nested(MAX_JSON_DEPTH)}}))
    with pytest.raises(ValidationError, match=LIMIT):
        Message.user("hi", meta={"x": nested(3_000)})
    with pytest.raises(ValidationError, match=LIMIT):
        ToolCall(id="c", name="f", arguments={"x": nested(3_000)})
    shallow = BaseArtifact.from_dict(deep_list_artifact(10))
    assert isinstance(shallow, ListArtifact) and shallow.to_text() == "leaf"


def test_list_artifacts_built_in_python_have_a_nesting_limit() -> None:
    item: BaseArtifact = TextArtifact(value="leaf")
    with pytest.raises(ValidationError, match="limit is 50"):
        for _ in range(5_000):
            item = ListArtifact(value=[item])
    assert item.to_text() == "leaf" and len(json.dumps(item.to_dict())) > 0


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200_000])
def test_cli_import_of_a_deep_file_is_one_clear_line(
    fmt: str, depth: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "deep.json"
    if FORMATS[fmt].read_file is None:
        source.write_text(nested_text(depth), encoding="utf-8")
    elif fmt == "adk-sqlite":  # a file of ADK's SqliteSessionService: the JSON is an event
        with closing(sqlite3.connect(source)) as conn, conn:
            conn.execute("CREATE TABLE sessions (app_name, user_id, id, create_time)")
            conn.execute(
                "CREATE TABLE events (app_name, user_id, session_id, timestamp, event_data)"
            )
            conn.execute("INSERT INTO events VALUES ('a', 'u', 's', 1.0, ?)", (nested_text(depth),))
    else:  # a binary format (an SDK SQLiteSession file): the deep JSON is in a row
        with closing(sqlite3.connect(source)) as conn, conn:
            conn.execute(
                "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT, message_data TEXT, created_at TIMESTAMP)"
            )
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                (nested_text(depth),),
            )
    code = main(["--home", str(tmp_path / "home"), "import", "--format", fmt, str(source)])
    assert code == EXIT_FAILURE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("offprompt: error: "), err
    assert LIMIT in err[0] and "RecursionError" not in err[0]
    assert not (tmp_path / "home" / "memory.db").exists()
