"""LLM-backed importance scorer and insight extractor on LlamaIndex LLMs.

The LLM is a fake: ``offprompt_llamaindex.testing.ScriptedFunctionLLM`` (a real
``FunctionCallingLLM`` subclass answering from a script and recording whether ``chat`` or
``achat`` ran). Long-term memory and
Qdrant are real.
"""

from __future__ import annotations

import pytest
from offprompt_llamaindex.longterm import (
    LLMImportanceScorer,
    LLMInsightExtractor,
    MemoryModelError,
)
from offprompt_llamaindex.testing import ScriptedFunctionLLM

from offprompt.errors import ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope


def _f(text: str) -> MemoryFragment:
    return MemoryFragment(observation=text, scope=Scope(user="u"))


@pytest.mark.parametrize(
    ("reply", "expected"), [("6", 0.6), ("Rating: 9/10", 0.9), ("**2** out of 10", 0.2)]
)
def test_scorer_parses_ratings(reply: str, expected: float) -> None:
    llm = ScriptedFunctionLLM(script=[reply])
    assert LLMImportanceScorer(llm).score(_f("I moved to Oslo")) == pytest.approx(expected)
    method, messages = llm.methods[0], llm.calls[0]
    assert method == "chat" and "Observation: I moved to Oslo" in (messages[0].content or "")


def test_scorer_fallback_and_errors() -> None:
    llm = ScriptedFunctionLLM(script=["no idea"])
    assert LLMImportanceScorer(llm, default=0.3).score(_f("x")) == 0.3
    with pytest.raises(MemoryModelError):
        LLMImportanceScorer(llm, default=None).score(_f("x"))
    with pytest.raises(ValidationError):
        LLMImportanceScorer(llm, default=2.0)
    with pytest.raises(ValidationError):
        LLMImportanceScorer(object())  # type: ignore[arg-type]


async def test_async_paths_use_achat() -> None:
    llm = ScriptedFunctionLLM(script=["7", "1. Loves the outdoors\n2. Plans ahead"])
    assert await LLMImportanceScorer(llm).ascore(_f("hiked all weekend")) == pytest.approx(0.7)
    insights = await LLMInsightExtractor(llm).aextract([_f("hiked"), _f("booked huts early")])
    assert insights == ["Loves the outdoors", "Plans ahead"]
    assert llm.methods == ["achat", "achat"]


def test_in_long_term_memory_reflect() -> None:
    ltm = LongTermMemory(
        importance_scorer=LLMImportanceScorer(ScriptedFunctionLLM(script=["8"])),
        insight_extractor=LLMInsightExtractor(ScriptedFunctionLLM(script=["- Values family time"])),
    )
    ltm.write_batch([_f("dinner with my parents every Sunday"), _f("called my sister")])
    insights = ltm.reflect(scope=Scope(user="u"))
    assert [i.observation for i in insights] == ["Values family time"]
    assert insights[0].is_insight and insights[0].importance == pytest.approx(0.8)
    assert LLMInsightExtractor(ScriptedFunctionLLM()).extract([]) == []
    ltm.close()
