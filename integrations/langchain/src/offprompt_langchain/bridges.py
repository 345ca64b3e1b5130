"""Bridges between LangChain models and offprompt's protocols.

* :class:`LangChainEmbedder`: any LangChain ``Embeddings`` as an offprompt ``Embedder``
  (what ``QdrantVectorStore`` and task memory use).
* :class:`OffpromptEmbeddings`: offprompt's offline ``HashingEmbedder`` (or any
  ``Embedder``) as a LangChain ``Embeddings``.
* :class:`LangChainSummarizer`: any LangChain chat model as an offprompt ``Summarizer``
  (conversation runs → running summary) and ``TextSummarizer`` (one long text → summary).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from offprompt.errors import SummarizationError, ValidationError
from offprompt.summarizers import RUNS_INSTRUCTIONS, TEXT_INSTRUCTIONS, Prompt, PromptedSummarizer
from offprompt.tokens import TokenCodec
from offprompt.vectors.embedders import CheckedEmbedder

if TYPE_CHECKING:
    from offprompt.vectors.embedders import Embedder

__all__ = [
    "LangChainEmbedder",
    "LangChainSummarizer",
    "OffpromptEmbeddings",
    "SummarizationError",
]

# -- embeddings -------------------------------------------------------------------------


class LangChainEmbedder(CheckedEmbedder):
    """Any LangChain ``Embeddings`` as an offprompt ``Embedder``.

    Every result is checked by the core's
    :class:`~offprompt.vectors.embedders.CheckedEmbedder`: one vector per text, all of
    ``dimensions`` finite floats. A mismatch is a
    :class:`~offprompt.errors.ValidationError` naming the problem, so a misbehaving
    model cannot write bad vectors into a store.

    Args:
        embeddings: The LangChain embeddings model.
        dimensions: The vector size, if known. Otherwise it is learnt from the first
            result, or, when :attr:`dimensions` is read first, by embedding one short
            probe text.

    Attributes:
        embeddings: The wrapped model.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=16))
        >>> embedder.dimensions, len(embedder.embed_query("hi"))
        (16, 16)
    """

    def __init__(self, embeddings: Embeddings, *, dimensions: int | None = None) -> None:
        if not isinstance(embeddings, Embeddings):
            raise ValidationError(
                f"LangChainEmbedder needs a langchain_core Embeddings, got {type(embeddings).__name__}"
            )
        super().__init__(dimensions=dimensions)
        self.embeddings = embeddings

    def __repr__(self) -> str:
        return f"LangChainEmbedder({type(self.embeddings).__name__}, dimensions={self._dimensions})"

    @property
    def model_name(self) -> str:
        """The wrapped model's class name."""
        return type(self.embeddings).__name__

    def _embed_documents(self, texts: list[str]) -> Any:
        return self.embeddings.embed_documents(texts)

    def _embed_query(self, text: str) -> Any:
        return self.embeddings.embed_query(text)

    async def _aembed_documents(self, texts: list[str]) -> Any:
        return await self.embeddings.aembed_documents(texts)

    async def _aembed_query(self, text: str) -> Any:
        return await self.embeddings.aembed_query(text)


class OffpromptEmbeddings(Embeddings):
    """An offprompt ``Embedder`` as a LangChain ``Embeddings``; offline by default.

    Args:
        embedder: Any offprompt ``Embedder``. Default: ``HashingEmbedder(dimensions)``,
            deterministic, no model, no network.
        dimensions: Vector size of the default ``HashingEmbedder`` (ignored when
            ``embedder`` is given).

    Attributes:
        embedder: The offprompt embedder doing the work.

    Example:
        >>> emb = OffpromptEmbeddings(dimensions=32)
        >>> len(emb.embed_query("where is the config?"))
        32
    """

    def __init__(self, embedder: Embedder | None = None, *, dimensions: int = 384) -> None:
        if embedder is None:
            from offprompt.vectors.embedders import HashingEmbedder

            embedder = HashingEmbedder(dimensions)
        for method in ("embed_documents", "embed_query", "aembed_documents", "aembed_query"):
            if not callable(getattr(embedder, method, None)):
                raise ValidationError(
                    f"OffpromptEmbeddings needs an offprompt Embedder; "
                    f"{type(embedder).__name__} has no {method}()"
                )
        self.embedder = embedder

    def __repr__(self) -> str:
        return f"OffpromptEmbeddings({self.embedder!r})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, as plain Python floats."""
        return [[float(x) for x in v] for v in self.embedder.embed_documents(_texts(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return [float(x) for x in self.embedder.embed_query(_text(text))]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the embedder's own async method)."""
        vectors = await self.embedder.aembed_documents(_texts(texts))
        return [[float(x) for x in v] for v in vectors]

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return [float(x) for x in await self.embedder.aembed_query(_text(text))]


def _texts(texts: Any) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValidationError(f"texts must be a list of str, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValidationError(f"texts[{index}] must be str, got {type(text).__name__}")
    return list(texts)


def _text(text: Any) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"text must be str, got {type(text).__name__}")
    return text


# -- summaries --------------------------------------------------------------------------


class LangChainSummarizer(PromptedSummarizer):
    """Any LangChain chat model as an offprompt ``Summarizer`` and ``TextSummarizer``.

    ``summarize(previous, runs)`` folds conversation runs into a running summary (for
    ``SummaryConversationMemory``); ``summarize_text(text)`` condenses one text (for
    ``TaskMemory.summarize``). Inputs longer than ``max_input_tokens`` are split into
    parts that are summarized separately (in one ``batch`` call) and then merged, as
    often as needed, so a 1 MB tool output never reaches the model in one prompt. The
    result is cut to ``max_tokens`` tokens if the model writes more. The async twins
    use the model's ``ainvoke`` / ``abatch`` and never block the event loop.

    Errors raised by the model propagate unchanged: ``SummaryConversationMemory`` keeps
    its old summary and retries those runs later. An empty answer raises
    :class:`SummarizationError`.

    Args:
        chat_model: A LangChain chat model (``BaseChatModel``) or any language model.
        max_tokens: Budget of a summary, also stated in the prompt.
        max_input_tokens: The most tokens sent to the model in one prompt.
        tokenizer: Counts and cuts tokens; offprompt's default tokenizer if omitted.
        text_instructions: System prompt for :meth:`summarize_text`; ``{max_tokens}``
            is filled in.
        runs_instructions: System prompt for :meth:`summarize`.

    Attributes:
        chat_model: The wrapped model.
        max_tokens: Default summary budget.
        max_input_tokens: Prompt budget per call.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> summarizer = LangChainSummarizer(FakeListChatModel(responses=["Short."]))
        >>> summarizer.summarize_text("A long report ...")
        'Short.'
    """

    def __init__(
        self,
        chat_model: BaseLanguageModel[Any],
        *,
        max_tokens: int = 256,
        max_input_tokens: int = 6000,
        tokenizer: TokenCodec | None = None,
        text_instructions: str = TEXT_INSTRUCTIONS,
        runs_instructions: str = RUNS_INSTRUCTIONS,
    ) -> None:
        if not isinstance(chat_model, BaseLanguageModel):
            raise ValidationError(
                f"LangChainSummarizer needs a LangChain chat model, got {type(chat_model).__name__}"
            )
        super().__init__(
            max_tokens=max_tokens,
            max_input_tokens=max_input_tokens,
            tokenizer=tokenizer,
            text_instructions=text_instructions,
            runs_instructions=runs_instructions,
        )
        self.chat_model = chat_model

    def __repr__(self) -> str:
        return (
            f"LangChainSummarizer({type(self.chat_model).__name__}, max_tokens={self.max_tokens})"
        )

    # -- the model call: a Prompt is a system and a human message ----------------------
    @staticmethod
    def _messages(prompt: Prompt) -> list[BaseMessage]:
        return [SystemMessage(prompt.instructions), HumanMessage(prompt.text)]

    def _complete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        if len(prompts) == 1:
            return [self.chat_model.invoke(self._messages(prompts[0]))]
        return self.chat_model.batch([self._messages(p) for p in prompts])

    async def _acomplete(self, prompts: Sequence[Prompt]) -> Sequence[Any]:
        if len(prompts) == 1:
            return [await self.chat_model.ainvoke(self._messages(prompts[0]))]
        return await self.chat_model.abatch([self._messages(p) for p in prompts])

    def _answer_text(self, answer: Any) -> str | None:
        if isinstance(answer, BaseMessage):
            return answer.text
        return answer if isinstance(answer, str) else None

    def _model_name(self) -> str:
        return type(self.chat_model).__name__
