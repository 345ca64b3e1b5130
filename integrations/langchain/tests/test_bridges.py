"""LangChainEmbedder, OffpromptEmbeddings and LangChainSummarizer with real LangChain parts.

The chat models are LangChain's own fakes (FakeListChatModel, GenericFakeChatModel) or
the recording fake from conftest; nothing else is faked.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.vectorstores import InMemoryVectorStore
from offprompt_langchain import (
    LangChainEmbedder,
    LangChainSummarizer,
    OffpromptEmbeddings,
    SummarizationError,
)

from offprompt.conversation import Run, SummaryConversationMemory
from offprompt.errors import OffpromptError, ValidationError
from offprompt.messages import Message, ToolCall
from offprompt.stores import SQLiteStore
from offprompt.summarizers import Summarizer, TextSummarizer
from offprompt.tokens import default_tokenizer
from offprompt.vectors.embedders import Embedder, HashingEmbedder

# -- real Embeddings subclasses used as test doubles ---------------------------------------


class CountingEmbeddings(DeterministicFakeEmbedding):
    """LangChain's deterministic fake, counting calls and async calls."""

    calls: int = 0
    async_calls: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return super().embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.async_calls += 1
        return [self._get_embedding(seed=self._get_seed(t)) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        self.async_calls += 1
        return self._get_embedding(seed=self._get_seed(text))


class BrokenEmbeddings(Embeddings):
    """Returns whatever ``output`` builds, to check the validation of results."""

    def __init__(self, output: Callable[[list[str]], Any]) -> None:
        self.output = output

    def embed_documents(self, texts: list[str]) -> Any:
        return self.output(texts)

    def embed_query(self, text: str) -> Any:
        return self.output([text])[0]


# -- LangChainEmbedder ---------------------------------------------------------------------


def test_dimensions_are_probed_lazily_and_only_once() -> None:
    model = CountingEmbeddings(size=24)
    embedder = LangChainEmbedder(model)
    assert model.calls == 0
    assert embedder.dimensions == 24 and model.calls == 1
    assert embedder.dimensions == 24 and model.calls == 1
    assert isinstance(embedder, Embedder)


def test_dimensions_learnt_from_the_first_result_without_a_probe() -> None:
    model = CountingEmbeddings(size=12)
    embedder = LangChainEmbedder(model)
    vectors = embedder.embed_documents(["a", "b", "ünï 🚀"])
    assert len(vectors) == 3 and all(len(v) == 12 for v in vectors)
    assert embedder.dimensions == 12 and model.calls == 1
    assert embedder.embed_query("a") == vectors[0]  # the fake is deterministic per text
    assert embedder.embed_documents([]) == [] and model.calls == 2


async def test_async_twins_use_the_models_async_methods() -> None:
    model = CountingEmbeddings(size=8)
    embedder = LangChainEmbedder(model, dimensions=8)
    docs = await embedder.aembed_documents(["x", "y"])
    query = await embedder.aembed_query("x")
    assert model.async_calls == 2 and model.calls == 0
    assert query == docs[0] == embedder.embed_query("x")


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        (lambda texts: [[0.1, 0.2]] * (len(texts) + 1), "vectors for"),
        (lambda texts: [[0.1, math.nan] for _ in texts], "NaN"),
        (lambda texts: [["a", "b"] for _ in texts], "not a sequence of numbers"),
        (lambda texts: [[0.1] * (3 + i) for i, _ in enumerate(texts)], "expected 3"),
        (lambda texts: [[] for _ in texts], "empty"),
        (lambda texts: None, "vectors for"),
    ],
)
def test_bad_model_output_is_refused(output: Callable[[list[str]], Any], fragment: str) -> None:
    embedder = LangChainEmbedder(BrokenEmbeddings(output))
    with pytest.raises(ValidationError, match=fragment) as info:
        embedder.embed_documents(["one", "two"])
    assert "BrokenEmbeddings" in str(info.value)


def test_given_dimensions_are_enforced_and_bad_arguments_refused() -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=10), dimensions=11)
    with pytest.raises(ValidationError, match="10 dimensions, expected 11"):
        embedder.embed_query("x")
    with pytest.raises(ValidationError, match="Embeddings"):
        LangChainEmbedder(HashingEmbedder(16))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="positive int"):
        LangChainEmbedder(DeterministicFakeEmbedding(size=4), dimensions=0)
    good = LangChainEmbedder(DeterministicFakeEmbedding(size=4))
    with pytest.raises(ValidationError, match="list of str"):
        good.embed_documents("not a list")
    with pytest.raises(ValidationError, match=r"texts\[1\]"):
        good.embed_documents(["ok", 7])  # type: ignore[list-item]


def test_concurrent_first_use_agrees_on_dimensions() -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=32))
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: embedder.embed_documents([f"text {i}"] * 5), range(32)))
    assert all(len(v) == 32 for batch in results for v in batch)
    assert embedder.dimensions == 32


# -- OffpromptEmbeddings -------------------------------------------------------------------


def test_offprompt_embeddings_match_the_hashing_embedder() -> None:
    embeddings = OffpromptEmbeddings()
    reference = HashingEmbedder(384)
    texts = ["disk full on node 7", "ünïcödé 数据 🚀", ""]
    assert embeddings.embed_documents(texts) == reference.embed_documents(texts)
    assert embeddings.embed_query(texts[0]) == reference.embed_query(texts[0])
    assert all(type(x) is float for x in embeddings.embed_query("x"))


async def test_offprompt_embeddings_async_equals_sync() -> None:
    embeddings = OffpromptEmbeddings(dimensions=32)
    texts = ["alpha beta", "gamma"]
    assert await embeddings.aembed_documents(texts) == embeddings.embed_documents(texts)
    assert await embeddings.aembed_query("alpha") == embeddings.embed_query("alpha")


def test_offprompt_embeddings_wrap_any_embedder_and_round_trip_through_the_bridge() -> None:
    inner = LangChainEmbedder(DeterministicFakeEmbedding(size=6))
    embeddings = OffpromptEmbeddings(inner)
    assert embeddings.embed_query("q") == DeterministicFakeEmbedding(size=6).embed_query("q")
    with pytest.raises(ValidationError, match="has no embed_documents"):
        OffpromptEmbeddings(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="list of str"):
        embeddings.embed_documents("abc")  # type: ignore[arg-type]


def test_offprompt_embeddings_in_a_langchain_vector_store() -> None:
    store = InMemoryVectorStore(OffpromptEmbeddings())
    store.add_documents(
        [
            Document("The invoice total was 4,210 EUR, due in March."),
            Document("Node 7 ran out of disk space during the nightly backup."),
            Document("The cafeteria serves soup on Fridays."),
        ]
    )
    hits = store.similarity_search("which node had a full disk?", k=1)
    assert hits[0].page_content.startswith("Node 7")


# -- LangChainSummarizer -------------------------------------------------------------------


def _run(*messages: Message) -> Run:
    return Run(list(messages))


def test_summarizer_implements_both_protocols() -> None:
    summarizer = LangChainSummarizer(FakeListChatModel(responses=["ok"]))
    assert isinstance(summarizer, Summarizer) and isinstance(summarizer, TextSummarizer)


def test_summarize_text_with_langchains_fakes() -> None:
    assert (
        LangChainSummarizer(FakeListChatModel(responses=["A short summary."])).summarize_text(
            "A long report about disks."
        )
        == "A short summary."
    )
    generic = GenericFakeChatModel(messages=iter([AIMessage("Generic summary.")]))
    assert LangChainSummarizer(generic).summarize_text("text") == "Generic summary."


def test_the_prompt_states_the_budget_and_carries_the_text(recording_model: Any) -> None:
    summarizer = LangChainSummarizer(recording_model, max_tokens=40)
    result = summarizer.summarize_text(
        "Node 7 ran out of disk. Backups failed twice.", max_tokens=30
    )
    assert result == "Summary: Node 7 ran out of disk. Backups failed"
    (prompt,) = recording_model.calls
    (mode,) = recording_model.modes
    assert mode == "sync"
    assert prompt[0].type == "system" and "30 tokens" in prompt[0].text
    assert prompt[1].text == "Node 7 ran out of disk. Backups failed twice."


def test_long_answers_are_cut_to_max_tokens() -> None:
    rambling = "word " * 500
    summarizer = LangChainSummarizer(FakeListChatModel(responses=[rambling]))
    result = summarizer.summarize_text("x", max_tokens=20)
    assert 0 < default_tokenizer().count(result) <= 20


def test_long_texts_are_split_into_prompts_that_fit(make_recording_model: Any) -> None:
    model = make_recording_model(reply=lambda msgs: f"part summary ({len(msgs[-1].text)} chars)")
    sentence = "Ünïcode sentence number {i} mentions disk quota and node {i}. "
    text = "".join(sentence.format(i=i) for i in range(1500)) + "SECRET-MARKER at the very end."
    summarizer = LangChainSummarizer(model, max_input_tokens=1000, max_tokens=50)
    assert summarizer.summarize_text(text).startswith("part summary")
    tokenizer = default_tokenizer()
    map_calls = model.calls[:-1]
    assert len(map_calls) > 10
    for prompt in model.calls:
        assert tokenizer.count(prompt[0].text) + tokenizer.count(prompt[1].text) <= 1000
    # Every character of the text went to the model exactly once. ``batch`` runs the
    # parts in threads, so they are recorded in any order: put them back by their label.
    labelled = {}
    for prompt in map_calls:
        header, body = prompt[1].text.split(":\n\n", 1)
        index, total = re.match(r"Part (\d+) of (\d+)", header).groups()  # type: ignore[union-attr]
        assert int(total) == len(map_calls)
        labelled[int(index)] = body
    bodies = [labelled[i] for i in sorted(labelled)]
    assert "".join(bodies) == text
    assert "SECRET-MARKER" in bodies[-1]


async def test_async_summaries_never_take_the_sync_path(make_recording_model: Any) -> None:
    model = make_recording_model()
    summarizer = LangChainSummarizer(model, max_input_tokens=200)
    long_text = "Disk quota exceeded on node seven. " * 200
    summary, folded = await asyncio.gather(
        summarizer.asummarize_text(long_text),
        summarizer.asummarize(
            "Earlier: quota raised.", [_run(Message.user("Status?"), Message.assistant("Fine."))]
        ),
    )
    assert summary.startswith("Summary:") and folded.startswith("Summary:")
    assert model.calls and set(model.modes) == {"async"}


def test_summarize_runs_builds_a_transcript(recording_model: Any) -> None:
    summarizer = LangChainSummarizer(recording_model)
    runs = [
        _run(
            Message.user("Check node 7."),
            Message.assistant(
                None, tool_calls=[ToolCall(id="c1", name="df", arguments={"node": 7})]
            ),
            Message.tool("disk 99% full", tool_call_id="c1", name="df"),
            Message.assistant("Node 7 is almost full."),
        ),
        _run(
            Message.system("ignored"), Message.user("Thanks"), Message.assistant("You're welcome.")
        ),
    ]
    summarizer.summarize("The user runs a cluster.", runs)
    (prompt,) = recording_model.calls
    transcript = prompt[1].text
    assert transcript.startswith("Previous summary:\nThe user runs a cluster.")
    for line in (
        "User: Check node 7.",
        'Assistant called tool df({"node": 7})',  # JSON arguments, the same in every adapter
        "Tool df result: disk 99% full",
        "Assistant: Node 7 is almost full.",
        "User: Thanks",
    ):
        assert line in transcript
    assert "ignored" not in transcript
    assert "conversation" in prompt[0].text


def test_nothing_to_summarize_keeps_the_previous_summary_without_a_call(
    recording_model: Any,
) -> None:
    summarizer = LangChainSummarizer(recording_model)
    assert summarizer.summarize("kept", []) == "kept"
    assert summarizer.summarize_text("   ") == ""
    assert recording_model.calls == []


def test_summary_memory_folds_runs_with_the_langchain_summarizer(
    tmp_path: Any, recording_model: Any
) -> None:
    memory = SummaryConversationMemory(
        SQLiteStore(tmp_path / "s.sqlite"),
        "s1",
        summarizer=LangChainSummarizer(recording_model),
        offset=1,
    )
    for question in ("The launch code is 7431.", "What colour is the sky?", "And the grass?"):
        memory.add_messages([Message.user(question), Message.assistant("Noted.")])
    assert memory.summary is not None and memory.summary.startswith("Summary:")
    assert any("7431" in prompt[1].text for prompt in recording_model.calls)
    assert len(memory.messages()) == 6  # raw history stays stored


def test_model_errors_propagate_and_empty_answers_are_refused(make_recording_model: Any) -> None:
    class Boom(RuntimeError):
        pass

    def explode(messages: list[BaseMessage]) -> str:
        raise Boom("model down")

    with pytest.raises(Boom):
        LangChainSummarizer(make_recording_model(reply=explode)).summarize_text("x")
    with pytest.raises(SummarizationError, match="empty summary") as info:
        LangChainSummarizer(FakeListChatModel(responses=["  "])).summarize_text("x")
    assert isinstance(info.value, OffpromptError)


def test_bad_arguments_are_refused() -> None:
    model = FakeListChatModel(responses=["x"])
    with pytest.raises(ValidationError, match="chat model"):
        LangChainSummarizer(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_tokens"):
        LangChainSummarizer(model, max_tokens=0)
    with pytest.raises(ValidationError, match="max_input_tokens"):
        LangChainSummarizer(model, max_input_tokens=10)
    with pytest.raises(ValidationError, match="max_tokens"):
        LangChainSummarizer(model).summarize_text("x", max_tokens=-1)
    with pytest.raises(ValidationError, match="text must be str"):
        LangChainSummarizer(model).summarize_text(b"bytes")  # type: ignore[arg-type]


def test_summarizer_is_safe_to_share_between_threads(make_recording_model: Any) -> None:
    model = make_recording_model()
    summarizer = LangChainSummarizer(model)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            assert summarizer.summarize_text(f"Report {i} about node {i}.").startswith(
                "Summary: Report"
            )
        except BaseException as exc:  # pragma: no cover - only on failure
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(model.calls) == 8
