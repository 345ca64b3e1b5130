"""LongTermMemory recall on the real embedded Qdrant engine: hybrid (dense + BM25) pools,
the calibrated similarity, modes, query feedback, the injected clock on write, and a store
written by the previous version (907ac92, dense-only reads) read by this one."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from offprompt.errors import ValidationError
from offprompt.longterm import (
    EnhancedShortTermMemory,
    HybridMemory,
    LongTermMemory,
    MemoryFragment,
    Scope,
    SensoryMemory,
    ShortTermMemory,
)
from offprompt.vectors import QdrantVectorStore

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
DATA = Path(__file__).parent / "data"
ALICE = Scope(user="alice")


class Clock:
    """A settable clock injected into the memories."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


class TopicEmbedder:
    """A deterministic "semantic" embedder: one dimension per topic its words belong to.

    Stands in for a real embedding model: it maps "feline" and "kitten" together, which
    no lexical retriever does, and knows nothing about order numbers.
    """

    TOPICS = ({"cat", "kitten", "feline", "cats"}, {"rain", "weather", "sunny", "storm"})

    @property
    def dimensions(self) -> int:
        return len(self.TOPICS) + 1

    def _vector(self, text: str) -> list[float]:
        words = set(text.lower().replace(".", " ").replace("?", " ").split())
        vector = [float(bool(words & topic)) for topic in self.TOPICS]
        return [*vector, 0.0 if any(vector) else 1.0]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ltm(clock: Clock) -> Iterator[LongTermMemory]:
    memory = LongTermMemory(clock=clock, decay_rate=0.01)
    yield memory
    memory.close()


def _f(text: str, **kw: object) -> MemoryFragment:
    return MemoryFragment.build(text, now=T0, **kw)  # type: ignore[arg-type]


SISTER = [
    "My sister Maya moved to Lisbon last spring.",
    "Maya keeps sending me photos from Lisbon, she loves living there.",
]
FILLER = [
    "My colleague's sister is visiting next week.",
    "Which restaurant should we pick for Friday?",
    "The weather is lovely today.",
    *(
        f"{who} {what} {when}."
        for who in ("My plan is to", "I need to", "I prefer to")
        for what in ("call the plumber", "walk 5 km", "move the meeting")
        for when in ("on Tuesday", "before work", "this week")
    ),
]
QUESTION = "Which city did my sister move to last spring?"


# ------------------------------------------------------------------ hybrid reads


def test_hybrid_pool_uses_both_the_embedder_and_bm25() -> None:
    with QdrantVectorStore(embedder=TopicEmbedder()) as store:
        ltm = LongTermMemory(store, feedback=0)
        ltm.write_batch(
            [
                _f("Our kitten Mochi sleeps all day", importance=0.1),
                _f("Order 7731 shipped on Monday", importance=0.1),
                _f("Order 5120 was cancelled", importance=0.1),
                _f("A storm is coming tonight", importance=0.1),
            ]
        )
        # only the embedder relates "feline" to "kitten": no shared word for BM25
        assert ltm.search("feline", k=1, mode="sparse") == []
        assert ltm.read("feline", k=1)[0].observation == "Our kitten Mochi sleeps all day"
        # only BM25 tells the two orders apart: the embedder gives them one vector
        dense = ltm.search("7731", k=2, mode="dense")
        assert dense[0].similarity == dense[1].similarity
        assert ltm.read("7731", k=1)[0].observation == "Order 7731 shipped on Monday"


def test_similarity_is_the_fused_rank_score_calibrated_to_one(
    ltm: LongTermMemory, clock: Clock
) -> None:
    ltm.feedback = 0
    ltm.write_batch([_f(t, importance=0.2) for t in [*SISTER, *FILLER]])
    clock.advance(hours=3)
    hits = ltm.search(SISTER[0], k=4, touch=False)
    # the fragment identical to the query is first in both rankings: rrf == rrf_max
    assert hits[0].fragment.observation == SISTER[0]
    assert hits[0].similarity == pytest.approx(1.0)
    assert all(0.0 < h.similarity <= 1.0 for h in hits)
    assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
    for h in hits:
        assert h.recency == pytest.approx(0.99**3)
        assert h.score == pytest.approx(h.similarity + h.recency + h.importance)
    # one retriever: the same calibration, RRF_K / (RRF_K + rank - 1) with RRF_K = 2
    sparse = ltm.search(SISTER[0], k=3, touch=False, mode="sparse")
    assert [h.similarity for h in sparse] == pytest.approx([1.0, 2 / 3, 0.5])
    # dense: the cosine, as in the previous version
    dense = ltm.search(SISTER[0], k=1, touch=False, mode="dense")
    assert dense[0].similarity == pytest.approx(1.0, abs=1e-5)
    event = ltm.tracer.events("longterm_read")[-1]
    assert event.detail["mode"] == "dense" and event.detail["feedback"] == 0


def test_feedback_finds_the_restatement_that_shares_no_question_word(
    ltm: LongTermMemory,
) -> None:
    ltm.write_batch([_f(t, importance=0.3) for t in [*SISTER, *FILLER]])

    def found(k: int, mode: str) -> list[str]:
        hits = ltm.search(QUESTION, k, touch=False, mode=mode)  # type: ignore[arg-type]
        return [h.fragment.observation for h in hits]

    ltm.feedback = 0
    for mode in ("hybrid", "sparse"):
        assert found(5, mode)[0] == SISTER[0] and SISTER[1] not in found(5, mode)
    ltm.feedback = 1  # the best BM25 hit names Maya and Lisbon: so does the restatement
    # (its terms widen the query at a fraction of the question's weight, so the other
    # "sister" still ranks second)
    widened = found(3, "sparse")
    assert widened[0] == SISTER[0] and widened[2] == SISTER[1]
    # the hashing embedder's dense ranking (of the question alone) still votes for
    # "my ... move to" fillers, so hybrid ranks the restatement lower than BM25 does
    with_feedback = found(20, "hybrid").index(SISTER[1])
    ltm.feedback = 0
    without = found(20, "hybrid")
    assert with_feedback <= 5 and (SISTER[1] not in without or without.index(SISTER[1]) > 8)
    ltm.feedback = 1
    found(1, "hybrid")
    assert ltm.tracer.events("longterm_read")[-1].detail["feedback"] == 1


async def test_async_reads_match_sync_reads(ltm: LongTermMemory) -> None:
    await ltm.awrite_batch([_f(t, importance=0.3) for t in [*SISTER, *FILLER]])
    question = QUESTION
    for mode in ("hybrid", "sparse", "dense"):
        sync = ltm.search(question, k=3, touch=False, mode=mode)  # type: ignore[arg-type]
        got = await ltm.asearch(question, k=3, touch=False, mode=mode)  # type: ignore[arg-type]
        assert [h.fragment.id for h in got] == [h.fragment.id for h in sync]
        assert [h.similarity for h in got] == pytest.approx([h.similarity for h in sync])
    expected = [h.fragment.id for h in ltm.search(question, k=4, touch=False)]
    assert [f.id for f in await ltm.aread(question, k=4)] == expected


def test_modes_and_feedback_are_validated(clock: Clock) -> None:
    with pytest.raises(ValidationError, match="mode"):
        LongTermMemory(mode="semantic")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="feedback"):
        LongTermMemory(feedback=-1)
    with QdrantVectorStore(sparse=False) as store:
        ltm = LongTermMemory(store, clock=clock)
        ltm.write(_f("I prefer aisle seats", importance=0.5))
        with pytest.raises(ValidationError, match="sparse=True"):
            ltm.read("seat", mode="sparse")
        with pytest.raises(ValidationError, match="mode"):
            ltm.read("seat", mode="fuzzy")  # type: ignore[arg-type]
        # no sparse vectors: hybrid falls back to dense, similarity is the cosine
        (hit,) = ltm.search("aisle seats", k=1)
        assert hit.fragment.observation == "I prefer aisle seats"
        assert ltm.tracer.events("longterm_read")[-1].detail["mode"] == "dense"
        assert ltm.count() == 1


def test_scoped_reads_find_the_live_fragments_among_many_hidden_ones(
    ltm: LongTermMemory, clock: Clock
) -> None:
    """The dense ranking of a scoped read is narrowed by the scope key in the engine; the
    forgotten, merged and other-namespace fragments it meets there are dropped and, when
    too few candidates are left, the full filter runs: same fragments as unnarrowed."""
    other = LongTermMemory(ltm.store, clock=clock, namespace="elsewhere")
    texts = [f"budget review {i} for the Lisbon project" for i in range(60)]
    hidden = ltm.write_batch([_f(t, importance=0.5, scope=ALICE) for t in texts])
    other.write_batch([_f(t, importance=0.5, scope=ALICE) for t in texts])
    ltm.mark_forgotten([f.id for f in hidden[:40]])
    ltm.mark_merged([f.id for f in hidden[40:58]])
    live = {f.id for f in hidden[58:]}
    for mode in ("dense", "hybrid"):
        found = ltm.search("Lisbon budget review", k=5, scope=ALICE, mode=mode, touch=False)  # type: ignore[arg-type]
        assert {h.fragment.id for h in found} == live
    clock.advance(hours=3)
    (first, *_) = ltm.read("Lisbon budget review", k=2, scope=ALICE, mode="dense")
    assert ltm.get(first.id).last_accessed_at == clock.now  # touched in the store
    assert all(f.last_accessed_at == T0 for f in other.fragments(scope=ALICE))


# ------------------------------------------------------------------ the injected clock


def test_fragments_without_times_take_the_memorys_clock(ltm: LongTermMemory, clock: Clock) -> None:
    stored = ltm.write(MemoryFragment(observation="I am vegetarian", importance=0.5))
    assert stored.created_at == T0 and stored.last_accessed_at == T0
    assert ltm.get(stored.id).last_accessed_at == T0
    clock.advance(hours=2)
    (hit,) = ltm.search("vegetarian", k=1, touch=False)
    assert hit.fragment.id == stored.id
    assert hit.recency == pytest.approx(0.99**2)  # not 1.0 "accessed in the future"
    explicit = datetime(2024, 1, 1, tzinfo=timezone.utc)
    kept = ltm.write(MemoryFragment.build("I like tea", now=explicit, importance=0.5))
    assert kept.created_at == explicit and ltm.get(kept.id).last_accessed_at == explicit
    given_id = MemoryFragment(observation="I like jazz", last_accessed_at=T0)
    assert ltm.write(given_id).id == given_id.id


def test_a_fragment_read_recently_outranks_one_untouched_for_two_days(
    ltm: LongTermMemory, clock: Clock
) -> None:
    text = "the project budget is 40k"
    read_one = ltm.write(MemoryFragment(observation=text, importance=0.5, scope=Scope(agent="a")))
    untouched = ltm.write(MemoryFragment(observation=text, importance=0.5, scope=Scope(agent="b")))
    clock.advance(hours=46)
    assert ltm.read("project budget", k=1, scope=Scope(agent="a"))[0].id == read_one.id
    clock.advance(hours=2)
    top = ltm.search("project budget", k=2, touch=False, mode="dense")
    assert [h.fragment.id for h in top] == [read_one.id, untouched.id]
    assert top[0].recency == pytest.approx(0.99**2)
    assert top[1].recency == pytest.approx(0.99**48)


def test_short_term_times_fragments_once_and_long_term_keeps_them(clock: Clock) -> None:
    with LongTermMemory(clock=clock) as ltm:
        hybrid = HybridMemory(SensoryMemory(0), ShortTermMemory(buffer_size=1, clock=clock), ltm)
        hybrid.write(MemoryFragment(observation="I run marathons", scope=ALICE))
        clock.advance(hours=5)
        (moved,) = hybrid.write(MemoryFragment(observation="I play the cello", scope=ALICE))
        # timed when short-term memory took it, not when it reached long-term memory
        assert moved.observation == "I run marathons" and moved.created_at == T0
        assert ltm.get(moved.id).last_accessed_at == T0
        (buffered,) = hybrid.short_term.fragments
        assert buffered.created_at == T0 + timedelta(hours=5)


# ------------------------------------------------------------------ insights by default


def test_repeated_paraphrases_become_an_insight_in_long_term_memory(clock: Clock) -> None:
    with LongTermMemory(clock=clock) as ltm:
        short = EnhancedShortTermMemory(
            stochastic=False, embedder=ltm.store.embedder, clock=ltm.clock
        )
        assert short.insight_extractor is not None  # the offline extractive default
        hybrid = HybridMemory(short_term=short, long_term=ltm)
        paraphrases = [
            "Please always answer me in French.",
            "Always answer me in French, please.",
            "please answer me in French always",
            "Answer me in French, always please.",
        ]
        assert len(paraphrases) == short.enhance_threshold + 1
        stored: list[MemoryFragment] = []
        for text in paraphrases:
            stored += hybrid.write(MemoryFragment(observation=text, scope=ALICE))
        (merged,) = [f for f in stored if not f.is_insight]
        insights = ltm.fragments(scope=ALICE)
        (insight,) = [f for f in insights if f.is_insight]
        assert "French" in insight.observation
        assert insight.meta["insight_of"] == [merged.id]
        assert merged.meta["enhancements"] == short.enhance_threshold
        assert insight.scope == ALICE and insight.created_at == T0
        # forgetting the merged source deletes the insight derived from it
        assert ltm.forget(ALICE) == 2 and ltm.count(include_inactive=True) == 0


def test_insights_can_be_turned_off() -> None:
    short = EnhancedShortTermMemory(enhance_threshold=1, stochastic=False, insight_extractor=None)
    short.write(MemoryFragment(observation="dark mode please"))
    out = short.write(MemoryFragment(observation="please dark mode"))
    assert out is not None and out.fragments and not out.insights


# ------------------------------------------------------------------ the previous version


def test_a_store_written_by_the_previous_version_reads_with_hybrid(tmp_path: Path) -> None:
    """``data/longterm_907ac92.tar.xz``: an embedded store at ``path=`` written by
    commit 907ac92 (dense-only reads): five ``MemoryFragment.build(text, now=T0,
    importance=..., scope=Scope(user=...), meta={"v": "previous"})`` via ``write``."""
    with tarfile.open(DATA / "longterm_907ac92.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    clock = Clock(T0 + timedelta(hours=1))
    with QdrantVectorStore(path=str(tmp_path)) as store:
        ltm = LongTermMemory(store, clock=clock)
        assert ltm.count() == 5 and ltm.count(scope=ALICE) == 4
        found = ltm.search(QUESTION, k=4, scope=ALICE, touch=False)
        assert len(found) == 4  # alice's four, never bob's
        by_similarity = sorted(found, key=lambda h: -h.similarity)
        assert {h.fragment.observation for h in by_similarity[:2]} == set(SISTER)
        for h in found:
            assert 0 < h.similarity <= 1 and h.fragment.meta == {"v": "previous"}
            assert h.recency == pytest.approx(0.99)
            assert h.score == pytest.approx(h.similarity + h.recency + h.importance)
        # the BM25 half works on the old points: their sparse vectors were always written
        sparse = ltm.search("peanuts", k=1, scope=ALICE, mode="sparse")
        assert sparse[0].fragment.observation.startswith("I'm allergic to peanuts")
        (shellfish,) = ltm.read("shellfish", k=5, scope=Scope(user="bob"))
        assert shellfish.observation == "I'm allergic to shellfish."
        assert ltm.get(shellfish.id).last_accessed_at == clock.now  # the old point is touched
        new = ltm.write(MemoryFragment(observation="Maya is visiting in May.", scope=ALICE))
        assert new.created_at == clock.now
        both = {f.observation for f in ltm.read("When is Maya visiting?", k=3, scope=ALICE)}
        assert "Maya is visiting in May." in both and SISTER[0] in both
    with QdrantVectorStore(path=str(tmp_path)) as store:  # and it still opens afterwards
        assert LongTermMemory(store).count(scope=ALICE) == 5
