"""Issue 26 item 4: a sensitive tool's error reaches the model as its kind, size and
reference, never a line of its text: ``offprompt_tool`` and ``OffpromptMiddleware`` with
real LangChain tools and a real ``create_agent`` graph (only the chat model is scripted)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from offprompt_langchain import OffpromptMiddleware, offprompt_tool
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import StoredReference

SECRET = "record malformed: {'password': 'hunter2-s3cr3t', 'user': 'lovelace-9'}"


@tool
def vault(record_id: int) -> str:
    """Fetch a record from the vault."""
    raise ToolException(SECRET)


def call(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": "call-1", "name": "vault", "args": args}


def _assert_secret_kept(memory: TaskMemory, text: str, artifact: Any) -> None:
    for word in ("hunter2", "password", "malformed", "lovelace"):
        assert word not in text
    reference = StoredReference.from_artifact(artifact)
    assert reference is not None and reference.sensitive and reference.is_error
    assert f"({reference.kind}, {len(SECRET.encode())} bytes, 1 line" in text
    assert memory.reference_text("vault", "call", reference.namespace) in text
    assert memory.load_artifacts(reference.namespace).value[0].value == SECRET


async def test_offprompt_tool_keeps_a_sensitive_error_off_prompt() -> None:
    memory = TaskMemory()
    handled = offprompt_tool(
        vault.model_copy(update={"handle_tool_error": True}), memory, sensitive=True
    )
    for message in (
        handled.invoke(call({"record_id": 1})),
        await handled.ainvoke(call({"record_id": 1})),
    ):
        assert isinstance(message, ToolMessage) and message.status == "error"
        _assert_secret_kept(memory, str(message.content), message.artifact)
    # Not handled: raised as the reference, which whoever reports it shows instead.
    raising = offprompt_tool(vault, memory, sensitive=True)
    with pytest.raises(ToolException) as raised:
        raising.invoke(call({"record_id": 1}))
    assert "hunter2" not in str(raised.value) and "stored off-prompt" in str(raised.value)


def test_middleware_keeps_a_sensitive_error_off_prompt() -> None:
    memory = TaskMemory()
    model = ScriptedChatModel(script=[tool_call("vault", {"record_id": 7}), "done"])
    handled = vault.model_copy(update={"handle_tool_error": True})
    agent = create_agent(model, [handled], middleware=[OffpromptMiddleware(memory, sensitive=True)])
    state = agent.invoke({"messages": [HumanMessage("fetch record 7")]})
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "error"
    _assert_secret_kept(memory, str(message.content), message.artifact)
    assert all("hunter2" not in m.text for sent in model.calls for m in sent)


@tool
def vault_dump(record_id: int) -> str:
    """Dump a record whose text holds a lone surrogate (invalid Unicode)."""
    return "pin=4711-secret \ud83d end"


def test_middleware_keeps_a_sensitive_result_with_a_lone_surrogate_off_prompt() -> None:
    # Invalid Unicode cannot be stored as it is; for sensitive tools the result is stored
    # with the surrogate escaped (never left inline, where the model would read it).
    memory = TaskMemory()
    model = ScriptedChatModel(script=[tool_call("vault_dump", {"record_id": 7}), "done"])
    agent = create_agent(
        model, [vault_dump], middleware=[OffpromptMiddleware(memory, sensitive=True)]
    )
    state = agent.invoke({"messages": [HumanMessage("dump record 7")]})
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert "4711" not in str(message.content)
    assert all("4711" not in m.text for sent in model.calls for m in sent)
    reference = StoredReference.from_artifact(message.artifact)
    assert reference is not None and reference.sensitive
    assert (
        memory.load_artifacts(reference.namespace).value[0].value == "pin=4711-secret \\ud83d end"
    )
