"""Offline importance scoring and insight extraction, and the reply parsers the adapters use."""

from __future__ import annotations

import pytest

from offprompt.errors import ValidationError
from offprompt.longterm import (
    ExtractiveInsightExtractor,
    HeuristicImportanceScorer,
    ImportanceScorer,
    InsightExtractor,
    MemoryFragment,
)
from offprompt.longterm.scoring import parse_insights, parse_rating


def _f(text: str) -> MemoryFragment:
    return MemoryFragment(observation=text)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("7", 0.7),
        ("Rating: 8/10", 0.8),
        ("**6** out of 10", 0.6),
        ("I'd say 7.5 because it matters", 0.75),
        ("nine", 0.9),
        ("Score: 4/5", 0.8),
        ("15", 1.0),
        ("-3", 0.0),
        ("Rating:\n 10", 1.0),
    ],
)
def test_parse_rating(reply: str, expected: float) -> None:
    assert parse_rating(reply) == pytest.approx(expected)


def test_parse_rating_without_number_is_none_and_bad_input_errors() -> None:
    assert parse_rating("cannot say") is None
    assert parse_rating("") is None
    with pytest.raises(ValidationError):
        parse_rating(7)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        parse_rating("5", scale=0)


def test_parse_insights_strips_bullets_numbering_and_preamble() -> None:
    reply = (
        "Here are the insights:\n1. Likes tea\n2) Works nights\n- **Owns a cat**\n\n* Likes tea\n"
    )
    assert parse_insights(reply) == ["Likes tea", "Works nights", "Owns a cat"]
    assert parse_insights(reply, max_insights=2) == ["Likes tea", "Works nights"]
    assert parse_insights("") == []


def test_heuristic_scorer_orders_signals() -> None:
    s = HeuristicImportanceScorer()
    trivial = s.score(_f("ok"))
    plain = s.score(_f("The weather report was read"))
    preference = s.score(_f("I always prefer aisle seats and I hate flights before 7 am"))
    assert trivial == 0.0
    assert trivial < plain < preference <= 1.0
    assert isinstance(s, ImportanceScorer)


async def test_heuristic_async_twin_matches() -> None:
    s = HeuristicImportanceScorer()
    f = _f("My birthday is on 3 May")
    assert await s.ascore(f) == s.score(f)


def test_extractive_insights() -> None:
    ex = ExtractiveInsightExtractor(max_insights=2)
    assert isinstance(ex, InsightExtractor)
    fragments = [
        _f("Alice drinks green tea every morning"),
        _f("Alice ordered green tea at the cafe"),
        _f("Alice said green tea calms her"),
    ]
    insights = ex.extract(fragments)
    assert 1 <= len(insights) <= 2
    assert all("green tea" in i for i in insights)
    assert ex.extract([]) == []
    with pytest.raises(ValidationError):
        ExtractiveInsightExtractor(max_insights=0)


async def test_extractive_async_twin() -> None:
    ex = ExtractiveInsightExtractor()
    fragments = [_f("Bob runs every day."), _f("Bob runs marathons.")]
    assert await ex.aextract(fragments) == ex.extract(fragments)
