"""OffpromptMiddleware under hostile-but-legal input, in real create_agent graphs (issue 14):
a scoped memory records threads (item 5); lone surrogates never crash the run (item 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from offprompt_langchain import OffpromptMiddleware
from offprompt_langchain.testing import ScriptedChatModel

from offprompt.conversation import ConversationMemory
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_a_scoped_memory_records_each_thread_in_its_partition(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    bob = Scope(tenant="acme", user="bob", agent="helper")
    memory = ConversationMemory(store, "bob-main", scope=bob)
    model = ScriptedChatModel(script=["noted", "still noted"])
    agent = create_agent(
        model,
        [],
        middleware=[OffpromptMiddleware(TaskMemory(), memory=memory, memory_tools=False)],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [HumanMessage("hello from thread 7")]}, thread("bob-thread-7"))
    agent.invoke({"messages": [HumanMessage("and again")]}, thread("bob-thread-7"))
    recorded = store.read("bob-thread-7", scope=bob)
    assert [r.message.text for r in recorded] == [
        "hello from thread 7",
        "noted",
        "and again",
        "still noted",
    ]
    assert store.read("bob-thread-7") == []  # not in the unscoped partition
    listed = {i.session_id: i.scope for i in store.sessions(scope=Scope(user="bob"))}
    assert listed == {"bob-thread-7": bob.with_session("bob-thread-7")}
    store.close()
