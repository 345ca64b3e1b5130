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


def test_summary_stays_in_budget_and_prefers_on_topic_sentences() -> None:
    on_topic = [
        "Qdrant stores dense vectors for every chunk of the document.",
        "Each Qdrant query filters the vectors by namespace.",
        "Sparse vectors in Qdrant give keyword matching for the query.",
        "Qdrant fuses the dense and sparse vectors with reciprocal rank fusion.",
    ]
    off_topic = ["The cat sat on the mat.", "Lunch was at noon today.", "Trains were late."]
    text = " ".join(off_topic[:1] + on_topic[:2] + off_topic[1:] + on_topic[2:])
    summary = ExtractiveSummarizer(max_tokens=40).summarize_text(text)
    assert default_tokenizer().count(summary) <= 40
    assert summary.count("Qdrant") >= 2
    assert not any(sentence in summary for sentence in off_topic)


def test_one_overlong_sentence_is_cut_to_the_budget() -> None:
    summary = ExtractiveSummarizer().summarize_text("word " * 5000, max_tokens=20)
    assert 0 < default_tokenizer().count(summary) <= 20


def test_runs_fold_into_a_summary_that_keeps_previous_facts() -> None:
    summarizer = ExtractiveSummarizer(max_tokens=200)
    first = summarizer.summarize(
        None, [_Run([Message.user("My name is Ada."), Message.assistant("Hello Ada.")])]
    )
    second = summarizer.summarize(
        first, [_Run([Message.user("I like Qdrant."), Message.assistant("Noted.")])]
    )
    assert "Ada" in second and "Qdrant" in second


def test_empty_text_gives_empty_summary() -> None:
    assert ExtractiveSummarizer().summarize_text("   ") == ""


def test_a_fact_survives_repeated_folding_while_new_runs_still_enter() -> None:
    """Regression: frequency scoring once dropped 'The launch code is 7431.' after 3 folds."""
    summarizer = ExtractiveSummarizer(max_tokens=120)
    turns = [
        (
            "Remember this for later. The launch code is 7431.",
            "Noted, I will remember the launch code.",
        ),
        (
            "What is the weather like in the city today? I want to walk in the park.",
            "It is sunny and warm in the city, a good day for the park.",
        ),
        (
            "Can you suggest a book about the sea?",
            "Try Moby-Dick by Herman Melville, a classic novel about the sea.",
        ),
        (
            "How long should I boil an egg for a soft yolk?",
            "Boil the egg for about six minutes for a soft, runny yolk.",
        ),
    ]
    summary = None
    for question, answer in turns:
        summary = summarizer.summarize(
            summary, [_Run([Message.user(question), Message.assistant(answer)])]
        )
        assert default_tokenizer().count(summary) <= 120
    assert summary is not None
    assert "The launch code is 7431." in summary
    assert "egg" in summary  # the newest run made it in: the summary did not freeze
