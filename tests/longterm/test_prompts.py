"""format_memories and the write template (DB-GPT's write_memory_template, without jinja)."""

from __future__ import annotations

import doctest
from dataclasses import dataclass
from datetime import datetime, timezone

import pytest

import offprompt.longterm.prompts
from offprompt.errors import ValidationError
from offprompt.longterm.prompts import (
    DEFAULT_WRITE_MEMORY_TEMPLATE,
    MemoryLike,
    format_memories,
    render_template,
    render_write_memory,
)
from offprompt.tokens import default_tokenizer


@dataclass
class Fragment:
    observation: str
    importance: float | None = None
    created_at: datetime | None = None


@dataclass
class Bare:
    observation: str


def test_doctests_pass() -> None:
    result = doctest.testmod(offprompt.longterm.prompts)
    assert result.attempted >= 4 and result.failed == 0


def test_write_template_turns_question_and_answer_into_an_observation() -> None:
    text = render_write_memory("Which colour do I like?", "You like green.")
    assert text == "Question: Which colour do I like?\nThought: You like green."
    full = render_write_memory(
        "q", thought="t", action="search", action_input='{"q": "{braces}"}', observation="found"
    )
    assert (
        full
        == 'Question: q\nThought: t\nAction: search\nAction Input: {"q": "{braces}"}\nObservation: found'
    )
    # an explicit thought wins over the answer, as DB-GPT's `thoughts or ai_message`
    assert render_write_memory("q", "answer", thought="thought").endswith("Thought: thought")
    custom = "user: {question}\nassistant: {thought}"
    assert render_write_memory("hi ☃", "hello", template=custom) == "user: hi ☃\nassistant: hello"
    assert "Question: {question}" in DEFAULT_WRITE_MEMORY_TEMPLATE


def test_write_template_errors() -> None:
    with pytest.raises(ValidationError, match="all empty"):
        render_write_memory()
    with pytest.raises(ValidationError, match="all empty"):
        render_write_memory("   ", "")
    with pytest.raises(ValidationError, match=r"unknown field \{answer\}"):
        render_write_memory("q", "a", template="Q: {question}\nA: {answer}")
    with pytest.raises(ValidationError, match="question must be a str"):
        render_write_memory(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not a valid format string"):
        render_write_memory("q", template="Q: {question")
    with pytest.raises(ValidationError, match="plain name"):
        render_write_memory("q", template="Q: {question.upper}")


def test_format_memories_fills_a_prompt_variable() -> None:
    when = datetime(2026, 1, 2, tzinfo=timezone.utc)
    fragments = [
        Fragment("likes green", 0.9, when),
        Fragment("lives in Oslo", None, None),
        Bare("has a cat"),
    ]
    assert all(isinstance(f, MemoryLike) for f in fragments)
    assert format_memories(fragments) == "likes green\nlives in Oslo\nhas a cat"
    rendered = format_memories(
        fragments, "{index}. {observation}\n   importance {importance:.2f} at {created_at:%Y-%m-%d}"
    )
    # the second line of a fragment without importance and date is left out
    assert (
        rendered
        == "1. likes green\n   importance 0.90 at 2026-01-02\n2. lives in Oslo\n3. has a cat"
    )
    prompt = "Most recent observations:\n{most_recent_memories}\n\nQuestion: {question}"
    text = prompt.format(most_recent_memories=format_memories(fragments[:1]), question="colour?")
    assert text == "Most recent observations:\nlikes green\n\nQuestion: colour?"
    assert format_memories([]) == ""
    assert (
        format_memories(iter(fragments), separator=" | ")
        == "likes green | lives in Oslo | has a cat"
    )


def test_format_memories_token_budget_keeps_a_prefix() -> None:
    tok = default_tokenizer()
    fragments = [Fragment(f"memory number {i} " + "word " * 20) for i in range(10)]
    one = tok.count(fragments[0].observation)
    text = format_memories(fragments, max_tokens=one * 3 + 5, tokenizer=tok)
    assert text.count("memory number") == 3 and text.startswith("memory number 0")
    assert tok.count(text) <= one * 3 + 5
    assert format_memories(fragments, max_tokens=0) == ""


def test_format_memories_errors() -> None:
    with pytest.raises(ValidationError, match="fragment 2 has no str 'observation'"):
        format_memories([Bare("ok"), Fragment(None)])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="fragment 1 has no str"):
        format_memories([object()])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match=r"unknown field \{embedding\}"):
        format_memories([Bare("x")], "{embedding}")
    with pytest.raises(ValidationError, match="max_tokens"):
        format_memories([Bare("x")], max_tokens=-1)


def test_render_template_keeps_lines_with_some_values_and_literal_lines() -> None:
    out = render_template("Header\n{a} and {b}\n{c}\n{{literal}}", {"a": "A", "b": None})
    assert out == "Header\nA and \n{literal}"
    huge = "z" * 1_000_000
    assert render_template("{a}", {"a": huge}) == huge
