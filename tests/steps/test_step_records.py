"""Step records: validation, the three views (dict, to_dict, to_messages), callbacks, replay."""

from __future__ import annotations

import doctest
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from rich.console import Console

import offprompt.steps
from offprompt.artifacts import ImageArtifact, JsonArtifact
from offprompt.errors import (
    DeserializationError,
    SerializationError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.messages import Message
from offprompt.steps import (
    RETRY_GUIDANCE,
    ActionStep,
    AgentMemory,
    CallbackRegistry,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
    StepError,
    SystemPromptStep,
    TaskStep,
    Timing,
    TokenUsage,
    ToolCall,
)


def _image(color: str = "red", size: tuple[int, int] = (4, 3)) -> Image.Image:
    return Image.new("RGB", size, color)


def _full_action(step_number: int = 1) -> ActionStep:
    return ActionStep(
        step_number=step_number,
        timing=Timing(start_time=100.0, end_time=101.5),
        model_input_messages=[Message.system("sys"), Message.user("what is 2+2?")],
        tool_calls=[
            ToolCall(id="call_1", name="python_interpreter", arguments="x = {'a': 1}\nprint(x)")
        ],
        error=StepError(type="AgentExecutionError", message="NameError: y"),
        model_output_message=Message.assistant("Thought: compute"),
        model_output="Thought: compute\n<code>print(2+2)</code>  ",
        code_action="print(2+2)",
        observations="4",
        observations_images=[_image()],
        action_output={"answer": 4, "unicode": "naïve ☃ 数"},
        token_usage=TokenUsage(input_tokens=10, output_tokens=5),
        is_final_answer=True,
    )


def test_doctests_in_the_module_pass() -> None:
    package = offprompt.steps
    results = [
        doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        for module in (package.records, package.memory, package.persistence)
    ]
    assert sum(r.attempted for r in results) >= 8
    assert sum(r.failed for r in results) == 0


def test_timing_and_token_usage() -> None:
    assert Timing(start_time=1.0).duration is None
    assert Timing(start_time=1.0, end_time=3.5).dict() == {
        "start_time": 1.0,
        "end_time": 3.5,
        "duration": 2.5,
    }
    # dict() output reads back although duration is derived
    assert (
        Timing.model_validate({"start_time": 1.0, "end_time": 2.0, "duration": 1.0}).duration == 1.0
    )
    assert TokenUsage(input_tokens=3, output_tokens=4).dict() == {
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 7,
    }
    assert TokenUsage(input_tokens=3, output_tokens=4, total_tokens=9).total_tokens == 9
    with pytest.raises(ValidationError, match="input_tokens"):
        TokenUsage(input_tokens=-1, output_tokens=0)


def test_tool_call_keeps_code_string_arguments_losslessly() -> None:
    code = '{"looks": "like json"}'
    call = ToolCall(id="c", name="python_interpreter", arguments=code)
    assert call.arguments == code
    # dict() is smolagents' shape: its make_json_serializable parses JSON-looking strings
    assert call.dict()["function"]["arguments"] == {"looks": "like json"}
    # the strict OpenAI shape keeps the string as the arguments string
    assert call.to_openai()["function"]["arguments"] == code
    assert (
        ToolCall(id="c", name="search", arguments={"q": "x"}).to_openai()["function"]["arguments"]
        == '{"q": "x"}'
    )
    back = ToolCall.from_openai(ToolCall(id="c", name="s", arguments=[1, 2]).dict())
    assert back.arguments == [1, 2]


def test_tool_call_rejects_bad_input() -> None:
    with pytest.raises(ValidationError, match="name"):
        ToolCall(id="c", name="", arguments={})
    with pytest.raises(ValidationError, match="arguments"):
        ToolCall(id="c", name="t", arguments={"x": float("nan")})
    with pytest.raises(ValidationError, match="arguments"):
        ToolCall(id="c", name="t", arguments=object())
    with pytest.raises(ValidationError, match="function"):
        ToolCall.from_openai({"id": "c"})


def test_step_error_from_exception_and_str() -> None:
    err = StepError.from_exception(KeyError("missing"))
    assert err.type == "KeyError"
    step = ActionStep(step_number=1, timing=Timing(start_time=0), error=RuntimeError("boom"))
    assert step.error == StepError(type="RuntimeError", message="boom")
    assert str(step.error) == "boom"


def test_action_step_dict_has_smolagents_keys_and_is_json() -> None:
    step = _full_action()
    data = step.dict()
    assert list(data) == [
        "step_number",
        "timing",
        "model_input_messages",
        "tool_calls",
        "error",
        "model_output_message",
        "model_output",
        "code_action",
        "observations",
        "observations_images",
        "action_output",
        "token_usage",
        "is_final_answer",
    ]
    json.dumps(data)
    assert data["tool_calls"][0]["type"] == "function"
    assert data["error"] == {"type": "AgentExecutionError", "message": "NameError: y"}
    assert data["observations_images"][0]["type"] == "ImageArtifact"
    empty = ActionStep(step_number=2, timing=Timing(start_time=0)).dict()
    assert empty["tool_calls"] == [] and empty["model_input_messages"] is None


@pytest.mark.parametrize(
    "step",
    [
        SystemPromptStep(system_prompt="You are ☃"),
        TaskStep(task="Describe", task_images=[_image("blue"), _image("green", (2, 2))]),
        _full_action(),
        PlanningStep(
            plan="1. think\n2. act",
            timing=Timing(start_time=0, end_time=1),
            model_input_messages=[Message.user("plan please")],
            model_output_message=Message.assistant("1. think"),
            token_usage=TokenUsage(input_tokens=1, output_tokens=2),
        ),
        FinalAnswerStep({"result": [1, 2, 3]}),
        FinalAnswerStep(JsonArtifact(value={"k": "v"})),
        FinalAnswerStep(_image("white")),
        ActionStep(
            step_number=3,
            timing=Timing(start_time=0),
            action_output=ImageArtifact.from_pil(_image()),
        ),
    ],
    ids=lambda s: type(s).__name__,
)
def test_to_dict_round_trips_through_json(step: MemoryStep) -> None:
    text = step.to_json()
    back = MemoryStep.from_dict(json.loads(text))
    assert type(back) is type(step)
    assert back == step
    assert back.to_dict() == step.to_dict()


def test_images_are_png_artifacts_from_pillow_bytes_or_dicts() -> None:
    art = ImageArtifact.from_pil(_image())
    step = TaskStep(task="t", task_images=[_image(), art.value, art.to_dict(), art])
    assert all(isinstance(i, ImageArtifact) for i in step.task_images or [])
    assert {i.format for i in step.task_images or []} == {"png"}
    assert step.task_images is not None and step.task_images[0].to_pil().getpixel((0, 0)) == (
        255,
        0,
        0,
    )
    with pytest.raises(ValidationError, match="task_images"):
        TaskStep(task="t", task_images=["not an image"])
    with pytest.raises(ValidationError, match="not a readable image"):
        TaskStep(task="t", task_images=[b"garbage"])
    with pytest.raises(ValidationError, match="list of images"):
        ActionStep(step_number=1, timing=Timing(start_time=0), observations_images=b"xx")


def test_assignment_is_validated() -> None:
    step = ActionStep(step_number=1, timing=Timing(start_time=0))
    step.observations_images = [_image()]
    assert isinstance(step.observations_images[0], ImageArtifact)
    step.error = ValueError("late")
    assert step.error == StepError(type="ValueError", message="late")
    with pytest.raises(ValidationError, match="step_number"):
        step.step_number = "three"  # type: ignore[assignment]


def test_non_json_action_output_is_a_clear_serialisation_error() -> None:
    step = ActionStep(step_number=7, timing=Timing(start_time=0), action_output={1, 2})
    assert step.dict()["action_output"] == "{1, 2}"  # the lenient smolagents view stringifies
    with pytest.raises(SerializationError, match=r"ActionStep\.action_output"):
        step.to_dict()


def test_from_dict_errors_name_the_problem() -> None:
    with pytest.raises(UnknownTypeError, match="'HumanFeedbackStep'") as info:
        MemoryStep.from_dict({"type": "HumanFeedbackStep", "x": 1})
    assert "ActionStep" in str(info.value)
    with pytest.raises(DeserializationError, match="no 'type'"):
        MemoryStep.from_dict({"task": "x"})
    with pytest.raises(DeserializationError, match="JSON object"):
        MemoryStep.from_dict(["TaskStep"])  # type: ignore[arg-type]
    with pytest.raises(DeserializationError, match="step_number"):
        MemoryStep.from_dict({"type": "ActionStep", "timing": {"start_time": 0}})
    with pytest.raises(DeserializationError, match="not a TaskStep"):
        TaskStep.from_dict({"type": "ActionStep", "step_number": 1, "timing": {"start_time": 0}})
    with pytest.raises(DeserializationError, match=r"TaskStep\.surprise: Extra inputs"):
        MemoryStep.from_dict({"type": "TaskStep", "task": "x", "surprise": 1})


def test_action_step_messages_order_and_texts() -> None:
    msgs = _full_action().to_messages()
    assert [(m.role, m.meta["smolagents_role"]) for m in msgs] == [
        ("assistant", "assistant"),
        ("assistant", "tool-call"),
        ("user", "user"),
        ("user", "tool-response"),
        ("user", "tool-response"),
    ]
    assert msgs[0].text == "Thought: compute\n<code>print(2+2)</code>"  # stripped
    assert msgs[1].text.startswith("Calling tools:\n[{'id': 'call_1', 'type': 'function'")
    assert len(msgs[2].images) == 1 and msgs[2].text == ""
    assert msgs[3].text == "Observation:\n4"
    assert msgs[4].text == "Call id: call_1\nError:\nNameError: y" + RETRY_GUIDANCE
    summary = _full_action().to_messages(summary_mode=True)
    assert [m.meta["smolagents_role"] for m in summary] == [
        "tool-call",
        "user",
        "tool-response",
        "tool-response",
    ]


def test_error_without_tool_calls_has_no_call_id() -> None:
    step = ActionStep(
        step_number=1, timing=Timing(start_time=0), error=StepError(message="parse failed")
    )
    (msg,) = step.to_messages()
    assert msg.text == "Error:\nparse failed" + RETRY_GUIDANCE


def test_memory_to_messages_and_summary_mode() -> None:
    memory = AgentMemory("system rules")
    memory.steps.append(TaskStep(task="Find x", task_images=[_image()]))
    memory.steps.append(PlanningStep(plan="  my plan  ", timing=Timing(start_time=0)))
    memory.steps.append(
        ActionStep(
            step_number=1, timing=Timing(start_time=0), model_output="out", observations="obs"
        )
    )
    memory.steps.append(FinalAnswerStep("x=1"))
    full = memory.to_messages()
    assert [m.role for m in full] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert full[1].text == "New task:\nFind x" and len(full[1].images) == 1
    assert full[2].text == "my plan"
    assert full[3].text == "Now proceed and carry out this plan."
    summary = memory.to_messages(summary_mode=True)
    assert [m.text for m in summary] == ["New task:\nFind x", "Observation:\nobs"]


def test_agent_memory_views_and_reset() -> None:
    memory = AgentMemory("sys")
    assert memory.get_full_steps() == []
    memory.steps.append(TaskStep(task="t"))
    memory.steps.append(_full_action(1))
    memory.steps.append(ActionStep(step_number=2, timing=Timing(start_time=0), code_action="y = 2"))
    memory.steps.append(ActionStep(step_number=3, timing=Timing(start_time=0)))
    assert memory.return_full_code() == "print(2+2)\n\ny = 2"
    succinct = memory.get_succinct_steps()
    assert all("model_input_messages" not in s for s in succinct)
    assert memory.get_full_steps()[1]["model_input_messages"][1]["role"] == "user"
    memory.reset()
    assert memory.steps == [] and memory.system_prompt.system_prompt == "sys"


def test_steps_list_behaves_like_a_list_and_refuses_non_steps() -> None:
    memory = AgentMemory("sys")
    a, b, c = TaskStep(task="a"), TaskStep(task="b"), TaskStep(task="c")
    memory.steps.extend([a, c])
    memory.steps.insert(1, b)
    assert memory.steps == [a, b, c] and memory.steps[-1] is c and memory.steps[0:2] == [a, b]
    memory.steps += [TaskStep(task="d")]
    assert len(memory.steps) == 4
    memory.steps.pop()
    del memory.steps[0]
    memory.steps[0] = TaskStep(task="B")
    assert [s.task for s in memory.steps if isinstance(s, TaskStep)] == ["B", "c"]
    with pytest.raises(ValidationError, match="MemoryStep"):
        memory.steps.append({"type": "TaskStep", "task": "x"})  # type: ignore[arg-type]
    memory.steps = [a]
    assert memory.steps == [a]


def test_callbacks_dispatch_along_the_mro_with_accepted_context() -> None:
    calls: list[tuple[str, object]] = []

    class TracedAction(ActionStep):
        pass

    registry = CallbackRegistry()
    registry.register(MemoryStep, lambda step: calls.append(("any", type(step).__name__)))
    registry.register(ActionStep, lambda step, agent: calls.append(("action+agent", agent)))
    registry.register(ActionStep, lambda step, **kw: calls.append(("action+kw", sorted(kw))))
    registry.register(TaskStep, lambda step: calls.append(("task", step.task)))

    def keyword_only(step: MemoryStep, *, run_id: str = "none") -> None:
        calls.append(("kwonly", run_id))

    registry.register(ActionStep, keyword_only)
    registry.register(ActionStep, print)  # a builtin without a usable signature gets the step only

    registry.callback(
        TracedAction(step_number=1, timing=Timing(start_time=0)), agent="A", run_id="r1"
    )
    assert calls[:4] == [
        ("action+agent", "A"),
        ("action+kw", ["agent", "run_id"]),
        ("kwonly", "r1"),
        ("any", "TracedAction"),
    ]
    calls.clear()
    registry.callback(TaskStep(task="t"), agent="A")
    assert calls == [("task", "t"), ("any", "TaskStep")]
    with pytest.raises(ValidationError, match="MemoryStep subclass"):
        registry.register(dict, print)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="callable"):
        registry.register(TaskStep, "not callable")  # type: ignore[arg-type]


def test_add_step_appends_then_calls_back() -> None:
    seen: list[int] = []
    memory = AgentMemory("sys")

    def callback(step: ActionStep, memory: AgentMemory) -> None:
        seen.append(len(memory.steps))

    memory.callbacks.register(ActionStep, callback)
    memory.add_step(ActionStep(step_number=1, timing=Timing(start_time=0)), memory=memory)
    assert seen == [1]


def test_replay_prints_a_timeline_and_is_safe_with_markup() -> None:
    memory = AgentMemory("Be careful [/bold] with markup")
    memory.steps.append(TaskStep(task="Compute [red]2+2[/red]"))
    memory.steps.append(PlanningStep(plan="Use python", timing=Timing(start_time=0, end_time=2)))
    memory.steps.append(_full_action())
    memory.steps.append(
        ActionStep(
            step_number=2,
            timing=Timing(start_time=0, end_time=1),
            tool_calls=[ToolCall(id="c9", name="web_search", arguments={"query": "☃"})],
            observations="found",
        )
    )
    memory.steps.append(FinalAnswerStep(4))
    console = Console(record=True, width=100, color_system=None)
    memory.replay(console=console)
    text = console.export_text()
    for expected in (
        "Be careful [/bold] with markup",
        "Compute [red]2+2[/red]",
        "Planning step",
        "Step 1",
        "print(2+2)",
        "Error (AgentExecutionError): NameError: y",
        "web_search",
        "Final answer: 4",
        "Input tokens: 10 | Output tokens: 5",
    ):
        assert expected in text, expected
    assert "what is 2+2?" not in text  # model inputs only in detailed mode
    detailed = Console(record=True, width=100, color_system=None)
    memory.replay(detailed=True, console=detailed)
    assert "what is 2+2?" in detailed.export_text()


@settings(max_examples=40, deadline=None)
@given(
    task=st.text(),
    observations=st.one_of(st.none(), st.text()),
    output=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=8,
    ),
)
def test_any_unicode_text_and_json_output_round_trip(
    task: str, observations: str | None, output: object
) -> None:
    steps: list[MemoryStep] = [
        TaskStep(task=task),
        ActionStep(
            step_number=1,
            timing=Timing(start_time=0),
            observations=observations,
            action_output=output,
        ),
    ]
    for step in steps:
        assert MemoryStep.from_dict(json.loads(step.to_json())) == step


def test_huge_observation_round_trips() -> None:
    big = "x" * 5_000_000
    step = ActionStep(step_number=1, timing=Timing(start_time=0), observations=big)
    assert MemoryStep.from_dict(json.loads(step.to_json())) == step
