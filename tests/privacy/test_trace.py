"""The trace of context assembly: what was written, evicted, summarized, offloaded,
queried and windowed, with what was dropped and why."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory, SummaryConversationMemory
from offprompt.errors import OffpromptError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.trace import (
    CallbackTracer,
    InMemoryTracer,
    OpenTelemetryTracer,
    TraceEvent,
    read_trace,
)


def _runs(memory: ConversationMemory, n: int) -> None:
    for i in range(n):
        memory.add_messages([Message.user(f"q{i} " + "x " * 30), Message.assistant(f"a{i}")])


def test_window_events_say_what_was_dropped_and_why(caplog: pytest.LogCaptureFixture) -> None:
    tracer = InMemoryTracer()
    memory = ConversationMemory(session_id="s", tracer=tracer, scope=Scope(tenant="t"))
    memory.add_message(Message.system("rules"))
    _runs(memory, 10)
    writes = tracer.events("write")
    assert (
        len(writes) == 11
        and writes[1].tokens > 0
        and writes[1].scope == {"tenant": "t", "session": "s"}
    )
    with caplog.at_level(logging.WARNING, logger="offprompt.conversation"):
        window = memory.window(120)
        memory.window(120)
    (event, _) = tracer.events("window")
    assert window.dropped > 0
    assert event.dropped == [
        {"count": window.dropped, "before_seq": event.included[1]["seq"], "reason": "budget"}
    ]
    assert [i["role"] for i in event.included] == [m.role for m in window]
    assert event.detail["budget"] == 120 and event.tokens == window.tokens
    warnings = [r for r in caplog.records if "left out" in r.getMessage()]
    assert len(warnings) == 1  # once per session


def test_evictions_and_summaries_are_traced() -> None:
    tracer = InMemoryTracer()
    memory = ConversationMemory(max_runs=2, tracer=tracer)
    _runs(memory, 4)
    evicts = tracer.events("evict")
    assert evicts and all(e.dropped[0]["reason"] == "max_runs" for e in evicts)
    summary_tracer = InMemoryTracer()
    summary = SummaryConversationMemory(offset=1, tracer=summary_tracer)
    _runs(summary, 3)
    assert summary_tracer.events("summary")[-1].tokens > 0
    summary.view()
    window = summary_tracer.events("window")[-1]
    assert window.dropped[0]["reason"] == "summarized"


def test_task_memory_offload_and_query_events_carry_scores() -> None:
    seen: list[TraceEvent] = []
    memory = TaskMemory(tracer=CallbackTracer(seen.append), scope=Scope(tenant="t", user="u"))
    memory.store_artifact("logs", TextArtifact(value="disk full on node 7. " * 40), tool="ssh")
    memory.query("logs", "which node is full?", top_n=2)
    kinds = [e.kind for e in seen]
    assert kinds == ["offload", "query"]
    offload, query = seen
    assert offload.detail["namespace"] == "logs" and offload.tokens > 0
    assert offload.scope == {"tenant": "t", "user": "u"}
    assert query.scores and all(isinstance(v, float) for v in query.scores.values())
    memory.vector_store.close()


def test_a_failing_tracer_never_breaks_the_memory(caplog: pytest.LogCaptureFixture) -> None:
    def boom(event: TraceEvent) -> None:
        raise RuntimeError("tracer down")

    memory = ConversationMemory(tracer=CallbackTracer(boom))
    with caplog.at_level(logging.ERROR, logger="offprompt.trace"):
        memory.add_message(Message.user("still stored"))
    assert memory.messages()[0].text == "still stored"
    assert any("tracer" in r.getMessage() for r in caplog.records)


def test_persisted_trace_is_bounded_and_shown_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from offprompt.cli import main

    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "memory.db")
    memory = ConversationMemory(store, "s", persist_trace=True, scope=Scope(tenant="t"))
    _runs(memory, 230)  # 230 write events: more than the 200 kept
    memory.window(100)
    events = read_trace(store, "s", scope=Scope(tenant="t"))
    assert len(events) == 200 and events[-1].kind == "window"
    store.close()
    assert main(["--home", str(home), "show", "s", "--tenant", "t", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "200 events" in out and "window:" in out and "reason': 'budget'" in out


def test_events_validate_and_round_trip() -> None:
    with pytest.raises(ValidationError):
        TraceEvent("teleport")
    event = TraceEvent("query", scores={"a": 0.5}, detail={"namespace": "n"})
    assert TraceEvent.from_dict(event.to_dict()) == event
    with pytest.raises(ValidationError):
        TraceEvent.from_dict({"nokind": 1})
    with pytest.raises(ValidationError):
        InMemoryTracer(maxlen=0)


def test_opentelemetry_tracer_needs_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if opentelemetry-api were not installed: importing it fails.
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(OffpromptError, match=r"pip install 'offprompt\[otel\]'"):
        OpenTelemetryTracer()
