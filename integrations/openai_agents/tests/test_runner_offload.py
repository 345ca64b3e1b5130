"""A real ``Runner`` over two turns with an ``OffpromptSession``, a tool with a large
output, and offprompt's memory tools. The model is ``ScriptedModel`` (a scripted
``Model`` subclass, not a language model): it calls the tools and records every input,
which is how these tests prove what reached "the model"."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, ToolOutputImage, ToolOutputText, function_tool
from agents_testing import RUNNER_METHODS, run_agent
from offprompt_openai_agents import OFFLOAD_META, memory_tools
from offprompt_openai_agents.testing import ScriptedModel, function_call

from offprompt.artifacts import ImageArtifact
from offprompt.task_memory import TaskMemory

NEEDLE = "ERROR disk full on node 7"
LINES = [
    f"2026-12-01 10:{i // 60:02d}:{i % 60:02d} INFO request {i} served in 12 ms"
    for i in range(3000)
]
LINES[1234] = f"2026-12-01 10:20:34 {NEEDLE}"
LOG = "\n".join(LINES) + "\n"


@function_tool
def fetch_logs() -> str:
    """Fetch today's service logs."""
    return LOG


def _namespace(items: list[dict[str, Any]]) -> str:
    for item in reversed(items):
        if item.get("type") == "function_call_output":
            found = re.search(r'artifact_namespace "([^"]+)"', str(item.get("output")))
            if found:
                return found.group(1)
    raise AssertionError("the model was shown no reference")


def _grep_step(items: list[dict[str, Any]]) -> list[Any]:
    return [
        function_call("grep_memory", {"artifact_namespace": _namespace(items), "pattern": "ERROR"})
    ]


def _answer_from_grep(items: list[dict[str, Any]]) -> str:
    grep_output = str(items[-1].get("output"))
    assert NEEDLE in grep_output and "1235:" in grep_output  # grep numbers lines from 1
    return "Node 7 has a full disk (log line 1235)."


def _seen(model: ScriptedModel) -> list[str]:
    return [str(call) for call in model.inputs]


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_two_turns_with_a_large_tool_output(runner_method, make_session) -> None:
    task_memory = TaskMemory()
    session = make_session("ops-1", task_memory=task_memory, min_tokens=200)
    model = ScriptedModel(
        [
            [function_call("fetch_logs", call_id="call_logs")],  # turn 1: call the tool
            "I fetched today's logs.",  # turn 1: answer
            _grep_step,  # turn 2: grep the stored output
            _answer_from_grep,  # turn 2: answer from the grep result
        ]
    )
    agent = Agent(name="ops", model=model, tools=[fetch_logs, *memory_tools(task_memory)])
    config = RunConfig(call_model_input_filter=session.model_input_filter)

    first = await run_agent(
        runner_method, agent, "Get today's logs.", session=session, run_config=config
    )
    assert first.final_output == "I fetched today's logs."
    second = await run_agent(
        runner_method, agent, "Which node has a problem?", session=session, run_config=config
    )
    assert second.final_output == "Node 7 has a full disk (log line 1235)."

    # Off-prompt: no model call ever got the log, in its own turn or the next one.
    assert len(model.inputs) == 4
    for seen in _seen(model):
        assert "request 1500 served" not in seen and len(seen) < 20_000
    assert 'Output of "fetch_logs.call" was stored in memory' in _seen(model)[1]
    assert 'Output of "fetch_logs.call" was stored in memory' in _seen(model)[2]

    # Lossless: the session keeps the full output; the prompt view has the reference.
    stored = await session.get_stored_items()
    outputs = [i for i in stored if i.get("type") == "function_call_output"]
    assert outputs[0] == {"call_id": "call_logs", "output": LOG, "type": "function_call_output"}
    view = await session.get_items()
    shown = next(i for i in view if i.get("type") == "function_call_output")
    assert shown["output"].startswith('Output of "fetch_logs.call"')
    assert view == [shown if i is outputs[0] else i for i in stored]
    # Stored once: the filter's offload was reused when the session saved the item.
    namespace = _namespace(view)
    assert task_memory.namespaces() == [namespace]
    assert task_memory.load_artifacts(namespace)[0].value == LOG
    tool_message = next(m for m in session.memory.messages() if m.role == "tool")
    reference = tool_message.meta[OFFLOAD_META]["reference"]
    assert reference["artifact_namespace"] == namespace and reference["lines"] == 3000


async def test_without_the_filter_the_next_turns_still_get_the_reference(make_session) -> None:
    task_memory = TaskMemory()
    session = make_session("ops-2", task_memory=task_memory, min_tokens=200)
    model = ScriptedModel([[function_call("fetch_logs")], "Fetched.", "Noted."])
    agent = Agent(name="ops", model=model, tools=[fetch_logs])
    await Runner.run(agent, "Get today's logs.", session=session)
    # The SDK hands a tool's output to the model within its own turn from the run, not
    # from the session: without model_input_filter that one call sees it...
    assert "request 1500 served" in _seen(model)[1]
    await Runner.run(agent, "Thanks.", session=session)
    # ...but every later turn reads history from the session, which offloaded it.
    assert "request 1500 served" not in _seen(model)[2]
    assert 'was stored in memory with memory_name "TaskMemory"' in _seen(model)[2]


async def test_small_outputs_and_sessions_without_task_memory_pass_through(make_session) -> None:
    plain = make_session("plain")
    item = {"type": "function_call_output", "call_id": "c1", "output": LOG}
    await plain.add_items([item])
    assert await plain.get_items() == [item]
    offloading = make_session("small", task_memory=TaskMemory(), min_tokens=200)
    small = {"type": "function_call_output", "call_id": "c2", "output": "42"}
    await offloading.add_items([small])
    assert await offloading.get_items() == [small]
    assert offloading.memory.messages()[0].meta.get(OFFLOAD_META) is None


BROKEN_LOG = (b"boot ok\nsensor \xff\xfe garbage\n" * 400).decode("utf-8", "surrogateescape")


@function_tool
def read_raw_log() -> str:
    """Read a log file that is not valid UTF-8."""
    return BROKEN_LOG


async def test_lone_surrogates_in_a_run_are_escaped_and_flagged_not_refused(
    make_session: Any,
) -> None:
    """The one rule for text arriving inside an agent run: the session stores it escaped
    and flagged (as the LangChain middleware and the LlamaIndex memory do), the run goes on."""
    from offprompt._validation import ESCAPED_SURROGATES_META

    task_memory = TaskMemory(index="sync")
    session = make_session("raw-1", task_memory=task_memory, min_tokens=200)
    model = ScriptedModel([[function_call("read_raw_log", call_id="call_raw")], "Read it."])
    agent = Agent(name="ops", model=model, tools=[read_raw_log])
    config = RunConfig(call_model_input_filter=session.model_input_filter)
    result = await Runner.run(agent, "Read the raw log \ud83d.", session=session, run_config=config)
    assert result.final_output == "Read it."
    items = await session.get_items()
    assert items[0]["content"] == "Read the raw log \\ud83d."
    output = next(i for i in items if i.get("type") == "function_call_output")
    assert "\udcff" not in output["output"] and "stored in memory" in output["output"]
    namespace = re.search(r'artifact_namespace "([^"]+)"', output["output"])
    assert namespace is not None
    loaded = task_memory.load_artifacts(namespace.group(1)).value[0].value
    assert loaded == BROKEN_LOG.replace("\udcff\udcfe", "\\udcff\\udcfe")
    # private-ok: the session's stored records hold the flags
    records = session._memory(None).stored()
    flagged = [r.message.meta.get(ESCAPED_SURROGATES_META, False) for r in records]
    assert flagged[0] is True and flagged[1] is False  # the user's message; the call


def _noise_png(side: int = 96) -> bytes:
    import io
    import random

    from PIL import Image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), random.Random(5).randbytes(side * side * 3)).save(
        buffer, format="PNG"
    )
    return buffer.getvalue()


PNG = _noise_png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")


@function_tool
def render_chart() -> list[Any]:
    """Render today's latency chart."""
    return [ToolOutputText(text="Latency today:"), ToolOutputImage(image_url=PNG_URL)]


async def test_a_tool_image_is_stored_as_a_blob_like_in_every_adapter(make_session: Any) -> None:
    task_memory = TaskMemory(index="sync")
    session = make_session("chart-1", task_memory=task_memory, min_tokens=200)
    model = ScriptedModel([[function_call("render_chart", call_id="call_chart")], "Seen."])
    agent = Agent(name="ops", model=model, tools=[render_chart])
    config = RunConfig(call_model_input_filter=session.model_input_filter)
    result = await Runner.run(agent, "Show the chart.", session=session, run_config=config)
    assert result.final_output == "Seen."
    assert all(PNG_URL[:300] not in str(call) for call in model.inputs)
    last = next(i for i in model.inputs[-1] if i.get("type") == "function_call_output")
    assert last["output"][0]["text"] == "Latency today:"  # small text: inline
    reference = last["output"][1]["text"]
    assert reference.startswith('Output of "render_chart.call" was stored in memory')
    assert reference.endswith("image/png, 96x96 pixels: kept in the blob store, not shown here.")
    # private-ok: the session's stored records hold the flags
    records = session._memory(None).stored()
    seen = next(r.message.meta[OFFLOAD_META] for r in records if OFFLOAD_META in r.message.meta)
    assert seen["output"] == last["output"] and seen["reference"]["kind"] == "image"
    (stored,) = task_memory.load_artifacts(seen["reference"]["artifact_namespace"]).value
    assert isinstance(stored, ImageArtifact) and bytes(stored.value) == PNG
    assert len(task_memory.namespaces()) == 1  # the filter and add_items stored it once
