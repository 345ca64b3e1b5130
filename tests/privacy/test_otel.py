"""OpenTelemetryTracer exports GenAI ``gen_ai.memory.client`` spans: real memories, the
OpenTelemetry SDK's in-memory exporter, content only when opted in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.forget import forget
from offprompt.longterm import LongTermMemory, MemoryFragment
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import InMemoryStore
from offprompt.task_memory import TaskMemory
from offprompt.trace import GENAI_OPERATIONS, TRACE_KINDS, OpenTelemetryTracer, TraceEvent

SECRET_QUERY = "where is the password of alice"


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, provider
    provider.shutdown()


def _spans(spans: InMemorySpanExporter, operation: str | None = None) -> list[Any]:
    found = spans.get_finished_spans()
    return [s for s in found if operation is None or s.name == operation]


def test_every_trace_kind_has_a_genai_operation() -> None:
    assert set(GENAI_OPERATIONS) == set(TRACE_KINDS)
    assert set(GENAI_OPERATIONS.values()) <= {
        "search_memory",
        "create_memory",
        "update_memory",
        "upsert_memory",
        "delete_memory",
        "create_memory_store",
        "delete_memory_store",
    }


def test_task_memory_store_query_and_delete_are_memory_spans(exporter: Any) -> None:
    spans, provider = exporter
    memory = TaskMemory(
        min_tokens=0,
        index="sync",
        tracer=OpenTelemetryTracer(tracer_provider=provider),
        scope=Scope(tenant="acme"),
    )
    # the log shares a word with the query (BM25 returns only passages that do)
    log = "\n".join(f"line {i}: disk /dev/sda{i % 3} ok for alice" for i in range(300))
    memory.process_output("shell", "run", TextArtifact(log, name="logs"))
    memory.query("logs", SECRET_QUERY, top_n=3)
    memory.delete("logs")
    memory.close()

    (stored,) = _spans(spans, "create_memory")
    assert stored.kind is SpanKind.CLIENT
    assert stored.instrumentation_scope.name == "offprompt"
    assert stored.attributes["gen_ai.operation.name"] == "create_memory"
    assert stored.attributes["gen_ai.memory.store.id"] == "task_memory"
    assert stored.attributes["gen_ai.memory.record.id"] == "logs"
    assert stored.attributes["gen_ai.memory.record.count"] == 1
    assert stored.attributes["offprompt.scope.tenant"] == "acme"
    assert stored.attributes["offprompt.tool"] == "shell"
    (searched,) = _spans(spans, "search_memory")
    assert searched.attributes["gen_ai.memory.record.id"] == "logs"
    assert searched.attributes["gen_ai.memory.record.count"] == 3
    (deleted,) = _spans(spans, "delete_memory")
    assert deleted.attributes["gen_ai.memory.record.id"] == "logs"
    assert deleted.attributes["gen_ai.memory.record.count"] == 1
    # Opt-in attributes are absent by default, and the query text is nowhere.
    for span in _spans(spans):
        assert "gen_ai.memory.query.text" not in span.attributes
        assert "gen_ai.memory.records" not in span.attributes
        assert not any(SECRET_QUERY in str(v) for v in span.attributes.values())


def test_query_text_and_records_only_when_opted_in(exporter: Any) -> None:
    spans, provider = exporter
    memory = TaskMemory(
        min_tokens=0,
        index="sync",
        tracer=OpenTelemetryTracer(tracer_provider=provider, capture_content=True),
    )
    memory.process_output("t", "a", TextArtifact("alpha beta alice\n" * 200, name="ns"))
    memory.query("ns", SECRET_QUERY, top_n=2)
    memory.close()
    (searched,) = _spans(spans, "search_memory")
    assert searched.attributes["gen_ai.memory.query.text"] == SECRET_QUERY
    assert '"chunk_index"' in searched.attributes["gen_ai.memory.records"]


def test_conversation_and_long_term_memory_spans(exporter: Any) -> None:
    spans, provider = exporter
    tracer = OpenTelemetryTracer(tracer_provider=provider)
    conversation = ConversationMemory(InMemoryStore(), session_id="thread-7", tracer=tracer)
    conversation.add_messages([Message.user("hi"), Message.assistant("hello")])
    conversation.window(1000)
    conversation.clear()
    writes = [
        s
        for s in _spans(spans, "create_memory")
        if s.attributes["gen_ai.memory.store.id"] == "conversation"
    ]
    assert writes and writes[0].attributes["gen_ai.conversation.id"] == "thread-7"
    assert writes[0].attributes["gen_ai.memory.record.count"] == 2
    (window,) = _spans(spans, "search_memory")
    assert window.attributes["gen_ai.memory.record.count"] == 2
    (cleared,) = _spans(spans, "delete_memory")
    assert cleared.attributes["gen_ai.memory.record.count"] == 2
    assert cleared.attributes["gen_ai.conversation.id"] == "thread-7"

    spans.clear()
    ltm = LongTermMemory(tracer=tracer)
    ltm.write(MemoryFragment(observation="Alice likes green tea", importance=0.5))
    ltm.read(SECRET_QUERY, k=1)
    (written,) = _spans(spans, "create_memory")
    assert written.attributes["gen_ai.memory.store.id"].startswith("longterm:")
    (read,) = _spans(spans, "search_memory")
    assert read.attributes["gen_ai.memory.record.count"] == 1
    assert not any(SECRET_QUERY in str(v) for v in read.attributes.values())


def test_forget_is_a_delete_memory_span_over_the_whole_scope(exporter: Any) -> None:
    spans, provider = exporter
    store = InMemoryStore()
    store.append("s", [Message.user("hi")], [1], scope=Scope(user="u1"))
    forget(Scope(user="u1"), stores=[store], tracer=OpenTelemetryTracer(tracer_provider=provider))
    (span,) = _spans(spans, "delete_memory")
    assert "gen_ai.memory.record.id" not in span.attributes  # every record of the scope
    assert span.attributes["gen_ai.memory.record.count"] == 1
    assert span.attributes["offprompt.scope.user"] == "u1"
    assert span.attributes["offprompt.complete"] is True


def test_a_failed_index_is_an_error_span_without_the_error_text(exporter: Any) -> None:
    spans, provider = exporter
    event = TraceEvent(
        "offload", detail={"namespace": "ns", "stage": "index", "error": "secret value 42 broke it"}
    )
    OpenTelemetryTracer(tracer_provider=provider).emit(event)
    (span,) = _spans(spans)
    assert span.name == "update_memory"
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "index_failed"
    assert not any("secret value" in str(v) for v in span.attributes.values())
