"""LLM-backed ``ImportanceScorer`` and ``InsightExtractor`` on a LlamaIndex LLM.

The prompts (DB-GPT's) and the parsing of replies live in the core
(``offprompt.longterm.PromptedImportanceScorer`` / ``PromptedInsightExtractor``); these
classes only send the prompt as one user message through ``chat`` / ``achat``
(LlamaIndex adapts completion-only models to chat).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM

from offprompt.errors import ValidationError
from offprompt.longterm.scoring import (
    MemoryModelError,
    PromptedImportanceScorer,
    PromptedInsightExtractor,
)

__all__ = ["LLMImportanceScorer", "LLMInsightExtractor", "MemoryModelError"]


def _llm(model: Any) -> LLM:
    if not isinstance(model, LLM):
        raise ValidationError(f"model must be a LlamaIndex LLM, got {type(model).__name__}")
    return model


def _reply_text(answer: object, model: LLM) -> str:
    if isinstance(answer, ChatResponse):
        return answer.message.content or ""
    raise MemoryModelError(
        f"{type(model).__name__} returned {type(answer).__name__}, not a chat response"
    )


def _user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role=MessageRole.USER, content=text)]


class _LlamaIndexModel:
    model: LLM

    def _complete(self, prompt: str) -> str:
        return _reply_text(self.model.chat(_user(prompt)), self.model)

    async def _acomplete(self, prompt: str) -> str:
        return _reply_text(await self.model.achat(_user(prompt)), self.model)


class LLMImportanceScorer(_LlamaIndexModel, PromptedImportanceScorer):
    """Asks an LLM for a 1-10 importance rating and maps it to ``[0, 1]``.

    Args:
        model: Any LlamaIndex ``LLM``.
        **options: ``prompt``, ``scale``, ``default`` of
            :class:`~offprompt.longterm.PromptedImportanceScorer`.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> from offprompt.longterm import MemoryFragment
        >>> scorer = LLMImportanceScorer(MockLLM())  # MockLLM echoes; use a real LLM
        >>> 0 <= scorer.score(MemoryFragment(observation="I am allergic to nuts")) <= 1
        True
    """

    def __init__(self, model: LLM, **options: Any) -> None:
        self.model = _llm(model)
        super().__init__(**options)


class LLMInsightExtractor(_LlamaIndexModel, PromptedInsightExtractor):
    """Asks an LLM for high-level insights about fragments, one per line.

    Args:
        model: Any LlamaIndex ``LLM``.
        **options: ``prompt``, ``max_insights`` of
            :class:`~offprompt.longterm.PromptedInsightExtractor`.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> from offprompt.longterm import MemoryFragment
        >>> ex = LLMInsightExtractor(MockLLM(max_tokens=3))  # a real LLM in practice
        >>> isinstance(ex.extract([MemoryFragment(observation="Arrived early again")]), list)
        True
    """

    def __init__(self, model: LLM, **options: Any) -> None:
        self.model = _llm(model)
        super().__init__(**options)
