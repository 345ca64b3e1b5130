"""LangGraph's own store tests, run against ``OffpromptStore``.

Ported from langchain-ai/langgraph (MIT):

* ``libs/checkpoint/tests/test_store.py`` at c46dc9cdd5f519146b0181f1d19643951db7e55d
  (the ``InMemoryStore`` suite);
* ``libs/checkpoint-sqlite/tests/test_store.py`` at 02340643ccafc5f3e6062dd8a58b132a5536bf7f
  (the ``SqliteStore`` suite: its batch, list-prefix, search and vector tests up to
  ``test_basic_store_operations``);
* ``libs/checkpoint-sqlite/tests/test_ttl.py`` at 2c61e1733cd73cfe1a890497f2bc410d0d0f39de.

What was changed, and only that: the class under test (``InMemoryStore(index=...)`` /
``SqliteStore.from_conn_string(..., index=..., ttl=...)`` became a fresh
``OffpromptStore`` from the ``new_store`` fixture, ``index={"fields": [...]}`` /
``text_fields`` became ``fields=[...]``), the fixtures (``CharacterEmbeddings`` from
``conformance_fixtures``; ``time.sleep`` became ``clock.sleep`` of a fake clock the
store reads, so TTL tests take no wall time, except the sweeper tests, which need a
real thread and real time; SQLite-only helpers that backdate a row with SQL became
the same backdating through the store's vector store), and the async store's
coroutine ``sweep_ttl``/``start_ttl_sweeper``/``stop_ttl_sweeper`` became our
``asweep_ttl`` and the sync sweeper calls. Every upstream assertion is kept. Tests
that exercise something other than a ``BaseStore`` are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conformance_fixtures import CharacterEmbeddings, FakeClock, StoreFactory
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
    TTLConfig,
)
from offprompt_langchain.bridges import LangChainEmbedder
from offprompt_langchain.store import OffpromptStore

from offprompt.vectors import QdrantVectorStore

EMBEDDINGS = CharacterEmbeddings(dims=500)
OMIT_EXPIRED_TTL_MINUTES = 5


@pytest.fixture(scope="module")
def _plain_qdrant() -> Iterator[QdrantVectorStore]:
    vs = QdrantVectorStore()
    yield vs
    vs.close()


@pytest.fixture(scope="module")
def _character_qdrant() -> Iterator[QdrantVectorStore]:
    vs = QdrantVectorStore(embedder=LangChainEmbedder(EMBEDDINGS))
    yield vs
    vs.close()


@pytest.fixture
def new_store(_plain_qdrant: QdrantVectorStore) -> Iterator[StoreFactory]:
    factory = StoreFactory(_plain_qdrant)
    yield factory
    factory.close()


@pytest.fixture
def new_vector_store(_character_qdrant: QdrantVectorStore) -> Iterator[StoreFactory]:
    factory = StoreFactory(_character_qdrant)
    yield factory
    factory.close()


@pytest.fixture
def store(new_store: StoreFactory) -> OffpromptStore:
    return new_store()


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return EMBEDDINGS


_NOT_A_STORE = "tests LangGraph's AsyncBatchedBaseStore / a module function, not a BaseStore"


# --------------------------------------------------------------- libs/checkpoint test_store.py


@pytest.mark.skip(reason=_NOT_A_STORE)
def test_async_batch_store_resilience() -> None: ...


@pytest.mark.skip(reason=_NOT_A_STORE)
def test_get_text_at_path() -> None: ...


@pytest.mark.skip(reason=_NOT_A_STORE)
def test_async_batch_store() -> None: ...


@pytest.mark.skip(reason=_NOT_A_STORE)
def test_async_batch_store_handles_cancellation() -> None: ...


@pytest.mark.skip(reason=_NOT_A_STORE)
def test_async_batch_store_deduplication() -> None: ...


def test_list_namespaces_basic(store: OffpromptStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces(prefix=("a", "b"))
    expected = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(suffix=("f",))
    expected = [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(prefix=("a",), suffix=("f",))
    expected = [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(prefix=("a", "b"), max_depth=3)
    expected = [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(prefix=("a", "b"), limit=2)
    expected = [("a", "b", "c"), ("a", "b", "d", "e")]
    assert result == expected

    result = store.list_namespaces(prefix=("a", "b"), offset=2)
    expected = [("a", "b", "d", "i"), ("a", "b", "f")]
    assert result == expected

    result = store.list_namespaces(prefix=("a", "*", "f"))
    expected = [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(suffix=("*", "f"))
    expected = [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(prefix=("nonexistent",))
    assert result == []

    result = store.list_namespaces(prefix=("users", "123"))
    expected = [("users", "123")]
    assert result == expected


def test_list_namespaces_with_wildcards(store: OffpromptStore) -> None:
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces(prefix=("users", "*"))
    expected = [("users", "123"), ("users", "456"), ("users", "789", "settings")]
    assert sorted(result) == sorted(expected)

    result = store.list_namespaces(suffix=("*", "preferences"))
    expected = [("guests", "456", "preferences")]
    assert result == expected

    result = store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings"))
    assert result == []

    store.put(
        namespace=("admin", "users", "settings", "789"), key="foo", value={"data": "some_val"}
    )


def test_list_namespaces_pagination(store: OffpromptStore) -> None:
    for i in range(20):
        ns = ("namespace", f"sub_{i:02d}")
        store.put(namespace=ns, key=f"id_{i:02d}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces(prefix=("namespace",), limit=5, offset=0)
    assert result == [("namespace", f"sub_{i:02d}") for i in range(5)]

    result = store.list_namespaces(prefix=("namespace",), limit=5, offset=5)
    assert result == [("namespace", f"sub_{i:02d}") for i in range(5, 10)]

    result = store.list_namespaces(prefix=("namespace",), limit=5, offset=15)
    assert result == [("namespace", f"sub_{i:02d}") for i in range(15, 20)]


def test_list_namespaces_max_depth(store: OffpromptStore) -> None:
    namespaces = [
        ("a", "b", "c", "d"),
        ("a", "b", "c", "e"),
        ("a", "b", "f"),
        ("a", "g"),
        ("h", "i", "j", "k"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces(max_depth=2)
    assert sorted(result) == sorted([("a", "b"), ("a", "g"), ("h", "i")])


def test_list_namespaces_no_conditions(store: OffpromptStore) -> None:
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces()
    assert sorted(result) == sorted(namespaces)


def test_list_namespaces_empty_store(store: OffpromptStore) -> None:
    assert store.list_namespaces() == []


async def test_cannot_put_empty_namespace(store: OffpromptStore) -> None:
    doc = {"foo": "bar"}

    with pytest.raises(InvalidNamespaceError):
        store.put((), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.put(("the", "thing.about"), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("the", "thing.about"), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.put(("some", "fun", ""), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("some", "fun", ""), "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("langgraph", "foo"), "bar", doc)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", doc)

    await store.aput(("foo", "langgraph", "foo"), "bar", doc)
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
    await store.adelete(("foo", "langgraph", "foo"), "bar")
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")) is None
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None

    # Past the public put api
    await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert (await store.aget(("langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("langgraph", "foo")))[0].value == doc
    await store.adelete(("langgraph", "foo"), "bar")
    assert (await store.aget(("langgraph", "foo"), "bar")) is None
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("langgraph", "foo"))[0].value == doc
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None
    # (the rest of the upstream test repeats this on MockAsyncBatchedStore, a wrapper
    # around InMemoryStore that tests AsyncBatchedBaseStore, not the store)


def test_vector_store_initialization(new_vector_store: StoreFactory) -> None:
    # upstream checks InMemoryStore.index_config; ours is the vector store's embedder
    store = new_vector_store()
    assert store.vector_store.embedder.dimensions == EMBEDDINGS.dims
    assert store.fields == ["$"]


def _auto_embedding_docs() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]


def test_vector_insert_with_auto_embedding(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for key, value in _auto_embedding_docs():
        store.put(("test",), key, value)
    results = store.search(("test",), query="long text")
    assert len(results) > 0
    doc_order = [r.key for r in results]
    assert "doc2" in doc_order
    assert "doc3" in doc_order


async def test_async_vector_insert_with_auto_embedding(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for key, value in _auto_embedding_docs():
        await store.aput(("test",), key, value)
    results = await store.asearch(("test",), query="long text")
    assert len(results) > 0
    doc_order = [r.key for r in results]
    assert "doc2" in doc_order
    assert "doc3" in doc_order


def test_vector_update_with_embedding(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})

    results_initial = store.search(("test",), query="Zany Xerxes")
    assert len(results_initial) > 0
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score
    assert initial_score is not None

    store.put(("test",), "doc1", {"text": "new text about dogs"})

    results_after = store.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score is not None
    assert after_score < initial_score

    results_new = store.search(("test",), query="new text about dogs")
    for r in results_new:
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score

    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


async def test_async_vector_update_with_embedding(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    await store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
    await store.aput(("test",), "doc2", {"text": "something about dogs"})
    await store.aput(("test",), "doc3", {"text": "text about birds"})

    results_initial = await store.asearch(("test",), query="Zany Xerxes")
    assert len(results_initial) > 0
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score

    await store.aput(("test",), "doc1", {"text": "new text about dogs"})

    results_after = await store.asearch(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score is not None
    assert initial_score is not None and after_score < initial_score

    results_new = await store.asearch(("test",), query="new text about dogs")
    for r in results_new:
        if r.key == "doc1":
            assert r.score is not None
            assert r.score > after_score

    await store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = await store.asearch(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


_FILTER_DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def test_vector_search_with_filters(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for key, value in _FILTER_DOCS:
        store.put(("test",), key, value)

    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2
    assert results[0].key == "doc1"

    results = store.search(("test",), query="car", filter={"color": "red"})
    assert len(results) == 2
    assert results[0].key == "doc2"

    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3
    assert results[0].key == "doc4"
    # (the SQLite suite's version also checks these)
    high_score_keys = [r.key for r in results]
    assert "doc1" in high_score_keys
    assert "doc3" in high_score_keys

    results = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert len(results) == 1
    assert results[0].key == "doc3"


async def test_async_vector_search_with_filters(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for key, value in _FILTER_DOCS:
        await store.aput(("test",), key, value)

    results = await store.asearch(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2
    assert results[0].key == "doc1"

    results = await store.asearch(("test",), query="car", filter={"color": "red"})
    assert len(results) == 2
    assert results[0].key == "doc2"

    results = await store.asearch(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3
    assert results[0].key == "doc4"

    results = await store.asearch(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert len(results) == 1
    assert results[0].key == "doc3"


async def test_async_batched_vector_search_concurrent(new_vector_store: StoreFactory) -> None:
    # upstream wraps InMemoryStore in MockAsyncBatchedStore; ours batches concurrent calls
    store = new_vector_store()
    colors = ["red", "blue", "green", "yellow", "purple"]
    items = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = []
    for i in range(50):
        color, item, score = colors[i % 5], items[i % 5], scores[i % 5]
        docs.append(
            (f"doc{i}", {"text": f"{color} {item}", "color": color, "score": score, "index": i})
        )
    coros = [
        *[store.aput(("test",), key, value) for key, value in docs],
        *[store.adelete(("test",), key) for key, value in docs],
        *[store.aput(("test",), key, value) for key, value in docs],
    ]
    await asyncio.gather(*coros)

    search_queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("house", {"color": "green"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("car", {"score": {"$lt": 5.1}, "color": "blue"}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]
    all_results = await asyncio.gather(
        *[store.asearch(("test",), query=q, filter=f) for q, f in search_queries]
    )
    for results, (query, filter_) in zip(all_results, search_queries, strict=False):
        assert len(results) > 0, f"No results for query '{query}' with filter {filter_}"
        for result in results:
            if "color" in filter_:
                assert result.value["color"] == filter_["color"]
            for field in ("score", "index"):
                if field in filter_:
                    got = result.value[field]
                    for op, value in filter_[field].items():
                        if op == "$gt":
                            assert got > value
                        elif op == "$gte":
                            assert got >= value
                        elif op == "$lt":
                            assert got < value
                        elif op == "$lte":
                            assert got <= value


def test_vector_search_pagination(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})

    results_page1 = store.search(("test",), query="test", limit=2)
    results_page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(results_page1) == 2
    assert len(results_page2) == 2
    assert results_page1[0].key != results_page2[0].key
    # (the SQLite suite's version also checks these)
    assert results_page1[1].key != results_page2[0].key
    assert results_page1[0].key != results_page2[1].key
    assert results_page1[1].key != results_page2[1].key
    s = [r.score for r in (*results_page1, *results_page2)]
    assert all(x is not None for x in s)
    assert s[0] >= s[1] and s[2] >= s[3]  # type: ignore[operator]

    all_results = store.search(("test",), query="test", limit=10)
    assert len(all_results) == 5
    assert all_results[0].score >= all_results[2].score  # type: ignore[operator]


async def test_async_vector_search_pagination(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    for i in range(5):
        await store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
    results_page1 = await store.asearch(("test",), query="test", limit=2)
    results_page2 = await store.asearch(("test",), query="test", limit=2, offset=2)
    assert len(results_page1) == 2
    assert len(results_page2) == 2
    assert results_page1[0].key != results_page2[0].key
    all_results = await store.asearch(("test",), query="test", limit=10)
    assert len(all_results) == 5


async def test_embed_with_path(new_vector_store: StoreFactory) -> None:
    # Key 2 isn't included. Don't index it.
    store = new_vector_store(fields=["key0", "key1", "key3"])
    # This will have 2 vectors representing it
    doc1 = {"key1": "xxx", "key2": "yyy", "key3": "zzz"}  # key0 omitted: no error
    # This will have 3 vectors representing it
    doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
    await store.aput(("test",), "doc1", doc1)
    await store.aput(("test",), "doc2", doc2)

    # doc2.key3 and doc1.key1 both would have the highest score
    results = await store.asearch(("test",), query="xxx")
    assert len(results) == 2
    assert results[0].key != results[1].key
    ascore = results[0].score
    bscore = results[1].score
    assert ascore is not None and bscore is not None
    assert ascore == pytest.approx(bscore, abs=1e-5)

    results = await store.asearch(("test",), query="uuu")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].key == "doc2"
    assert results[0].score is not None and results[0].score > results[1].score  # type: ignore[operator]
    assert ascore == pytest.approx(results[0].score, abs=1e-5)

    # Un-indexed - will have low results for both, but less than the above.
    results = await store.asearch(("test",), query="www")
    assert len(results) == 2
    assert results[0].score < ascore  # type: ignore[operator]
    assert results[1].score < ascore  # type: ignore[operator]

    # Operation-level field configuration
    store_no_defaults = new_vector_store(fields=["key17"])
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}  # key1 as doc3's
    await store_no_defaults.aput(("test",), "doc3", doc3, index=["key0", "key1"])
    await store_no_defaults.aput(("test",), "doc4", doc4, index=["key1", "key3"])

    results = await store_no_defaults.asearch(("test",), query="aaa")
    assert len(results) == 2
    assert results[0].key == "doc3"
    assert results[0].score is not None and results[0].score > results[1].score  # type: ignore[operator]

    results = await store_no_defaults.asearch(("test",), query="ggg")
    assert len(results) == 2
    assert results[0].key == "doc4"
    assert results[0].score is not None and results[0].score > results[1].score  # type: ignore[operator]

    results = await store_no_defaults.asearch(("test",), query="bbb")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].score == results[1].score

    results = await store_no_defaults.asearch(("test",), query="ccc")
    assert len(results) == 2
    assert all(r.score < ascore for r in results)  # type: ignore[operator]

    doc5 = {"key0": "hhh", "key1": "iii"}
    await store_no_defaults.aput(("test",), "doc5", doc5, index=False)
    results = await store_no_defaults.asearch(("test",), query="hhh")
    assert len(results) == 3
    doc5_result = next(r for r in results if r.key == "doc5")
    assert doc5_result.score is None


def test_non_ascii(new_vector_store: StoreFactory) -> None:
    store = new_vector_store()
    store.put(("user_123", "memories"), "1", {"text": "这是中文"})
    store.put(("user_123", "memories"), "2", {"text": "これは日本語です"})
    store.put(("user_123", "memories"), "3", {"text": "이건 한국어야"})
    store.put(("user_123", "memories"), "4", {"text": "Это русский"})
    store.put(("user_123", "memories"), "5", {"text": "यह रूसी है"})
    assert store.search(("user_123", "memories"), query="这是中文")[0].key == "1"
    assert store.search(("user_123", "memories"), query="これは日本語です")[0].key == "2"
    assert store.search(("user_123", "memories"), query="이건 한국어야")[0].key == "3"
    assert store.search(("user_123", "memories"), query="Это русский")[0].key == "4"
    assert store.search(("user_123", "memories"), query="यह रूसी है")[0].key == "5"


def test_vector_search_edge_cases(new_vector_store: StoreFactory) -> None:
    # (from the 01b4d15a version of this file and the SQLite suite)
    store = new_vector_store()
    store.put(("test",), "doc1", {"text": "test document"})
    assert len(store.search(("test",), query="")) == 1
    assert len(store.search(("test",), query=None)) == 1
    assert len(store.search(("test",), query="test " * 100)) == 1
    assert len(store.search(("test",), query="test!@#$%^&*()")) == 1


# ------------------------------------------------------- libs/checkpoint-sqlite test_store.py


def test_batch_order(store: OffpromptStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    ops = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    results = store.batch(cast(Iterable[GetOp | PutOp | SearchOp | ListNamespacesOp], ops))
    assert len(results) == 5
    assert isinstance(results[0], Item)
    assert isinstance(results[0].value, dict)
    assert results[0].value == {"data": "value1"}
    assert results[0].key == "key1"
    assert results[0].namespace == ("test", "foo")
    assert results[1] is None
    assert isinstance(results[2], list)
    assert len(results[2]) == 1
    assert results[2][0].key == "key1"
    assert results[2][0].value == {"data": "value1"}
    assert isinstance(results[3], list)
    assert len(results[3]) > 0
    assert ("test", "foo") in results[3]
    assert ("test", "bar") in results[3]
    assert results[4] is None

    ops_reordered = [
        SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
        GetOp(namespace=("test", "bar"), key="key2"),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
        GetOp(namespace=("test", "foo"), key="key1"),
    ]
    results_reordered = store.batch(
        cast(Iterable[GetOp | PutOp | SearchOp | ListNamespacesOp], ops_reordered)
    )
    assert len(results_reordered) == 5
    assert isinstance(results_reordered[0], list)
    assert len(results_reordered[0]) >= 2
    assert isinstance(results_reordered[1], Item)
    assert results_reordered[1].value == {"data": "value2"}
    assert results_reordered[1].key == "key2"
    assert results_reordered[1].namespace == ("test", "bar")
    assert isinstance(results_reordered[2], list)
    assert len(results_reordered[2]) > 0
    assert results_reordered[3] is None
    assert isinstance(results_reordered[4], Item)
    assert results_reordered[4].value == {"data": "value1"}
    assert results_reordered[4].key == "key1"
    assert results_reordered[4].namespace == ("test", "foo")

    item3 = store.get(("test",), "key3")
    assert item3 is not None
    assert item3.value == {"data": "value3"}


def test_batch_get_ops(store: OffpromptStore) -> None:
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test",), key="key1"),
            GetOp(namespace=("test",), key="key2"),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert len(results) == 3
    assert results[0] is not None
    assert results[1] is not None
    assert results[2] is None
    assert results[0].key == "key1"  # type: ignore[union-attr]
    assert results[1].key == "key2"  # type: ignore[union-attr]


def test_batch_put_ops(store: OffpromptStore) -> None:
    results = store.batch(
        [
            PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
            PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
            PutOp(namespace=("test",), key="key3", value=None),
        ]
    )
    assert len(results) == 3
    assert all(result is None for result in results)
    item1 = store.get(("test",), "key1")
    item2 = store.get(("test",), "key2")
    item3 = store.get(("test",), "key3")
    assert item1 and item1.value == {"data": "value1"}
    assert item2 and item2.value == {"data": "value2"}
    assert item3 is None


def test_batch_search_ops(store: OffpromptStore) -> None:
    test_data = [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    results = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(results) == 3
    assert len(results[0]) == 2  # type: ignore[arg-type]
    assert all(item.value["tag"] == "a" for item in results[0])  # type: ignore[union-attr]
    assert len(results[1]) == 2  # type: ignore[arg-type]
    assert len(results[2]) == 1  # type: ignore[arg-type]
    assert results[2][0].namespace == ("test", "foo")  # type: ignore[index]


def test_batch_list_namespaces_ops(store: OffpromptStore) -> None:
    test_data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    results = store.batch(
        [
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
            ListNamespacesOp(
                match_conditions=tuple([MatchCondition("suffix", ("public",))]),
                max_depth=None,
                limit=10,
                offset=0,
            ),
        ]
    )
    assert len(results) == 3
    assert len(results[0]) == len(test_data)  # type: ignore[arg-type]
    assert all(len(ns) <= 2 for ns in results[1])  # type: ignore[union-attr]
    assert all(ns[-1] == "public" for ns in results[2])  # type: ignore[union-attr,index]


def test_basic_store_ops(store: OffpromptStore) -> None:
    namespace = ("test", "documents")
    item_id = "doc1"
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(namespace, item_id, item_value)
    item = store.get(namespace, item_id)
    assert item
    assert item.namespace == namespace
    assert item.key == item_id
    assert item.value == item_value

    updated_value = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(namespace, item_id, updated_value)
    updated_item = store.get(namespace, item_id)
    assert updated_item.value == updated_value  # type: ignore[union-attr]

    assert store.get(("test", "other_documents"), item_id) is None
    store.delete(namespace, item_id)
    assert store.get(namespace, item_id) is None


def test_list_namespaces(store: OffpromptStore) -> None:
    test_namespaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for namespace in test_namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})

    all_namespaces = store.list_namespaces()
    assert len(all_namespaces) == len(test_namespaces)

    test_prefix_namespaces = store.list_namespaces(prefix=["test"])  # type: ignore[arg-type]
    assert len(test_prefix_namespaces) == 4
    assert all(ns[0] == "test" for ns in test_prefix_namespaces)

    public_namespaces = store.list_namespaces(suffix=["public"])  # type: ignore[arg-type]
    assert len(public_namespaces) == 3
    assert all(ns[-1] == "public" for ns in public_namespaces)

    depth_2_namespaces = store.list_namespaces(max_depth=2)
    assert all(len(ns) <= 2 for ns in depth_2_namespaces)

    assert len(store.list_namespaces(limit=3)) == 3

    for namespace in test_namespaces:
        store.delete(namespace, "dummy")


def test_search(store: OffpromptStore) -> None:
    test_data = [
        (
            ("test", "docs"),
            "doc1",
            {"title": "First Doc", "author": "Alice", "tags": ["important"]},
        ),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)

    all_items = store.search(["test"])  # type: ignore[arg-type]
    assert len(all_items) == 3

    docs_items = store.search(["test", "docs"])  # type: ignore[arg-type]
    assert len(docs_items) == 2
    assert all(item.namespace == ("test", "docs") for item in docs_items)

    alice_items = store.search(["test"], filter={"author": "Alice"})  # type: ignore[arg-type]
    assert len(alice_items) == 2
    assert all(item.value["author"] == "Alice" for item in alice_items)

    assert len(store.search(["test"], limit=2)) == 2  # type: ignore[arg-type]
    assert len(store.search(["test"], offset=2)) == 1  # type: ignore[arg-type]

    for namespace, key, _ in test_data:
        store.delete(namespace, key)


def test_vector_store_initialization_sqlite(new_vector_store: StoreFactory) -> None:
    # upstream: index_config / text_fields / the vector tables SQLite created
    store = new_vector_store()
    assert store.fields == ["$"]
    with_fields = new_vector_store(fields=["content", "title"])
    assert with_fields.fields == ["content", "title"]
    assert store.vector_store.embedder.dimensions == EMBEDDINGS.dims


def test_embed_with_path_sqlite(new_vector_store: StoreFactory) -> None:
    store = new_vector_store(fields=["key0", "key1", "key3"])
    doc1 = {"key1": "xxx", "key2": "yyy", "key3": "zzz"}
    doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
    store.put(("test",), "doc1", doc1)
    store.put(("test",), "doc2", doc2)

    results = store.search(("test",), query="xxx")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].score > 0.9  # type: ignore[operator]
    assert results[1].score > 0.9  # type: ignore[operator]

    results = store.search(("test",), query="uuu")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].key == "doc2"
    assert results[0].score > results[1].score  # type: ignore[operator]

    results = store.search(("test",), query="zzz")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].key == "doc1"
    assert results[0].score > results[1].score  # type: ignore[operator]

    results = store.search(("test",), query="www")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].score < 0.9  # type: ignore[operator]
    assert results[1].score < 0.9  # type: ignore[operator]


def test_embed_with_path_operation_config(new_vector_store: StoreFactory) -> None:
    store = new_vector_store(fields=["key17"])
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    store.put(("test",), "doc3", doc3, index=["key0", "key1"])
    store.put(("test",), "doc4", doc4, index=["key1", "key3"])

    results = store.search(("test",), query="aaa")
    assert len(results) == 2
    assert results[0].key == "doc3"
    assert len({r.key for r in results}) == 2
    assert results[0].score > results[1].score  # type: ignore[operator]

    results = store.search(("test",), query="ggg")
    assert len(results) == 2
    assert results[0].key == "doc4"
    assert results[0].score > results[1].score  # type: ignore[operator]

    results = store.search(("test",), query="bbb")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert abs(results[0].score - results[1].score) < 0.1  # type: ignore[operator]

    results = store.search(("test",), query="ccc")
    assert len(results) == 2
    assert all(r.score < 0.9 for r in results)  # type: ignore[operator]

    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = store.search(("test",))
    assert len(results) == 3
    assert any(r.key == "doc5" for r in results)


def _cosine(x: list[float], y: list[float]) -> float:
    dot = sum(a * b for a, b in zip(x, y, strict=False))
    n1, n2 = sum(a * a for a in x) ** 0.5, sum(b * b for b in y) ** 0.5
    return dot / (n1 * n2) if n1 > 0 and n2 > 0 else 0.0


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(
    new_vector_store: StoreFactory, fake_embeddings: CharacterEmbeddings, query: str
) -> None:
    store = new_vector_store(fields=["key0"])
    doc = {"key0": "aaa"}
    store.put(("test",), "doc", doc, index=["key0", "key1"])
    results = store.search((), query=query)
    similarity = _cosine(fake_embeddings.embed_query(query), fake_embeddings.embed_query("aaa"))
    assert len(results) == 1
    assert results[0].score == pytest.approx(similarity, abs=1e-3)


@pytest.mark.skip(reason="checks SqliteStore.MIGRATIONS, SQL the store does not have")
def test_nonnull_migrations() -> None: ...


def test_basic_store_operations(new_vector_store: StoreFactory) -> None:
    store = new_vector_store(fields=["key0", "key1", "key3"])
    uid = uuid.uuid4().hex
    namespace = (uid, "test", "documents")
    item_id = "doc1"
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    assert len(store.search((uid,))) == 0

    store.put(namespace, item_id, item_value)
    item = store.get(namespace, item_id)
    assert item is not None
    assert item.namespace == namespace
    assert item.key == item_id
    assert item.value == item_value
    assert item.created_at is not None
    assert item.updated_at is not None

    updated_value = {"title": "Updated Test Document", "content": "Hello, LangGraph!"}
    store.put(namespace, item_id, updated_value)
    updated_item = store.get(namespace, item_id)
    assert updated_item is not None
    assert updated_item.value == updated_value
    assert updated_item.updated_at >= item.updated_at

    assert store.get((uid, "test", "other_documents"), item_id) is None

    store.put(namespace, "doc2", {"title": "Another Document", "content": "Greetings!"})
    items = store.search((uid, "test"), limit=10)
    assert len(items) == 2
    assert any(i.key == item_id for i in items)


# ---------------------------------------------------------- libs/checkpoint-sqlite test_ttl.py


def _expire_now(store: OffpromptStore, ns: tuple[str, ...], key: str) -> None:
    """Backdate an item's expiry a minute into the past without deleting it (unswept)."""
    item_id = _item_id(ns, key)
    # private-ok: the store's key scheme, as the upstream conformance test needs it; the store's clock, frozen as the upstream conformance test needs it
    store.vector_store.set_payload(store._namespace, [item_id], {"expires_ts": store._clock() - 60})


def _item_id(ns: tuple[str, ...], key: str) -> str:
    # private-ok: the store's key scheme, as the upstream conformance test needs it
    from offprompt_langchain.store import _item_id as item_id

    return item_id(ns, key)


def _payload(store: OffpromptStore, ns: tuple[str, ...], key: str) -> dict[str, Any] | None:
    # private-ok: the store's key scheme, as the upstream conformance test needs it
    found = store.vector_store.scroll(store._namespace, filter={"item_id": _item_id(ns, key)})
    return found[0].payload if found else None


def _row_exists(store: OffpromptStore, ns: tuple[str, ...], key: str) -> bool:
    return _payload(store, ns, key) is not None


def _stored_expires_at(store: OffpromptStore, ns: tuple[str, ...], key: str) -> float:
    payload = _payload(store, ns, key)
    assert payload is not None
    return float(payload["expires_ts"])


def test_omit_expired_filters_read_paths(new_store: StoreFactory) -> None:
    # upstream runs this for SQLite's two stored datetime formats; we have one
    store = new_store(ttl={"default_ttl": OMIT_EXPIRED_TTL_MINUTES, "omit_expired": True})
    expired_ns = ("omit", "expired")
    control_ns = ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    _expire_now(store, expired_ns, "e")

    assert _row_exists(store, expired_ns, "e")
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces
    assert control_ns in namespaces


@pytest.mark.parametrize("omit", [None, False], ids=["default", "explicit-false"])
def test_omit_expired_disabled_preserves_expired_rows(
    new_store: StoreFactory, omit: bool | None
) -> None:
    ttl_config: TTLConfig = {"default_ttl": OMIT_EXPIRED_TTL_MINUTES}
    if omit is not None:
        ttl_config["omit_expired"] = omit
    store = new_store(ttl=ttl_config)
    ns = ("keep",)
    store.put(ns, "k", {"data": "still-here"}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    _expire_now(store, ns, "k")
    assert store.get(ns, "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(ns, refresh_ttl=False)] == ["k"]
    assert ns in store.list_namespaces(prefix=("keep",))


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(new_store: StoreFactory) -> None:
    clock = FakeClock()
    store = new_store(
        ttl={
            "default_ttl": OMIT_EXPIRED_TTL_MINUTES,
            "omit_expired": True,
            "refresh_on_read": True,
        },
        clock=clock,
    )
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    store.put(ns, "live_get", {"n": 1}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    store.put(ns, "live_search", {"n": 2}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    _expire_now(store, ns, "expired")

    expired_before = _stored_expires_at(store, ns, "expired")
    get_before = _stored_expires_at(store, ns, "live_get")
    search_before = _stored_expires_at(store, ns, "live_search")
    clock.sleep(1.1)

    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert _stored_expires_at(store, ns, "expired") == expired_before

    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert _stored_expires_at(store, ns, "live_get") > get_before
    assert _stored_expires_at(store, ns, "live_search") > search_before


def test_omit_expired_search_pagination(new_store: StoreFactory) -> None:
    """Filtering must happen before LIMIT/OFFSET, not after."""
    clock = FakeClock()
    store = new_store(
        ttl={"default_ttl": OMIT_EXPIRED_TTL_MINUTES, "omit_expired": True}, clock=clock
    )
    ns = ("page",)
    for k in ("a", "b", "c"):
        store.put(ns, k, {"k": k}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    store.put(ns, "expired", {"k": "x"}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    _expire_now(store, ns, "expired")
    # updated_at DESC orders these a, expired, b, c (upstream sets them with SQL)
    seconds_ago = {"a": 1, "expired": 2, "b": 3, "c": 4}
    now = clock()
    for key, secs in seconds_ago.items():
        # private-ok: the store's key scheme, as the upstream conformance test needs it
        store.vector_store.set_payload(
            store._namespace, [_item_id(ns, key)], {"updated_ts": now - secs}
        )
    page1 = store.search(ns, limit=2, offset=0)
    page2 = store.search(ns, limit=2, offset=2)
    assert [i.key for i in page1] == ["a", "b"]
    assert [i.key for i in page2] == ["c"]


async def test_async_omit_expired_filters_read_paths(new_store: StoreFactory) -> None:
    store = new_store(ttl={"default_ttl": OMIT_EXPIRED_TTL_MINUTES, "omit_expired": True})
    expired_ns = ("omit", "expired")
    control_ns = ("omit", "control")
    await store.aput(expired_ns, "e", {"data": "gone"}, ttl=OMIT_EXPIRED_TTL_MINUTES)
    await store.aput(control_ns, "c", {"data": "keep"}, ttl=None)
    _expire_now(store, expired_ns, "e")

    assert await store.aget(expired_ns, "e") is None
    assert await store.aget(control_ns, "c") is not None
    assert await store.asearch(expired_ns) == []
    assert [i.key for i in await store.asearch(control_ns)] == ["c"]
    namespaces = await store.alist_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces
    assert control_ns in namespaces


def test_ttl_basic(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60}, clock=clock)
    store.put(("test",), "item1", {"value": "test"})
    item = store.get(("test",), "item1")
    assert item is not None
    assert item.value["value"] == "test"
    clock.sleep(ttl_seconds + 1.0)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None


def test_ttl_refresh(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60, "refresh_on_read": True}, clock=clock)
    store.put(("test",), "item1", {"value": "test"})
    clock.sleep(ttl_seconds - 0.5)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=True) is not None
    clock.sleep(ttl_seconds - 0.5)
    assert store.sweep_ttl() == 0
    item = store.get(("test",), "item1")
    assert item is not None
    assert item.value["value"] == "test"
    clock.sleep(ttl_seconds + 0.75)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None


def test_ttl_sweeper(new_store: StoreFactory) -> None:
    # a real thread: real time (upstream's numbers)
    ttl_seconds = 2
    ttl_minutes = ttl_seconds / 60
    store = new_store(
        ttl={"default_ttl": ttl_minutes, "sweep_interval_minutes": ttl_minutes / 2},  # type: ignore[typeddict-item]
        clock=time.time,
    )
    store.start_ttl_sweeper()
    store.put(("test",), "item1", {"value": "test"})
    assert store.get(("test",), "item1") is not None
    time.sleep(ttl_seconds + (ttl_seconds / 2) + 0.5)
    assert store.get(("test",), "item1") is None
    store.stop_ttl_sweeper()


def test_ttl_custom_value(new_store: StoreFactory) -> None:
    clock = FakeClock()
    store = new_store(clock=clock)
    store.put(("test",), "item1", {"value": "short"}, ttl=1 / 60)
    store.put(("test",), "item2", {"value": "long"}, ttl=3 / 60)
    clock.sleep(2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    clock.sleep(4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None


def test_ttl_override_default(new_store: StoreFactory) -> None:
    clock = FakeClock()
    store = new_store(ttl={"default_ttl": 5 / 60}, clock=clock)
    store.put(("test",), "item1", {"value": "override"}, ttl=1 / 60)
    store.put(("test",), "item2", {"value": "default"})
    store.put(("test",), "item3", {"value": "permanent"}, ttl=None)
    clock.sleep(2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None
    clock.sleep(4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None
    assert store.get(("test",), "item3") is not None


def test_search_with_ttl(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60}, clock=clock)
    store.put(("test",), "item1", {"value": "apple"})
    store.put(("test",), "item2", {"value": "banana"})
    results = store.search(("test",), filter={"value": "apple"})
    assert len(results) == 1
    assert results[0].key == "item1"
    clock.sleep(ttl_seconds + 1)
    store.sweep_ttl()
    assert len(store.search(("test",), filter={"value": "apple"})) == 0


async def test_async_ttl_basic(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60}, clock=clock)
    await store.aput(("test",), "item1", {"value": "test"})
    item = await store.aget(("test",), "item1")
    assert item is not None
    assert item.value["value"] == "test"
    clock.sleep(ttl_seconds + 1.0)
    await store.asweep_ttl()
    assert await store.aget(("test",), "item1") is None


async def test_async_ttl_refresh(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60, "refresh_on_read": True}, clock=clock)
    await store.aput(("test",), "item1", {"value": "test"})
    clock.sleep(ttl_seconds - 0.5)
    assert await store.aget(("test",), "item1", refresh_ttl=True) is not None
    clock.sleep(ttl_seconds - 0.5)
    item = await store.aget(("test",), "item1")
    assert item is not None
    assert item.value["value"] == "test"
    clock.sleep(ttl_seconds + 1.0)
    await store.asweep_ttl()
    assert await store.aget(("test",), "item1") is None


async def test_async_ttl_sweeper(new_store: StoreFactory) -> None:
    ttl_seconds = 2
    ttl_minutes = ttl_seconds / 60
    store = new_store(
        ttl={"default_ttl": ttl_minutes, "sweep_interval_minutes": ttl_minutes / 2},  # type: ignore[typeddict-item]
        clock=time.time,
    )
    store.start_ttl_sweeper()
    await store.aput(("test",), "item1", {"value": "test"})
    assert await store.aget(("test",), "item1") is not None
    await asyncio.sleep(ttl_seconds + (ttl_seconds / 2) + 0.5)
    assert await store.aget(("test",), "item1") is None
    assert store.stop_ttl_sweeper()


async def test_async_search_with_ttl(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 1
    store = new_store(ttl={"default_ttl": ttl_seconds / 60}, clock=clock)
    await store.aput(("test",), "item1", {"value": "apple"})
    await store.aput(("test",), "item2", {"value": "banana"})
    results = await store.asearch(("test",), filter={"value": "apple"})
    assert len(results) == 1
    assert results[0].key == "item1"
    clock.sleep(ttl_seconds + 1)
    await store.asweep_ttl()
    assert len(await store.asearch(("test",), filter={"value": "apple"})) == 0


async def test_async_asearch_refresh_ttl(new_store: StoreFactory) -> None:
    clock = FakeClock()
    ttl_seconds = 4.0
    store = new_store(ttl={"default_ttl": ttl_seconds / 60.0, "refresh_on_read": True}, clock=clock)
    namespace = ("docs", "user1")
    await store.aput(namespace, "item1", {"text": "content1", "id": 1})
    await store.aput(namespace, "item2", {"text": "content2", "id": 2})
    clock.sleep(ttl_seconds * 0.75)
    searched_items = await store.asearch(namespace, filter={"id": 1}, refresh_ttl=True)
    assert len(searched_items) == 1
    assert searched_items[0].key == "item1"
    clock.sleep(ttl_seconds * 0.5)
    await store.asweep_ttl()
    item1_check1 = await store.aget(namespace, "item1", refresh_ttl=False)
    assert item1_check1 is not None, "Item1 should exist after asearch refresh and first sweep"
    assert item1_check1.value["text"] == "content1"
    item2_check1 = await store.aget(namespace, "item2", refresh_ttl=False)
    assert item2_check1 is None, "Item2 should be gone after its original TTL expired"
    clock.sleep(ttl_seconds * 0.625)
    await store.asweep_ttl()
    item1_final_check = await store.aget(namespace, "item1", refresh_ttl=False)
    assert item1_final_check is None, "Item1 should be gone after its refreshed TTL expired"
