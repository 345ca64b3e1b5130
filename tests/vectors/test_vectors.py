"""Embedder, BM25 encoder and QdrantVectorStore against both embedded engines (real Qdrant)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import AsyncQdrantClient, QdrantClient

from offprompt.errors import NamespaceError, StorageError, ValidationError
from offprompt.names import validate_namespace
from offprompt.vectors import (
    BM25SparseEncoder,
    BM25WordEncoder,
    Embedder,
    HashingEmbedder,
    QdrantVectorStore,
    Range,
    VectorRecord,
    point_id,
)

DOCS = {
    "a": "disk full on node 7, writes are failing",
    "b": "the cat sat on the mat in the sun",
    "c": "TLS certificate for api.example.com expires tomorrow",
    "d": "garbage collection pause of 4 seconds on the JVM",
}


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantVectorStore]:
    s = QdrantVectorStore(engine=request.param, embedder=HashingEmbedder(dimensions=128))
    yield s
    s.close()


def _fill(s: QdrantVectorStore, ns: str = "ops") -> None:
    s.upsert(
        ns,
        [
            VectorRecord(id=k, text=v, payload={"i": i, "tag": "x" if i % 2 else "y"})
            for i, (k, v) in enumerate(DOCS.items())
        ],
    )


def test_hashing_embedder_is_deterministic_normalised_and_similarity_aware() -> None:
    emb = HashingEmbedder(dimensions=64)
    assert isinstance(emb, Embedder)
    a, b, c = emb.embed_documents(["disk is full", "the disk is full!", "zebra crossing"])
    assert a == HashingEmbedder(dimensions=64).embed_query("disk is full")
    assert math.isclose(float(np.linalg.norm(a)), 1.0, rel_tol=1e-5)
    assert np.dot(a, b) > np.dot(a, c)
    assert emb.embed_query("") == [0.0] * 64
    assert emb.embed_query("日本語のテキスト") != [0.0] * 64
    with pytest.raises(ValidationError):
        HashingEmbedder(dimensions=2)
    with pytest.raises(ValidationError):
        emb.embed_documents([b"bytes"])  # type: ignore[list-item]


async def test_hashing_embedder_async_twins() -> None:
    emb = HashingEmbedder(dimensions=32)
    assert await emb.aembed_query("x y") == emb.embed_query("x y")
    assert await emb.aembed_documents(["a", "b"]) == emb.embed_documents(["a", "b"])


def test_bm25_saturates_term_frequency_and_queries_are_binary() -> None:
    enc = BM25SparseEncoder()
    once = enc.encode_document(" error")
    many = enc.encode_document(" error" * 6)
    assert once.indices == many.indices == enc.tokenizer.encode(" error")
    assert many.values[0] > once.values[0]
    assert many.values[0] < 6 * once.values[0]
    assert many.values[0] < enc.k1 + 1
    query = enc.encode_query("Error")
    assert set(enc.tokenizer.encode(" error")) <= set(query.indices)
    assert set(query.values) == {1.0}
    assert len(enc.encode_document("")) == 0
    with pytest.raises(ValidationError):
        BM25SparseEncoder(b=2.0)


def test_point_ids_are_stable_and_scoped() -> None:
    assert point_id("t", "ns", "1") == point_id("t", "ns", "1")
    assert len({point_id("t", "ns", "1"), point_id("t", "ns2", "1"), point_id("u", "ns", "1")}) == 3


@pytest.mark.parametrize(
    "bad", ["", "   ", "a/b", "a\\b", "..", "x..y", "a\x00b", "tab\there", "x" * 201, 5]
)
def test_validate_namespace_rejects_unsafe_names(bad: object) -> None:
    with pytest.raises(NamespaceError):
        validate_namespace(bad)


def test_validate_namespace_accepts_unicode() -> None:
    assert validate_namespace("résumé-日本-🎉.v1") == "résumé-日本-🎉.v1"


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_search_finds_the_relevant_record(store: QdrantVectorStore, mode: str) -> None:
    _fill(store)
    hits = store.search("ops", "which node has a full disk?", top_n=2, mode=mode)  # type: ignore[arg-type]
    assert hits[0].id == "a"
    assert hits[0].text == DOCS["a"]
    assert hits[0].payload == {"i": 0, "tag": "y"}
    assert "namespace" not in hits[0].payload


def test_filters_lists_and_ranges(store: QdrantVectorStore) -> None:
    _fill(store)
    assert {h.id for h in store.search("ops", "anything", top_n=10, filter={"tag": "x"})} == {
        "b",
        "d",
    }
    assert {
        h.id for h in store.search("ops", "anything", top_n=10, filter={"tag": ["x", "y"]})
    } == set(DOCS)
    assert store.count("ops", filter={"i": Range(gte=1, lt=3)}) == 2
    with pytest.raises(ValidationError):
        store.search("ops", "q", filter={"namespace": "other"})
    with pytest.raises(ValidationError):
        store.search("ops", "q", filter={"tag": []})
    with pytest.raises(ValidationError):
        store.search("ops", "q", top_n=0)


def test_namespaces_never_leak(store: QdrantVectorStore) -> None:
    _fill(store, "one")
    store.upsert("two", [VectorRecord(id="z", text=DOCS["a"])])
    assert [h.id for h in store.search("two", "disk full", top_n=10)] == ["z"]
    assert store.search("unknown", "disk full") == []
    assert store.namespaces() == ["one", "two"]
    with pytest.raises(NamespaceError):
        store.search("../one", "disk")


def test_tenants_with_identical_texts_are_isolated(store: QdrantVectorStore) -> None:
    acme, globex = store.with_tenant("acme"), store.with_tenant("globex")
    acme.upsert("ns", [VectorRecord(id="1", text="secret plan alpha", payload={"owner": "acme"})])
    globex.upsert(
        "ns", [VectorRecord(id="1", text="secret plan alpha", payload={"owner": "globex"})]
    )
    assert [h.payload["owner"] for h in acme.search("ns", "secret plan", top_n=10)] == ["acme"]
    assert [h.payload["owner"] for h in globex.search("ns", "secret plan", top_n=10)] == ["globex"]
    assert acme.delete("ns") == 1
    assert globex.count("ns") == 1
    assert store.search("ns", "secret plan") == []


def test_upsert_is_idempotent_and_scroll_orders(store: QdrantVectorStore) -> None:
    _fill(store)
    _fill(store)
    assert store.count("ops") == 4
    assert [r.id for r in store.scroll("ops", order_by="i")] == ["a", "b", "c", "d"]
    assert sorted(r.id for r in store.scroll("ops")) == ["a", "b", "c", "d"]
    batches = list(store.iter_scroll("ops", batch_size=3))
    assert [len(b) for b in batches] == [3, 1]


def test_set_payload_delete_and_metadata(store: QdrantVectorStore) -> None:
    _fill(store)
    store.set_payload("ops", ["a", "missing"], {"importance": 0.9})
    assert store.search("ops", "disk", top_n=1, filter={"i": 0})[0].payload["importance"] == 0.9
    with pytest.raises(ValidationError):
        store.set_payload("ops", ["a"], {"text": "overwrite"})
    store.put_metadata("ops", "m", {"version": 1})
    assert store.get_metadata("ops", "m") == {"version": 1}
    assert store.count("ops") == 4  # metadata points are not records
    assert store.list_metadata("m") == {"ops": {"version": 1}}
    assert store.delete("ops", ids=["a", "nope"]) == 1
    assert store.delete("ops", filter={"tag": "x"}) == 2
    assert [r.id for r in store.scroll("ops")] == ["c"]
    store.delete_metadata("ops", "m")
    assert store.get_metadata("ops", "m") is None


def test_bad_records_are_refused_and_nothing_is_written(store: QdrantVectorStore) -> None:
    with pytest.raises(ValidationError):
        store.upsert("ops", [VectorRecord(id="", text="x")])
    with pytest.raises(ValidationError):
        store.upsert("ops", [VectorRecord(id="a", text="x", payload={"namespace": "evil"})])
    with pytest.raises(ValidationError):
        store.upsert("ops", [VectorRecord(id="a", text="x", vector=[1.0, 2.0])])
    assert store.count("ops") == 0


def test_precomputed_vectors_and_unicode_round_trip(store: QdrantVectorStore) -> None:
    text = "naïve café 日本語 🎉 \u200b end"
    vector = HashingEmbedder(dimensions=128).embed_query("custom")
    store.upsert("u", [VectorRecord(id="ключ", text=text, vector=vector)])
    assert store.scroll("u")[0].id == "ключ"
    assert store.search("u", "custom", top_n=1, mode="dense")[0].text == text


def test_edge_store_persists_across_reopen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with QdrantVectorStore(path=str(tmp_path), engine="edge") as s:
        assert s.engine == "edge"
        _fill(s)
    with QdrantVectorStore(path=str(tmp_path), engine="edge") as s:
        assert s.count("ops") == 4
        assert s.search("ops", "full disk", top_n=1)[0].id == "a"


def test_reopen_with_other_dimensions_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    QdrantVectorStore(path=str(tmp_path), engine="client").close()
    with pytest.raises(StorageError, match="incompatible"):
        QdrantVectorStore(
            path=str(tmp_path), engine="client", embedder=HashingEmbedder(dimensions=64)
        )


def test_engine_choice_and_argument_errors() -> None:
    assert QdrantVectorStore().engine == "edge"
    assert QdrantVectorStore(client=QdrantClient(":memory:")).engine == "client"
    with pytest.raises(ValidationError):
        QdrantVectorStore(client=QdrantClient(":memory:"), engine="edge")
    with pytest.raises(ValidationError):
        QdrantVectorStore(path="/tmp/x", location=":memory:")
    with pytest.raises(NamespaceError):
        QdrantVectorStore(tenant="a/b")
    closed = QdrantVectorStore()
    closed.close()
    with pytest.raises(StorageError):
        closed.count("ops")


async def test_async_twins_embedded(store: QdrantVectorStore) -> None:
    await store.aupsert("ops", [VectorRecord(id=k, text=v) for k, v in DOCS.items()])
    assert (await store.asearch("ops", "cat on a mat", top_n=1))[0].id == "b"
    assert await store.acount("ops") == 4
    await store.aset_payload("ops", ["b"], {"seen": True})
    assert [r.id for r in await store.ascroll("ops") if r.payload.get("seen")] == ["b"]
    assert await store.adelete("ops", ids=["b"]) == 1
    assert await store.anamespaces() == ["ops"]


async def test_native_async_client_path() -> None:
    # A sync and an async ":memory:" client do not share data: this test uses only
    # the async methods, which go through AsyncQdrantClient.
    store = QdrantVectorStore(
        client=QdrantClient(":memory:"), aclient=AsyncQdrantClient(":memory:")
    )
    await store.aupsert("ops", [VectorRecord(id=k, text=v) for k, v in DOCS.items()])
    assert store.count("ops") == 0  # the sync client never saw the async writes
    assert (await store.asearch("ops", "certificate expiry", top_n=1))[0].id == "c"
    assert await store.acount("ops") == 4
    await store.aset_payload("ops", ["c"], {"urgent": True})
    assert [r.id for r in await store.ascroll("ops") if r.payload.get("urgent")] == ["c"]
    assert await store.adelete("ops") == 4
    assert await store.acount("ops") == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 300), max_size=40), min_size=1, max_size=12))
def test_bm25_span_encoding_equals_one_document_at_a_time(docs: list[list[int]]) -> None:
    enc = BM25SparseEncoder(avg_len=16.0)
    flat = np.asarray([i for doc in docs for i in doc], dtype=np.uint32)
    stops = np.cumsum([len(doc) for doc in docs]).tolist()
    together = enc.encode_spans(flat, stops)
    assert len(together) == len(docs)
    for doc, got in zip(docs, together, strict=True):
        want = enc.encode_ids(doc)
        assert got.indices == want.indices == sorted(set(doc))
        assert np.allclose(got.values, want.values)
    with pytest.raises(ValidationError, match="token ids"):
        enc.encode_ids([-1, 2])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_document_terms_are_the_terms_encode_documents_weights(texts: list[str]) -> None:
    """What task memory's rerank matches lines on: the built-in encoders' terms without
    the weights must be exactly the indices their sparse vectors carry."""
    for enc in (BM25SparseEncoder(avg_len=16.0), BM25WordEncoder()):
        terms = enc.document_terms(texts)
        vectors = enc.encode_documents(texts)
        assert [sorted(set(t)) for t in terms] == [v.indices for v in vectors]


def test_unscoped_points_carry_no_empty_scope_fields_and_scopes_stay_apart(
    store: QdrantVectorStore,
) -> None:
    from offprompt.scope import Scope

    store.upsert("ns", [VectorRecord(id="plain", text="shared words here", payload={})])
    user = store.with_scope(Scope(user="u1"))
    user.upsert("ns", [VectorRecord(id="mine", text="shared words here", payload={})])
    # private-ok: the engine's raw points, unfiltered
    raw = store._backend.scroll([("namespace", "ns")], limit=10)[0]
    keys = {s.payload["record_id"]: set(s.payload) for s in raw}
    assert not any(k.startswith("scope_") for k in keys["plain"])
    assert {k for k in keys["mine"] if k.startswith("scope_")} == {"scope_user"}
    assert [h.id for h in store.search("ns", "shared words")] == ["plain"]
    assert [h.id for h in user.search("ns", "shared words")] == ["mine"]
    assert [r.id for r in store.scroll("ns")] == ["plain"]
    assert store.count("ns") == 1 and user.count("ns") == 1


def test_points_written_with_empty_scope_strings_still_read_as_unscoped(
    store: QdrantVectorStore,
) -> None:
    # Stores written before unset scope fields were left out hold them as "".
    from offprompt.vectors._backends import BackendPoint

    store.upsert("ns", [VectorRecord(id="new", text="alpha words", payload={})])
    # private-ok: builds the point an earlier release wrote
    old = store._prepare("ns", [VectorRecord(id="old", text="alpha words", payload={})])[0]
    old.payload.update(scope_user="", scope_agent="", scope_session="", scope_run="")
    # private-ok: the engine's raw points, unfiltered
    store._backend.upsert([BackendPoint(old.id, old.dense, old.sparse, old.payload)])
    assert sorted(r.id for r in store.scroll("ns")) == ["new", "old"]
    assert sorted(h.id for h in store.search("ns", "alpha words")) == ["new", "old"]
    assert store.count("ns") == 2
    store.delete("ns")
    assert store.count("ns") == 0
