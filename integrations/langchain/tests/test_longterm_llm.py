"""LLM-backed importance scorer and insight extractor on LangChain chat models.

The chat models are fakes: LangChain's ``FakeListChatModel`` (scripted replies) and the
suite's ``ScriptedChatModel`` with a ``default`` reply (it records prompts and whether
the sync or async path ran).
Long-term memory and Qdrant are real.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from offprompt_langchain.longterm import LLMImportanceScorer, LLMInsightExtractor, MemoryModelError

from offprompt.errors import ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope


def _f(text: str) -> MemoryFragment:
    return MemoryFragment(observation=text, scope=Scope(user="u"))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("7", 0.7), ("Rating: 9/10", 0.9), ("I would rate this **3**.", 0.3), ("ten", 1.0)],
)
def test_scorer_parses_ratings(reply: str, expected: float) -> None:
    scorer = LLMImportanceScorer(FakeListChatModel(responses=[reply]))
    assert scorer.score(_f("I am allergic to nuts")) == pytest.approx(expected)


def test_scorer_prompt_and_fallbacks(make_recording_model: Callable[..., Any]) -> None:
    model = make_recording_model(reply=lambda messages: "no idea")
    scorer = LLMImportanceScorer(model, default=0.25)
    assert scorer.score(_f("the sky was grey")) == 0.25
    mode, messages = model.modes[0], model.calls[0]
    assert mode == "sync" and "Observation: the sky was grey" in messages[0].text
    strict = LLMImportanceScorer(model, default=None)
    with pytest.raises(MemoryModelError, match="no rating"):
        strict.score(_f("x"))
    with pytest.raises(ValidationError):
        LLMImportanceScorer(model, prompt="no placeholder")
    with pytest.raises(ValidationError):
        LLMImportanceScorer("not a model")  # type: ignore[arg-type]


async def test_scorer_async_uses_ainvoke(make_recording_model: Callable[..., Any]) -> None:
    model = make_recording_model(reply=lambda messages: "8")
    assert await LLMImportanceScorer(model).ascore(_f("deadline on 3 May")) == 0.8
    assert model.modes == ["async"]


def test_extractor_parses_lines(make_recording_model: Callable[..., Any]) -> None:
    model = make_recording_model(
        reply=lambda messages: (
            "Here are the insights:\n1. Values punctuality\n2. Travels for work\n3. x\n4. y"
        )
    )
    extractor = LLMInsightExtractor(model, max_insights=2)
    got = extractor.extract([_f("arrived early"), _f("flew to Berlin\nfor a meeting")])
    assert got == ["Values punctuality", "Travels for work"]
    prompt = model.calls[0][0].text
    assert "- arrived early\n- flew to Berlin for a meeting" in prompt and "at most 2" in prompt
    assert extractor.extract([]) == [] and len(model.calls) == 1


async def test_extractor_async_uses_ainvoke(make_recording_model: Callable[..., Any]) -> None:
    model = make_recording_model(reply=lambda messages: "- Enjoys jazz")
    assert await LLMInsightExtractor(model).aextract([_f("went to a jazz club")]) == ["Enjoys jazz"]
    assert model.modes == ["async"]


async def test_in_long_term_memory() -> None:
    ltm = LongTermMemory(
        importance_scorer=LLMImportanceScorer(FakeListChatModel(responses=["9"])),
        insight_extractor=LLMInsightExtractor(
            FakeListChatModel(responses=["1. Cares about health"])
        ),
    )
    stored = await ltm.awrite(_f("I go to the gym every morning"))
    assert stored.importance == pytest.approx(0.9)
    insights = await ltm.areflect(scope=Scope(user="u"))
    assert [i.observation for i in insights] == ["Cares about health"]
    assert insights[0].importance == pytest.approx(0.9) and insights[0].scope == Scope(user="u")
    ltm.close()
