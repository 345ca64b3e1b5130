"""OffpromptMiddleware inside real create_agent graphs (only the chat model is scripted)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from offprompt_langchain import (
    LangChainSummarizer,
    OffpromptMiddleware,
    from_langchain,
    to_langchain,
)
from offprompt_langchain import middleware as middleware_module
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.conversation import ConversationMemory
from offprompt.conversation.window import select_window
from offprompt.errors import ValidationError
from offprompt.stores import InMemoryStore, SQLiteStore
from offprompt.summarizers import ExtractiveSummarizer
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import ACTIVITY, StoredReference
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES

BIG = "Telemetry line with node names and numbers 12345. " * 2000
SYSTEM = "You are an operations agent."
REF = re.compile(r'memory_name "([^"]+)" and artifact_namespace "([^"]+)"')


@tool
def fetch(size: int) -> str:
    """Fetch `size` lines of telemetry (0: all of it)."""
    return BIG if size == 0 else "small result " * size


@tool
def failing(code: int) -> str:
    """Always fails, loudly."""
    raise ToolException("E" * 20_000 + f" code {code}")


failing.handle_tool_error = True


@tool
def via_command(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Returns its big result inside a Command."""
    return Command(update={"messages": [ToolMessage(BIG, tool_call_id=tool_call_id)]})


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_large_tool_results_go_off_prompt_small_ones_stay() -> None:
    memory = TaskMemory()
    model = ScriptedChatModel(
        script=[tool_call("fetch", {"size": 0}), tool_call("fetch", {"size": 3}), "done"]
    )
    agent = create_agent(model, [fetch], middleware=[OffpromptMiddleware(memory, min_tokens=100)])
    state = agent.invoke({"messages": [HumanMessage("go")]})
    big, small = tool_messages(state)
    namespace = big.artifact["artifact_namespace"]
    assert big.content.split("\n")[0] == memory.reference_text("fetch", ACTIVITY, namespace)
    assert StoredReference.from_artifact(big.artifact).tool == "fetch"
    assert memory.load_artifacts(namespace).value[0].value == BIG
    assert small.content == "small result small result small result " and small.artifact is None
    assert set(model.bound_tools[0]) == {"fetch", *MEMORY_TOOL_NAMES}
    assert all(BIG not in m.text for call in model.calls for m in call)


def test_command_results_errors_and_memory_tools() -> None:
    memory = TaskMemory()

    def query_it(messages: list[BaseMessage]) -> AIMessage:
        found = REF.search(messages[-1].text)
        assert found is not None
        return tool_call(
            "query_memory",
            {"memory_name": found[1], "artifact_namespace": found[2], "query": "node names"},
        )

    model = ScriptedChatModel(
        script=[tool_call("via_command"), query_it, tool_call("failing", {"code": 7}), "done"]
    )
    agent = create_agent(
        model, [via_command, failing], middleware=[OffpromptMiddleware(memory, min_tokens=10)]
    )
    command, queried, error = tool_messages(agent.invoke({"messages": [HumanMessage("go")]}))
    assert command.artifact["offprompt"] == "stored"
    assert memory.load_artifacts(command.artifact["artifact_namespace"]).value[0].value == BIG
    # The memory tool's own (bounded) output is what the model asked for: not re-stored.
    assert "Telemetry line" in queried.content and queried.artifact is None
    # A large error goes off-prompt too (issue 13): its first line, its size, the reference.
    assert error.status == "error" and "code 7" not in error.content
    assert error.content.startswith('Error: the tool failed; first line of its error: "EEEE')
    assert error.artifact["is_error"] is True and error.artifact["bytes"] == 20_007
    stored_error = memory.load_artifacts(error.artifact["artifact_namespace"]).value[0].value
    assert stored_error == "E" * 20_000 + " code 7"
    assert len(memory.namespaces()) == 2


def _conversation_agent(model: ScriptedChatModel, middleware: OffpromptMiddleware) -> Any:
    return create_agent(
        model, [fetch], system_prompt=SYSTEM, middleware=[middleware], checkpointer=InMemorySaver()
    )


def _turn_script(turns: int, detail: int = 30) -> list[Any]:
    script: list[Any] = []
    for i in range(turns):
        script += [tool_call("fetch", {"size": 30 + i}), f"Answer {i}: " + "detail " * detail]
    return script


def test_model_input_is_the_conversation_memory_window() -> None:
    budget = 900
    model = ScriptedChatModel(script=_turn_script(6))
    agent = _conversation_agent(model, OffpromptMiddleware(TaskMemory(), max_tokens=budget))
    for i in range(6):
        state = agent.invoke(
            {"messages": [HumanMessage(f"Turn {i}: " + "context " * 40)]}, thread("t")
        )
    everything = state["messages"]
    assert len(everything) == 6 * 4  # the state (and checkpoint) keeps every message
    sent = model.calls[-1]
    assert isinstance(sent[0], SystemMessage) and isinstance(sent[1], HumanMessage)
    assert len(sent) < len(everything)
    # Exactly what ConversationMemory.window picks from the untrimmed input.
    reference = ConversationMemory(InMemoryStore(), "ref")
    reference.add_messages(from_langchain([SystemMessage(SYSTEM), *everything[:-1]]))
    window = reference.window(budget)
    assert [m.id for m in sent[1:]] == [m.id for m in to_langchain(window)[1:]]
    assert window.tokens <= budget
    # Never a tool result without the call that asked for it.
    for index, message in enumerate(sent):
        if isinstance(message, ToolMessage):
            assert any(
                c["id"] == message.tool_call_id
                for m in sent[:index]
                if isinstance(m, AIMessage)
                for c in m.tool_calls
            )


def test_trimming_never_sends_an_answered_question_without_its_answer() -> None:
    """Issue 15 item 9, in the middleware: the input ends on an answered run too big for
    the budget; it is left out whole, never cut down to its question."""
    model = ScriptedChatModel(script=["fine"])
    agent = _conversation_agent(model, OffpromptMiddleware(TaskMemory(), max_tokens=120))
    question, answer = HumanMessage("old question " * 40), AIMessage("old answer " * 40)
    agent.invoke({"messages": [question, answer]}, thread("answered"))
    sent = model.calls[-1]
    assert [type(m) for m in sent] == [SystemMessage]
    assert all(question.content not in str(m.content) for m in sent)


def test_planning_builds_no_store_per_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19 item 2: the window is chosen by the core's select_window over the cached
    counts; no throwaway InMemoryStore + ConversationMemory per model call."""
    model = ScriptedChatModel(script=_turn_script(4))
    agent = _conversation_agent(model, OffpromptMiddleware(TaskMemory(), max_tokens=600))
    stores: list[InMemoryStore] = []
    plans: list[int] = []
    original_init = InMemoryStore.__init__

    def counting_init(self: InMemoryStore, *args: Any, **kwargs: Any) -> None:
        stores.append(self)
        original_init(self, *args, **kwargs)

    def counting_select(*args: Any, **kwargs: Any) -> Any:
        plans.append(1)
        return select_window(*args, **kwargs)

    monkeypatch.setattr(InMemoryStore, "__init__", counting_init)
    monkeypatch.setattr(middleware_module, "select_window", counting_select)
    for i in range(4):
        state = agent.invoke(
            {"messages": [HumanMessage(f"Turn {i}: " + "context " * 40)]}, thread("t")
        )
    assert len(model.calls) == 8 and len(plans) == 8  # one plan per model call
    assert stores == []
    assert len(model.calls[-1]) < 1 + len(state["messages"]) - 1  # and it did trim


def test_a_pending_run_over_budget_is_sent_whole_with_its_tool_results(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The middleware's overflow rule (unlike ConversationMemory.window, which keeps only
    the question): the agent keeps the tool results it is working from."""
    model = ScriptedChatModel(script=[tool_call("fetch", {"size": 300}), "done"])
    middleware = OffpromptMiddleware(TaskMemory(), min_tokens=100_000, max_tokens=200)
    agent = _conversation_agent(model, middleware)
    with caplog.at_level(logging.WARNING, logger="offprompt.langchain"):
        state = agent.invoke({"messages": [HumanMessage("fetch it")]}, thread("big"))
    sent = model.calls[-1]
    assert [type(m) for m in sent] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert sent[3].content == tool_messages(state)[0].content == "small result " * 300
    assert "sent whole (over budget)" in caplog.text


def _summarizer() -> LangChainSummarizer:
    """The real LangChain summarizer bridge over a scripted model that restates the transcript."""

    def restate(messages: list[BaseMessage]) -> str:
        lines = messages[-1].text.splitlines()
        return " ".join(line for line in lines if line and not line.endswith(":"))

    return LangChainSummarizer(ScriptedChatModel(script=[restate] * 20), max_tokens=400)


def test_summary_replaces_dropped_runs() -> None:
    model = ScriptedChatModel(script=_turn_script(4, detail=0))
    middleware = OffpromptMiddleware(
        TaskMemory(), max_tokens=4000, summarizer=_summarizer(), keep_runs=1
    )
    agent = _conversation_agent(model, middleware)
    agent.invoke({"messages": [HumanMessage("The launch code is 7431. Remember it.")]}, thread("s"))
    for i in range(1, 4):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: status?")]}, thread("s"))
    sent = model.calls[-1]
    assert isinstance(sent[0], SystemMessage)
    assert sent[0].text.startswith(SYSTEM) and "7431" in sent[0].text
    assert sent[1].text == "Turn 3: status?"  # only the newest run stays verbatim
    assert not any("launch code" in m.text for m in sent[1:])


@pytest.mark.parametrize("record", ["turn", "step"])
def test_thread_is_recorded_once_durably_and_readable_by_llamaindex(
    tmp_path: Path, record: str
) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    seen_mid_run: list[int] = []

    def peek(messages: list[BaseMessage]) -> str:
        seen_mid_run.append(store.count("thread-A"))
        return "final"

    model = ScriptedChatModel(
        script=[tool_call("fetch", {"size": 0}), peek, tool_call("fetch", {"size": 1}), "bye"]
    )
    middleware = OffpromptMiddleware(
        TaskMemory(),
        min_tokens=100,
        memory=ConversationMemory(store, "fallback"),
        record=record,  # type: ignore[arg-type]
    )
    agent = create_agent(model, [fetch], middleware=[middleware], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("first")]}, thread("thread-A"))
    # Per step, the tool result is recorded before the next model call; per turn, only at the end.
    assert seen_mid_run == ([3] if record == "step" else [0])
    # A restarted process: a fresh middleware on the same file continues without duplicates.
    again = OffpromptMiddleware(
        TaskMemory(), memory=ConversationMemory(SQLiteStore(tmp_path / "memory.db")), record=record
    )  # type: ignore[arg-type]
    agent = create_agent(model, [fetch], middleware=[again], checkpointer=agent.checkpointer)
    state = agent.invoke({"messages": [HumanMessage("second")]}, thread("thread-A"))
    recorded = ConversationMemory(store, "thread-A").messages()
    assert [m.id for m in recorded] == [m.id for m in state["messages"]]
    assert [m.role for m in recorded] == ["user", "assistant", "tool", "assistant"] * 2
    assert BIG not in recorded[2].text and "artifact_namespace" in recorded[2].text
    assert store.count("fallback") == 0

    from offprompt_llamaindex import OffpromptMemory

    llama = OffpromptMemory.from_defaults(session_id="thread-A", store=store).get_all()
    assert [m.content for m in llama if m.content] == [m.text for m in recorded if m.text]


async def test_async_agent_offloads_trims_and_records() -> None:
    store = InMemoryStore()
    memory = TaskMemory()
    model = ScriptedChatModel(script=[*_turn_script(3), tool_call("fetch", {"size": 0}), "ok"])
    middleware = OffpromptMiddleware(
        memory, min_tokens=100, max_tokens=300, memory=ConversationMemory(store), record="step"
    )
    agent = _conversation_agent(model, middleware)
    for i in range(4):
        state = await agent.ainvoke(
            {"messages": [HumanMessage(f"Turn {i}: " + "context " * 40)]}, thread("a")
        )
    last_tool = tool_messages(state)[-1]
    assert last_tool.artifact["offprompt"] == "stored"
    assert (await memory.aload_artifacts(last_tool.artifact["artifact_namespace"])).value[
        0
    ].value == BIG
    untrimmed = 1 + len(state["messages"]) - 1  # system prompt + all but the final answer
    assert len(model.calls[-1]) < untrimmed
    assert isinstance(model.calls[-1][1], HumanMessage)
    assert store.count("a") == len(state["messages"])


async def test_async_summary_mode() -> None:
    model = ScriptedChatModel(script=_turn_script(3, detail=0))
    middleware = OffpromptMiddleware(
        TaskMemory(), max_tokens=4000, summarizer=_summarizer(), keep_runs=1
    )
    agent = _conversation_agent(model, middleware)
    await agent.ainvoke({"messages": [HumanMessage("My badge number is 5521.")]}, thread("as"))
    for i in range(1, 3):
        await agent.ainvoke({"messages": [HumanMessage(f"Turn {i}?")]}, thread("as"))
    assert "5521" in model.calls[-1][0].text
    assert model.calls[-1][1].text == "Turn 2?"


def test_bad_arguments() -> None:
    memory = TaskMemory()
    with pytest.raises(ValidationError, match="TaskMemory"):
        OffpromptMiddleware(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="summarizer needs max_tokens"):
        OffpromptMiddleware(memory, summarizer=ExtractiveSummarizer())
    with pytest.raises(ValidationError, match="record"):
        OffpromptMiddleware(memory, record="always")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_tokens"):
        OffpromptMiddleware(memory, max_tokens=0)
    with pytest.raises(ValidationError, match="min_tokens"):
        OffpromptMiddleware(memory, min_tokens=-5)
    with pytest.raises(ValidationError, match="ConversationMemory"):
        OffpromptMiddleware(memory, memory=InMemoryStore())  # type: ignore[arg-type]
    assert OffpromptMiddleware(memory, memory_tools=False).tools == []
