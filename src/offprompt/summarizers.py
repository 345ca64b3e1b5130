"""Summarizer protocols and the offline extractive default.

Two shapes of summarizing exist in offprompt:

* :class:`Summarizer` folds conversation runs into a running summary
  (``SummaryConversationMemory``).
* :class:`TextSummarizer` condenses one long text (``TaskMemory.summarize``).

:class:`PromptedSummarizer` implements both over a language model, once: the adapters'
``LangChainSummarizer`` and ``LlamaIndexSummarizer`` only call their framework's model.
:class:`ExtractiveSummarizer` implements both offline, deterministically, with no model.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from offprompt.errors import SummarizationError, ValidationError
from offprompt.tokens import TokenCodec, default_tokenizer, require_codec

if TYPE_CHECKING:
    from offprompt.messages import Message

__all__ = [
    "RUNS_INSTRUCTIONS",
    "TEXT_INSTRUCTIONS",
    "ExtractiveSummarizer",
    "Prompt",
    "PromptedSummarizer",
    "RunLike",
    "Summarizer",
    "TextSummarizer",
    "run_transcript",
]


class RunLike(Protocol):
    """What a summarizer needs of a conversation run: its messages, in order."""

    @property
    def messages(self) -> Sequence[Message]:
        """The run's messages, in order."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """Folds runs into a running summary.

    ``summarize(previous, runs)`` returns the new summary of everything: the previous
    summary (``None`` the first time) plus ``runs``. It may raise; callers keep the old
    summary and retry those runs later.
    """

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """The new running summary: ``previous`` (``None`` at first) with ``runs`` folded in."""
        ...

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """Async twin of :meth:`summarize`."""
        ...


@runtime_checkable
class TextSummarizer(Protocol):
    """Condenses one text to at most ``max_tokens`` tokens (the summarizer's default if None)."""

    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """A summary of ``text`` within ``max_tokens`` (the summarizer's own budget when ``None``)."""
        ...

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`summarize_text`."""
        ...


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
        tokenizer: Counts the budget and cuts an over-long sentence (a
            :class:`~offprompt.tokens.TokenCodec`); the default tiktoken tokenizer if omitted.
    """

    SPECIFIC_BONUS = 0.6
    CARRIED_BONUS = 0.5
    FLOOR = 0.4

    def __init__(self, max_tokens: int = 256, tokenizer: TokenCodec | None = None) -> None:
        self.max_tokens = max_tokens
        self._tokenizer = require_codec(tokenizer) if tokenizer is not None else None

    @property
    def tokenizer(self) -> TokenCodec:
        """The tokenizer that measures the budget (the default one unless given)."""
        if self._tokenizer is None:
            self._tokenizer = default_tokenizer()
        return self._tokenizer

    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """The sentences that best represent ``text`` (word centrality, specific facts favoured)
        within ``max_tokens``; no model involved.
        """
        sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        return self._select(sentences, self.max_tokens if max_tokens is None else max_tokens)

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`summarize_text`."""
        return self.summarize_text(text, max_tokens=max_tokens)

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """The sentences of ``previous`` and of the runs that best represent them (facts already
        summarized favoured), within the budget.
        """
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
        """Async twin of :meth:`summarize`."""
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
            tokens = self.tokenizer.encode(sentences[ranked[0]])
            return self.tokenizer.decode(tokens[: max(budget, 1)])
        return " ".join(sentences[i] for i in sorted(chosen))


_SPEAKER = re.compile(r"^(User|Assistant): ")
_NAME = re.compile(r"(?<=\w )[A-Z][\w-]+")


def _unprefixed(sentence: str) -> str:
    return _SPEAKER.sub("", sentence, count=1)


def _is_specific(sentence: str) -> bool:
    """Numbers or names (capitalised words after the first): the facts worth keeping."""
    body = _unprefixed(sentence)
    return any(c.isdigit() for c in body) or bool(_NAME.search(body))


# -- LLM-backed summarizers: the loop, once ----------------------------------------------

TEXT_INSTRUCTIONS = (
    "You condense documents. Write a faithful summary of the text the user sends, keeping "
    "names, numbers, identifiers and conclusions. Answer with the summary only, in at most "
    "{max_tokens} tokens."
)
RUNS_INSTRUCTIONS = (
    "You keep the running summary of a conversation between a user and an assistant. "
    "Merge the previous summary (if any) and the new exchanges into one updated summary "
    "that keeps facts, decisions, names, numbers and open questions. Answer with the summary "
    "only, in at most {max_tokens} tokens."
)
PART_PREFIX = "Part {index} of {total} of a longer text:\n\n"
#: Tokens kept free in every prompt for the instructions and a part's header.
PROMPT_OVERHEAD = 48


@dataclass(frozen=True)
class Prompt:
    """One framework-neutral request to a model: instructions and the text they apply to.

    Adapters turn it into their framework's messages (e.g. a system and a user message).
    """

    instructions: str
    text: str


class PromptedSummarizer(ABC):
    """A language model as a :class:`Summarizer` and :class:`TextSummarizer`.

    The one implementation of the summarizing loop that every adapter shares: a text longer
    than ``max_input_tokens`` is cut (at whitespace, never inside a character) into labelled
    parts that fit one prompt; the parts are summarized in one batch, their summaries merged
    and cut again, until one prompt holds it all; the answer is cut to the token budget,
    so a summary never exceeds ``max_tokens`` even when the model ignores the instruction.
    The async twins tokenize in a worker thread and call the model's async API only.

    Subclasses implement only the model call: :meth:`_complete` / :meth:`_acomplete`
    (a batch of :class:`Prompt` to the model's answers) and :meth:`_answer_text` (the text
    of one answer, or None when it has none). Errors raised by the model propagate
    unchanged (``SummaryConversationMemory`` then keeps its old summary and retries); an
    answer without text raises :class:`~offprompt.errors.SummarizationError`.

    Args:
        max_tokens: Default budget of a summary, also stated in the prompt.
        max_input_tokens: The most tokens sent to the model in one prompt (at least 64).
        tokenizer: Counts and cuts tokens (a :class:`~offprompt.tokens.TokenCodec`);
            offprompt's default tokenizer if omitted.
        text_instructions: Instructions of :meth:`summarize_text`; ``{max_tokens}`` is
            filled in.
        runs_instructions: Instructions of :meth:`summarize`.
    """

    def __init__(
        self,
        *,
        max_tokens: int = 256,
        max_input_tokens: int = 6000,
        tokenizer: TokenCodec | None = None,
        text_instructions: str = TEXT_INSTRUCTIONS,
        runs_instructions: str = RUNS_INSTRUCTIONS,
    ) -> None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValidationError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if not isinstance(max_input_tokens, int) or max_input_tokens < 64:
            raise ValidationError(
                f"max_input_tokens must be an int >= 64, got {max_input_tokens!r}"
            )
        self.max_tokens = max_tokens
        self.max_input_tokens = max_input_tokens
        self._tokenizer = require_codec(tokenizer) if tokenizer is not None else None
        self.text_instructions = text_instructions
        self.runs_instructions = runs_instructions

    @property
    def tokenizer(self) -> TokenCodec:
        """The tokenizer that measures prompts and the budget (the default one unless given)."""
        if self._tokenizer is None:
            self._tokenizer = default_tokenizer()
        return self._tokenizer

    # -- what a subclass provides -----------------------------------------------------
    @abstractmethod
    def _complete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        """The model's answers to ``prompts``, in order (one call, or a batch)."""

    @abstractmethod
    async def _acomplete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        """Async twin of :meth:`_complete`, on the model's async API."""

    def _answer_text(self, answer: Any) -> str | None:
        """The text of one answer, or None if it carries none (default: a ``str``)."""
        return answer if isinstance(answer, str) else None

    def _model_name(self) -> str:
        return type(self).__name__

    # -- TextSummarizer ---------------------------------------------------------------
    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Summarize one text in at most ``max_tokens`` tokens (default: ``self.max_tokens``)."""
        budget = self._budget(max_tokens)
        if not _require_text(text).strip():
            return ""
        parts = self._parts(text)
        while len(parts) > 1:
            answers = self._complete([self._text_prompt(p, budget) for p in parts])
            parts = self._parts(self._merge(answers, len(parts)))
        (answer,) = self._complete([self._text_prompt(parts[0], budget)])
        return self._final(answer, budget)

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`summarize_text`."""
        budget = self._budget(max_tokens)
        if not _require_text(text).strip():
            return ""
        parts = await asyncio.to_thread(self._parts, text)
        while len(parts) > 1:
            answers = await self._acomplete([self._text_prompt(p, budget) for p in parts])
            parts = await asyncio.to_thread(self._parts, self._merge(answers, len(parts)))
        (answer,) = await self._acomplete([self._text_prompt(parts[0], budget)])
        return await asyncio.to_thread(self._final, answer, budget)

    # -- Summarizer -------------------------------------------------------------------
    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """The new running summary of ``previous`` plus ``runs``."""
        if not runs:
            return previous or ""
        transcript = run_transcript(previous, runs)
        if self.tokenizer.count(transcript) > self.max_input_tokens - PROMPT_OVERHEAD:
            transcript = self.summarize_text(transcript, max_tokens=self.max_input_tokens // 2)
        (answer,) = self._complete([self._runs_prompt(transcript, self.max_tokens)])
        return self._final(answer, self.max_tokens)

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """Async twin of :meth:`summarize`."""
        if not runs:
            return previous or ""
        transcript = run_transcript(previous, runs)
        count = await asyncio.to_thread(self.tokenizer.count, transcript)
        if count > self.max_input_tokens - PROMPT_OVERHEAD:
            transcript = await self.asummarize_text(
                transcript, max_tokens=self.max_input_tokens // 2
            )
        (answer,) = await self._acomplete([self._runs_prompt(transcript, self.max_tokens)])
        return await asyncio.to_thread(self._final, answer, self.max_tokens)

    # -- the loop's parts -------------------------------------------------------------
    def _budget(self, max_tokens: int | None) -> int:
        budget = self.max_tokens if max_tokens is None else max_tokens
        if not isinstance(budget, int) or budget < 1:
            raise ValidationError(f"max_tokens must be a positive int, got {max_tokens!r}")
        return budget

    def _text_prompt(self, text: str, budget: int) -> Prompt:
        return Prompt(self.text_instructions.replace("{max_tokens}", str(budget)), text)

    def _runs_prompt(self, transcript: str, budget: int) -> Prompt:
        return Prompt(self.runs_instructions.replace("{max_tokens}", str(budget)), transcript)

    def _parts(self, text: str) -> list[str]:
        """``text`` cut at whitespace into pieces that fit one prompt, each one labelled.

        Cuts are made on characters, not tokens, so no character is ever split (a token
        boundary can fall inside a multi-byte character).
        """
        room = self.max_input_tokens - PROMPT_OVERHEAD
        total = self.tokenizer.count(text)
        if total <= room:
            return [text]
        pieces = _cut(text, math.ceil(total * 1.1 / room))
        fitted: list[str] = []
        while pieces:
            piece = pieces.pop(0)
            if self.tokenizer.count(piece) <= room or len(piece) < 2:
                fitted.append(piece)
            else:
                pieces[:0] = _cut(piece, 2)
        return [
            PART_PREFIX.format(index=i + 1, total=len(fitted)) + piece
            for i, piece in enumerate(fitted)
        ]

    def _text_of(self, answer: Any) -> str:
        text = self._answer_text(answer)
        if text is None:
            raise SummarizationError(
                f"{self._model_name()} returned {type(answer).__name__}, not a message or text"
            )
        if not text.strip():
            raise SummarizationError(
                f"{self._model_name()} returned no summary text (an empty summary)"
            )
        return text

    def _merge(self, answers: Sequence[Any], parts: int) -> str:
        merged = "\n\n".join(self._text_of(a) for a in answers)
        # Guarantee progress: partial summaries longer than their parts would loop forever.
        limit = max(64, (parts * self.max_input_tokens) // 2)
        tokens = self.tokenizer.encode(merged)
        return self.tokenizer.decode(tokens[:limit]) if len(tokens) > limit else merged

    def _final(self, answer: Any, budget: int) -> str:
        text = self._text_of(answer).strip()
        tokens = self.tokenizer.encode(text)
        if len(tokens) > budget:
            text = self.tokenizer.decode(tokens[:budget]).rstrip()
        return text


def run_transcript(previous: str | None, runs: Sequence[RunLike]) -> str:
    """The previous summary and the runs as the plain-text transcript a model reads.

    Example:
        >>> from offprompt.messages import Message
        >>> class R:
        ...     messages = [Message.user("Check node 7."), Message.assistant("It is full.")]
        >>> print(run_transcript("The user runs a cluster.", [R()]))
        Previous summary:
        The user runs a cluster.
        <BLANKLINE>
        New exchanges:
        User: Check node 7.
        Assistant: It is full.
    """
    lines: list[str] = []
    if previous:
        lines.append(f"Previous summary:\n{previous}\n")
    if runs:
        lines.append("New exchanges:")
    for run in runs:
        for message in run.messages:
            if message.role == "system":
                continue
            text = message.text.strip()
            if message.role == "tool":
                label = f"Tool {message.name or message.tool_call_id or ''}".rstrip()
                lines.append(f"{label} result: {text}")
                continue
            speaker = "User" if message.role == "user" else "Assistant"
            if text:
                lines.append(f"{speaker}: {text}")
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                lines.append(f"{speaker} called tool {call.name}({arguments})")
            for image in message.images:
                lines.append(f"{speaker} attached {image.to_text()}")
    return "\n".join(lines)


def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"text must be str, got {type(text).__name__}")
    return text


def _cut(text: str, parts: int) -> list[str]:
    """``text`` in ``parts`` pieces of about equal length, each cut after whitespace if any."""
    size = max(1, len(text) // parts)
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = max(
                text.rfind(" ", start + size // 2, end), text.rfind("\n", start + size // 2, end)
            )
            if space > start:
                end = space + 1
        pieces.append(text[start:end])
        start = end
    return pieces
