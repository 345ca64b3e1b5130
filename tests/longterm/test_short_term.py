"""Sensory, short-term and enhanced short-term memory: gates, overflow, enhancement, insights."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from offprompt.errors import ValidationError
from offprompt.longterm import (
    EnhancedShortTermMemory,
    ExtractiveInsightExtractor,
    MemoryFragment,
    Scope,
    SensoryMemory,
    ShortTermMemory,
)
from offprompt.longterm.short_term import cosine_similarity, sigmoid


def _f(text: str, **kw: object) -> MemoryFragment:
    return MemoryFragment(observation=text, **kw)  # type: ignore[arg-type]


class FixedScorer:
    """A deterministic scorer returning a fixed rating (a test double for an LLM scorer)."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.calls = 0

    def score(self, fragment: MemoryFragment) -> float:
        self.calls += 1
        return self.value

    async def ascore(self, fragment: MemoryFragment) -> float:
        return self.score(fragment)


class RecordingExtractor:
    """Records the groups it is asked about and returns one insight per group."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []

    def extract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        self.groups.append([f.observation for f in fragments])
        return [f"insight about {len(fragments)} fragment(s)"]

    async def aextract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        return self.extract(fragments)


# ------------------------------------------------------------------ sensory


def test_sensory_gate_weights_scores_and_drops_unimportant() -> None:
    sensory = SensoryMemory(buffer_size=2, importance_weight=0.5, threshold_to_short_term=0.3)
    sensory.importance_scorer = FixedScorer(0.8)
    assert sensory.write(_f("a")) is None
    assert sensory.write(_f("b")) is None
    passed = sensory.write(_f("c"))
    assert passed is not None
    assert [f.observation for f in passed.fragments] == ["a", "b", "c"]
    assert all(f.importance == pytest.approx(0.4) for f in passed.fragments)
    assert len(sensory) == 0
    low = SensoryMemory(0, importance_weight=0.1, threshold_to_short_term=0.3)
    low.importance_scorer = FixedScorer(0.9)
    assert low.write(_f("dropped")) is None


def test_sensory_keeps_caller_importance_and_dedupes() -> None:
    scorer = FixedScorer(0.0)
    sensory = SensoryMemory(buffer_size=5, importance_scorer=scorer)
    sensory.write(_f("same"))
    sensory.write(_f("same"))
    assert len(sensory.fragments) == 1
    passthrough = SensoryMemory(0, importance_scorer=scorer)
    out = passthrough.write(_f("given", importance=0.7))
    assert out is not None and out.fragments[0].importance == 0.7
    assert scorer.calls == 0


def test_sensory_bad_arguments() -> None:
    with pytest.raises(ValidationError):
        SensoryMemory(buffer_size=-1)
    with pytest.raises(ValidationError):
        SensoryMemory(importance_weight=2)
    with pytest.raises(ValidationError):
        SensoryMemory().write("not a fragment")  # type: ignore[arg-type]


async def test_sensory_async_twin() -> None:
    sensory = SensoryMemory(0, importance_scorer=FixedScorer(1.0))
    out = await sensory.awrite(_f("x"))
    assert out is not None and out.fragments[0].importance == pytest.approx(0.9)


# ------------------------------------------------------------------ short-term


def test_short_term_dedupes_and_hands_over_oldest() -> None:
    stm = ShortTermMemory(buffer_size=2)
    assert stm.write(_f("a")) is None
    assert stm.write(_f("b")) is None
    assert stm.write(_f("a")) is None  # duplicate: moves to the end, no growth
    assert [f.observation for f in stm.fragments] == ["b", "a"]
    out = stm.write(_f("c"))
    assert out is not None and [f.observation for f in out.fragments] == ["b"]
    assert [f.observation for f in stm.fragments] == ["a", "c"]


def test_short_term_same_text_other_scope_is_not_a_duplicate() -> None:
    stm = ShortTermMemory(buffer_size=5)
    stm.write(_f("likes tea", scope=Scope(user="a")))
    stm.write(_f("likes tea", scope=Scope(user="b")))
    assert len(stm) == 2


def test_short_term_overflow_insights() -> None:
    extractor = RecordingExtractor()
    stm = ShortTermMemory(buffer_size=1, insight_extractor=extractor)
    stm.write(_f("first", scope=Scope(user="u")))
    out = stm.write(_f("second", scope=Scope(user="u")))
    assert out is not None
    assert extractor.groups == [["first"]]
    assert out.insights[0].is_insight and out.insights[0].scope == Scope(user="u")
    assert out.insights[0].meta["insight_of"] == [out.fragments[0].id]


# ------------------------------------------------------------------ enhanced


def test_similarity_helpers() -> None:
    assert cosine_similarity([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine_similarity([1, 0], [0, 0]) == 0.0
    assert sigmoid(0) == 0.5 and sigmoid(1.0) == pytest.approx(0.7310585786)
    with pytest.raises(ValidationError):
        cosine_similarity([1, 0], [1, 0, 0])


def test_enhancement_counts_and_merge_into_insight() -> None:
    extractor = RecordingExtractor()
    stm = EnhancedShortTermMemory(
        buffer_size=5, enhance_threshold=2, stochastic=False, insight_extractor=extractor
    )
    stm.write(_f("user asks for dark mode", importance=0.6))
    stm.write(_f("completely unrelated lunch order"))
    assert stm.enhance_counts() == [0, 0]
    assert stm.write(_f("user asks for dark mode")) is None  # enhances, not re-buffered
    assert stm.enhance_counts() == [1, 0]
    assert len(stm) == 2
    out = stm.write(_f("user asks for dark mode"))
    assert out is not None
    merged = out.fragments[0]
    assert merged.observation == "user asks for dark mode"  # distinct texts, once each
    assert merged.importance == 0.6
    assert merged.meta["enhancements"] == 2 and len(merged.meta["merged_from"]) == 3
    assert [i.observation for i in out.insights] == ["insight about 1 fragment(s)"]
    assert extractor.groups == [["user asks for dark mode"]]
    assert [f.observation for f in stm.fragments] == ["completely unrelated lunch order"]


def test_enhancement_by_near_duplicates_joins_texts() -> None:
    stm = EnhancedShortTermMemory(
        enhance_threshold=1, stochastic=False, enhance_similarity_threshold=0.7
    )
    stm.write(_f("the user prefers dark mode in the editor"))
    out = stm.write(_f("the user prefers dark mode in the editor!"))
    assert out is not None
    assert out.fragments[0].observation == (
        "the user prefers dark mode in the editor; the user prefers dark mode in the editor!"
    )


def test_enhancement_never_crosses_scopes() -> None:
    stm = EnhancedShortTermMemory(enhance_threshold=1, stochastic=False)
    stm.write(_f("prefers dark mode", scope=Scope(user="alice")))
    assert stm.write(_f("prefers dark mode", scope=Scope(user="bob"))) is None
    assert stm.enhance_counts() == [0, 0]


def test_stochastic_enhancement_uses_the_rng() -> None:
    class Always(random.Random):
        def random(self) -> float:
            return 0.99  # above any sigmoid of a cosine, so never enhances

    stm = EnhancedShortTermMemory(enhance_threshold=1, rng=Always())
    stm.write(_f("same text"))
    assert stm.write(_f("same text")) is None
    assert stm.enhance_counts() == [0]


def test_eviction_by_importance_then_enhancement_count() -> None:
    stm = EnhancedShortTermMemory(buffer_size=2, stochastic=False, enhance_threshold=10)
    stm.write(_f("alpha important", importance=0.9))
    stm.write(_f("beta trivial", importance=0.1))
    out = stm.write(_f("gamma newest", importance=0.0))  # newest is never evicted
    assert out is not None and [f.observation for f in out.fragments] == ["beta trivial"]
    assert [f.observation for f in stm.fragments] == ["alpha important", "gamma newest"]


def test_retrieval_enhances_but_is_not_buffered() -> None:
    stm = EnhancedShortTermMemory(stochastic=False, enhance_threshold=5)
    stm.write(_f("likes jazz"))
    stm.write(_f("likes jazz", importance=0.5), retrieval=True)
    assert len(stm) == 1 and stm.enhance_counts() == [1]


def test_wrong_embedding_size_is_refused() -> None:
    stm = EnhancedShortTermMemory()
    with pytest.raises(ValidationError, match="dimensional"):
        stm.write(_f("x", embedding=[0.1, 0.2]))
    assert len(stm) == 0


async def test_enhanced_async_twin_with_extractive_insights() -> None:
    stm = EnhancedShortTermMemory(
        enhance_threshold=1, stochastic=False, insight_extractor=ExtractiveInsightExtractor()
    )
    await stm.awrite(_f("Carol is allergic to peanuts."))
    out = await stm.awrite(_f("Carol is allergic to peanuts."))
    assert out is not None and out.insights and "peanuts" in out.insights[0].observation
    assert stm.clear() == []
