"""``OffpromptCapability`` in real pydantic-ai runs: only the model is pydantic-ai's own
``FunctionModel`` / ``TestModel``; the TaskMemory is real (in memory, or on disk)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from offprompt_pydantic_ai import (
    OFFLOAD_METADATA_KEY,
    OffpromptCapability,
    OffpromptOverflowStore,
    memory_tools,
)
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness.tool_output_limits import Band, Spill, ToolOutputLimits

from offprompt.errors import ValidationError
from offprompt.task_memory import MEMORY_TOOL_NAMES, TaskMemory

SECRET = "SECRET-7f3a9c only in the middle of the log"
LOG = (
    "".join(
        f"2026-12-07T10:{i // 60:02d}:{i % 60:02d} node {i % 13} ok, checks passed\n"
        if i != 1500
        else f"2026-12-07T10:25:00 {SECRET}\n"
        for i in range(3000)
    )
    + "2026-12-07T11:00:00 node 7 disk full\n"
)
NAMESPACE = re.compile(r'artifact_namespace "([^"]+)"')


@pytest.fixture
def memory() -> Iterator[TaskMemory]:
    with TaskMemory(index="sync") as task_memory:
        yield task_memory


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _seen(messages: list[ModelMessage]) -> str:
    """Everything a model call received, as text."""
    return "\n".join(repr(part) for message in messages for part in message.parts)


class _Script:
    """A FunctionModel script: fetch the log, grep the stored copy, answer."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(_seen(messages))
        returns = _returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("fetch_logs", {}, tool_call_id="c1")])
        last = returns[-1]
        if last.tool_name == "fetch_logs":
            match = NAMESPACE.search(str(last.content))
            assert match is not None, last.content
            args = {"artifact_namespace": match.group(1), "pattern": "disk full"}
            return ModelResponse(parts=[ToolCallPart("grep_memory", args, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart(f"found: {last.content}")])


def _agent(model: Any, capability: OffpromptCapability) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, capabilities=[capability])

    @agent.tool_plain
    def fetch_logs() -> str:
        """The whole log of the cluster."""
        return LOG

    return agent


async def test_a_large_return_is_stored_and_read_back_through_a_memory_tool(
    memory: TaskMemory,
) -> None:
    script = _Script()
    result = await _agent(FunctionModel(script), OffpromptCapability(memory)).run("why down?")
    assert "node 7 disk full" in result.output
    stored, grepped = _returns(result.all_messages())
    assert stored.tool_name == "fetch_logs" and grepped.tool_name == "grep_memory"
    assert str(stored.content).startswith('Output of "fetch_logs.call" was stored in memory')
    reference = stored.metadata[OFFLOAD_METADATA_KEY]
    assert reference["tool"] == "fetch_logs" and reference["lines"] == 3001
    # exact text kept; the line no grep asked for never reached any model call
    namespace = reference["artifact_namespace"]
    assert "".join(a.value for a in memory.load_artifacts(namespace).value) == LOG
    assert len(script.seen) == 3
    assert all(SECRET not in seen for seen in script.seen)


async def test_a_small_return_passes_unchanged(memory: TaskMemory) -> None:
    agent: Agent[None, str] = Agent(
        TestModel(call_tools=["small"]), capabilities=[OffpromptCapability(memory)]
    )

    @agent.tool_plain
    def small() -> str:
        return "all good"

    result = await agent.run("go")
    (part,) = _returns(result.all_messages())
    assert part.content == "all good" and part.metadata is None
    assert memory.namespaces() == []


async def test_a_json_return_is_stored_as_its_json(memory: TaskMemory) -> None:
    table = [{"id": i, "name": f"row {i}", "status": "ok"} for i in range(400)]
    agent: Agent[None, str] = Agent(
        TestModel(call_tools=["rows"]), capabilities=[OffpromptCapability(memory)]
    )

    @agent.tool_plain
    def rows() -> list[dict[str, Any]]:
        return table

    result = await agent.run("go")
    (part,) = _returns(result.all_messages())
    namespace = part.metadata[OFFLOAD_METADATA_KEY]["artifact_namespace"]
    assert memory.json_query(namespace, "[?id == `399`].name") == ["row 399"]


async def test_a_tool_return_keeps_its_content_and_metadata(memory: TaskMemory) -> None:
    capability = OffpromptCapability(memory, min_tokens=10)
    agent: Agent[None, str] = Agent(TestModel(call_tools=["wrapped"]), capabilities=[capability])

    @agent.tool_plain
    def wrapped() -> ToolReturn:
        return ToolReturn(return_value=LOG, content="see the log", metadata={"source": "k8s"})

    result = await agent.run("go")
    (part,) = _returns(result.all_messages())
    assert part.metadata["source"] == "k8s"
    assert part.metadata[OFFLOAD_METADATA_KEY]["bytes"] == len(LOG.encode())
    assert "see the log" in _seen(result.all_messages())


async def test_min_tokens_zero_stores_every_non_empty_return(memory: TaskMemory) -> None:
    agent: Agent[None, str] = Agent(
        TestModel(call_tools=["small"]),
        capabilities=[OffpromptCapability(memory, min_tokens=0)],
    )

    @agent.tool_plain
    def small() -> str:
        return "a short answer that still goes to memory"

    result = await agent.run("go")
    (part,) = _returns(result.all_messages())
    assert OFFLOAD_METADATA_KEY in part.metadata
    assert len(memory.namespaces()) == 1


async def test_memory_tool_answers_are_not_stored_again(memory: TaskMemory) -> None:
    await _agent(FunctionModel(_Script()), OffpromptCapability(memory, min_tokens=0)).run("go")
    assert len(memory.namespaces()) == 1  # the log; not grep_memory's answer


async def test_a_spill_into_the_offprompt_store_is_read_by_the_memory_tools(
    memory: TaskMemory,
) -> None:
    """ToolOutputLimits spills into OffpromptOverflowStore; grep_memory reads the spill."""
    overflow = OffpromptOverflowStore(memory)
    limits: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=1000, action=Spill())], store=overflow
    )
    handles: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("fetch_logs", {}, tool_call_id="c1")])
        if returns[-1].tool_name == "fetch_logs":
            handles.append(returns[-1].metadata["overflow_handle"])
            args = {"artifact_namespace": overflow.namespace(handles[0]), "pattern": "disk full"}
            return ModelResponse(parts=[ToolCallPart("grep_memory", args, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart(str(returns[-1].content))])

    agent: Agent[None, str] = Agent(
        FunctionModel(model),
        capabilities=[limits],
        toolsets=[FunctionToolset(memory_tools(memory))],
    )

    @agent.tool_plain
    def fetch_logs() -> str:
        return LOG

    result = await agent.run("go")
    assert "node 7 disk full" in result.output
    assert await overflow.read(handles[0]) == LOG.encode()


def test_bad_arguments_are_refused(memory: TaskMemory) -> None:
    with pytest.raises(ValidationError, match="TaskMemory"):
        OffpromptCapability("not a memory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="min_tokens"):
        OffpromptCapability(memory, min_tokens=-1)


def test_the_toolset_holds_the_five_memory_tools(memory: TaskMemory) -> None:
    toolset = OffpromptCapability(memory).get_toolset()
    assert toolset is not None
    assert tuple(toolset.tools) == MEMORY_TOOL_NAMES  # type: ignore[attr-defined]
