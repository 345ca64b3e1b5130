"""offprompt.interop.adk without ADK: event JSON (snake_case as ADK's services store it,
camelCase as its API serves it) to Messages and back, and the ``adk`` CLI format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offprompt.cli import EXIT_OK, main
from offprompt.errors import ValidationError
from offprompt.interop.adk import message_from_event, messages_from_events, messages_to_events

EVENTS = [
    {
        "id": "e1",
        "invocation_id": "i1",
        "author": "user",
        "timestamp": 1.25,
        "content": {"role": "user", "parts": [{"text": "Weather in Zürich? 🌦"}]},
    },
    {
        "id": "e2",
        "invocation_id": "i1",
        "author": "weather",
        "timestamp": 2.5,
        "content": {
            "role": "model",
            "parts": [
                {"function_call": {"id": "c1", "name": "lookup", "args": {"city": "Zürich"}}}
            ],
        },
        "actions": {"state_delta": {"k": 1}, "artifact_delta": {}},
    },
    {
        "id": "e3",
        "invocation_id": "i1",
        "author": "weather",
        "timestamp": 3.0,
        "content": {
            "role": "user",
            "parts": [
                {
                    "function_response": {
                        "id": "c1",
                        "name": "lookup",
                        "response": {"result": "rain"},
                    }
                }
            ],
        },
    },
]


def test_events_round_trip_and_read_as_messages() -> None:
    messages = messages_from_events(EVENTS)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls[0].arguments == {"city": "Zürich"}
    assert messages[2].tool_call_id == "c1" and json.loads(messages[2].text) == {"result": "rain"}
    assert messages[0].created_at.timestamp() == 1.25
    assert messages_to_events(messages) == EVENTS


def test_camel_case_parts_are_read_too() -> None:
    event = {
        "id": "e9",
        "author": "model",
        "content": {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "c2", "name": "add", "args": {"a": 1}}},
                {"inlineData": {"mimeType": "image/png", "data": "AP9pbWc_Pg=="}},
            ],
        },
    }
    message = message_from_event(event)
    assert message.tool_calls[0].name == "add"
    assert message.content[0].value == b"\x00\xffimg?>"


@pytest.mark.parametrize("bad", ["text", 3, [1]])
def test_bad_events_are_refused(bad: object) -> None:
    with pytest.raises(ValidationError):
        messages_from_events(bad if isinstance(bad, list) else [bad])  # type: ignore[list-item]


def test_cli_imports_a_session_file_and_exports_it_back(tmp_path: Path) -> None:
    source = tmp_path / "session.json"
    source.write_text(json.dumps({"id": "s1", "events": EVENTS}), encoding="utf-8")
    home = str(tmp_path / "home")
    assert (
        main(["--home", home, "import", "--format", "adk", str(source), "--session", "s1"])
        == EXIT_OK
    )
    out = tmp_path / "back.json"
    assert main(["--home", home, "export", "s1", "--format", "adk", str(out)]) == EXIT_OK
    assert json.loads(out.read_text(encoding="utf-8")) == EVENTS


def test_sniff_names_adk_files() -> None:
    from offprompt.cli.formats import sniff

    assert sniff(json.dumps(EVENTS)) == "adk"
    assert (
        sniff(json.dumps({"id": "s", "app_name": "a", "user_id": "u", "events": EVENTS})) == "adk"
    )
