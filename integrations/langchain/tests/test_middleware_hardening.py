"""OffpromptMiddleware under hostile-but-legal input, in real create_agent graphs (issue 14):
a scoped memory records threads (item 5); lone surrogates never crash the run (item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from offprompt_langchain import OffpromptMiddleware
from offprompt_langchain.middleware import ESCAPED_META
from offprompt_langchain.testing import ScriptedChatModel, tool_call

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


@tool
def read_log(path: str) -> str:
    """Read a log file that is not valid UTF-8."""
    raw = b"boot ok\nsensor \xff\xfe garbage\n" * 400  # bytes no codec can map
    return raw.decode("utf-8", "surrogateescape")


def _surrogate_run(middleware: list[Any]) -> list[Any]:
    model = ScriptedChatModel(script=[tool_call("read_log", {"path": "/var/log/x"}), "done"])
    agent = create_agent(model, [read_log], middleware=middleware, checkpointer=InMemorySaver())
    prompt = json.loads('"what does \\ud83d mean?"')  # a lone surrogate from a JSON escape
    return agent.invoke({"messages": [HumanMessage(prompt)]}, thread("t-1"))["messages"]


def test_lone_surrogates_never_crash_the_agent_and_are_recorded_flagged(
    tmp_path: Path,
) -> None:
    """Issue 14 item 3: a run that works without offprompt works with it; what offprompt
    records is escaped visibly and flagged, never silently altered."""
    without = _surrogate_run([])
    store = SQLiteStore(tmp_path / "memory.db")
    middleware = OffpromptMiddleware(
        TaskMemory(),
        memory=ConversationMemory(store, "main"),
        max_tokens=50_000,
        min_tokens=10,
        memory_tools=False,
    )
    with_offprompt = _surrogate_run([middleware])
    assert [type(m).__name__ for m in with_offprompt] == [type(m).__name__ for m in without]
    untouched = [0, 1, 3]  # the agent's own messages; the tool result went off-prompt
    assert [with_offprompt[i].content for i in untouched] == [without[i].content for i in untouched]
    # The core's one rule for text arriving inside a run: the large result is stored
    # with its lone surrogates escaped, like any output, and the model sees the reference.
    result = with_offprompt[2]
    assert result.content.startswith('Output of "read_log.call" was stored in memory')
    stored = middleware.task_memory.load_artifacts(result.artifact["artifact_namespace"])
    assert stored.value[0].value == read_log.invoke({"path": "x"}).replace(
        "\udcff\udcfe", "\\udcff\\udcfe"
    )
    recorded = [r.message for r in store.read("t-1")]
    assert [m.role for m in recorded] == ["user", "assistant", "tool", "assistant"]
    assert recorded[0].text == "what does \\ud83d mean?"
    assert recorded[0].meta[ESCAPED_META] is True and ESCAPED_META not in recorded[1].meta
    assert recorded[2].text.startswith('Output of "read_log.call" was stored in memory')
    store.close()
