"""LangGraph threads ⇄ offprompt sessions, with a real ``create_agent`` agent.

The only fake is the chat model: ``offprompt_langchain.testing.ScriptedChatModel``, which
returns a tool call, then answers; it records the messages each call got.
Checkpointers are real: ``InMemorySaver`` and ``SqliteSaver`` on a file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    messages_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from offprompt_langchain.langgraph_threads import (
    amessages_to_thread,
    athread_to_messages,
    messages_to_thread,
    thread_to_messages,
)
from offprompt_langchain.testing import ScriptedChatModel

from offprompt.errors import NotFoundError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message
from offprompt.stores.sqlite import SQLiteStore


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"rain in {city}, 12°C"


def _agent(
    checkpointer: BaseCheckpointSaver[Any], *replies: AIMessage
) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(script=list(replies))
    return create_agent(
        model, [weather], system_prompt="Be brief.", checkpointer=checkpointer
    ), model


@pytest.fixture(params=["memory", "sqlite"])
def savers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseCheckpointSaver[Any]]]:
    """Two independent savers of one kind: the agent's old home and its new one."""
    if request.param == "memory":
        yield InMemorySaver(), InMemorySaver()
        return
    connections = [
        sqlite3.connect(tmp_path / name, check_same_thread=False) for name in ("a.db", "b.db")
    ]
    try:
        yield SqliteSaver(connections[0]), SqliteSaver(connections[1])
    finally:
        for connection in connections:
            connection.close()


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def test_thread_moves_through_an_offprompt_session_and_the_agent_continues(
    savers, tmp_path: Path
) -> None:
    old, new = savers
    agent, _ = _agent(
        old,
        AIMessage("", tool_calls=[{"id": "call_1", "name": "weather", "args": {"city": "Zürich"}}]),
        AIMessage("Rainy, 12°C in Zürich."),
    )
    first = agent.invoke({"messages": [HumanMessage("Weather in Zürich?")]}, _config("t-1"))
    assert [type(m).__name__ for m in first["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]

    # thread -> offprompt session in a real SQLite store
    report = ConversionReport()
    messages = thread_to_messages(old, "t-1", report=report)
    assert not report, report.summary()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].tool_calls[0].name == "weather" and messages[1].tool_calls[0].arguments == {
        "city": "Zürich"
    }
    assert messages[2].tool_call_id == "call_1" and messages[2].text == "rain in Zürich, 12°C"
    with SQLiteStore(tmp_path / "memory.db") as store:
        store.append("moved", messages, [1] * len(messages))
        restored = [s.message for s in store.read("moved")]
    assert restored == messages

    # offprompt session -> a fresh thread, where a new agent continues
    config = messages_to_thread(new, "t-2", restored)
    assert config["configurable"]["thread_id"] == "t-2"
    agent2, model2 = _agent(new, AIMessage("You asked about Zürich."))
    second = agent2.invoke({"messages": [HumanMessage("What did I ask?")]}, _config("t-2"))

    assert messages_to_dict(second["messages"][:4]) == messages_to_dict(first["messages"])
    assert second["messages"][-1].content == "You asked about Zürich."
    sent = model2.calls[0]  # what the model got: system prompt, the moved history, the new turn
    assert [type(m).__name__ for m in sent] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert sent[2].tool_calls[0]["id"] == "call_1" and isinstance(sent[3], ToolMessage)
    assert [m.role for m in thread_to_messages(new, "t-2")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_messages_not_from_langchain_start_a_thread() -> None:
    saver = InMemorySaver()
    messages_to_thread(
        saver, "t", [Message.user("My name is Ada."), Message.assistant("Hello Ada.")]
    )
    agent, model = _agent(saver, AIMessage("Ada."))
    out = agent.invoke({"messages": [HumanMessage("My name?")]}, _config("t"))
    assert [m.content for m in out["messages"]] == [
        "My name is Ada.",
        "Hello Ada.",
        "My name?",
        "Ada.",
    ]
    assert [m.content for m in model.calls[0][1:]] == ["My name is Ada.", "Hello Ada.", "My name?"]


def test_errors() -> None:
    saver = InMemorySaver()
    with pytest.raises(NotFoundError, match="thread 'none' has no checkpoint"):
        thread_to_messages(saver, "none")
    messages_to_thread(saver, "t", [Message.user("hi")])
    with pytest.raises(ValidationError, match="already has checkpoints"):
        messages_to_thread(saver, "t", [Message.user("again")])
    assert [m.text for m in thread_to_messages(saver, "t")] == ["hi"]  # untouched
    with pytest.raises(ValidationError, match="thread_id"):
        messages_to_thread(saver, "", [])
    with pytest.raises(ValidationError, match="sequence of offprompt Message"):
        messages_to_thread(saver, "u", ["hi"])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="BaseCheckpointSaver"):
        thread_to_messages({}, "t")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="does not hold LangChain messages"):
        _bad_channel(saver)


def _bad_channel(saver: InMemorySaver) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": ["not a message"]}
    version = saver.get_next_version(None, None)
    checkpoint["channel_versions"] = {"messages": version}
    saver.put(
        {"configurable": {"thread_id": "bad", "checkpoint_ns": ""}},
        checkpoint,
        {"source": "update", "step": -1, "parents": {}},
        {"messages": version},
    )
    thread_to_messages(saver, "bad")


async def test_async_twins() -> None:
    saver = InMemorySaver()
    await amessages_to_thread(saver, "t", [Message.user("ünï 🚀"), Message.assistant("ok")])
    back = await athread_to_messages(saver, "t")
    assert [(m.role, m.text) for m in back] == [("user", "ünï 🚀"), ("assistant", "ok")]
    with pytest.raises(NotFoundError):
        await athread_to_messages(saver, "other")
