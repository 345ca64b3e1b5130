"""LlamaIndexEmbedder, OffpromptEmbedding and LlamaIndexSummarizer with real LlamaIndex classes.

Fakes: ``CountingEmbedding`` (a deterministic ``BaseEmbedding`` subclass), LlamaIndex's
own ``MockEmbedding`` and ``MockLLM``, and ``offprompt_llamaindex.testing.ScriptedFunctionLLM``
(answers from a script, records each call and the method it came through).
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from offprompt_llamaindex import (
    LlamaIndexEmbedder,
    LlamaIndexSummarizer,
    OffpromptEmbedding,
    SummarizationError,
)

from offprompt.errors import ValidationError
from offprompt.messages import Message, ToolCall
from offprompt.summarizers import Summarizer, TextSummarizer
from offprompt.tokens import default_tokenizer
from offprompt.vectors.embedders import CheckedEmbedder, Embedder, HashingEmbedder

# -- LlamaIndexEmbedder ----------------------------------------------------------------------


def test_embedder_wraps_any_base_embedding(counting_embedding: Any) -> None:
    embedder = LlamaIndexEmbedder(counting_embedding)
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 8  # discovered with one probe
    assert embedder.embed_documents(["abc", "hhh", ""]) == [
        [1, 1, 1, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 3],
        [0] * 8,
    ]
    assert embedder.embed_query("Bad") == [1, 1, 0, 1, 0, 0, 0, 0]
    assert embedder.embed_documents([]) == []


async def test_embedder_async_twins_use_the_models_async_methods(counting_embedding: Any) -> None:
    embedder = LlamaIndexEmbedder(counting_embedding, dimensions=8)
    docs, query = await asyncio.gather(
        embedder.aembed_documents(["ab", "gg"]), embedder.aembed_query("h")
    )
    assert docs == [[1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 2, 0]]
    assert query == [0, 0, 0, 0, 0, 0, 0, 1]
    assert counting_embedding.used and all(u.startswith("async") for u in counting_embedding.used)


def test_embedder_with_llamaindex_mock_embedding_and_batches() -> None:
    model = MockEmbedding(embed_dim=16, embed_batch_size=3)
    embedder = LlamaIndexEmbedder(model)
    vectors = embedder.embed_documents([f"t{i}" for i in range(7)])  # three batches
    assert len(vectors) == 7 and all(len(v) == 16 for v in vectors)


def test_embedder_checks_input_and_output(counting_embedding: Any) -> None:
    with pytest.raises(ValidationError, match="BaseEmbedding"):
        LlamaIndexEmbedder(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="positive int"):
        LlamaIndexEmbedder(counting_embedding, dimensions=0)
    with pytest.raises(ValidationError, match="one str"):
        LlamaIndexEmbedder(counting_embedding).embed_documents("abc")
    wrong = LlamaIndexEmbedder(counting_embedding, dimensions=4)
    with pytest.raises(ValidationError, match="8 dimensions, expected 4"):
        wrong.embed_query("a")


class NaNEmbedding(BaseEmbedding):
    """A real ``BaseEmbedding`` whose third value of every vector is ``bad``."""

    bad: float = math.nan

    def _vector(self) -> list[float]:
        return [0.5, 0.25, self.bad, 1.0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector()

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._vector()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
async def test_embedder_refuses_nan_and_infinity_naming_embedder_and_position(bad: float) -> None:
    embedder = LlamaIndexEmbedder(NaNEmbedding(bad=bad))
    for attempt in (
        lambda: embedder.embed_documents(["a", "b"]),
        lambda: embedder.embed_query("a"),
    ):
        with pytest.raises(ValidationError, match="NaN or infinity") as info:
            attempt()
        assert "NaNEmbedding" in str(info.value) and "position 2" in str(info.value)
    for coroutine in (embedder.aembed_documents(["a"]), embedder.aembed_query("a")):
        with pytest.raises(ValidationError, match="position 2"):
            await coroutine


async def test_embedder_async_path_learns_dimensions_without_a_probe(
    counting_embedding: Any,
) -> None:
    embedder = LlamaIndexEmbedder(counting_embedding)
    assert await embedder.aembed_documents(["ab", "gg"]) == [
        [1, 1, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 2, 0],
    ]
    assert counting_embedding.used == ["async-text", "async-text"]  # the texts, no probe
    assert embedder.dimensions == 8 and len(counting_embedding.used) == 2
    fresh = LlamaIndexEmbedder(type(counting_embedding)())
    assert fresh.embed_documents(["h"]) == [[0, 0, 0, 0, 0, 0, 0, 1]]
    assert fresh.embed_model.used == ["sync-text"]  # the sync path spends no probe either


def test_embedder_concurrent_first_use_agrees_on_dimensions() -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=32))
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: embedder.embed_documents([f"text {i}"] * 5), range(32)))
    assert all(len(v) == 32 for batch in results for v in batch)
    assert embedder.dimensions == 32
    assert isinstance(embedder, CheckedEmbedder)


# -- OffpromptEmbedding ---------------------------------------------------------------------


def test_offprompt_embedding_defaults_to_hashing_embedder() -> None:
    embedding = OffpromptEmbedding()
    reference = HashingEmbedder()
    assert isinstance(embedding.embedder, HashingEmbedder)
    assert (
        embedding.get_text_embedding("llamas eat grass")
        == reference.embed_documents(["llamas eat grass"])[0]
    )
    assert embedding.get_query_embedding("grass") == reference.embed_query("grass")
    batch = embedding.get_text_embedding_batch(["a b", "c d", "ünïcødé 🦙"])
    assert batch == reference.embed_documents(["a b", "c d", "ünïcødé 🦙"])


async def test_offprompt_embedding_async_and_custom_embedder() -> None:
    embedding = OffpromptEmbedding(HashingEmbedder(dimensions=32))
    vector = await embedding.aget_query_embedding("hello")
    texts = await embedding.aget_text_embedding_batch(["hello", "world"])
    assert len(vector) == 32 and len(texts) == 2
    assert texts[0] == HashingEmbedder(dimensions=32).embed_documents(["hello"])[0]
    with pytest.raises(ValidationError, match="no embed_documents"):
        OffpromptEmbedding(object())  # type: ignore[arg-type]


def test_offprompt_embedding_drives_a_real_vector_index_offline() -> None:
    docs = [
        Document(text="Qdrant stores vectors and payloads for similarity search."),
        Document(text="Llamas are domesticated camelids from South America."),
        Document(text="Sourdough bread needs a starter, flour, water and salt."),
    ]
    index = VectorStoreIndex.from_documents(docs, embed_model=OffpromptEmbedding())
    nodes = index.as_retriever(similarity_top_k=1).retrieve("which camelids live in South America")
    assert "Llamas" in nodes[0].node.get_content()


def test_round_trip_bridge_llamaindex_embedder_over_offprompt_embedding() -> None:
    embedder = LlamaIndexEmbedder(OffpromptEmbedding(HashingEmbedder(dimensions=64)))
    assert embedder.dimensions == 64
    assert embedder.embed_query("x y") == HashingEmbedder(dimensions=64).embed_query("x y")


# -- LlamaIndexSummarizer --------------------------------------------------------------------


@dataclass
class FakeRun:
    messages: list[Message]


def _runs() -> list[FakeRun]:
    return [
        FakeRun(
            [
                Message.user("Book a flight to Oslo on 3 May."),
                Message.assistant(
                    "",
                    tool_calls=[ToolCall(id="c1", name="search_flights", arguments={"to": "OSL"})],
                ),
                Message.tool("SK123 at 09:10", tool_call_id="c1", name="search_flights"),
                Message.assistant("SK123 leaves at 09:10."),
            ]
        ),
    ]


def test_summarizer_implements_both_protocols(make_llm: Any) -> None:
    summarizer = LlamaIndexSummarizer(make_llm())
    assert isinstance(summarizer, Summarizer) and isinstance(summarizer, TextSummarizer)


def test_summarize_runs_sends_previous_summary_and_transcript(make_llm: Any) -> None:
    llm = make_llm(script=["User flies SK123 to Oslo on 3 May at 09:10."])
    summary = LlamaIndexSummarizer(llm, max_tokens=50).summarize("User lives in Bergen.", _runs())
    assert summary == "User flies SK123 to Oslo on 3 May at 09:10."
    (sent,) = llm.calls
    (method,) = llm.methods
    prompt = sent[-1].content
    assert method == "chat"
    assert "User lives in Bergen." in prompt and "Book a flight to Oslo" in prompt
    assert 'search_flights({"to": "OSL"})' in prompt and "SK123 at 09:10" in prompt
    assert "50 tokens" in prompt


async def test_async_twins_use_achat(make_llm: Any) -> None:
    llm = make_llm(script=["short"])
    summarizer = LlamaIndexSummarizer(llm)
    results = await asyncio.gather(
        summarizer.asummarize(None, _runs()), summarizer.asummarize_text("Some text.")
    )
    assert results == ["short", "short"]
    assert llm.methods == ["achat", "achat"]


def test_output_is_cut_to_the_budget(make_llm: Any) -> None:
    llm = make_llm(script=["word " * 500])
    out = LlamaIndexSummarizer(llm, max_tokens=10).summarize_text("text to condense")
    assert 0 < default_tokenizer().count(out) <= 10
    assert (
        default_tokenizer().count(LlamaIndexSummarizer(llm).summarize_text("x", max_tokens=3)) <= 3
    )


@pytest.mark.parametrize("use_async", [False, True])
async def test_long_text_is_summarized_in_pieces(make_llm: Any, use_async: bool) -> None:
    llm = make_llm(script=["piece summary"])
    summarizer = LlamaIndexSummarizer(llm, max_tokens=20, max_input_tokens=100)
    text = " ".join(
        f"Fact {i}: the value of item {i} is {i * 7}." for i in range(120)
    )  # ~1,700 tokens
    result = (
        await summarizer.asummarize_text(text) if use_async else summarizer.summarize_text(text)
    )
    assert result == "piece summary"
    sent = [msgs[-1].content for msgs in llm.calls]
    assert len(sent) > 2
    assert all(default_tokenizer().count(s) < 100 + 80 for s in sent)  # each call stays bounded
    assert "piece summary" in sent[-1]  # the last call condenses the pieces' summaries
    assert "Fact 0:" in "".join(sent) and "Fact 119:" in "".join(sent)  # nothing skipped


def test_empty_input_and_empty_answer(make_llm: Any) -> None:
    llm = make_llm(script=["   "])
    summarizer = LlamaIndexSummarizer(llm)
    assert summarizer.summarize_text("  \n") == "" and llm.calls == []
    assert summarizer.summarize("kept", []) == "kept"
    with pytest.raises(SummarizationError, match="no summary text"):
        summarizer.summarize_text("real text")
    with pytest.raises(SummarizationError):
        summarizer.summarize(None, _runs())


def test_llm_errors_propagate_so_callers_keep_the_old_summary(make_llm: Any) -> None:
    class Broken(make_llm):  # type: ignore[misc, valid-type]
        def chat(self, messages: Any, **kwargs: Any) -> Any:
            raise RuntimeError("provider down")

    with pytest.raises(RuntimeError, match="provider down"):
        LlamaIndexSummarizer(Broken()).summarize("old", _runs())


def test_summarizer_with_llamaindex_mock_llm() -> None:
    summarizer = LlamaIndexSummarizer(MockLLM(max_tokens=4), max_tokens=30)
    assert summarizer.summarize_text("anything at all") == "text text text text"


def test_summarizer_validates_arguments(make_llm: Any) -> None:
    with pytest.raises(ValidationError, match="llama_index LLM"):
        LlamaIndexSummarizer("gpt")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_tokens"):
        LlamaIndexSummarizer(make_llm(), max_tokens=0)
    with pytest.raises(ValidationError, match="max_input_tokens"):
        LlamaIndexSummarizer(make_llm(context_window=300), max_tokens=256)
    with pytest.raises(ValidationError, match="max_tokens"):
        LlamaIndexSummarizer(make_llm()).summarize_text("x", max_tokens=-1)
