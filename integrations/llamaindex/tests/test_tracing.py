"""offprompt's trace reaches LlamaIndex instrumentation: a real BaseEventHandler on the
root dispatcher receives the events of a real SimpleChatEngine chat with OffpromptMemory
(only the LLM is scripted: offprompt_llamaindex.testing.ScriptedFunctionLLM)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from offprompt_llamaindex import OffpromptMemory
from offprompt_llamaindex.chat_store import OffpromptChatStore
from offprompt_llamaindex.testing import ScriptedFunctionLLM
from offprompt_llamaindex.tracing import LlamaIndexTracer, OffpromptTraceEvent

from offprompt.conversation import ConversationMemory
from offprompt.errors import ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment
from offprompt.stores import InMemoryStore
from offprompt.trace import TraceEvent


class Collector(BaseEventHandler):
    """Keeps the offprompt events (and the span they were emitted in)."""

    events: list[OffpromptTraceEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "Collector"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, OffpromptTraceEvent):
            self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


@pytest.fixture
def collector() -> Iterator[Collector]:
    root = get_dispatcher()
    handler = Collector(events=[])
    root.add_event_handler(handler)
    yield handler
    root.event_handlers = [h for h in root.event_handlers if h is not handler]


def test_simple_chat_engine_chat_reaches_the_root_dispatcher(collector: Collector) -> None:
    llm = ScriptedFunctionLLM(script=["Nice to meet you, Ada.", "You are Ada."])
    memory = OffpromptMemory.from_defaults(
        session_id="chat", store=InMemoryStore(), token_limit=2000, tracer=LlamaIndexTracer()
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be kind.")
    assert str(engine.chat("Hi, I'm Ada.")) == "Nice to meet you, Ada."
    assert str(engine.chat("Who am I?")) == "You are Ada."

    kinds = collector.kinds()
    assert kinds.count("window") == 2 and kinds.count("write") == 4
    window = next(e for e in collector.events if e.kind == "window")
    system_tokens = len(memory.tokenizer_fn("Be kind."))  # the engine reserves its prefix
    assert window.data["session_id"] == "chat"
    assert window.data["detail"]["budget"] == 2000 - system_tokens
    assert window.to_trace_event() == TraceEvent.from_dict(window.data)
    # emitted inside the engine's instrumented chat span
    assert all(e.span_id for e in collector.events)
    last_window = [e for e in collector.events if e.kind == "window"][-1]
    assert [i["role"] for i in last_window.data["included"]] == ["user", "assistant", "user"]


async def test_async_chat_and_aemit(collector: Collector) -> None:
    llm = ScriptedFunctionLLM(script=["Hello!"])
    memory = OffpromptMemory.from_defaults(
        session_id="a", store=InMemoryStore(), token_limit=500, tracer=LlamaIndexTracer()
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    assert str(await engine.achat("hi")) == "Hello!"
    assert "window" in collector.kinds() and "write" in collector.kinds()
    await LlamaIndexTracer().aemit(TraceEvent("query", detail={"namespace": "n"}))
    assert collector.kinds()[-1] == "query"


def test_chat_store_and_longterm_memory_emit_through_a_named_dispatcher(
    collector: Collector,
) -> None:
    own = Collector(events=[])
    dispatcher = get_dispatcher("offprompt_tests_tracing")
    dispatcher.add_event_handler(own)
    tracer = LlamaIndexTracer(dispatcher)
    store = OffpromptChatStore(InMemoryStore(), tracer=tracer)
    memory = Memory.from_defaults(session_id="u1", chat_store=store)
    memory.put(ChatMessage(role="user", content="remember me"))
    with LongTermMemory(tracer=tracer) as ltm:
        ltm.write(MemoryFragment(observation="Ada likes tea"))
        ltm.read("tea", k=1)
    assert own.kinds() == ["write", "write", "longterm_read"]
    assert collector.kinds() == own.kinds()  # propagated to the root too
    assert own.events[0].data["session_id"] == "u1"
    assert own.events[-1].data["included"][0]["similarity"] > 0


def test_bad_arguments() -> None:
    with pytest.raises(ValidationError, match="Dispatcher"):
        LlamaIndexTracer("root")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="tracer="):
        OffpromptMemory.from_defaults(
            memory=ConversationMemory(InMemoryStore(), "s"), tracer=LlamaIndexTracer()
        )
