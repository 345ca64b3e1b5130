"""offprompt.interop.pydantic_ai on JSON that pydantic-ai itself wrote: round trips
exact, foreign messages written as histories pydantic-ai takes, losses reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, BinaryContent, ConversationTypeAdapter, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import DeserializationError
from offprompt.interop import ConversionReport
from offprompt.interop.pydantic_ai import (
    messages_from_model_messages,
    messages_to_model_messages,
    model_messages_json,
)
from offprompt.messages import Message, ToolCall

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x00" * 20


def _parallel(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(
            parts=[
                TextPart("checking both"),
                ToolCallPart("weather", {"city": "Brest"}, "c1"),
                ToolCallPart("weather", '{"city": "Nice"}', "c2"),
                ToolCallPart("flaky", {}, "c3"),
            ]
        )
    if not any(
        isinstance(p, ToolReturnPart) and p.tool_name == "flaky" for p in messages[-1].parts
    ):
        return ModelResponse(parts=[ToolCallPart("flaky", {}, "c4")])
    return ModelResponse(parts=[TextPart("Brest rain, Nice sun")])


def _real_json() -> bytes:
    agent: Agent[None, str] = Agent(FunctionModel(_parallel), system_prompt="Be brief.")
    tries = {"n": 0}

    @agent.tool_plain
    def weather(city: str) -> dict[str, Any]:
        return {"city": city, "sky": "rain" if city == "Brest" else "sun"}

    @agent.tool_plain(retries=3)
    def flaky() -> str:
        tries["n"] += 1
        if tries["n"] == 1:
            raise ModelRetry("try again")
        return "ok"

    first = agent.run_sync(["weather?", BinaryContent(PNG, media_type="image/png")])
    second = agent.run_sync("and again", message_history=first.all_messages())
    return second.all_messages_json()


def test_real_json_round_trips_exactly() -> None:
    raw = _real_json()
    report = ConversionReport()
    messages = messages_from_model_messages(raw, report)
    assert not report and report.converted == len(json.loads(raw))
    roles = [m.role for m in messages]
    assert roles[:3] == ["system", "user", "assistant"]
    assistant = messages[2]
    assert assistant.text == "checking both"
    assert [c.arguments for c in assistant.tool_calls[:2]] == [{"city": "Brest"}, {"city": "Nice"}]
    tools = [m for m in messages if m.role == "tool"]
    assert {m.tool_call_id for m in tools} >= {"c1", "c2", "c3"}
    back = model_messages_json(messages)
    assert json.loads(back) == json.loads(raw)
    assert ModelMessagesTypeAdapter.dump_json(ModelMessagesTypeAdapter.validate_json(back)) == raw


def test_a_conversation_s_json_is_read_too() -> None:
    result = Agent(TestModel(custom_output_text="hi")).run_sync("hello")
    data = ConversationTypeAdapter.dump_json(result.conversation)
    messages = messages_from_model_messages(data)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert json.loads(model_messages_json(messages)) == json.loads(result.all_messages_json())


def test_foreign_messages_become_a_history_pydantic_ai_continues() -> None:
    foreign = [
        Message(role="system", content=[TextArtifact(value="Be brief.")]),
        Message(role="user", content=[TextArtifact(value="weather in Brest and Nice?")]),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="c1", name="weather", arguments={"city": "Brest"}),
                ToolCall(id="c2", name="weather", arguments={"city": "Nice"}),
            ],
        ),
        Message(role="tool", tool_call_id="c1", content=[TextArtifact(value="rain")]),
        Message(role="tool", tool_call_id="c2", content=[TextArtifact(value="sun")]),
        Message(role="assistant", content=[TextArtifact(value="Brest rain, Nice sun.")]),
    ]
    history = ModelMessagesTypeAdapter.validate_python(messages_to_model_messages(foreign))
    assert [type(m) for m in history] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    assert [p.part_kind for p in history[0].parts] == ["system-prompt", "user-prompt"]
    returns = history[2].parts
    assert [(p.tool_name, p.content, p.tool_call_id) for p in returns] == [
        ("weather", "rain", "c1"),
        ("weather", "sun", "c2"),
    ]
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("still rain in Brest")])

    result = Agent(FunctionModel(model)).run_sync("and now?", message_history=history)
    assert result.output == "still rain in Brest"
    assert len(seen[0]) == len(history) + 1


def test_what_pydantic_ai_cannot_carry_is_reported() -> None:
    message = Message(
        role="user",
        name="alice",
        content=[TextArtifact(value="look"), BlobArtifact(value=b"\x00\x01")],
        meta={"source": "crm"},
    )
    report = ConversionReport()
    (out,) = messages_to_model_messages([message], report)
    assert out == {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "look"}]}
    assert [loss.what for loss in report.losses] == [
        "content[1] (BlobArtifact)",
        "name",
        "meta ['source']",
    ]


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        b"{}",
        json.dumps([{"kind": "other", "parts": []}]),
        json.dumps([{"kind": "request"}]),
    ],
)
def test_bad_input_gets_a_clear_error(bad: Any) -> None:
    with pytest.raises(DeserializationError, match=r"pydantic-ai|parts"):
        messages_from_model_messages(bad)


def test_offprompt_migrate_between_pydantic_ai_and_langchain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from offprompt.cli import main

    source = tmp_path / "history.json"
    source.write_bytes(_real_json())
    middle, back = tmp_path / "openai.json", tmp_path / "back.json"
    home = ["--home", str(tmp_path / "home")]
    argv = [*home, "migrate", "--from", "pydantic-ai", "--to", "openai-agents"]
    assert main([*argv, str(source), str(middle)]) == 0
    items = json.loads(middle.read_text(encoding="utf-8"))
    assert {"role": "system", "content": "Be brief."} in items
    argv = [*home, "migrate", "--from", "openai-agents", "--to", "pydantic-ai"]
    assert main([*argv, str(middle), str(back)]) == 0
    history = ModelMessagesTypeAdapter.validate_json(back.read_bytes())
    calls = [p for m in history for p in m.parts if isinstance(p, ToolCallPart)]
    assert [(c.tool_name, c.args_as_dict()) for c in calls[:2]] == [
        ("weather", {"city": "Brest"}),
        ("weather", {"city": "Nice"}),
    ]
    assert capsys.readouterr().out.strip()
