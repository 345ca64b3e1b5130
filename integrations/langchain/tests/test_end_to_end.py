"""End-to-end proof: a ~1 MB tool output with a secret never reaches the model.

A real ``create_agent`` graph runs with a recording, scripted chat model (the only
fake): it calls a tool returning ~1 MB of text with a unique secret marker, then
``query_memory`` with the reference it was shown, then answers. Checked for the
``offprompt_tool`` wrapper and for ``OffpromptMiddleware`` (sync and async): the secret
appears in no model input except inside the small query result, the model receives a
small fraction of the output's characters, and the stored output loads back
byte-identical.
"""

from __future__ import annotations

import random
import re
import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from offprompt_langchain import OffpromptMiddleware, offprompt_tool, task_memory_tools
from offprompt_langchain.testing import ScriptedChatModel, message_chars, tool_call

from offprompt.task_memory import TaskMemory

SECRET = f"SECRET-{uuid.uuid4().hex}"
REFERENCE = re.compile(r'memory_name "([^"]+)" and artifact_namespace "([^"]+)"')


def _document() -> str:
    rng = random.Random(20240611)
    words = [
        "server",
        "rack",
        "latency",
        "disk",
        "cache",
        "queue",
        "shard",
        "replica",
        "tenant",
        "backup",
        "audit",
    ]
    lines = [
        f"{i:06d} {rng.choice(words)} {rng.choice(words)} {rng.randint(0, 99999)} ok ünï ✓\r\n"
        for i in range(30_000)
    ]
    lines.insert(13_579, f"013579 audit note: the vault passphrase is {SECRET} — keep it safe.\n")
    return "".join(lines)


DOCUMENT = _document()


@tool
def export_audit_log(year: int) -> str:
    """Export the full audit log of a year."""
    return DOCUMENT


def _script() -> list[Any]:
    def query(messages: list[BaseMessage]) -> Any:
        found = REFERENCE.search(messages[-1].text)  # the model only needs the reference
        assert found is not None, "the model was not shown a reference"
        return tool_call(
            "query_memory",
            {"memory_name": found[1], "artifact_namespace": found[2], "query": "vault passphrase"},
        )

    def answer(messages: list[BaseMessage]) -> str:
        found = re.search(r"SECRET-[0-9a-f]{32}", messages[-1].text)
        return f"The passphrase is {found[0]}." if found else "I could not find it."

    return [tool_call("export_audit_log", {"year": 2024}), query, answer]


def _check(model: ScriptedChatModel, state: dict[str, Any], memory: TaskMemory) -> None:
    assert state["messages"][-1].content == f"The passphrase is {SECRET}."
    assert len(DOCUMENT.encode("utf-8")) > 1_000_000
    # Where the secret reached the model: only inside the query_memory result.
    for call in model.calls:
        for message in call:
            if SECRET in message.text:
                assert isinstance(message, ToolMessage) and message.name == "query_memory"
                assert message_chars(message) < 20_000
    assert any(SECRET in m.text for m in model.calls[-1])
    # Characters sent to the model, all calls together: a small fraction of the output.
    assert model.chars_sent() < len(DOCUMENT) * 0.05
    # The stored output is the tool's output, byte for byte.
    exported = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "export_audit_log"
    )
    namespace = exported.artifact["artifact_namespace"]
    stored = memory.load_artifacts(namespace).value
    assert len(stored) == 1
    assert stored[0].value.encode("utf-8") == DOCUMENT.encode("utf-8")
    assert exported.artifact["bytes"] == len(DOCUMENT.encode("utf-8"))


def test_with_offprompt_tool() -> None:
    memory = TaskMemory()
    model = ScriptedChatModel(script=_script())
    tools: list[BaseTool] = [offprompt_tool(export_audit_log, memory), *task_memory_tools(memory)]
    agent = create_agent(model, tools, system_prompt="You audit logs.")
    state = agent.invoke(
        {"messages": [HumanMessage("What is the vault passphrase in the 2024 log?")]}
    )
    _check(model, state, memory)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_with_middleware(mode: str) -> None:
    memory = TaskMemory()
    model = ScriptedChatModel(script=_script())
    agent = create_agent(
        model,
        [export_audit_log],
        system_prompt="You audit logs.",
        middleware=[OffpromptMiddleware(memory, max_tokens=8000)],
        checkpointer=InMemorySaver(),
    )
    request = {"messages": [HumanMessage("What is the vault passphrase in the 2024 log?")]}
    config = {"configurable": {"thread_id": f"audit-{mode}"}}
    if mode == "sync":
        state = agent.invoke(request, config)
    else:
        state = await agent.ainvoke(request, config)
    _check(model, state, memory)
    # The checkpointed thread holds the reference, not the megabyte: the secret is only in
    # the query result and in the answer.
    saved = agent.get_state(config).values["messages"]
    holders = [m for m in saved if SECRET in m.text]
    assert holders == [saved[-2], saved[-1]] and saved[-2].name == "query_memory"
    assert sum(len(m.text) for m in saved) < 30_000
