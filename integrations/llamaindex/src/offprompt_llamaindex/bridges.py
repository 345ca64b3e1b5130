"""Bridges between LlamaIndex models and offprompt's protocols.

* :class:`LlamaIndexEmbedder`: any LlamaIndex ``BaseEmbedding`` as an offprompt ``Embedder``.
* :class:`OffpromptEmbedding`: an offprompt ``Embedder`` (``HashingEmbedder`` by default)
  as a LlamaIndex ``BaseEmbedding``, for indexes that must work offline.
* :class:`LlamaIndexSummarizer`: any LlamaIndex ``LLM`` as an offprompt ``Summarizer``
  and ``TextSummarizer``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM

from offprompt.errors import SummarizationError, ValidationError

if TYPE_CHECKING:
    from offprompt.summarizers import RunLike
    from offprompt.tokens import Tokenizer
    from offprompt.vectors.embedders import Embedder

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexSummarizer",
    "OffpromptEmbedding",
    "SummarizationError",
]


# -- embeddings ---------------------------------------------------------------------------


class LlamaIndexEmbedder:
    """A LlamaIndex ``BaseEmbedding`` as an offprompt ``Embedder``.

    Documents go through ``get_text_embedding_batch`` (LlamaIndex batches them by the
    model's ``embed_batch_size``), queries through ``get_query_embedding``; the async
    twins use the model's own async methods. Every vector is checked to have
    :attr:`dimensions` entries.

    Args:
        embed_model: Any ``BaseEmbedding``.
        dimensions: The vector size, if known; otherwise one probe text is embedded the
            first time it is needed.

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
        if dimensions is not None and (not isinstance(dimensions, int) or dimensions < 1):
            raise ValidationError(f"dimensions must be a positive int, got {dimensions!r}")
        self.embed_model = embed_model
        self._dimensions = dimensions

    def __repr__(self) -> str:
        return (
            f"LlamaIndexEmbedder({type(self.embed_model).__name__}, dimensions={self._dimensions})"
        )

    @property
    def dimensions(self) -> int:
        """Length of every vector; discovered by embedding a probe text if not given."""
        if self._dimensions is None:
            self._dimensions = len(self.embed_model.get_text_embedding("dimension probe"))
        return self._dimensions

    def _check(self, vectors: list[list[float]], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            raise ValidationError(
                f"{type(self.embed_model).__name__} returned {len(vectors)} vectors for {expected} texts"
            )
        size = self.dimensions
        for vector in vectors:
            if len(vector) != size:
                raise ValidationError(
                    f"{type(self.embed_model).__name__} returned a vector of {len(vector)} "
                    f"dimensions; expected {size}"
                )
        return [[float(x) for x in vector] for vector in vectors]

    @staticmethod
    def _texts(texts: Sequence[str]) -> list[str]:
        if isinstance(texts, str):
            raise ValidationError("embed_documents expects a list of texts, got one str")
        return list(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        items = self._texts(texts)
        if not items:
            return []
        return self._check(self.embed_model.get_text_embedding_batch(items), len(items))

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        return self._check([self.embed_model.get_query_embedding(text)], 1)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the model's ``aget_text_embedding_batch``)."""
        items = self._texts(texts)
        if not items:
            return []
        if self._dimensions is None:
            self._dimensions = len(await self.embed_model.aget_text_embedding("dimension probe"))
        vectors = await self.embed_model.aget_text_embedding_batch(items)
        return self._check(vectors, len(items))

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (the model's ``aget_query_embedding``)."""
        vector = await self.embed_model.aget_query_embedding(text)
        if self._dimensions is None:
            self._dimensions = len(vector)
        return self._check([vector], 1)[0]


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


def _transcript(runs: Sequence[RunLike]) -> str:
    lines: list[str] = []
    for run in runs:
        for message in run.messages:
            label = message.role.capitalize() + (f" ({message.name})" if message.name else "")
            text = message.text.strip()
            if text:
                lines.append(f"{label}: {text}")
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False)
                lines.append(f"{label} called tool {call.name}({args})")
    return "\n".join(lines)


class LlamaIndexSummarizer:
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
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if not isinstance(llm, LLM):
            raise ValidationError(
                f"LlamaIndexSummarizer needs a llama_index LLM, got {type(llm).__name__}"
            )
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValidationError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if max_input_tokens is None:
            max_input_tokens = llm.metadata.context_window - max_tokens - 256
        if not isinstance(max_input_tokens, int) or max_input_tokens < 64:
            raise ValidationError(
                f"max_input_tokens must be an int >= 64, got {max_input_tokens!r} "
                "(a model context window too small for the summary budget?)"
            )
        self.llm = llm
        self.max_tokens = max_tokens
        self.max_input_tokens = max_input_tokens
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            from offprompt.tokens import default_tokenizer

            self._tokenizer = default_tokenizer()
        return self._tokenizer

    # -- prompt building (shared by the sync and async twins) -----------------------------
    def _budget(self, max_tokens: int | None) -> int:
        budget = self.max_tokens if max_tokens is None else max_tokens
        if not isinstance(budget, int) or budget < 1:
            raise ValidationError(f"max_tokens must be a positive int, got {budget!r}")
        return budget

    def _messages(self, instruction: str, body: str) -> list[ChatMessage]:
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=_SYSTEM),
            ChatMessage(role=MessageRole.USER, content=f"{instruction}\n\n{body}"),
        ]

    def _text_prompt(self, text: str, budget: int) -> list[ChatMessage]:
        return self._messages(
            f"Summarize the following text in at most {budget} tokens.", f"<text>\n{text}\n</text>"
        )

    def _runs_prompt(
        self, previous: str | None, runs: Sequence[RunLike], budget: int
    ) -> list[ChatMessage]:
        return self._messages(
            f"Update the running summary of a conversation with the new turns below. "
            f"The new summary replaces the old one, so keep every fact that still matters. "
            f"At most {budget} tokens.",
            f"<previous_summary>\n{previous or '(none yet)'}\n</previous_summary>\n\n"
            f"<new_turns>\n{_transcript(runs)}\n</new_turns>",
        )

    def _pieces(self, text: str) -> list[str]:
        tokens = self.tokenizer.encode(text)  # type: ignore[attr-defined]
        size = self.max_input_tokens
        if len(tokens) <= size:
            return [text]
        return [
            str(self.tokenizer.decode(tokens[i : i + size]))  # type: ignore[attr-defined]
            for i in range(0, len(tokens), size)
        ]

    def _finish(self, answer: Any, budget: int) -> str:
        text = getattr(getattr(answer, "message", None), "content", None)
        if not isinstance(text, str) or not text.strip():
            raise SummarizationError(
                f"{type(self.llm).__name__} returned no summary text (got {text!r})"
            )
        text = text.strip()
        tokens = self.tokenizer.encode(text)  # type: ignore[attr-defined]
        if len(tokens) > budget:
            text = str(self.tokenizer.decode(tokens[:budget])).strip()  # type: ignore[attr-defined]
        return text

    # -- TextSummarizer -------------------------------------------------------------------
    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Condense ``text`` to at most ``max_tokens`` tokens (``self.max_tokens`` if None)."""
        budget = self._budget(max_tokens)
        if not text.strip():
            return ""
        pieces = self._pieces(text)
        while len(pieces) > 1:
            partial = [
                self._finish(self.llm.chat(self._text_prompt(p, budget)), budget) for p in pieces
            ]
            pieces = self._pieces("\n\n".join(partial))
        return self._finish(self.llm.chat(self._text_prompt(pieces[0], budget)), budget)

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`summarize_text`, using the model's ``achat``."""
        budget = self._budget(max_tokens)
        if not text.strip():
            return ""
        pieces = await asyncio.to_thread(self._pieces, text)  # tokenizing 1 MB takes a while
        while len(pieces) > 1:
            answers = await asyncio.gather(
                *(self.llm.achat(self._text_prompt(p, budget)) for p in pieces)
            )
            partial = [self._finish(a, budget) for a in answers]
            pieces = self._pieces("\n\n".join(partial))
        return self._finish(await self.llm.achat(self._text_prompt(pieces[0], budget)), budget)

    # -- Summarizer -------------------------------------------------------------------------
    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """The new running summary: ``previous`` plus ``runs``, in at most ``max_tokens``."""
        if not runs:
            return previous or ""
        return self._finish(
            self.llm.chat(self._runs_prompt(previous, runs, self.max_tokens)), self.max_tokens
        )

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        """Async twin of :meth:`summarize`, using the model's ``achat``."""
        if not runs:
            return previous or ""
        answer = await self.llm.achat(self._runs_prompt(previous, runs, self.max_tokens))
        return self._finish(answer, self.max_tokens)
