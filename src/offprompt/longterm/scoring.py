"""Importance scoring and insight extraction: protocols, offline defaults, reply parsing.

DB-GPT asks a model to rate each observation from 1 to 10 (``LLMImportanceScorer``)
and to state high-level insights about a set of memories (``LLMInsightExtractor``).
The protocols here carry those two jobs; :class:`HeuristicImportanceScorer` and
:class:`ExtractiveInsightExtractor` do them offline, and the LangChain / LlamaIndex
adapters do them with a chat model, parsing the replies with :func:`parse_rating` and
:func:`parse_insights` (kept here so both adapters parse the same way).
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from offprompt.errors import MemoryModelError, ValidationError
from offprompt.longterm.fragment import MemoryFragment
from offprompt.summarizers import ExtractiveSummarizer

__all__ = [
    "DEFAULT_IMPORTANCE_PROMPT",
    "DEFAULT_INSIGHT_PROMPT",
    "ExtractiveInsightExtractor",
    "HeuristicImportanceScorer",
    "ImportanceScorer",
    "InsightExtractor",
    "MemoryModelError",
    "PromptedImportanceScorer",
    "PromptedInsightExtractor",
    "parse_insights",
    "parse_rating",
]

#: DB-GPT's importance prompt (``{content}`` is the observation).
DEFAULT_IMPORTANCE_PROMPT = (
    "Please give an importance score between 1 to 10 for the following observation. "
    "Higher score indicates the observation is more important. More rules that should "
    "be followed are:\n"
    "(1): Learning experience of a certain skill is important\n"
    "(2): The occurrence of a particular event is important\n"
    "(3): User thoughts and emotions matter\n"
    "(4): More informative indicates more important.\n"
    "Please respond with a single integer.\n"
    "Observation: {content}\n"
    "Rating:"
)

#: DB-GPT's insight prompt, asking for one insight per line (``{content}``: the memories).
DEFAULT_INSIGHT_PROMPT = (
    "There are some memories:\n{content}\n"
    "Can you infer from the above memories the high-level insights for this person's "
    "character? The insights need to be significantly different from the content and "
    "structure of the original memories. Respond with at most {max_insights} insights, "
    "one per line.\n\nResults:"
)


@runtime_checkable
class ImportanceScorer(Protocol):
    """Rates how worth remembering a fragment is, in ``[0, 1]``."""

    def score(self, fragment: MemoryFragment) -> float:
        """How important ``fragment`` is, from 0.0 (trivia) to 1.0."""
        ...

    async def ascore(self, fragment: MemoryFragment) -> float:
        """Async twin of :meth:`score`."""
        ...


@runtime_checkable
class InsightExtractor(Protocol):
    """Distils high-level insights (one sentence each) from a group of fragments."""

    def extract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Short insights drawn from ``fragments`` (``[]`` when there is none)."""
        ...

    async def aextract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Async twin of :meth:`extract`."""
        ...


_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)(?:\s*(?:/|out of)\s*(\d+(?:\.\d+)?))?", re.I)
_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip


def parse_rating(text: str, *, scale: float = 10.0) -> float | None:
    """The first rating in a model's reply, mapped from ``[0, scale]`` to ``[0, 1]``.

    Understands ``"7"``, ``"Rating: 8/10"``, ``"**6** out of 10"``, ``"7.5"``,
    ``"nine"``; a ``x/y`` form is read as ``x`` on a scale of ``y``. Values outside the
    scale are clamped. Returns None when the reply holds no number.

    Example:
        >>> parse_rating("Rating: 8/10 - a clear preference")
        0.8
        >>> parse_rating("I cannot rate this") is None
        True
    """
    if not isinstance(text, str):
        raise ValidationError(f"parse_rating: reply must be a str, got {type(text).__name__}")
    if scale <= 0:
        raise ValidationError(f"parse_rating: scale must be positive, got {scale}")
    match = _NUMBER.search(text)
    if match is not None:
        value = float(match.group(1))
        if match.group(2) is not None and float(match.group(2)) > 0:
            value = value / float(match.group(2)) * scale
    else:
        words = re.findall(r"[a-z]+", text.lower())
        found = next((w for w in words if w in _WORD_NUMBERS), None)
        if found is None:
            return None
        value = float(_WORD_NUMBERS[found])
    if not math.isfinite(value):
        return None
    return min(max(value / scale, 0.0), 1.0)


_BULLET = re.compile(r"^\s*(?:[-*\u2022]+|\(?\d+[.)]|\d+\s*[:-])\s*")
_PREAMBLE = re.compile(r"^(?:here (?:are|is)|insights?|results?)\b[^:]*:\s*$", re.I)


def parse_insights(text: str, *, max_insights: int | None = None) -> list[str]:
    """Insight lines from a model's reply: bullets and numbering stripped, blanks dropped.

    A lead-in line such as ``"Here are the insights:"`` is skipped, duplicates are
    removed, and at most ``max_insights`` are kept.

    Example:
        >>> parse_insights("Here are the insights:\\n1. Likes tea\\n- Works nights\\n\\n2. Likes tea")
        ['Likes tea', 'Works nights']
    """
    if not isinstance(text, str):
        raise ValidationError(f"parse_insights: reply must be a str, got {type(text).__name__}")
    out: list[str] = []
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip().strip("*").strip()
        if not line or _PREAMBLE.match(line) or line in out:
            continue
        out.append(line)
        if max_insights is not None and len(out) >= max_insights:
            break
    return out


_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|mine|we|our)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(prefer\w*|like[sd]?|love[sd]?|hate[sd]?|dislike[sd]?|favou?rite|always|never|"
    r"want[s]?|need[s]?|allerg\w*|remember|important|must|birthday|deadline|call me|"
    r"my name|don't|do not)\b",
    re.I,
)
_NUMBERISH = re.compile(r"\d")
_TRIVIAL = re.compile(r"^\W*(hi|hello|hey|ok|okay|thanks|thank you|bye|yes|no|sure)\W*$", re.I)


class HeuristicImportanceScorer:
    """Offline importance: length, preference keywords, numbers and first-person signals.

    ``score = base + length + keywords + numbers + first_person`` clamped to ``[0, 1]``,
    where ``base=0.1``, ``length`` grows to 0.25 at 40 words, each preference keyword
    adds 0.15 (at most 0.45), any digit adds 0.1 and first-person wording adds 0.1.
    Greetings and acknowledgements (``"ok"``, ``"thanks"``) score ``0.0``.

    Example:
        >>> s = HeuristicImportanceScorer()
        >>> s.score(MemoryFragment(observation="ok")) < s.score(
        ...     MemoryFragment(observation="I prefer aisle seats on flights over 3 hours"))
        True
    """

    def __init__(self, base: float = 0.1) -> None:
        if not 0 <= base <= 1:
            raise ValidationError(f"base must be within [0, 1], got {base}")
        self.base = base

    def score_text(self, text: str) -> float:
        """The importance of ``text``."""
        if _TRIVIAL.match(text):
            return 0.0
        words = len(text.split())
        value = self.base + min(words / 40, 1.0) * 0.25
        value += min(len(_PREFERENCE.findall(text)) * 0.15, 0.45)
        if _NUMBERISH.search(text):
            value += 0.1
        if _FIRST_PERSON.search(text):
            value += 0.1
        return round(min(max(value, 0.0), 1.0), 6)

    def score(self, fragment: MemoryFragment) -> float:
        """The importance of ``fragment.observation``."""
        return self.score_text(fragment.observation)

    async def ascore(self, fragment: MemoryFragment) -> float:
        """Async twin of :meth:`score` (pure CPU, runs inline)."""
        return self.score(fragment)


class ExtractiveInsightExtractor:
    """Offline insights: the most central sentences of the fragments (extractive summary).

    Uses :class:`offprompt.summarizers.ExtractiveSummarizer` over the fragments'
    observations and returns its sentences, one insight each, at most ``max_insights``.

    Example:
        >>> ex = ExtractiveInsightExtractor(max_insights=1)
        >>> ex.extract([MemoryFragment(observation="Alice likes green tea."),
        ...             MemoryFragment(observation="Alice drinks green tea every morning.")])
        ['Alice likes green tea.']
    """

    def __init__(self, max_insights: int = 3, max_tokens: int = 96) -> None:
        if max_insights < 1:
            raise ValidationError(f"max_insights must be >= 1, got {max_insights}")
        self.max_insights = max_insights
        self.summarizer = ExtractiveSummarizer(max_tokens=max_tokens)

    def extract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Insights of ``fragments`` (``[]`` for none)."""
        texts = [f.observation.strip() for f in fragments]
        if not texts:
            return []
        joined = "\n\n".join(t if t.endswith((".", "!", "?")) else t + "." for t in texts)
        summary = self.summarizer.summarize_text(joined)
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", summary) if s.strip()]
        out: list[str] = []
        for sentence in sentences:
            if sentence not in out:
                out.append(sentence)
            if len(out) >= self.max_insights:
                break
        return out

    async def aextract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Async twin of :meth:`extract` (runs in a worker thread)."""
        return await asyncio.to_thread(self.extract, fragments)


# -- model-backed scorers: the prompt and parsing here, the model call in the adapters --


def _check_prompt(prompt: str, *fields: str) -> str:
    if not isinstance(prompt, str):
        raise ValidationError(f"prompt must be a str, got {type(prompt).__name__}")
    for field in fields:
        if "{" + field + "}" not in prompt:
            raise ValidationError(f"prompt must contain the {{{field}}} placeholder")
    return prompt


class PromptedImportanceScorer(ABC):
    """An :class:`ImportanceScorer` that asks a model for a rating on ``scale``.

    Builds DB-GPT's prompt and parses the reply with :func:`parse_rating`; a subclass
    only sends one prompt to its framework's model (:meth:`_complete` / :meth:`_acomplete`).

    Args:
        prompt: Template with ``{content}`` (DB-GPT's importance prompt by default).
        scale: The rating scale the prompt asks for.
        default: Importance used when the reply holds no number; None raises
            :class:`MemoryModelError` instead.
    """

    def __init__(
        self,
        *,
        prompt: str = DEFAULT_IMPORTANCE_PROMPT,
        scale: float = 10.0,
        default: float | None = 0.5,
    ) -> None:
        if default is not None and not 0 <= default <= 1:
            raise ValidationError(f"default must be within [0, 1], got {default}")
        self.prompt = _check_prompt(prompt, "content")
        self.scale = scale
        self.default = default

    @abstractmethod
    def _complete(self, prompt: str) -> str:
        """The model's reply to ``prompt``, as text."""

    @abstractmethod
    async def _acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`_complete`."""

    def _prompt(self, fragment: MemoryFragment) -> str:
        if not isinstance(fragment, MemoryFragment):
            raise ValidationError(f"expected a MemoryFragment, got {type(fragment).__name__}")
        return self.prompt.replace("{content}", fragment.observation)

    def _parse(self, text: str) -> float:
        value = parse_rating(text, scale=self.scale)
        if value is not None:
            return value
        if self.default is None:
            raise MemoryModelError(f"no rating in the model's reply: {text[:200]!r}")
        return self.default

    def score(self, fragment: MemoryFragment) -> float:
        """The importance of ``fragment`` in ``[0, 1]``."""
        return self._parse(self._complete(self._prompt(fragment)))

    async def ascore(self, fragment: MemoryFragment) -> float:
        """Async twin of :meth:`score`."""
        return self._parse(await self._acomplete(self._prompt(fragment)))


class PromptedInsightExtractor(ABC):
    """An :class:`InsightExtractor` that asks a model for insights, one per line.

    Builds DB-GPT's insight prompt and parses the reply with :func:`parse_insights`; a
    subclass only sends one prompt to its framework's model.

    Args:
        prompt: Template with ``{content}`` (the fragments, one per line) and optionally
            ``{max_insights}``.
        max_insights: Most insights kept from a reply.
    """

    def __init__(self, *, prompt: str = DEFAULT_INSIGHT_PROMPT, max_insights: int = 3) -> None:
        if max_insights < 1:
            raise ValidationError(f"max_insights must be >= 1, got {max_insights}")
        self.prompt = _check_prompt(prompt, "content")
        self.max_insights = max_insights

    @abstractmethod
    def _complete(self, prompt: str) -> str:
        """The model's reply to ``prompt``, as text."""

    @abstractmethod
    async def _acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`_complete`."""

    def _prompt(self, fragments: Sequence[MemoryFragment]) -> str | None:
        lines = []
        for f in fragments:
            if not isinstance(f, MemoryFragment):
                raise ValidationError(f"expected MemoryFragment items, got {type(f).__name__}")
            lines.append("- " + f.observation.replace("\n", " "))
        if not lines:
            return None
        return self.prompt.replace("{content}", "\n".join(lines)).replace(
            "{max_insights}", str(self.max_insights)
        )

    def extract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Insights about ``fragments`` (``[]`` for none, without calling the model)."""
        prompt = self._prompt(fragments)
        if prompt is None:
            return []
        return parse_insights(self._complete(prompt), max_insights=self.max_insights)

    async def aextract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Async twin of :meth:`extract`."""
        prompt = self._prompt(fragments)
        if prompt is None:
            return []
        return parse_insights(await self._acomplete(prompt), max_insights=self.max_insights)
