"""offprompt.steps against the installed smolagents: same keys, same messages, same callbacks.

The smolagents objects here are its real step classes, filled in the way its agents fill
them (no model is called). Converting smolagents' dicts into offprompt steps in general
is the interop module's job; the small conversion below only proves every key has a home.
"""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image
from smolagents import memory as sm  # a dev dependency: pyproject's [dependency-groups]
from smolagents.models import ChatMessage, MessageRole, tool_role_conversions
from smolagents.monitoring import AgentLogger, LogLevel, Timing, TokenUsage
from smolagents.utils import AgentExecutionError, AgentParsingError

from offprompt import steps as op
from offprompt.messages import Message

LOGGER = AgentLogger(level=LogLevel.OFF)


def _smol_memory() -> sm.AgentMemory:
    memory = sm.AgentMemory(system_prompt="You are a code agent. Use python.")
    memory.steps.append(
        sm.TaskStep(
            task="What is 6 * 7? Describe the image.", task_images=[Image.new("RGB", (3, 3))]
        )
    )
    memory.steps.append(
        sm.PlanningStep(
            model_input_messages=[
                ChatMessage(
                    role=MessageRole.USER, content=[{"type": "text", "text": "make a plan"}]
                )
            ],
            model_output_message=ChatMessage(role=MessageRole.ASSISTANT, content="1. multiply"),
            plan="1. multiply\n2. answer  ",
            timing=Timing(start_time=1.0, end_time=2.0),
            token_usage=TokenUsage(input_tokens=5, output_tokens=3),
        )
    )
    memory.steps.append(
        sm.ActionStep(
            step_number=1,
            timing=Timing(start_time=2.0, end_time=3.0),
            model_input_messages=[
                ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": "sys"}])
            ],
            tool_calls=[
                sm.ToolCall(
                    name="python_interpreter",
                    arguments="result = 6 * 7\nprint(result)",
                    id="call_1",
                )
            ],
            error=AgentExecutionError("Code execution failed: NameError", LOGGER),
            model_output_message=ChatMessage(
                role=MessageRole.ASSISTANT, content="Thought: multiply"
            ),
            model_output="Thought: multiply\n<code>\nresult = 6 * 7\n</code>\n",
            code_action="result = 6 * 7\nprint(result)",
            observations="Execution logs:\n42",
            observations_images=[Image.new("RGB", (2, 2), "red")],
            action_output=42,
            token_usage=TokenUsage(input_tokens=100, output_tokens=20),
            is_final_answer=False,
        )
    )
    memory.steps.append(
        sm.ActionStep(
            step_number=2,
            timing=Timing(start_time=3.0, end_time=4.0),
            tool_calls=[sm.ToolCall(name="final_answer", arguments={"answer": "42"}, id="call_2")],
            model_output="Final answer",
            observations="42",
            action_output="42",
            token_usage=TokenUsage(input_tokens=50, output_tokens=10),
            is_final_answer=True,
        )
    )
    memory.steps.append(
        sm.ActionStep(
            step_number=3, timing=Timing(start_time=4.0), error=AgentParsingError("no code", LOGGER)
        )
    )
    return memory


def _message(data: dict[str, Any]) -> Message:
    role = data["role"]
    role = tool_role_conversions.get(MessageRole(role), MessageRole(role)).value
    content = data["content"]
    text = (
        content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
    )
    return Message(role=role, content=text, meta={"smolagents_role": data["role"]})


def _convert(step: Any, data: dict[str, Any]) -> op.MemoryStep:
    """Build the offprompt step from smolagents' dict() (images from the step object:
    smolagents' dict keeps only raw pixel bytes, without the size)."""
    fields = dict(data)
    for key in ("model_input_messages",):
        if fields.get(key) is not None:
            fields[key] = [_message(m) for m in fields[key]]
    if fields.get("model_output_message") is not None:
        fields["model_output_message"] = _message(fields["model_output_message"])
    if "observations_images" in fields:
        fields["observations_images"] = step.observations_images
    if "task_images" in fields:
        fields["task_images"] = step.task_images
    if "tool_calls" in fields:
        fields["tool_calls"] = [
            op.ToolCall(id=tc.id, name=tc.name, arguments=tc.arguments)
            for tc in step.tool_calls or []
        ] or None
    return getattr(op, type(step).__name__)(**fields)


def test_every_key_of_get_full_steps_has_a_home() -> None:
    smol = _smol_memory()
    full = smol.get_full_steps()
    assert len(full) == 5
    ours = op.AgentMemory(smol.system_prompt.system_prompt)
    for step, data in zip(smol.steps, full, strict=True):
        converted = _convert(step, data)
        assert set(converted.dict()) == set(data), type(step).__name__
        ours.steps.append(op.MemoryStep.from_dict(converted.to_dict()))  # and it survives JSON

    for mine, theirs in zip(ours.get_full_steps(), full, strict=True):
        for key in (
            "timing",
            "tool_calls",
            "error",
            "model_output",
            "code_action",
            "observations",
            "action_output",
            "token_usage",
            "is_final_answer",
            "plan",
            "task",
            "step_number",
        ):
            if key in theirs:
                assert mine[key] == theirs[key], key
    assert ours.return_full_code() == smol.return_full_code()
    assert [set(s) for s in ours.get_succinct_steps()] == [
        set(s) for s in smol.get_succinct_steps()
    ]


def _smol_messages(memory: sm.AgentMemory, summary_mode: bool) -> list[tuple[str, str, str, int]]:
    messages = memory.system_prompt.to_messages(summary_mode=summary_mode)
    for step in memory.steps:
        messages.extend(step.to_messages(summary_mode=summary_mode))
    out = []
    for m in messages:
        parts = m.content if isinstance(m.content, list) else [{"type": "text", "text": m.content}]
        text = "".join(p.get("text", "") for p in parts if p["type"] == "text")
        images = sum(1 for p in parts if p["type"] == "image")
        role = tool_role_conversions.get(m.role, m.role)
        out.append((role.value, m.role.value, text, images))
    return out


@pytest.mark.parametrize("summary_mode", [False, True])
def test_to_messages_matches_smolagents(summary_mode: bool) -> None:
    smol = _smol_memory()
    ours = op.AgentMemory(smol.system_prompt.system_prompt)
    for step, data in zip(smol.steps, smol.get_full_steps(), strict=True):
        ours.steps.append(_convert(step, data))
    mine = [
        (m.role, m.meta["smolagents_role"], m.text, len(m.images))
        for m in ours.to_messages(summary_mode=summary_mode)
    ]
    assert mine == _smol_messages(smol, summary_mode)
    assert any("Now let's retry" in text for _, _, text, _ in mine)


def test_callbacks_match_smolagents_dispatch() -> None:
    smol_seen: list[str] = []
    our_seen: list[str] = []
    smol_registry = sm.CallbackRegistry()
    smol_registry.register(sm.MemoryStep, lambda step: smol_seen.append("base"))
    smol_registry.register(
        sm.ActionStep, lambda step, agent=None: smol_seen.append(f"action:{agent}")
    )
    registry = op.CallbackRegistry()
    registry.register(op.MemoryStep, lambda step: our_seen.append("base"))
    registry.register(op.ActionStep, lambda step, agent=None: our_seen.append(f"action:{agent}"))

    smol_registry.callback(sm.ActionStep(step_number=1, timing=Timing(start_time=0)), agent="A")
    registry.callback(op.ActionStep(step_number=1, timing=op.Timing(start_time=0)), agent="A")
    assert our_seen == smol_seen == ["action:A", "base"]
