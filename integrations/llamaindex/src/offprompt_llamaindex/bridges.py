"""Bridges between LlamaIndex models and offprompt's protocols.

* :class:`LlamaIndexEmbedder`: any LlamaIndex ``BaseEmbedding`` as an offprompt ``Embedder``.
* :class:`OffpromptEmbedding`: an offprompt ``Embedder`` (``HashingEmbedder`` by default)
  as a LlamaIndex ``BaseEmbedding``, for indexes that must work offline.
* :class:`LlamaIndexSummarizer`: any LlamaIndex ``LLM`` as an offprompt ``Summarizer``
  and ``TextSummarizer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM

from offprompt.errors import SummarizationError, ValidationError
from offprompt.summarizers import RUNS_INSTRUCTIONS, TEXT_INSTRUCTIONS, Prompt, PromptedSummarizer
from offprompt.tokens import TokenCodec
from offprompt.vectors.embedders import CheckedEmbedder

if TYPE_CHECKING:
    from offprompt.vectors.embedders import Embedder

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexSummarizer",
    "OffpromptEmbedding",
    "SummarizationError",
]


# -- embeddings ---------------------------------------------------------------------------


class LlamaIndexEmbedder(CheckedEmbedder):
    """A LlamaIndex ``BaseEmbedding`` as an offprompt ``Embedder``.

    Documents go through ``get_text_embedding_batch`` (LlamaIndex batches them by the
    model's ``embed_batch_size``), queries through ``get_query_embedding``; the async
    twins use the model's own async methods. Every result is checked by the core's
    :class:`~offprompt.vectors.embedders.CheckedEmbedder`: one vector per text, all of
    :attr:`dimensions` finite floats.

    Args:
        embed_model: Any ``BaseEmbedding``.
        dimensions: The vector size, if known. Otherwise it is learnt from the first
            result, or, when :attr:`dimensions` is read first, by embedding one short
            probe text.

    Attributes:
        embed_model: The wrapped model.

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
        >>> embedder.dimensions, len(embedder.embed_query("hello"))
        (8, 8)
    """

    def __init__(self, embed_model: BaseEmbedding, *, dimensions: int | None = None) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise ValidationError(
                f"LlamaIndexEmbedder needs a llama_index BaseEmbedding, got {type(embed_model).__name__}"
            )
        super().__init__(dimensions=dimensions)
        self.embed_model = embed_model

    def __repr__(self) -> str:
        return (
            f"LlamaIndexEmbedder({type(self.embed_model).__name__}, dimensions={self._dimensions})"
        )

    @property
    def model_name(self) -> str:
        """The wrapped model's class name."""
        return type(self.embed_model).__name__

    def _embed_documents(self, texts: list[str]) -> Any:
        return self.embed_model.get_text_embedding_batch(texts)

    def _embed_query(self, text: str) -> Any:
        return self.embed_model.get_query_embedding(text)

    async def _aembed_documents(self, texts: list[str]) -> Any:
        return await self.embed_model.aget_text_embedding_batch(texts)

    async def _aembed_query(self, text: str) -> Any:
        return await self.embed_model.aget_query_embedding(text)


class OffpromptEmbedding(BaseEmbedding):
    """An offprompt ``Embedder`` as a LlamaIndex ``BaseEmbedding``.

    With no argument it wraps ``HashingEmbedder()`` (384 dimensions, deterministic,
    no model, no network), so a ``VectorStoreIndex`` works offline.

    Args:
        embedder: Any offprompt ``Embedder``; ``HashingEmbedder()`` if omitted.
        **kwargs: ``BaseEmbedding`` fields (``embed_batch_size``, ``callback_manager``...).

    Example:
        >>> emb = OffpromptEmbedding()
        >>> len(emb.get_text_embedding("hello")) == emb.embedder.dimensions
        True
    """

    model_name: str = "offprompt-hashing"
    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if embedder is None:
            from offprompt.vectors.embedders import HashingEmbedder

            embedder = HashingEmbedder()
        for method in ("embed_documents", "embed_query", "aembed_documents", "aembed_query"):
            if not callable(getattr(embedder, method, None)):
                raise ValidationError(
                    f"OffpromptEmbedding needs an offprompt Embedder; "
                    f"{type(embedder).__name__} has no {method}()"
                )
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "OffpromptEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The wrapped offprompt embedder."""
        result: Embedder = self._embedder
        return result

    def _get_query_embedding(self, query: str) -> list[float]:
        return list(self._embedder.embed_query(query))

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return list(await self._embedder.aembed_query(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return list(self._embedder.embed_documents([text])[0])

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return list((await self._embedder.aembed_documents([text]))[0])

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [list(v) for v in self._embedder.embed_documents(texts)]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [list(v) for v in await self._embedder.aembed_documents(texts)]


# -- summarizer ---------------------------------------------------------------------------

_SYSTEM = (
    "You write concise, factual summaries. Keep names, numbers, identifiers, decisions "
    "and open questions. Answer with the summary only, no preamble."
)


class LlamaIndexSummarizer(PromptedSummarizer):
    """Any LlamaIndex ``LLM`` as an offprompt ``Summarizer`` and ``TextSummarizer``.

    It asks the model through ``chat`` / ``achat`` (LlamaIndex adapts completion-only
    models) and cuts the answer to the token budget, so the result never exceeds
    ``max_tokens`` even when the model ignores the instruction. A text longer than
    ``max_input_tokens`` is summarized in pieces, then the pieces' summaries are
    summarized (the async twin does the pieces concurrently).

    Args:
        llm: Any LlamaIndex ``LLM``.
        max_tokens: Default budget of a summary.
        max_input_tokens: Largest piece of text sent in one call; by default the model's
            ``context_window`` minus ``max_tokens`` and room for the instructions.
        tokenizer: Counts and cuts tokens; offprompt's default tokenizer if omitted.

    Attributes:
        llm: The wrapped model.
        max_tokens: Default budget of a summary.

    Raises:
        SummarizationError: (from the methods) the model answered with no text.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> summarizer = LlamaIndexSummarizer(MockLLM(max_tokens=5), max_tokens=20)
        >>> summarizer.summarize_text("A long report about llamas.").split()
        ['text', 'text', 'text', 'text', 'text']
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_tokens: int = 256,
        max_input_tokens: int | None = None,
        tokenizer: TokenCodec | None = None,
        text_instructions: str = TEXT_INSTRUCTIONS,
        runs_instructions: str = RUNS_INSTRUCTIONS,
    ) -> None:
        if not isinstance(llm, LLM):
            raise ValidationError(
                f"LlamaIndexSummarizer needs a llama_index LLM, got {type(llm).__name__}"
            )
        if max_input_tokens is None and isinstance(max_tokens, int):
            max_input_tokens = llm.metadata.context_window - max_tokens - 256
        try:
            super().__init__(
                max_tokens=max_tokens,
                max_input_tokens=max_input_tokens,  # type: ignore[arg-type]
                tokenizer=tokenizer,
                text_instructions=text_instructions,
                runs_instructions=runs_instructions,
            )
        except ValidationError as exc:
            if "max_input_tokens" in str(exc):
                raise ValidationError(
                    f"{exc} (a model context window too small for the summary budget?)"
                ) from None
            raise
        self.llm = llm

    def __repr__(self) -> str:
        return f"LlamaIndexSummarizer({type(self.llm).__name__}, max_tokens={self.max_tokens})"

    # -- the model call: a Prompt is a system message and the instructions + text -------
    @staticmethod
    def _messages(prompt: Prompt) -> list[ChatMessage]:
        # Instructions go with the text: completion-only models, which LlamaIndex adapts
        # to chat, often drop the system message.
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=_SYSTEM),
            ChatMessage(role=MessageRole.USER, content=f"{prompt.instructions}\n\n{prompt.text}"),
        ]

    def _complete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        return [self.llm.chat(self._messages(p)) for p in prompts]

    async def _acomplete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        return await asyncio.gather(*(self.llm.achat(self._messages(p)) for p in prompts))

    def _answer_text(self, answer: Any) -> str | None:
        text = getattr(getattr(answer, "message", None), "content", None)
        return text if isinstance(text, str) else ("" if text is None else None)

    def _model_name(self) -> str:
        return type(self.llm).__name__
