"""HybridMemory: sensory -> short-term -> long-term on write, long-term -> short-term on read."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from offprompt.longterm import (
    EnhancedShortTermMemory,
    HybridMemory,
    LongTermMemory,
    MemoryFragment,
    Scope,
    SensoryMemory,
    ShortTermMemory,
)

T0 = datetime(2025, 6, 1, tzinfo=timezone.utc)
U = Scope(user="u1")


@pytest.fixture
def ltm() -> Iterator[LongTermMemory]:
    memory = LongTermMemory(clock=lambda: T0)
    yield memory
    memory.close()


def _f(text: str, scope: Scope = U, **kw: object) -> MemoryFragment:
    return MemoryFragment.build(text, now=T0, scope=scope, **kw)  # type: ignore[arg-type]


def test_write_flows_through_to_long_term(ltm: LongTermMemory) -> None:
    hybrid = HybridMemory(SensoryMemory(0), ShortTermMemory(buffer_size=2), ltm)
    assert hybrid.write(_f("I am vegetarian and I love lentils")) == []
    assert hybrid.write(_f("I live in Lyon since 2019")) == []
    stored = hybrid.write(_f("My sister is called Emma"))
    assert [f.observation for f in stored] == ["I am vegetarian and I love lentils"]
    assert stored[0].importance is not None  # scored by the sensory gate
    assert ltm.count() == 1
    assert hybrid.write(_f("ok")) == []  # below the sensory threshold: dropped
    assert [f.observation for f in hybrid.short_term.fragments] == [
        "I live in Lyon since 2019",
        "My sister is called Emma",
    ]


def test_read_returns_long_term_then_short_term_of_the_scope(ltm: LongTermMemory) -> None:
    hybrid = HybridMemory(SensoryMemory(0), ShortTermMemory(buffer_size=3), ltm)
    ltm.write(_f("I am vegetarian", importance=0.9))
    hybrid.write(_f("My sister is called Emma"))
    hybrid.write(_f("Other user's secret", scope=Scope(user="u2")))
    got = hybrid.read("what food do I eat", k=1, scope=U)
    texts = [f.observation for f in got]
    assert texts[0] == "I am vegetarian"
    assert "My sister is called Emma" in texts
    assert "Other user's secret" not in texts
    # the retrieved fragment was fed back into short-term memory
    assert "I am vegetarian" in [f.observation for f in hybrid.short_term.fragments]


def test_read_feeding_back_saves_what_short_term_hands_over(ltm: LongTermMemory) -> None:
    hybrid = HybridMemory(SensoryMemory(0), ShortTermMemory(buffer_size=1), ltm)
    ltm.write(_f("I am vegetarian", importance=0.9))
    hybrid.write(_f("I live in Lyon"))
    hybrid.read("vegetarian food", k=1, scope=U)
    assert sorted(f.observation for f in ltm.fragments()) == ["I am vegetarian", "I live in Lyon"]


def test_enhanced_merge_and_insight_reach_long_term(ltm: LongTermMemory) -> None:
    short = EnhancedShortTermMemory(
        enhance_threshold=2, stochastic=False, embedder=ltm.store.embedder
    )
    short.insight_extractor = ltm.insight_extractor
    hybrid = HybridMemory(SensoryMemory(0), short, ltm)
    for _ in range(3):
        stored = hybrid.write(_f("I want answers in French, always.", importance=0.8))
    merged = [f for f in stored if not f.is_insight]
    insights = [f for f in stored if f.is_insight]
    assert merged and merged[0].meta["enhancements"] == 2
    assert insights and insights[0].importance == pytest.approx(
        0.9 * ltm.importance_scorer.score(insights[0])
    )
    assert ltm.count(scope=U) == len(stored)
    assert len(hybrid.short_term) == 0


def test_flush_and_clear(ltm: LongTermMemory) -> None:
    hybrid = HybridMemory(SensoryMemory(3), ShortTermMemory(buffer_size=5), ltm)
    hybrid.write(_f("first buffered"))
    hybrid.write(_f("second buffered", importance=0.4))
    assert ltm.count() == 0
    flushed = hybrid.flush()
    assert sorted(f.observation for f in flushed) == ["first buffered", "second buffered"]
    assert ltm.count() == 2 and len(hybrid.sensory) == 0
    assert hybrid.clear(scope=U) == 2 and ltm.count() == 0


async def test_async_twins(ltm: LongTermMemory) -> None:
    hybrid = HybridMemory(SensoryMemory(0), ShortTermMemory(buffer_size=1), ltm)
    await hybrid.awrite_batch([_f("I run marathons"), _f("I play the cello")])
    got = await hybrid.aread("sports I do", k=1, scope=U)
    assert got[0].observation == "I run marathons"
    assert await hybrid.aflush()
    assert await hybrid.areflect(scope=U)
    assert await hybrid.aclear() >= 2


def test_defaults_build_a_working_memory() -> None:
    hybrid = HybridMemory()
    assert isinstance(hybrid.short_term, EnhancedShortTermMemory)
    hybrid.write(_f("I prefer tea over coffee"))
    hybrid.flush()
    assert hybrid.read("tea or coffee?", k=1, scope=U)[0].observation == "I prefer tea over coffee"
    hybrid.close()
