"""``offprompt.interop.strands`` on JSON that Strands itself produced.

A real agent run (scripted model) gives the messages; Strands' own FileSessionManager
writes the session message files. Both come back exactly through offprompt messages,
and offprompt messages written as Strands messages are what a Strands agent runs on.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from offprompt_strands import OffpromptSessionRepository
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands.types.session import SessionMessage
from strands_testing import ScriptedModel, say, tool_call

from offprompt.errors import DeserializationError
from offprompt.interop.report import ConversionReport
from offprompt.interop.strands import (
    RESERVED,
    messages_from_strands,
    messages_to_session_messages,
    messages_to_strands,
)
from offprompt.messages import Message, ToolCall

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def chart() -> dict[str, Any]:
    """Draw a chart."""
    return {
        "status": "success",
        "content": [
            {"text": "a chart"},
            {"json": {"points": [1, 2, 3]}},
            {"image": {"format": "png", "source": {"bytes": PNG}}},
        ],
    }


@tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("boom")


def _run(tmp_path: Path) -> tuple[Agent, Path]:
    storage_dir = tmp_path / "sessions"
    manager = FileSessionManager(session_id="s1", storage_dir=str(storage_dir))
    model = ScriptedModel(
        [
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me compute and draw."},
                    {"toolUse": {"toolUseId": "t1", "name": "add", "input": {"a": 2, "b": 3}}},
                    {"toolUse": {"toolUseId": "t2", "name": "chart", "input": {}}},
                ],
            },
            tool_call("fail", "t3"),
            say("2 + 3 = 5, and here is a chart; the last tool failed."),
        ]
    )
    agent = Agent(
        agent_id="a1",
        model=model,
        tools=[add, chart, fail],
        session_manager=manager,
        callback_handler=None,
    )
    agent("Add 2 and 3, then chart it.")
    return agent, storage_dir


def _session_records(storage_dir: Path) -> list[dict[str, Any]]:
    messages = storage_dir / "session_s1" / "agents" / "agent_a1" / "messages"
    files = sorted(messages.glob("message_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def _json_messages(agent: Agent) -> list[dict[str, Any]]:
    """The agent's messages in their JSON form (bytes as Strands encodes them)."""
    return [
        SessionMessage.from_message(m, i).to_dict()["message"] for i, m in enumerate(agent.messages)
    ]


def test_agent_messages_round_trip_exactly(tmp_path: Path) -> None:
    agent, _ = _run(tmp_path)
    original = _json_messages(agent)
    messages = messages_from_strands(original)
    assert json.dumps(messages_to_strands(messages)) == json.dumps(original)
    # and they are real offprompt messages, not opaque copies
    assert not [m for m in messages if "message" in m.meta.get(RESERVED, {})]
    roles = [m.role for m in messages]
    assert roles[:4] == ["user", "assistant", "tool", "tool"]
    assert [c.name for c in messages[1].tool_calls] == ["add", "chart"]
    assert messages[1].tool_calls[0].arguments == {"a": 2, "b": 3}
    assert messages[2].tool_call_id == "t1" and messages[2].text == "5"
    failed = next(m for m in messages if m.tool_call_id == "t3")
    assert failed.meta[RESERVED]["result"]["status"] == "error"


def test_session_files_round_trip_exactly(tmp_path: Path) -> None:
    _, storage_dir = _run(tmp_path)
    records = _session_records(storage_dir)
    assert len(records) == 6
    messages = messages_from_strands(records)
    assert json.dumps(messages_to_session_messages(messages)) == json.dumps(records)
    assert not [m for m in messages if "message" in m.meta.get(RESERVED, {})]
    assert messages[0].created_at.isoformat() == records[0]["created_at"]


def test_repository_records_read_as_offprompt_messages(tmp_path: Path) -> None:
    agent, _ = _run(tmp_path)
    with OffpromptSessionRepository(path=tmp_path / "memory.db") as repo:
        from strands.types.session import Session, SessionAgent, SessionType

        repo.create_session(Session("s1", SessionType.AGENT))
        repo.create_agent(
            "s1", SessionAgent(agent_id="a1", state={}, conversation_manager_state={})
        )
        for i, message in enumerate(agent.messages):
            repo.create_message("s1", "a1", SessionMessage.from_message(message, i))
        records = [m.to_dict() for m in repo.list_messages("s1", "a1")]
    messages = messages_from_strands(records)
    assert messages_to_session_messages(messages) == records
    assert messages[-1].text == "2 + 3 = 5, and here is a chart; the last tool failed."


def test_offprompt_messages_run_in_a_strands_agent() -> None:
    history = [
        Message.user("What is 2 + 3?"),
        Message(
            role="assistant", tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})]
        ),
        Message(role="tool", tool_call_id="c1", content="5"),
        Message.assistant("It is 5."),
    ]
    report = ConversionReport()
    written = messages_to_strands(history, report=report)
    assert not report
    assert written[2] == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "c1", "status": "success", "content": [{"text": "5"}]}}
        ],
    }
    expected = copy.deepcopy(written)  # (the agent takes the list itself and grows it)
    model = ScriptedModel([say("You asked about 2 + 3.")])
    agent = Agent(model=model, tools=[add], messages=written, callback_handler=None)
    agent("What did I ask?")
    sent = [{k: v for k, v in m.items() if k != "tracking_id"} for m in model.calls[0]]
    assert sent[:4] == expected  # (Strands gives each message a tracking_id of its own)


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(DeserializationError, match="role must be 'user' or 'assistant'"):
        messages_from_strands([{"role": "system", "content": []}])
    with pytest.raises(DeserializationError, match="content must be a list"):
        messages_from_strands([{"role": "user", "content": "hi"}])
    with pytest.raises(DeserializationError, match="not JSON"):
        messages_from_strands(
            [{"role": "user", "content": [{"image": {"source": {"bytes": b"x"}}}]}]
        )
    with pytest.raises(DeserializationError, match="must be a list"):
        messages_from_strands({"role": "user", "content": []})  # type: ignore[arg-type]
