"""offprompt's trace reaches LangChain callbacks: real create_agent runs with the
middleware, real BaseCallbackHandler / AsyncCallbackHandler subclasses; only the chat
model is scripted (offprompt_langchain.testing.ScriptedChatModel)."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from offprompt_langchain import OffpromptChatMessageHistory, OffpromptMiddleware
from offprompt_langchain.testing import ScriptedChatModel, tool_call
from offprompt_langchain.tracing import OffpromptCallbackTracer, event_name

from offprompt.conversation import ConversationMemory
from offprompt.errors import ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment
from offprompt.messages import Message
from offprompt.stores import InMemoryStore
from offprompt.task_memory import TaskMemory
from offprompt.trace import TraceEvent

BIG = "Telemetry line with node names and numbers 12345. " * 2000


@tool
def fetch(size: int) -> str:
    """Fetch `size` lines of telemetry (0: all of it)."""
    return BIG if size == 0 else "small result " * size


class Recorder(BaseCallbackHandler):
    """Keeps every custom event it receives."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], UUID]] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data, run_id))

    def names(self) -> list[str]:
        return [name for name, _, _ in self.events]


def test_agent_run_delivers_window_and_offload_events_to_the_runs_callbacks() -> None:
    tracer = OffpromptCallbackTracer()
    memory = TaskMemory(tracer=tracer)
    model = ScriptedChatModel(script=[tool_call("fetch", {"size": 0}), "done"])
    middleware = OffpromptMiddleware(memory, min_tokens=100, max_tokens=3000, tracer=tracer)
    agent = create_agent(model, [fetch], middleware=[middleware])
    handler = Recorder()

    state = agent.invoke({"messages": [HumanMessage("go")]}, {"callbacks": [handler]})

    assert state["messages"][-1].content == "done"
    names = handler.names()
    assert names.count("offprompt.window") == 2  # one per model call
    assert names.count("offprompt.offload") == 1
    offload = next(data for name, data, _ in handler.events if name == "offprompt.offload")
    namespace = state["messages"][2].artifact["artifact_namespace"]
    assert offload["detail"]["namespace"] == namespace and offload["tokens"] > 1000
    window = next(data for name, data, _ in handler.events if name == "offprompt.window")
    assert TraceEvent.from_dict(window).kind == "window" and window["detail"]["budget"] == 3000
    assert tracer.dispatched == len(handler.events) and tracer.delivered == 0


def test_a_run_without_the_handler_does_not_reach_it() -> None:
    handler = Recorder()
    tracer = OffpromptCallbackTracer()
    model = ScriptedChatModel(script=["hi"])
    agent = create_agent(
        model, [], middleware=[OffpromptMiddleware(TaskMemory(), max_tokens=500, tracer=tracer)]
    )
    agent.invoke({"messages": [HumanMessage("go")]})
    assert handler.events == [] and tracer.dispatched == 1


async def test_async_agent_run_reaches_an_async_handler() -> None:
    class AsyncRecorder(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        async def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            self.names.append(name)

    tracer = OffpromptCallbackTracer()
    memory = TaskMemory(tracer=tracer)
    model = ScriptedChatModel(script=[tool_call("fetch", {"size": 0}), "done"])
    agent = create_agent(
        model,
        [fetch],
        middleware=[OffpromptMiddleware(memory, min_tokens=100, max_tokens=3000, tracer=tracer)],
    )
    handler = AsyncRecorder()
    await agent.ainvoke({"messages": [HumanMessage("go")]}, {"callbacks": [handler]})
    assert handler.names.count("offprompt.window") == 2
    assert handler.names.count("offprompt.offload") == 1


def test_outside_a_run_events_go_to_the_given_handlers() -> None:
    handler = Recorder()
    tracer = OffpromptCallbackTracer(handlers=[handler])
    history = OffpromptChatMessageHistory(
        "s1", store=InMemoryStore(), max_tokens=100, tracer=tracer
    )
    history.add_messages([HumanMessage("hello"), HumanMessage("again")])
    assert history.messages  # the budgeted view: a window event
    assert handler.names() == ["offprompt.write", "offprompt.window"]
    assert tracer.delivered == 2 and tracer.dispatched == 0
    _name, data, _ = handler.events[0]
    assert data["session_id"] == "s1" and [i["role"] for i in data["included"]] == ["user", "user"]


def test_inside_a_runnable_history_and_longterm_events_reach_the_run() -> None:
    handler = Recorder()
    tracer = OffpromptCallbackTracer()
    history = OffpromptChatMessageHistory("s2", store=InMemoryStore(), tracer=tracer)
    ltm = LongTermMemory(tracer=tracer)

    def step(text: str, config: RunnableConfig) -> int:
        history.add_messages([HumanMessage(text)])
        ltm.write(MemoryFragment(observation=text))
        return len(ltm.read(text, k=1))

    assert RunnableLambda(step).invoke("the user likes tea", {"callbacks": [handler]}) == 1
    ltm.close()
    assert handler.names() == ["offprompt.write", "offprompt.write", "offprompt.longterm_read"]
    read = handler.events[-1][1]
    assert read["included"][0]["similarity"] > 0 and "recency" in read["included"][0]


async def test_aemit_and_async_handlers_outside_a_run() -> None:
    class AsyncRecorder(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        async def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            self.names.append(name)

    handler = AsyncRecorder()
    tracer = OffpromptCallbackTracer(handlers=[handler])
    await tracer.aemit(TraceEvent("query", detail={"namespace": "n"}))
    assert handler.names == ["offprompt.query"]
    memory = ConversationMemory(tracer=tracer)
    memory.add_messages([Message.user("hi")])  # a sync emit with an async handler
    assert handler.names == ["offprompt.query"]  # scheduled on the running loop, not yet run
    for _ in range(3):
        await asyncio.sleep(0)
    assert handler.names == ["offprompt.query", "offprompt.write"]


def test_a_failing_handler_never_breaks_the_memory() -> None:
    class Broken(BaseCallbackHandler):
        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            raise RuntimeError("handler down")

    memory = ConversationMemory(tracer=OffpromptCallbackTracer(handlers=[Broken()]))
    memory.add_messages([Message.user("hi")])
    assert [m.text for m in memory.messages()] == ["hi"]


def test_bad_arguments() -> None:
    with pytest.raises(ValidationError, match="callback handlers"):
        OffpromptCallbackTracer(handlers=[print])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="tracer="):
        OffpromptChatMessageHistory(
            "s", memory=ConversationMemory(InMemoryStore(), "s"), tracer=OffpromptCallbackTracer()
        )
    assert event_name(TraceEvent("longterm_read")) == "offprompt.longterm_read"


async def test_a_failing_handler_never_breaks_aemit_either() -> None:
    class Broken(AsyncCallbackHandler):
        async def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            raise RuntimeError("handler down")

    class Strict(BaseCallbackHandler):
        raise_error = True

        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            raise RuntimeError("strict handler down")

    tracer = OffpromptCallbackTracer(handlers=[Broken()])
    await tracer.aemit(TraceEvent("query", detail={"namespace": "n"}))  # logged, not raised
    assert tracer.delivered == 0
    with pytest.raises(RuntimeError, match="strict handler down"):  # raise_error is honoured
        await OffpromptCallbackTracer(handlers=[Strict()]).aemit(TraceEvent("query"))


def test_the_old_name_still_works_with_a_deprecation_warning() -> None:
    """``LangChainTracer`` shadowed ``langchain_core.tracers.LangChainTracer``: renamed in
    0.1.x, the old name is an alias for one release that says what to use instead."""
    import langchain_core.tracers
    import offprompt_langchain.tracing as tracing

    with pytest.warns(DeprecationWarning, match="renamed OffpromptCallbackTracer"):
        from offprompt_langchain.tracing import LangChainTracer  # type: ignore[attr-defined]
    assert LangChainTracer is OffpromptCallbackTracer
    assert LangChainTracer is not langchain_core.tracers.LangChainTracer
    assert "LangChainTracer" not in tracing.__all__
    with pytest.raises(AttributeError, match="no_such_tracer"):
        tracing.no_such_tracer  # noqa: B018
