"""Summarizer protocols and the offline extractive default.

Two shapes of summarizing exist in offprompt:

* :class:`Summarizer` folds conversation runs into a running summary
  (``SummaryConversationMemory``).
* :class:`TextSummarizer` condenses one long text (``TaskMemory.summarize``).

The adapters' LLM-backed summarizers implement both; :class:`ExtractiveSummarizer`
implements both offline, deterministically, with no model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from offprompt.messages import Message
    from offprompt.tokens import Tokenizer

__all__ = ["ExtractiveSummarizer", "RunLike", "Summarizer", "TextSummarizer"]


class RunLike(Protocol):
    """What a summarizer needs of a conversation run: its messages, in order."""

    @property
    def messages(self) -> Sequence[Message]: ...


@runtime_checkable
class Summarizer(Protocol):
    """Folds runs into a running summary.

    ``summarize(previous, runs)`` returns the new summary of everything: the previous
    summary (``None`` the first time) plus ``runs``. It may raise; callers keep the old
    summary and retry those runs later.
    """

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str: ...

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str: ...


@runtime_checkable
class TextSummarizer(Protocol):
    """Condenses one text to at most ``max_tokens`` tokens (the summarizer's default if None)."""

    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str: ...

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str: ...


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}")
_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "you",
        "your",
        "we",
        "our",
        "they",
        "their",
        "he",
        "she",
        "not",
        "no",
        "yes",
        "do",
        "does",
    ]
)


class ExtractiveSummarizer:
    """Picks the most representative sentences (word-frequency scoring), in original order.

    Deterministic and offline. For runs it keeps the previous summary's sentences in
    the candidate pool, so facts survive repeated folding while the summary stays under
    ``max_tokens``.

    Args:
        max_tokens: Budget of the summary.
        tokenizer: Counts the budget; the default tiktoken tokenizer if omitted.
    """

    def __init__(self, max_tokens: int = 256, tokenizer: Tokenizer | None = None) -> None:
        self.max_tokens = max_tokens
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            from offprompt.tokens import default_tokenizer

            self._tokenizer = default_tokenizer()
        return self._tokenizer

    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        budget = self.max_tokens if max_tokens is None else max_tokens
        sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        if not sentences:
            return ""
        frequencies = Counter(
            w for s in sentences for w in _WORD.findall(s.lower()) if w not in _STOPWORDS
        )

        def score(sentence: str) -> float:
            words = [w for w in _WORD.findall(sentence.lower()) if w not in _STOPWORDS]
            return sum(frequencies[w] for w in set(words)) / math.sqrt(1 + len(words))

        scores = [score(s) for s in sentences]
        # Sentences far below the best are noise: leave budget unused rather than fill it.
        floor = 0.5 * max(scores)
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
        chosen: list[int] = []
        used = 0
        seen: set[str] = set()
        for index in ranked:
            sentence = sentences[index]
            if sentence in seen or scores[index] < floor:
                continue
            cost = self.tokenizer.count(sentence) + 1
            if used + cost > budget:
                continue
            chosen.append(index)
            seen.add(sentence)
            used += cost
        if not chosen:  # a single sentence longer than the budget: cut it by tokens
            tokens = self.tokenizer.encode(sentences[ranked[0]])  # type: ignore[attr-defined]
            return str(self.tokenizer.decode(tokens[: max(budget, 1)]))  # type: ignore[attr-defined]
        return " ".join(sentences[i] for i in sorted(chosen))

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        return self.summarize_text(text, max_tokens=max_tokens)

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        lines = [previous] if previous else []
        for run in runs:
            for message in run.messages:
                if message.role in ("user", "assistant") and message.text.strip():
                    lines.append(f"{message.role.capitalize()}: {message.text.strip()}")
        return self.summarize_text("\n\n".join(lines))

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        return self.summarize(previous, runs)
