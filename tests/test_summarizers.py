from __future__ import annotations

from dataclasses import dataclass

from offprompt.messages import Message
from offprompt.summarizers import ExtractiveSummarizer, Summarizer, TextSummarizer
from offprompt.tokens import default_tokenizer


@dataclass
class _Run:
    messages: list[Message]


def test_extractive_summarizer_satisfies_both_protocols() -> None:
    summarizer = ExtractiveSummarizer()
    assert isinstance(summarizer, Summarizer) and isinstance(summarizer, TextSummarizer)


def test_summary_stays_in_budget_and_keeps_the_central_sentences() -> None:
    text = " ".join(
        ["Qdrant stores the vectors of every chunk."] * 3
        + [f"Filler sentence number {i} about nothing." for i in range(200)]
        + ["Qdrant filters every query by namespace."]
    )
    summary = ExtractiveSummarizer(max_tokens=60).summarize_text(text)
    assert default_tokenizer().count(summary) <= 60
    assert "Qdrant" in summary


def test_one_overlong_sentence_is_cut_to_the_budget() -> None:
    summary = ExtractiveSummarizer().summarize_text("word " * 5000, max_tokens=20)
    assert 0 < default_tokenizer().count(summary) <= 20


def test_runs_fold_into_a_summary_that_keeps_previous_facts() -> None:
    summarizer = ExtractiveSummarizer(max_tokens=200)
    first = summarizer.summarize(None, [_Run([Message.user("My name is Ada."), Message.assistant("Hello Ada.")])])
    second = summarizer.summarize(first, [_Run([Message.user("I like Qdrant."), Message.assistant("Noted.")])])
    assert "Ada" in second and "Qdrant" in second


def test_empty_text_gives_empty_summary() -> None:
    assert ExtractiveSummarizer().summarize_text("   ") == ""
