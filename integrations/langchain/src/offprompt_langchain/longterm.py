"""LLM-backed ``ImportanceScorer`` and ``InsightExtractor`` on a LangChain chat model.

The prompts (DB-GPT's) and the parsing of replies live in the core
(``offprompt.longterm.PromptedImportanceScorer`` / ``PromptedInsightExtractor``); these
classes only send the prompt as one human message through ``invoke`` / ``ainvoke``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from offprompt.errors import ValidationError
from offprompt.longterm.scoring import (
    MemoryModelError,
    PromptedImportanceScorer,
    PromptedInsightExtractor,
)

__all__ = ["LLMImportanceScorer", "LLMInsightExtractor", "MemoryModelError"]


def _chat_model(model: Any) -> BaseChatModel:
    if not isinstance(model, BaseChatModel):
        raise ValidationError(
            f"model must be a LangChain BaseChatModel, got {type(model).__name__}"
        )
    return model


def _reply_text(answer: object, model: BaseChatModel) -> str:
    if isinstance(answer, BaseMessage):
        return answer.text
    if isinstance(answer, str):
        return answer
    raise MemoryModelError(
        f"{type(model).__name__} returned {type(answer).__name__}, not a message"
    )


class _LangChainModel:
    model: BaseChatModel

    def _complete(self, prompt: str) -> str:
        return _reply_text(self.model.invoke([HumanMessage(content=prompt)]), self.model)

    async def _acomplete(self, prompt: str) -> str:
        return _reply_text(await self.model.ainvoke([HumanMessage(content=prompt)]), self.model)


class LLMImportanceScorer(_LangChainModel, PromptedImportanceScorer):
    """Asks a chat model for a 1-10 importance rating and maps it to ``[0, 1]``.

    Args:
        model: Any LangChain ``BaseChatModel``.
        **options: ``prompt``, ``scale``, ``default`` of
            :class:`~offprompt.longterm.PromptedImportanceScorer`.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> from offprompt.longterm import MemoryFragment
        >>> scorer = LLMImportanceScorer(FakeListChatModel(responses=["Rating: 8"]))
        >>> scorer.score(MemoryFragment(observation="I am allergic to nuts"))
        0.8
    """

    def __init__(self, model: BaseChatModel, **options: Any) -> None:
        self.model = _chat_model(model)
        super().__init__(**options)


class LLMInsightExtractor(_LangChainModel, PromptedInsightExtractor):
    """Asks a chat model for high-level insights about fragments, one per line.

    Args:
        model: Any LangChain ``BaseChatModel``.
        **options: ``prompt``, ``max_insights`` of
            :class:`~offprompt.longterm.PromptedInsightExtractor`.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> from offprompt.longterm import MemoryFragment
        >>> ex = LLMInsightExtractor(FakeListChatModel(responses=["1. Values punctuality"]))
        >>> ex.extract([MemoryFragment(observation="Arrived 10 minutes early again")])
        ['Values punctuality']
    """

    def __init__(self, model: BaseChatModel, **options: Any) -> None:
        self.model = _chat_model(model)
        super().__init__(**options)
