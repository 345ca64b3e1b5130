"""``OffpromptSaver`` under a real ``create_agent``: the thread is an offprompt session.

Real LangGraph (``create_agent``, ``interrupt``, ``Command``, time travel), real SQLite
files, a real subprocess for the restart; only the model is scripted. Parity is proved
against ``InMemorySaver`` fed the very same ``put``/``put_writes`` calls.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from offprompt_langchain import to_langchain
from offprompt_langchain.checkpoint import OffpromptSaver
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.cli import main
from offprompt.conversation import ConversationMemory
from offprompt.forget import forget
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)


@tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"Sunny in {city}. " + "details " * 60


@tool
def book(city: str) -> str:
    """Book a trip; a human confirms first."""
    answer = interrupt({"question": f"Book {city}?"})
    return f"booked {city}: {answer}"


class TeeSaver(OffpromptSaver):
    """An ``OffpromptSaver`` that also hands every write to an ``InMemorySaver``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mirror = InMemorySaver()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        # The input checkpoint's __start__ value holds the caller's message objects, which
        # add_messages gives an id in place while the put may still run in LangGraph's
        # background executor: freeze one copy, as for put_writes, so both savers store
        # the same value whichever of them serializes later.
        frozen = copy.deepcopy(checkpoint)
        self.mirror.put(config, frozen, metadata, new_versions)
        return super().put(config, frozen, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # LangGraph serializes writes in a background thread while the reducer may still
        # give a message its id: freeze one copy so both savers store the same value.
        frozen = copy.deepcopy(list(writes))
        self.mirror.put_writes(config, frozen, task_id, task_path)
        super().put_writes(config, frozen, task_id, task_path)


def _question() -> HumanMessage:
    return HumanMessage(
        content=[
            {"type": "text", "text": "Weather in Oslo? ☃ and what is this picture?"},
            {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
        ],
        additional_kwargs={"client": {"tab": 3}},
        id="q-1",
    )


def _agent(saver: OffpromptSaver, script: list[Any]) -> Any:
    return create_agent(ScriptedChatModel(script=script), tools=[lookup, book], checkpointer=saver)


def _run_two_turns(agent: Any, config: RunnableConfig) -> dict[str, Any]:
    agent.invoke({"messages": [_question()]}, config)
    paused = agent.invoke({"messages": [HumanMessage("Book it, please.")]}, config)
    assert paused["__interrupt__"][0].value == {"question": "Book Oslo?"}
    return agent.invoke(Command(resume="yes, go"), config)


SCRIPT = [
    tool_call("lookup", {"city": "Oslo"}, id="call-1"),
    AIMessage("It is sunny; the picture is one pixel.", response_metadata={"model": "s"}),
    tool_call("book", {"city": "Oslo"}, id="call-2"),
    "Booked.",
]


def _same(a: Any, b: Any) -> None:
    assert a is not None and b is not None
    assert a.checkpoint == b.checkpoint
    assert a.metadata == b.metadata
    assert a.parent_config == b.parent_config
    assert a.pending_writes == b.pending_writes


def test_every_checkpoint_reads_back_as_inmemorysaver_has_it(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    saver = TeeSaver(path=str(db))
    config: RunnableConfig = {"configurable": {"thread_id": "trip-1"}}
    final = _run_two_turns(_agent(saver, SCRIPT), config)
    assert [type(m).__name__ for m in final["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    fresh = OffpromptSaver(path=str(db))  # a new process's view: nothing cached
    expected = list(saver.mirror.list(config))
    assert len(expected) >= 10
    for tup in expected:
        _same(fresh.get_tuple(tup.config), tup)
    assert [t.checkpoint for t in fresh.list(config)] == [t.checkpoint for t in expected]
    latest = fresh.get_tuple(config)
    assert latest is not None
    question = latest.checkpoint["channel_values"]["messages"][0]
    assert question == _question()
    assert question.additional_kwargs == {"client": {"tab": 3}}
    assert latest.checkpoint["channel_values"]["messages"][1].tool_calls[0]["id"] == "call-1"
    # each message stored once, in the session named by the thread id
    memory = ConversationMemory(SQLiteStore(db), "trip-1")
    assert len(memory.messages()) == 8
    assert to_langchain(memory.messages()) == final["messages"]


async def test_async_agent_matches_inmemorysaver(tmp_path: Path) -> None:
    saver = TeeSaver(path=str(tmp_path / "memory.db"))
    config: RunnableConfig = {"configurable": {"thread_id": "async-1"}}
    agent = _agent(saver, SCRIPT)
    await agent.ainvoke({"messages": [_question()]}, config)
    paused = await agent.ainvoke({"messages": [HumanMessage("Book it.")]}, config)
    assert "__interrupt__" in paused
    await agent.ainvoke(Command(resume="ok"), config)
    fresh = OffpromptSaver(path=str(tmp_path / "memory.db"))
    expected = list(saver.mirror.list(config))
    for tup in expected:
        _same(await fresh.aget_tuple(tup.config), tup)
    assert len([t async for t in fresh.alist(config)]) == len(expected)


def test_time_travel_forks_and_both_branches_stay_readable(tmp_path: Path) -> None:
    saver = OffpromptSaver(path=str(tmp_path / "memory.db"))
    config: RunnableConfig = {"configurable": {"thread_id": "fork"}}
    agent = _agent(saver, [*SCRIPT, "Paris is rainy."])
    _run_two_turns(agent, config)
    before_fork = {t.checkpoint["id"]: t.checkpoint for t in saver.list(config)}
    # the checkpoint where turn 1 had ended (4 messages, nothing left to run)
    earlier = next(
        s for s in agent.get_state_history(config) if not s.next and len(s.values["messages"]) == 4
    )
    forked = agent.invoke({"messages": [HumanMessage("And Paris?")]}, earlier.config)
    assert [m.content for m in forked["messages"][4:]] == ["And Paris?", "Paris is rainy."]
    assert forked["messages"][:4] == earlier.values["messages"]
    assert agent.get_state(config).values["messages"] == forked["messages"]
    fresh = OffpromptSaver(path=str(tmp_path / "memory.db"))
    for checkpoint_id, checkpoint in before_fork.items():
        found = fresh.get_tuple(
            {"configurable": {"thread_id": "fork", "checkpoint_id": checkpoint_id}}
        )
        assert found is not None and found.checkpoint == checkpoint
    # the session logs every message once: 8 of the first branch, 2 of the fork
    assert SQLiteStore(tmp_path / "memory.db").count("fork") == 10


RESTART = textwrap.dedent(
    """
    import json, sys
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from offprompt_langchain.checkpoint import OffpromptSaver
    from offprompt_langchain.testing import ScriptedChatModel

    model = ScriptedChatModel(script=[lambda msgs: f"I see {len(msgs)} earlier messages."])
    agent = create_agent(model, tools=[], checkpointer=OffpromptSaver(path=sys.argv[1]))
    out = agent.invoke({"messages": [HumanMessage("Still there?")]},
                       {"configurable": {"thread_id": sys.argv[2]}})
    print(json.dumps([m.content if isinstance(m.content, str) else "<parts>" for m in out["messages"]]))
    """
)


def test_a_restarted_process_continues_the_thread(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    config: RunnableConfig = {"configurable": {"thread_id": "restart"}}
    _run_two_turns(_agent(OffpromptSaver(path=str(db)), SCRIPT), config)
    done = subprocess.run(
        [sys.executable, "-c", RESTART, str(db), "restart"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    contents = json.loads(done.stdout)
    assert contents[-2:] == ["Still there?", "I see 9 earlier messages."]
    assert len(contents) == 10
    latest = OffpromptSaver(path=str(db)).get_tuple(config)
    assert latest is not None
    assert (
        latest.checkpoint["channel_values"]["messages"][-1].content == "I see 9 earlier messages."
    )


def test_show_export_and_forget_act_on_the_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    saver = OffpromptSaver(path=str(home / "memory.db"))
    config: RunnableConfig = {"configurable": {"thread_id": "cli-thread"}}
    _run_two_turns(_agent(saver, SCRIPT), config)
    capsys.readouterr()
    assert main(["--home", str(home), "show", "cli-thread"]) == 0
    shown = capsys.readouterr().out
    assert "Book it, please." in shown and "Booked." in shown
    out = tmp_path / "thread.json"
    assert (
        main(["--home", str(home), "export", "--format", "langchain", "cli-thread", str(out)]) == 0
    )
    exported = json.loads(out.read_text())
    assert len(exported) == 8 and exported[-1]["data"]["content"] == "Booked."
    assert main(["--home", str(home), "forget", "--session", "cli-thread", "--yes"]) == 0
    assert saver.get_tuple(config) is None
    assert list(saver.list(config)) == []
    assert SQLiteStore(home / "memory.db").count("cli-thread") == 0


def test_forget_scope_removes_the_checkpoints(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    saver = OffpromptSaver(store, scope=Scope(user="u1"))
    other = OffpromptSaver(store, scope=Scope(user="u2"))
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    _run_two_turns(_agent(saver, SCRIPT), config)
    _run_two_turns(_agent(other, SCRIPT), config)
    report = forget(Scope(user="u1"), stores=[store])
    assert report.complete
    assert report.results[0].deleted["messages"] == 8 and report.results[0].deleted["state"] > 10
    assert saver.get_tuple(config) is None and list(saver.list(None)) == []
    kept = other.get_tuple(config)
    assert kept is not None and len(kept.checkpoint["channel_values"]["messages"]) == 8


def test_tool_message_and_ids_survive(tmp_path: Path) -> None:
    saver = OffpromptSaver(path=str(tmp_path / "memory.db"))
    config: RunnableConfig = {"configurable": {"thread_id": "ids"}}
    final = _run_two_turns(_agent(saver, SCRIPT), config)
    latest = OffpromptSaver(path=str(tmp_path / "memory.db")).get_tuple(config)
    assert latest is not None
    messages = latest.checkpoint["channel_values"]["messages"]
    assert [m.id for m in messages] == [m.id for m in final["messages"]]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_messages] == ["call-1", "call-2"]
    assert tool_messages[1].content == "booked Oslo: yes, go"


@pytest.mark.parametrize("record", ["turn", "step"])
def test_middleware_memory_does_not_record_twice_with_offpromptsaver(
    tmp_path: Path, record: str
) -> None:
    from offprompt_langchain import OffpromptMiddleware

    from offprompt.task_memory import TaskMemory

    db = tmp_path / "memory.db"
    middleware = OffpromptMiddleware(
        TaskMemory(), memory=ConversationMemory(SQLiteStore(db), "fallback"), record=record
    )
    agent = create_agent(
        ScriptedChatModel(script=SCRIPT),
        tools=[lookup, book],
        middleware=[middleware],
        checkpointer=OffpromptSaver(path=str(db)),
    )
    final = _run_two_turns(agent, {"configurable": {"thread_id": "both"}})
    store = SQLiteStore(db)
    assert store.count("both") == 8 and store.count("fallback") == 0
    assert to_langchain(ConversationMemory(store, "both").messages()) == final["messages"]
    # private-ok: the fallback recorder's state: it never ran
    assert middleware._recorder is not None and middleware._recorder._seen == {}  # it never ran


def test_middleware_memory_on_another_store_still_records(tmp_path: Path) -> None:
    from offprompt_langchain import OffpromptMiddleware

    from offprompt.task_memory import TaskMemory

    elsewhere = SQLiteStore(tmp_path / "record.db")
    agent = create_agent(
        ScriptedChatModel(script=SCRIPT),
        tools=[lookup, book],
        middleware=[OffpromptMiddleware(TaskMemory(), memory=ConversationMemory(elsewhere, "x"))],
        checkpointer=OffpromptSaver(path=str(tmp_path / "memory.db")),
    )
    final = _run_two_turns(agent, {"configurable": {"thread_id": "t"}})
    assert to_langchain(ConversationMemory(elsewhere, "t").messages()) == final["messages"]
    assert SQLiteStore(tmp_path / "memory.db").count("t") == 8


def test_subgraph_checkpoints_match_inmemorysaver(tmp_path: Path) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    def inner_reply(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [AIMessage(f"inner saw {len(state['messages'])}, {answer}")]}

    inner = (
        StateGraph(MessagesState).add_node("reply", inner_reply).add_edge(START, "reply").compile()
    )
    outer = StateGraph(MessagesState).add_node("inner", inner).add_edge(START, "inner")
    saver = TeeSaver(path=str(tmp_path / "memory.db"))
    graph = outer.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "sub"}}
    graph.invoke({"messages": [HumanMessage("hi", id="h1")]}, config)
    state = graph.get_state(config, subgraphs=True)
    assert state.tasks and state.tasks[0].state is not None  # paused inside the subgraph
    done = graph.invoke(Command(resume="yes"), config)
    assert done["messages"][-1].content == "inner saw 1, yes"
    fresh = OffpromptSaver(path=str(tmp_path / "memory.db"))
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.mirror.list(config)}
    assert "" in namespaces and len(namespaces) > 1
    for tup in saver.mirror.list(config):
        _same(fresh.get_tuple(tup.config), tup)
