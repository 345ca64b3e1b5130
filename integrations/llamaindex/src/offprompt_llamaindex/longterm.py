"""LLM-backed ``ImportanceScorer`` and ``InsightExtractor`` on a LlamaIndex LLM.

Both send DB-GPT's prompts (``offprompt.longterm.DEFAULT_IMPORTANCE_PROMPT`` /
``DEFAULT_INSIGHT_PROMPT``) as one human message and parse the reply with offprompt's
``parse_rating`` / ``parse_insights``. They call ``chat`` / ``achat`` (LlamaIndex adapts
completion-only models to chat), so ``ascore`` / ``aextract`` are natively async.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM

from offprompt.errors import OffpromptError, ValidationError
from offprompt.longterm import (
    DEFAULT_IMPORTANCE_PROMPT,
    DEFAULT_INSIGHT_PROMPT,
    MemoryFragment,
    parse_insights,
    parse_rating,
)

__all__ = ["LLMImportanceScorer", "LLMInsightExtractor", "MemoryModelError"]


class MemoryModelError(OffpromptError):
    """The chat model's reply could not be used (no rating in it, not text)."""


def _reply_text(answer: object, model: LLM) -> str:
    if isinstance(answer, ChatResponse):
        return answer.message.content or ""
    raise MemoryModelError(
        f"{type(model).__name__} returned {type(answer).__name__}, not a chat response"
    )


def _user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role=MessageRole.USER, content=text)]


def _check_prompt(prompt: str, *fields: str) -> str:
    if not isinstance(prompt, str):
        raise ValidationError(f"prompt must be a str, got {type(prompt).__name__}")
    for field in fields:
        if "{" + field + "}" not in prompt:
            raise ValidationError(f"prompt must contain the {{{field}}} placeholder")
    return prompt


class LLMImportanceScorer:
    """Asks a chat model for a 1-10 importance rating and maps it to ``[0, 1]``.

    Args:
        model: Any LlamaIndex ``LLM``.
        prompt: Template with ``{content}`` (DB-GPT's importance prompt by default).
        scale: The rating scale the prompt asks for.
        default: Importance used when the reply holds no number; None raises
            :class:`MemoryModelError` instead.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> scorer = LLMImportanceScorer(MockLLM())  # MockLLM echoes; use a real LLM
        >>> 0 <= scorer.score(MemoryFragment(observation="I am allergic to nuts")) <= 1
        True
    """

    def __init__(
        self,
        model: LLM,
        *,
        prompt: str = DEFAULT_IMPORTANCE_PROMPT,
        scale: float = 10.0,
        default: float | None = 0.5,
    ) -> None:
        if not isinstance(model, LLM):
            raise ValidationError(f"model must be a LlamaIndex LLM, got {type(model).__name__}")
        if default is not None and not 0 <= default <= 1:
            raise ValidationError(f"default must be within [0, 1], got {default}")
        self.model = model
        self.prompt = _check_prompt(prompt, "content")
        self.scale = scale
        self.default = default

    def _messages(self, fragment: MemoryFragment) -> list[ChatMessage]:
        if not isinstance(fragment, MemoryFragment):
            raise ValidationError(f"expected a MemoryFragment, got {type(fragment).__name__}")
        return _user(self.prompt.replace("{content}", fragment.observation))

    def _parse(self, text: str) -> float:
        value = parse_rating(text, scale=self.scale)
        if value is not None:
            return value
        if self.default is None:
            raise MemoryModelError(f"no rating in the model's reply: {text[:200]!r}")
        return self.default

    def score(self, fragment: MemoryFragment) -> float:
        """The importance of ``fragment`` in ``[0, 1]``."""
        return self._parse(_reply_text(self.model.chat(self._messages(fragment)), self.model))

    async def ascore(self, fragment: MemoryFragment) -> float:
        """Async twin of :meth:`score` (the model's ``achat``)."""
        answer = await self.model.achat(self._messages(fragment))
        return self._parse(_reply_text(answer, self.model))


class LLMInsightExtractor:
    """Asks a chat model for high-level insights about fragments, one per line.

    Args:
        model: Any LlamaIndex ``LLM``.
        prompt: Template with ``{content}`` (the fragments, one per line) and optionally
            ``{max_insights}``.
        max_insights: Most insights kept from a reply.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> ex = LLMInsightExtractor(MockLLM(max_tokens=3))  # a real LLM in practice
        >>> isinstance(ex.extract([MemoryFragment(observation="Arrived early again")]), list)
        True
    """

    def __init__(
        self, model: LLM, *, prompt: str = DEFAULT_INSIGHT_PROMPT, max_insights: int = 3
    ) -> None:
        if not isinstance(model, LLM):
            raise ValidationError(f"model must be a LlamaIndex LLM, got {type(model).__name__}")
        if max_insights < 1:
            raise ValidationError(f"max_insights must be >= 1, got {max_insights}")
        self.model = model
        self.prompt = _check_prompt(prompt, "content")
        self.max_insights = max_insights

    def _messages(self, fragments: Sequence[MemoryFragment]) -> list[ChatMessage] | None:
        lines = []
        for f in fragments:
            if not isinstance(f, MemoryFragment):
                raise ValidationError(f"expected MemoryFragment items, got {type(f).__name__}")
            lines.append("- " + f.observation.replace("\n", " "))
        if not lines:
            return None
        text = self.prompt.replace("{content}", "\n".join(lines)).replace(
            "{max_insights}", str(self.max_insights)
        )
        return _user(text)

    def extract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Insights about ``fragments`` (``[]`` for none, without calling the model)."""
        messages = self._messages(fragments)
        if messages is None:
            return []
        reply = _reply_text(self.model.chat(messages), self.model)
        return parse_insights(reply, max_insights=self.max_insights)

    async def aextract(self, fragments: Sequence[MemoryFragment]) -> list[str]:
        """Async twin of :meth:`extract` (the model's ``achat``)."""
        messages = self._messages(fragments)
        if messages is None:
            return []
        reply = _reply_text(await self.model.achat(messages), self.model)
        return parse_insights(reply, max_insights=self.max_insights)
