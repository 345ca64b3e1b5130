"""Issue 26 item 4: a sensitive tool's error reaches the model as its kind, size and
reference, never a line of its text (real LlamaIndex tools and FunctionAgent; only the
LLM is scripted)."""

from __future__ import annotations

import re
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import ToolMetadata, ToolOutput
from llama_index.core.tools.types import BaseTool
from offprompt_llamaindex import TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of, tool_call

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import StoredReference

SECRET = "record malformed: {'password': 'hunter2-s3cr3t', 'user': 'lovelace-9'}"
REF = re.compile(r'memory_name "([^"]+)" and artifact_namespace "([^"]+)"')


def vault(record_id: int) -> str:
    """Fetch a record from the vault."""
    raise ValueError(SECRET)


class ReturnsError(BaseTool):
    """A tool that reports its failure as ``ToolOutput(is_error=True)``."""

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="vault_out", description="Fetch a record.")

    def __call__(self, input: Any) -> ToolOutput:
        return ToolOutput(
            content=SECRET, tool_name="vault_out", raw_input={}, raw_output=None, is_error=True
        )


def _assert_secret_kept(memory: TaskMemory, out: ToolOutput) -> None:
    assert out.is_error
    for word in ("hunter2", "password", "malformed", "lovelace"):
        assert word not in out.content
    reference = StoredReference.from_artifact(out.raw_output)
    assert reference is not None and reference.sensitive and reference.is_error
    assert f"({reference.kind}, {len(SECRET.encode())} bytes, 1 line" in out.content
    assert memory.load_artifacts(reference.namespace).value[0].value == SECRET


async def test_raised_and_returned_errors_of_a_sensitive_tool_stay_off_prompt() -> None:
    memory = TaskMemory()
    raised = offprompt_tool(vault, memory, sensitive=True)
    returned = offprompt_tool(ReturnsError(), memory, sensitive=True)
    for out in (
        raised.call(record_id=1),
        await raised.acall(record_id=1),
        returned.call("x"),
        await returned.acall("x"),
    ):
        _assert_secret_kept(memory, out)


async def test_through_an_agent_the_model_never_reads_the_error_but_can_fetch_it() -> None:
    memory = TaskMemory()

    def read_it(messages: list[Any]) -> Any:
        found = REF.search(text_of(messages[-1:]))
        assert found is not None
        return tool_call("read_memory", "c2", memory_name=found[1], artifact_namespace=found[2])

    llm = ScriptedFunctionLLM(script=[tool_call("vault", "c1", record_id=7), read_it, "done"])
    tools = [
        offprompt_tool(vault, memory, sensitive=True),
        *TaskMemoryToolSpec(memory).to_tool_list(),
    ]
    assert str(await FunctionAgent(tools=tools, llm=llm).run("fetch record 7")) == "done"
    after_error = text_of(llm.calls[1])
    assert "hunter2" not in after_error and "stored off-prompt" in after_error
    # The memory tools read it back when the model asks (it chose to).
    assert "hunter2-s3cr3t" in text_of(llm.calls[2][-1:])
