"""Long-term memory joins scopes, forget, retention and the trace.

Real embedded Qdrant on both engines (qdrant-edge and qdrant-client local mode); the
forget tests scan the raw points of the collection (every point's payload, no filter)
for the subject's marker strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from offprompt.errors import NamespaceError, ValidationError
from offprompt.forget import Forgettable, aforget, forget
from offprompt.longterm import (
    HybridMemory,
    LongTermMemory,
    MemoryFragment,
    ShortTermMemory,
)
from offprompt.retention import RetentionPolicy
from offprompt.scope import Scope
from offprompt.trace import InMemoryTracer, TraceEvent
from offprompt.vectors import QdrantVectorStore

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
BOB = Scope(tenant="acme", user="bob", session="s1")
ALICE = Scope(tenant="acme", user="alice", session="s1")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantVectorStore]:
    made = QdrantVectorStore(engine=request.param)
    yield made
    made.close()


def raw_points(store: QdrantVectorStore) -> str:
    """Every point of the collection with its payload, unfiltered, as one string."""
    # private-ok: the engine's raw points, unfiltered, prove what is left
    backend = store._core.backend
    if store.engine == "client":
        client = backend.client  # type: ignore[union-attr]
        out, offset = [], None
        while True:
            points, offset = client.scroll(
                store.collection, limit=256, offset=offset, with_payload=True, with_vectors=False
            )
            out += [json.dumps(p.payload, ensure_ascii=False) for p in points]
            if offset is None:
                return "\n".join(out)
    page, _ = backend.scroll([], limit=1_000_000)
    return "\n".join(json.dumps(s.payload, ensure_ascii=False) for s in page)


def _fill(ltm: LongTermMemory, scope: Scope, marker: str) -> None:
    ltm.write_batch(
        [
            MemoryFragment.build(f"{marker} drinks green tea every morning", now=T0, scope=scope),
            MemoryFragment.build(f"{marker} ordered green tea at the cafe", now=T0, scope=scope),
            MemoryFragment.build(f"{marker} lives in Lyon", now=T0, scope=scope),
        ]
    )


def test_longterm_memory_is_forgettable() -> None:
    ltm = LongTermMemory()
    try:
        assert isinstance(ltm, Forgettable)
        assert isinstance(HybridMemory(long_term=ltm), Forgettable)
    finally:
        ltm.close()


def test_forget_user_leaves_no_trace_in_raw_qdrant_points(store: QdrantVectorStore) -> None:
    ltm = LongTermMemory(store, clock=Clock())
    _fill(ltm, BOB, "BOB-MARKER-7f3a")
    _fill(ltm, ALICE, "ALICE-MARKER-9c1d")
    # an insight about bob, and one bob-derived insight stored under another scope
    insights = ltm.reflect(scope=Scope(user="bob"))
    assert insights and all(i.scope == BOB for i in insights)
    stray = MemoryFragment.build(
        "BOB-MARKER-7f3a summary kept by the agent",
        now=T0,
        is_insight=True,
        scope=Scope(agent="planner"),
        meta={"insight_of": [f.id for f in ltm.fragments(scope=Scope(user="bob"))][:1]},
    )
    ltm.write(stray)
    ltm.mark_forgotten([ltm.fragments(scope=Scope(user="bob"))[0].id])  # hidden, still stored
    before = raw_points(store)
    assert "BOB-MARKER-7f3a" in before and "ALICE-MARKER-9c1d" in before

    report = forget(Scope(user="bob"), participants=[ltm])
    (result,) = report.results
    assert report.complete and result.deleted == {"items": 3 + len(insights) + 1}

    after = raw_points(store)
    assert "BOB-MARKER-7f3a" not in after
    assert after.count("ALICE-MARKER-9c1d") == 3
    assert ltm.count(scope=Scope(user="alice")) == 3
    assert ltm.read("green tea", k=10, scope=Scope(user="bob")) == []

    again = forget(Scope(user="bob"), participants=[ltm])
    assert again.results[0].already_gone and again.total == 0


async def test_aforget_of_a_tenant_and_hybrid_buffers(store: QdrantVectorStore) -> None:
    hybrid = HybridMemory(
        short_term=ShortTermMemory(buffer_size=10),
        long_term=LongTermMemory(store, clock=Clock()),
    )
    other = Scope(tenant="globex", user="bob")
    _fill(hybrid.long_term, BOB, "ACME-BOB-MARKER")
    _fill(hybrid.long_term, other, "GLOBEX-BOB-MARKER")
    for text in ("ACME-BOB-MARKER buffered note", "GLOBEX-BOB-MARKER buffered note"):
        scope = BOB if text.startswith("ACME") else other
        hybrid.write(
            MemoryFragment(observation=text, importance=0.9, scope=scope), to_long_term=False
        )
    assert len(hybrid.short_term) == 2

    report = await aforget(Scope(tenant="acme"), participants=[hybrid])
    assert report.results[0].deleted["items"] == 3 + 1  # 3 stored + 1 buffered
    assert [f.scope for f in hybrid.short_term.fragments] == [other]
    raw = raw_points(store)
    assert "ACME-BOB-MARKER" not in raw and raw.count("GLOBEX-BOB-MARKER") == 3
    # a read without a tenant matches bob in every tenant: only globex is left
    left = hybrid.read("green tea", k=10, scope=Scope(user="bob"))
    assert {f.scope.tenant for f in left} == {"globex"}


def test_forget_is_bounded_by_the_memorys_default_scope(store: QdrantVectorStore) -> None:
    writer = LongTermMemory(store, clock=Clock())
    _fill(writer, BOB, "ACME-BOB")
    _fill(writer, Scope(tenant="globex", user="bob"), "GLOBEX-BOB")
    acme_view = LongTermMemory(store, clock=Clock(), scope=Scope(tenant="acme"))
    assert acme_view.forget(Scope(user="bob")) == 3
    assert writer.count(scope=Scope(user="bob")) == 3


def test_forget_refuses_what_is_not_a_scope_and_empty_needs_all(
    store: QdrantVectorStore,
) -> None:
    ltm = LongTermMemory(store, clock=Clock())
    _fill(ltm, BOB, "BOB")
    with pytest.raises(ValidationError, match="mark_forgotten"):
        ltm.forget(["some-id"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="all=True"):
        forget(Scope(), participants=[ltm])
    assert ltm.count() == 3
    assert forget(Scope(), participants=[ltm], all=True).total == 3
    assert ltm.count(include_inactive=True) == 0


def test_unsafe_scope_values_are_refused_before_writing(store: QdrantVectorStore) -> None:
    ltm = LongTermMemory(store, clock=Clock())
    with pytest.raises(ValidationError, match="path separator"):
        ltm.write(MemoryFragment(observation="x", scope={"user": "../bob"}))  # type: ignore[arg-type]
    with pytest.raises(NamespaceError, match=r"'\.\.'"):
        ltm.read("x", scope=Scope(user="bob..x"))
    with pytest.raises(ValidationError, match="scope"):
        ltm.read("x", scope={"user": "bob"})  # type: ignore[arg-type]
    assert ltm.count(include_inactive=True) == 0


def test_tenants_never_see_each_other(store: QdrantVectorStore) -> None:
    ltm = LongTermMemory(store, clock=Clock())
    same = "the customer's account number is 4711"
    for tenant in ("acme", "globex"):
        ltm.write(MemoryFragment(observation=same, scope=Scope(tenant=tenant, user="u1")))
    for tenant in ("acme", "globex"):
        scope = Scope(tenant=tenant, user="u1")
        assert [f.scope for f in ltm.read("account number", k=10, scope=scope)] == [scope]
        assert [f.scope for f in ltm.fragments(scope=scope)] == [scope]
        assert ltm.count(scope=scope) == 1
        assert ltm.reflect(scope=scope)[0].scope == scope
    only_acme = LongTermMemory(store, scope=Scope(tenant="acme"))
    assert {f.scope.tenant for f in only_acme.fragments()} == {"acme"}


# ---------------------------------------------------------------------------- retention


def test_max_count_on_write_bounds_growth_at_ten_times_the_limit(
    store: QdrantVectorStore,
) -> None:
    clock = Clock()
    ltm = LongTermMemory(store, clock=clock, retention=RetentionPolicy(max_count=5))
    for i in range(50):
        clock.now = T0 + timedelta(minutes=i)
        ltm.write(MemoryFragment.build(f"bob fact number {i}", now=clock.now, scope=BOB))
        ltm.write(MemoryFragment.build(f"alice fact number {i}", now=clock.now, scope=ALICE))
    assert ltm.count(scope=BOB, include_inactive=True) == 5
    assert ltm.count(scope=ALICE, include_inactive=True) == 5
    assert [f.observation for f in ltm.fragments(scope=BOB)] == [
        f"bob fact number {i}" for i in range(45, 50)
    ]
    assert raw_points(store).count('"fragment_id"') == 10
    evicted = [e for e in ltm.tracer.events("evict")]  # type: ignore[attr-defined]
    assert sum(len(e.dropped) for e in evicted) == 90
    assert {d["reason"] for e in evicted for d in e.dropped} == {"max_count"}


def test_recalled_fragments_survive_max_count(store: QdrantVectorStore) -> None:
    clock = Clock()
    ltm = LongTermMemory(store, clock=clock)
    old = ltm.write(MemoryFragment.build("the wifi password is hunter2", now=T0, scope=BOB))
    for i in range(5):
        clock.now = T0 + timedelta(hours=i + 1)
        ltm.write(MemoryFragment.build(f"smalltalk {i}", now=clock.now, scope=BOB))
    clock.now = T0 + timedelta(hours=10)
    assert ltm.read("wifi password", k=1, scope=BOB)[0].id == old.id  # recalled: now fresh
    assert ltm.prune(RetentionPolicy(max_count=3), scope=Scope(user="bob")) == 3
    kept = [f.observation for f in ltm.fragments(scope=BOB)]
    assert kept == ["the wifi password is hunter2", "smalltalk 3", "smalltalk 4"]


def test_max_age_and_max_tokens(store: QdrantVectorStore) -> None:
    clock = Clock()
    ltm = LongTermMemory(
        store, clock=clock, retention=RetentionPolicy(max_age=3600, on_write=False)
    )
    for i in range(4):
        at = T0 + timedelta(minutes=30 * i)
        ltm.write(MemoryFragment.build(f"note {i} " + "word " * 9, now=at, scope=BOB))
    clock.now = T0 + timedelta(minutes=100)
    # last accessed at 0, 30, 60, 90 minutes: the first two are older than an hour
    assert ltm.prune() == 2
    assert [f.observation.split()[1] for f in ltm.fragments()] == ["2", "3"]
    assert ltm.prune() == 0  # idempotent
    per_fragment = ltm.tokenizer.count("note 3 " + "word " * 9)
    assert ltm.prune(RetentionPolicy(max_tokens=per_fragment + 1)) == 1
    assert [f.observation.split()[1] for f in ltm.fragments()] == ["3"]
    events = ltm.tracer.events("evict")  # type: ignore[attr-defined]
    assert [d["reason"] for e in events for d in e.dropped] == ["max_age", "max_age", "max_tokens"]


def test_prune_needs_a_policy() -> None:
    with LongTermMemory() as ltm:
        with pytest.raises(ValidationError, match="RetentionPolicy"):
            ltm.prune()
        with pytest.raises(ValidationError, match="RetentionPolicy"):
            LongTermMemory(retention={"max_count": 3})  # type: ignore[arg-type]


async def test_async_write_prunes_too(store: QdrantVectorStore) -> None:
    ltm = LongTermMemory(store, clock=Clock(), retention=RetentionPolicy(max_count=3))
    for i in range(30):
        await ltm.awrite(MemoryFragment.build(f"async fact {i}", now=T0 + timedelta(seconds=i)))
    assert await ltm.aprune() == 0
    assert ltm.count(include_inactive=True) == 3


# -------------------------------------------------------------------------------- trace


def test_read_emits_longterm_read_with_scores_and_drop_reasons(store: QdrantVectorStore) -> None:
    tracer = InMemoryTracer()
    ltm = LongTermMemory(store, clock=Clock(), tracer=tracer, min_candidates=1, candidate_factor=3)
    ltm.write_batch(
        [
            MemoryFragment.build(f"green tea fact {i}", now=T0, importance=i / 10, scope=BOB)
            for i in range(5)
        ]
    )
    (write,) = tracer.events("write")
    assert write.scope == BOB.fields() and write.session_id == "s1" and len(write.included) == 5
    assert write.tokens == sum(item["tokens"] for item in write.included) > 0

    found = ltm.search("green tea", k=2, scope=Scope(user="bob"))
    (event,) = tracer.events("longterm_read")
    assert event.scope == {"user": "bob"}
    assert [item["id"] for item in event.included] == [r.fragment.id for r in found]
    for item, hit in zip(event.included, found, strict=True):
        assert item["similarity"] == pytest.approx(hit.similarity)
        assert item["recency"] == pytest.approx(hit.recency)
        assert item["importance"] == pytest.approx(hit.importance)
        assert event.scores[f"{hit.fragment.id}.importance"] == pytest.approx(hit.importance)
        assert set(event.scores) >= {f"{hit.fragment.id}.{p}" for p in ("similarity", "recency")}
    assert len(event.dropped) == 3  # pool of k * 3 = 6 holds all 5; 3 below the top 2
    assert {d["reason"] for d in event.dropped} == {"ranked below the top 2"}
    assert max(d["score"] for d in event.dropped) <= min(i["score"] for i in event.included)
    assert event.tokens == sum(ltm.tokenizer.count(r.fragment.observation) for r in found)
    assert "forgotten" in event.detail["filtered_in_store"]
    assert TraceEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event


async def test_async_read_emits_too_and_a_failing_tracer_never_breaks_a_read() -> None:
    class Boom:
        def emit(self, event: TraceEvent) -> None:
            raise RuntimeError("tracer down")

    with LongTermMemory(tracer=Boom()) as ltm:
        ltm.write(MemoryFragment(observation="the dog is called Rex"))
        assert [f.observation for f in await ltm.aread("dog", k=1)] == ["the dog is called Rex"]
    with LongTermMemory() as ltm:
        await ltm.awrite(MemoryFragment(observation="the dog is called Rex"))
        await ltm.aread("dog", k=1)
        assert [e.kind for e in ltm.tracer.events()] == ["write", "longterm_read"]  # type: ignore[attr-defined]
