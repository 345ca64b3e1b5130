"""LongTermMemory on the real embedded Qdrant engine: time-weighted recall with an injected
clock, access-time updates, forgotten/merged flags, hard scope isolation, reflection,
persistence across reopen, bad input and concurrency."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from offprompt.errors import NamespaceError, NotFoundError, ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import HashingEmbedder, QdrantVectorStore

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    """A settable clock injected into the memory."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ltm(clock: Clock) -> Iterator[LongTermMemory]:
    memory = LongTermMemory(clock=clock, decay_rate=0.1)
    yield memory
    memory.close()


def _f(text: str, *, at: datetime = T0, **kw: object) -> MemoryFragment:
    return MemoryFragment.build(text, now=at, **kw)  # type: ignore[arg-type]


def test_score_is_exactly_similarity_plus_decay_plus_importance(
    ltm: LongTermMemory, clock: Clock
) -> None:
    ltm.write(_f("the user prefers green tea", importance=0.25))
    clock.advance(hours=5)
    (hit,) = ltm.search("green tea", k=1, touch=False)
    assert hit.recency == pytest.approx(0.9**5)
    assert hit.importance == 0.25
    assert hit.score == pytest.approx(hit.similarity + 0.9**5 + 0.25)
    assert 0 < hit.similarity <= 1


def test_recency_breaks_ties_and_read_updates_access_time(
    ltm: LongTermMemory, clock: Clock
) -> None:
    old = _f("meeting notes about the budget", importance=0.5)
    new = _f("meeting notes about the budget", importance=0.5, scope=Scope(session="s2"))
    ltm.write_batch([old, new])
    clock.advance(hours=10)
    (first,) = ltm.read("budget meeting", k=1, scope=Scope(session="s2"))
    assert first.id == new.id and first.last_accessed_at == clock.now
    assert ltm.get(new.id).last_accessed_at == clock.now  # persisted
    assert ltm.get(old.id).last_accessed_at == T0  # untouched
    clock.advance(hours=1)
    top = ltm.search("budget meeting", k=2, touch=False)
    assert [h.fragment.id for h in top] == [new.id, old.id]
    assert top[0].recency == pytest.approx(0.9**1) and top[1].recency == pytest.approx(0.9**11)


def test_importance_outweighs_small_similarity_gap(ltm: LongTermMemory) -> None:
    trivial = _f("user mentioned coffee", importance=0.0)
    vital = _f("user is allergic to coffee beans", importance=1.0)
    ltm.write_batch([trivial, vital])
    assert ltm.read("coffee", k=1)[0].id == vital.id


def test_importance_is_scored_when_missing(ltm: LongTermMemory) -> None:
    stored = ltm.write(_f("I always book aisle seats on long flights"))
    assert stored.importance is not None and stored.importance > 0.3


def test_forgotten_and_merged_are_skipped(ltm: LongTermMemory) -> None:
    a, b, c = (_f(f"project deadline is friday {i}") for i in range(3))
    ltm.write_batch([a, b, c])
    ltm.mark_forgotten([a.id])
    ltm.mark_merged([b.id])
    assert [f.id for f in ltm.read("project deadline", k=5)] == [c.id]
    assert ltm.count() == 1
    assert ltm.count(include_inactive=True) == 3
    assert len(ltm.fragments(include_inactive=True)) == 3
    with pytest.raises(ValidationError):
        ltm.mark_forgotten(a.id)
    with pytest.raises(ValidationError, match="mark_forgotten"):
        ltm.forget([a.id])  # type: ignore[arg-type]


def test_scopes_never_leak_identical_fragments(ltm: LongTermMemory) -> None:
    alice = ltm.write(_f("my password hint is the cat's name", scope=Scope(user="alice")))
    bob = ltm.write(_f("my password hint is the cat's name", scope=Scope(user="bob")))
    got_a = ltm.read("password hint", k=10, scope=Scope(user="alice"))
    got_b = ltm.read("password hint", k=10, scope=Scope(user="bob"))
    assert [f.id for f in got_a] == [alice.id]
    assert [f.id for f in got_b] == [bob.id]
    assert ltm.read("password hint", scope=Scope(user="carol")) == []


def test_scope_filter_runs_inside_qdrant_not_after(ltm: LongTermMemory) -> None:
    # 60 of bob's fragments match the query better than alice's only one. A filter
    # applied after fetching the candidate pool (20) would find nothing for alice.
    ltm.write_batch([_f("quarterly revenue report", scope=Scope(user="bob")) for _ in range(60)])
    mine = ltm.write(_f("notes that mention revenue once", scope=Scope(user="alice")))
    assert [f.id for f in ltm.read("quarterly revenue report", k=1, scope=Scope(user="alice"))] == [
        mine.id
    ]


def test_default_scope_of_the_memory_applies(clock: Clock) -> None:
    store = QdrantVectorStore()
    shared_a = LongTermMemory(store, clock=clock, scope=Scope(user="a"))
    shared_b = LongTermMemory(store, clock=clock, scope=Scope(user="b"))
    shared_a.write(_f("likes sushi"))
    assert shared_a.read("sushi")[0].scope == Scope(user="a")
    assert shared_b.read("sushi") == []
    assert shared_b.clear() == 0 and shared_a.count() == 1
    with pytest.raises(NotFoundError):
        shared_b.get(shared_a.fragments()[0].id)
    store.close()


def test_reflect_stores_insights_per_scope(ltm: LongTermMemory, clock: Clock) -> None:
    for user in ("u1", "u2"):
        ltm.write_batch(
            [
                _f(f"{user} drinks green tea every morning.", scope=Scope(user=user)),
                _f(f"{user} ordered green tea at the cafe.", scope=Scope(user=user)),
            ]
        )
    clock.advance(hours=1)
    insights = ltm.reflect()
    assert insights and all(i.is_insight for i in insights)
    for insight in insights:
        user = insight.scope.user
        assert user in ("u1", "u2") and user in insight.observation
        assert insight.created_at == clock.now
    only_u1 = ltm.read("green tea", k=10, scope=Scope(user="u1"), include_insights=False)
    assert only_u1 and not any(f.is_insight for f in only_u1)
    assert ltm.reflect([]) == []


def test_clear_by_scope(ltm: LongTermMemory) -> None:
    ltm.write_batch([_f("a", scope=Scope(user="x")), _f("b", scope=Scope(user="y"))])
    assert ltm.clear(scope=Scope(user="x")) == 1
    assert ltm.count() == 1
    assert ltm.clear() == 1 and ltm.count() == 0


def test_precomputed_embedding_is_used(ltm: LongTermMemory) -> None:
    vector = HashingEmbedder().embed_query("zebra crossing")
    stored = ltm.write(_f("text that shares no word with the query", embedding=vector))
    assert ltm.read("zebra crossing", k=1)[0].id == stored.id


def test_bad_input_is_refused_and_nothing_is_written(ltm: LongTermMemory) -> None:
    good = _f("fine")
    with pytest.raises(ValidationError, match="dimensional"):
        ltm.write_batch([good, _f("bad", embedding=[0.5, 0.5])])
    assert ltm.count() == 0
    with pytest.raises(ValidationError):
        ltm.write_batch([good, "not a fragment"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        ltm.write_batch(good)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ltm.read("   ")
    with pytest.raises(ValidationError):
        ltm.read("x", k=0)
    with pytest.raises(ValidationError):
        ltm.read("x", scope={"user": "a"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        LongTermMemory(decay_rate=1.0)
    assert ltm.count() == 0


def test_unicode_and_large_fragments(ltm: LongTermMemory) -> None:
    text = "Benutzer möchte Ünïcødé-Antworten 🧠 " + "lorem ipsum " * 20_000
    stored = ltm.write(_f(text, scope=Scope(user="ü-ß 🧠 x")))
    got = ltm.read("Ünïcødé Antworten", k=1, scope=Scope(user="ü-ß 🧠 x"))
    assert got[0].id == stored.id and got[0].observation == text
    # path-like scope values are refused before anything is written
    with pytest.raises(NamespaceError, match="scope value"):
        ltm.write(_f(text, scope=Scope(user="ü-ß/..\\x")))
    assert ltm.count() == 1


def test_persists_across_reopen(tmp_path: Path, clock: Clock) -> None:
    store = QdrantVectorStore(path=str(tmp_path / "q"))
    first = LongTermMemory(store, clock=clock)
    kept = first.write(_f("the user's dog is called Rex", scope=Scope(user="u")))
    first.read("dog name", scope=Scope(user="u"))
    store.close()
    clock.advance(hours=3)
    again = QdrantVectorStore(path=str(tmp_path / "q"))
    second = LongTermMemory(again, clock=clock)
    (hit,) = second.search("what is the dog called", k=1, scope=Scope(user="u"), touch=False)
    assert hit.fragment.id == kept.id and hit.fragment.created_at == T0
    assert hit.recency == pytest.approx(0.99**3)
    again.close()


def test_concurrent_writers(ltm: LongTermMemory) -> None:
    def work(n: int) -> None:
        ltm.write_batch([_f(f"thread {n} fact {i}", scope=Scope(user=f"t{n}")) for i in range(25)])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ltm.count() == 100
    assert ltm.count(scope=Scope(user="t2")) == 25


async def test_async_twins(ltm: LongTermMemory, clock: Clock) -> None:
    await ltm.awrite_batch([_f("async fact about rockets", scope=Scope(agent="a1"))])
    stored = await ltm.awrite(_f("another fact about rockets", scope=Scope(agent="a1")))
    clock.advance(hours=2)
    found = await ltm.aread("rockets", k=5, scope=Scope(agent="a1"))
    assert len(found) == 2 and all(f.last_accessed_at == clock.now for f in found)
    results = await asyncio.gather(*(ltm.asearch("rockets", k=1) for _ in range(5)))
    assert all(r[0].fragment.scope == Scope(agent="a1") for r in results)
    insights = await ltm.areflect(scope=Scope(agent="a1"))
    assert insights and insights[0].scope == Scope(agent="a1")
    await ltm.amark_forgotten([stored.id])
    assert stored.id not in [f.id for f in await ltm.aread("rockets", k=5)]
    assert await ltm.aclear(scope=Scope(agent="a1")) == 2 + len(insights)


@pytest.mark.parametrize("mode", ["hybrid", "sparse", "dense"])
def test_search_and_asearch_follow_one_plan(clock: Clock, mode: str) -> None:
    ltm = LongTermMemory(clock=clock)
    for i, text in enumerate(["alice likes green tea", "bob plays chess", "alice lives in Lyon"]):
        ltm.write(MemoryFragment.build(text, now=T0 + timedelta(minutes=i), scope=Scope(user="u")))
    sync = ltm.search("where does alice live", k=2, touch=False, mode=mode)  # type: ignore[arg-type]
    async_ = asyncio.run(ltm.asearch("where does alice live", k=2, touch=False, mode=mode))  # type: ignore[arg-type]
    assert sync == async_
    first, second = ltm.tracer.events("longterm_read")[-2:]  # type: ignore[attr-defined]
    assert (first.included, first.dropped, first.detail) == (
        second.included,
        second.dropped,
        second.detail,
    )
    ltm.close()
