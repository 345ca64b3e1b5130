"""Retention: writing 10x the limit leaves the stores bounded; expired data goes."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.retention import RetentionPolicy, prune
from offprompt.scope import Scope
from offprompt.stores import BaseStore, SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore


def _run(i: int) -> list[Message]:
    return [Message.user(f"question {i}"), Message.assistant(f"answer {i} " + "word " * 20)]


def test_max_count_on_write_keeps_the_store_bounded(store: BaseStore) -> None:
    memory = ConversationMemory(store, "s", retention=RetentionPolicy(max_count=5))
    memory.add_message(Message.system("rules"))
    for i in range(50):  # 10x the limit
        memory.add_messages(_run(i))
        assert store.count("s") <= 1 + 5 * 2
    assert [r.user.text for r in memory.runs() if r.user] == [
        f"question {i}" for i in range(45, 50)
    ]
    assert memory.messages()[0].text == "rules"  # the preamble stays
    evictions = [e for e in memory.tracer.events("evict")]  # type: ignore[attr-defined]
    assert evictions and evictions[-1].dropped[0]["reason"] == "max_count"


def test_max_tokens_bounds_stored_tokens(store: BaseStore) -> None:
    memory = ConversationMemory(store, "s", retention=RetentionPolicy(max_tokens=200))
    for i in range(60):
        memory.add_messages(_run(i))
    assert memory.token_count() <= 200
    assert len(memory.runs()) >= 1 and memory.runs()[-1].user.text == "question 59"  # type: ignore[union-attr]


def test_max_age_prunes_old_runs_and_whole_sessions(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    scope = Scope(tenant="t")
    for session in ("old", "fresh"):
        ConversationMemory(store, session, scope=scope).add_messages(_run(0) + _run(1))
    later = time.time() + 3600
    policy = RetentionPolicy(max_age=timedelta(minutes=30), on_write=False)
    report = prune(store, policy, scope=Scope(tenant="t"), now=later)
    assert report.sessions == 2 and report.messages == 8
    assert store.sessions(scope=scope) == []
    # A session with a recent run keeps it and loses the expired ones.
    memory = ConversationMemory(store, "mixed", scope=scope)
    memory.add_messages(_run(0))
    time.sleep(0.002)  # distinct append times, not a timed assertion
    memory.add_messages(_run(1))
    times = [e.appended_at for e in store.read_index("mixed", scope=scope)]
    assert all(t is not None for t in times) and times[0] < times[2]  # type: ignore[operator]
    midway = (times[1] + times[2]) / 2  # type: ignore[operator]
    assert memory.prune(RetentionPolicy(max_age=100), now=times[0] + 50) == 0  # type: ignore[operator]
    assert memory.prune(RetentionPolicy(max_age=100), now=midway + 100) == 2
    assert [r.user.text for r in memory.runs() if r.user] == ["question 1"]
    store.close()


def test_policy_validation() -> None:
    for bad in ({"max_age": 0}, {"max_age": -1}, {"max_count": 0}, {"max_tokens": True}):
        with pytest.raises(ValidationError):
            RetentionPolicy(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ConversationMemory().prune()
    with pytest.raises(ValidationError):
        ConversationMemory(retention="forever")  # type: ignore[arg-type]


def test_task_memory_namespaces_bounded_by_count() -> None:
    vectors = QdrantVectorStore()
    memory = TaskMemory(vector_store=vectors, retention=RetentionPolicy(max_count=3))
    for i in range(30):  # 10x the limit
        memory.store_artifact(f"ns-{i}", TextArtifact(value=f"output {i} " * 30))
        assert len(memory.namespaces()) <= 3
    assert memory.namespaces() == ["ns-27", "ns-28", "ns-29"]
    # Chunks are written in the background since issue 13: let the index finish.
    assert memory.wait_indexed(timeout=120)
    assert sorted(vectors.namespaces()) == ["ns-27", "ns-28", "ns-29"]  # chunks deleted too
    vectors.close()


def test_task_memory_namespaces_expire() -> None:
    vectors = QdrantVectorStore()
    keep = TaskMemory(vector_store=vectors)
    keep.store_artifact("report", TextArtifact(value="quarterly numbers " * 40))
    short = TaskMemory(
        vector_store=vectors, retention=RetentionPolicy(max_age=0.001, on_write=False)
    )
    time.sleep(0.01)
    assert short.namespaces() == []  # expired: hidden at once
    assert short.load_artifacts("report").value == []
    assert keep.namespaces() == ["report"]  # still stored until pruned
    assert short.prune().namespaces == 1
    assert keep.namespaces() == [] and vectors.namespaces() == []
    vectors.close()
