"""smolagents step dicts, validated against what the real smolagents produces."""

from __future__ import annotations

import json
import logging

import pytest
from PIL import Image
from smolagents.memory import ActionStep as SaActionStep
from smolagents.memory import AgentMemory as SaAgentMemory
from smolagents.memory import FinalAnswerStep as SaFinalAnswerStep
from smolagents.memory import PlanningStep as SaPlanningStep
from smolagents.memory import TaskStep as SaTaskStep
from smolagents.memory import ToolCall as SaToolCall
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import AgentLogger, Timing, TokenUsage
from smolagents.utils import AgentExecutionError

from offprompt.errors import DeserializationError, UnknownTypeError
from offprompt.interop import ConversionReport
from offprompt.interop.smolagents import steps_from_smolagents, steps_to_smolagents
from offprompt.steps import ActionStep, PlanningStep, TaskStep
from offprompt.stores import SQLiteStore


def _real_run() -> SaAgentMemory:
    """A smolagents run built with smolagents' own classes, as an agent would leave it."""
    memory = SaAgentMemory("You are a careful agent.")
    memory.steps.append(
        SaTaskStep(task="Chart the sales ü🚀", task_images=[Image.new("RGB", (4, 3), "red")])
    )
    memory.steps.append(
        SaPlanningStep(
            model_input_messages=[
                ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "Plan it"}])
            ],
            model_output_message=ChatMessage(role=MessageRole.ASSISTANT, content="1. load 2. plot"),
            plan="1. load 2. plot",
            timing=Timing(start_time=1.0, end_time=2.5),
            token_usage=TokenUsage(input_tokens=10, output_tokens=5),
        )
    )
    call = ChatMessageToolCall(
        id="call_1",
        type="function",
        function=ChatMessageToolCallFunction(name="load", arguments={"path": "sales.csv"}),
    )
    memory.steps.append(
        SaActionStep(
            step_number=1,
            timing=Timing(start_time=2.5, end_time=4.0),
            model_input_messages=[
                ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": "sys"}]),
                ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "go"}]),
                ChatMessage(
                    role=MessageRole.TOOL_CALL,
                    content=[{"type": "text", "text": "Calling tools:\n[...]"}],
                ),
                ChatMessage(
                    role=MessageRole.TOOL_RESPONSE,
                    content=[{"type": "text", "text": "Observation: 3 rows"}],
                ),
            ],
            model_output_message=ChatMessage(
                role=MessageRole.ASSISTANT,
                content=None,
                tool_calls=[call],
                token_usage=TokenUsage(7, 2),
            ),
            tool_calls=[SaToolCall(name="load", arguments={"path": "sales.csv"}, id="call_1")],
            model_output=None,
            observations="3 rows",
            action_output={"rows": 3},
            token_usage=TokenUsage(input_tokens=20, output_tokens=7),
        )
    )
    memory.steps.append(
        SaActionStep(
            step_number=2,
            timing=Timing(start_time=4.0, end_time=5.0),
            tool_calls=[
                SaToolCall(
                    name="python_interpreter", arguments="plot(rows)\nprint('ok')", id="call_2"
                )
            ],
            model_output="Thought: plot\n```py\nplot(rows)\n```",
            code_action="plot(rows)\nprint('ok')",
            error=AgentExecutionError(
                "NameError: plot", logger=AgentLogger(level=logging.CRITICAL)
            ),
            observations=None,
            token_usage=TokenUsage(input_tokens=30, output_tokens=9),
        )
    )
    memory.steps.append(SaFinalAnswerStep(output="The chart is ready."))
    return memory


def test_real_smolagents_steps_round_trip_to_equal_dicts() -> None:
    original = _real_run().get_full_steps()
    report = ConversionReport()
    memory = steps_from_smolagents(
        original, system_prompt="You are a careful agent.", report=report
    )
    assert report.converted == 5 and not report
    assert [type(s).__name__ for s in memory.steps] == [
        "TaskStep",
        "PlanningStep",
        "ActionStep",
        "ActionStep",
        "FinalAnswerStep",
    ]
    action = memory.steps[2]
    assert isinstance(action, ActionStep)
    assert action.model_input_messages is not None and action.model_input_messages[1].text == "go"
    assert action.model_output_message is not None and action.model_output_message.tool_calls[
        0
    ].arguments == {"path": "sales.csv"}
    code_step = memory.steps[3]
    assert (
        isinstance(code_step, ActionStep)
        and code_step.error is not None
        and "NameError" in str(code_step.error)
    )
    back = steps_to_smolagents(memory)
    assert back == original  # pillow images compare by pixels
    # smolagents reads our messages back with its own parser
    assert (
        ChatMessage.from_dict(back[2]["model_output_message"]).tool_calls[0].function.name == "load"
    )


def test_images_smolagents_itself_cannot_serialise_are_reported_not_invented() -> None:
    """smolagents' ActionStep.dict() writes tobytes() and pillow internals: no image left."""
    step = SaActionStep(
        step_number=1,
        timing=Timing(start_time=0.0, end_time=1.0),
        model_input_messages=[
            ChatMessage(
                role=MessageRole.USER,
                content=[
                    {"type": "text", "text": "see"},
                    {"type": "image", "image": Image.new("L", (2, 2), 7)},
                ],
            )
        ],
        observations_images=[Image.new("RGB", (3, 3), "blue")],
    )
    full = [SaTaskStep(task="t", task_images=[Image.new("RGB", (2, 2), "red")]).dict(), step.dict()]
    with pytest.raises(DeserializationError, match="image cannot be read back"):
        steps_from_smolagents(full)
    report = ConversionReport()
    memory = steps_from_smolagents(full, report=report)
    assert sorted(loss.where for loss in report.losses) == [
        "step 1 model_input_messages[0] content[1]",
        "step 1 observations_images[0]",
    ]
    action = memory.steps[1]
    assert isinstance(action, ActionStep) and action.observations_images is None
    assert action.model_input_messages is not None and action.model_input_messages[0].text == "see"
    task = memory.steps[0]
    assert (
        isinstance(task, TaskStep) and task.task_images and task.task_images[0].width == 2
    )  # pillow kept: imported


def test_steps_survive_json_and_a_sqlite_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    original = _real_run().get_full_steps()
    exported = steps_to_smolagents(steps_from_smolagents(original), images="data_url")
    memory = steps_from_smolagents(json.dumps(exported))  # a JSON file with data-URL images
    with SQLiteStore(tmp_path / "steps.db") as store:
        memory.save(store, "run-1")
    with SQLiteStore(tmp_path / "steps.db") as store:
        reloaded = type(memory).load(store, "run-1")
    assert steps_to_smolagents(reloaded) == original
    task = reloaded.steps[0]
    assert (
        isinstance(task, TaskStep)
        and task.task_images
        and task.task_images[0].to_pil().getpixel((0, 0)) == (255, 0, 0)
    )
    planning = reloaded.steps[1]
    assert (
        isinstance(planning, PlanningStep)
        and planning.token_usage is not None
        and planning.token_usage.total_tokens == 15
    )


def test_to_messages_matches_smolagents_after_import() -> None:
    real = _real_run()
    ours = steps_from_smolagents(real.get_full_steps(), system_prompt="You are a careful agent.")
    for real_step, our_step in zip(real.steps, ours.steps, strict=True):
        if isinstance(real_step, SaFinalAnswerStep):
            continue
        expected = [m.content for m in real_step.to_messages()]
        got = [
            [
                {"type": "text", "text": p.value} if p.type == "TextArtifact" else {"type": "image"}
                for p in m.content
            ]
            for m in our_step.to_messages()
        ]
        assert [[b["type"] for b in blocks] for blocks in expected] == [
            [b["type"] for b in blocks] for blocks in got
        ]
        assert [[b.get("text") for b in blocks] for blocks in expected] == [
            [b.get("text") for b in blocks] for blocks in got
        ]


@pytest.mark.parametrize(
    ("payload", "error", "mentions"),
    [
        ("[{", DeserializationError, "malformed JSON"),
        ('{"task": "x"}', DeserializationError, "must be a list"),
        ('[{"mystery": 1}]', DeserializationError, "step 0: cannot tell the step type"),
        ('[{"type": "DreamStep"}]', UnknownTypeError, "DreamStep"),
        (
            '[{"task": "x", "task_images": ["not-an-image"]}]',
            DeserializationError,
            "step 0 task_images",
        ),
        (
            '[{"step_number": 1, "timing": {"start_time": 0}, "model_input_messages": [{"role": "robot", "content": "x"}]}]',
            DeserializationError,
            "unknown smolagents role 'robot'",
        ),
    ],
)
def test_bad_step_files_are_named(payload: str, error: type[Exception], mentions: str) -> None:
    with pytest.raises(error, match=mentions):
        steps_from_smolagents(payload)
