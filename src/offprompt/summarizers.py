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
    """Picks the most informative sentences, in their original order. Offline, deterministic.

    Each sentence scores its centrality (how many of the text's frequent words it
    uses, normalised to the best sentence) plus a bonus when it is specific (numbers,
    names: the facts an agent must not forget). When folding runs, specific sentences
    carried over from the previous summary get a further bonus, so facts survive
    repeated folding while carried filler competes with newer sentences on centrality. Sentences that score
    far below the best are left out rather than used to fill the budget.

    Args:
        max_tokens: Budget of the summary.
        tokenizer: Counts the budget; the default tiktoken tokenizer if omitted.
    """

    SPECIFIC_BONUS = 0.6
    CARRIED_BONUS = 0.5
    FLOOR = 0.4

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
        sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        return self._select(sentences, self.max_tokens if max_tokens is None else max_tokens)

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        return self.summarize_text(text, max_tokens=max_tokens)

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        carried = [s.strip() for s in _SENTENCE.split(previous or "") if s.strip()]
        fresh: list[str] = []
        for run in runs:
            for message in run.messages:
                if message.role in ("user", "assistant") and message.text.strip():
                    # every sentence keeps its speaker, so it stands alone in the summary
                    prefix = f"{message.role.capitalize()}: "
                    fresh += [
                        prefix + s.strip() for s in _SENTENCE.split(message.text) if s.strip()
                    ]
        return self._select(carried + fresh, self.max_tokens, carried=set(carried))

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        return self.summarize(previous, runs)

    def _select(self, sentences: list[str], budget: int, carried: set[str] = frozenset()) -> str:  # type: ignore[assignment]
        if not sentences:
            return ""
        frequencies = Counter(
            w
            for s in sentences
            for w in _WORD.findall(_unprefixed(s).lower())
            if w not in _STOPWORDS
        )

        def centrality(sentence: str) -> float:
            words = [w for w in _WORD.findall(_unprefixed(sentence).lower()) if w not in _STOPWORDS]
            return sum(frequencies[w] for w in set(words)) / math.sqrt(1 + len(words))

        raw = [centrality(s) for s in sentences]
        best = max(raw) or 1.0
        scores = []
        for sentence, c in zip(sentences, raw, strict=True):
            score = c / best
            if _is_specific(sentence):
                score += self.SPECIFIC_BONUS
                # a fact already in the summary stays; carried filler competes as new
                score += self.CARRIED_BONUS if sentence in carried else 0.0
            scores.append(score)
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
        chosen: list[int] = []
        used = 0
        seen: set[str] = set()
        for index in ranked:
            sentence = sentences[index]
            if sentence in seen or scores[index] < self.FLOOR:
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


_SPEAKER = re.compile(r"^(User|Assistant): ")
_NAME = re.compile(r"(?<=\w )[A-Z][\w-]+")


def _unprefixed(sentence: str) -> str:
    return _SPEAKER.sub("", sentence, count=1)


def _is_specific(sentence: str) -> bool:
    """Numbers or names (capitalised words after the first): the facts worth keeping."""
    body = _unprefixed(sentence)
    return any(c.isdigit() for c in body) or bool(_NAME.search(body))
