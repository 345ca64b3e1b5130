"""``QdrantVectorStore``'s openers: ``in_memory``, ``at_path``, ``at_url``, ``on_client``.

Each opens the same store as the constructor's short form it names, and refuses a second
place among its options.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient

from offprompt.errors import StorageError, ValidationError
from offprompt.vectors import HashingEmbedder, QdrantVectorStore, VectorRecord

RECORDS = [
    VectorRecord(id="a", text="disk full on node 7, writes are failing", payload={}),
    VectorRecord(id="b", text="the cat sat on the mat in the sun", payload={}),
]


def _finds_the_disk(store: QdrantVectorStore) -> bool:
    return store.search("docs", "which node ran out of disk?", top_n=1)[0].id == "a"


@pytest.mark.parametrize("engine", ["edge", "client"])
def test_in_memory_is_the_default_store(engine: str) -> None:
    with QdrantVectorStore.in_memory(engine=engine, collection="notes") as store:
        assert (store.engine, store.collection) == (engine, "notes")
        store.upsert("docs", RECORDS)
        assert _finds_the_disk(store)
    with QdrantVectorStore.in_memory(engine=engine, collection="notes") as fresh:
        assert fresh.count("docs") == 0  # nothing outlives the process's store


@pytest.mark.parametrize("engine", ["edge", "client"])
def test_at_path_is_durable(tmp_path: Path, engine: str) -> None:
    embedder = HashingEmbedder(dimensions=64)
    with QdrantVectorStore.at_path(tmp_path / "index", engine=engine, embedder=embedder) as store:
        assert store.engine == engine
        store.upsert("docs", RECORDS)
    # The same directory as a str, through the constructor's short form: the same store.
    with QdrantVectorStore(path=str(tmp_path / "index"), engine=engine, embedder=embedder) as again:
        assert again.count("docs") == 2 and _finds_the_disk(again)


def test_on_client_uses_that_client() -> None:
    client = QdrantClient(":memory:")
    store = QdrantVectorStore.on_client(client, collection="mine", tenant="acme")
    assert (store.engine, store.tenant) == ("client", "acme")
    store.upsert("docs", RECORDS)
    assert client.collection_exists("mine") and client.count("mine").count == 2
    assert _finds_the_disk(store)
    store.close()


async def test_on_client_with_an_async_client_answers_the_async_twins() -> None:
    client, aclient = QdrantClient(":memory:"), AsyncQdrantClient(":memory:")
    store = QdrantVectorStore.on_client(client, aclient=aclient)
    await store.aupsert("docs", RECORDS)  # through aclient: a sync twin would not see it
    assert [hit.id for hit in await store.asearch("docs", "disk full node", top_n=1)] == ["a"]
    store.close()
    await aclient.close()


def test_at_url_opens_qdrant_client_on_that_server() -> None:
    # The network is blocked in tests, so the server cannot be reached: the opener goes to
    # it (through qdrant-client, not the embedded engine) and says which collection failed.
    with pytest.raises(StorageError, match="cannot open Qdrant collection 'remote'"):
        QdrantVectorStore.at_url("https://qdrant.invalid:6333", api_key="k", collection="remote")


@pytest.mark.parametrize(
    ("opener", "args", "place"),
    [
        ("in_memory", (), {"path": "/tmp/x"}),
        ("in_memory", (), {"url": "http://qdrant.invalid:6333"}),
        ("at_path", ("/tmp/x",), {"location": ":memory:"}),
        ("at_url", ("http://qdrant.invalid:6333",), {"path": "/tmp/x"}),
        ("on_client", (None,), {"url": "http://qdrant.invalid:6333"}),
    ],
)
def test_an_opener_refuses_a_second_place(opener: str, args: tuple, place: dict) -> None:
    (key,) = place
    with pytest.raises(ValidationError, match=rf"{opener}\(\) opens its own place; drop {key}="):
        getattr(QdrantVectorStore, opener)(*args, **place)


@pytest.mark.parametrize(
    "open_remote",
    [
        lambda: QdrantVectorStore.at_url("http://qdrant.invalid:6333", engine="edge"),
        lambda: QdrantVectorStore.on_client(QdrantClient(":memory:"), engine="edge"),
    ],
)
def test_a_remote_opener_refuses_the_embedded_engine(open_remote) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="engine='edge' is embedded"):
        open_remote()


def test_a_bad_option_fails_as_in_the_constructor() -> None:
    with pytest.raises(ValidationError, match="batch_size must be >= 1"):
        QdrantVectorStore.in_memory(batch_size=0)
    with pytest.raises(TypeError):
        QdrantVectorStore.in_memory(colection="typo")
