"""LangChain's standard tool suites on a wrapped tool and on each memory tool."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, tool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from offprompt_langchain import offprompt_tool, task_memory_tools

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory

MEMORY = TaskMemory()
MEMORY.process_output(
    "logs",
    "run",
    TextArtifact(value="Disk full on node 7. Latency 40 ms on node 3. " * 400, name="logs-std"),
)
TOOLS = {t.name: t for t in task_memory_tools(MEMORY)}
TARGET = {"memory_name": "TaskMemory", "artifact_namespace": "logs-std"}


@tool
def fetch_logs(node: str, lines: int = 100) -> str:
    """Fetch the last `lines` log lines of a node."""
    return f"{node}: all good\n" * lines


WRAPPED = offprompt_tool(fetch_logs, MEMORY, min_tokens=50)


class _WrappedTool:
    @property
    def tool_constructor(self) -> BaseTool:
        return WRAPPED

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"node": "n7", "lines": 200}


class _QueryMemory:
    @property
    def tool_constructor(self) -> BaseTool:
        return TOOLS["query_memory"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {**TARGET, "query": "which node is full?"}


class _ReadMemory:
    @property
    def tool_constructor(self) -> BaseTool:
        return TOOLS["read_memory"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {**TARGET, "page": 1}


class _SummarizeMemory:
    @property
    def tool_constructor(self) -> BaseTool:
        return TOOLS["summarize_memory"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return dict(TARGET)


# Each tool runs both of LangChain's standard suites.
class TestWrappedToolUnit(_WrappedTool, ToolsUnitTests): ...


class TestWrappedToolIntegration(_WrappedTool, ToolsIntegrationTests): ...


class TestQueryMemoryUnit(_QueryMemory, ToolsUnitTests): ...


class TestQueryMemoryIntegration(_QueryMemory, ToolsIntegrationTests): ...


class TestReadMemoryUnit(_ReadMemory, ToolsUnitTests): ...


class TestReadMemoryIntegration(_ReadMemory, ToolsIntegrationTests): ...


class TestSummarizeMemoryUnit(_SummarizeMemory, ToolsUnitTests): ...


class TestSummarizeMemoryIntegration(_SummarizeMemory, ToolsIntegrationTests): ...


def test_wrapped_example_really_went_off_prompt() -> None:
    message = WRAPPED.invoke(
        {"type": "tool_call", "id": "1", "name": "fetch_logs", "args": {"node": "n7", "lines": 200}}
    )
    assert message.artifact["offprompt"] == "stored"
    loaded = MEMORY.load_artifacts(message.artifact["artifact_namespace"])
    assert loaded.value[0].value == "n7: all good\n" * 200
