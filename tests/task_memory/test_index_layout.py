"""The chunk index of a task memory holds locations, not text, and no dense vectors by
default: a passage's text is read from the stored raw output, identical to what the
chunk's span of the text is, whatever store holds the raw output."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.errors import StorageError, ValidationError
from offprompt.stores.sqlite import SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.task_memory._points import CHUNKS_PER_POINT, points_for
from offprompt.task_memory.chunking import iter_chunks
from offprompt.tokens import default_tokenizer
from offprompt.vectors import QdrantVectorStore


def _log(lines: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = ["GET", "/api/v1/items", "latency", "ms", "é", "日本", "Zürich", "cache", "miss"]
    return "".join(
        f"{i:06d} " + " ".join(rng.choice(words) for _ in range(10)) + "\n" for i in range(lines)
    )


def _chunk_texts(text: str, memory: TaskMemory) -> list[str]:
    return [c.text for c in iter_chunks(text, default_tokenizer().encoding, chunk_tokens=128)]


def _check_hits(
    memory: TaskMemory, namespace: str, expected: Sequence[str], queries: list[str]
) -> int:
    seen = 0
    for query in queries:
        for hit in memory.query(namespace, query, top_n=5).value:
            assert hit.value == expected[hit.meta["chunk_index"]]
            seen += 1
    return seen


QUERIES = ["000123 latency", "Zürich cache miss", "日本 GET", "000777", "é items"]


def test_chunks_hold_their_location_not_their_text(tmp_path: Path) -> None:
    text = _log(800)
    with TaskMemory(path=tmp_path / "tm", chunk_tokens=128, index="sync") as memory:
        memory.store_artifact("logs", TextArtifact(text))
        records = memory.vector_store.scroll("logs")
        data = text.encode("utf-8")
        by_seq = sorted(records, key=lambda r: r.payload["seq"])
        expected = _chunk_texts(text, memory)
        # A point indexes CHUNKS_PER_POINT consecutive chunks; its cuts are where they meet.
        assert len(by_seq) == points_for(len(expected))
        seen = []
        for record in by_seq:
            assert record.text == ""  # the text is not stored a second time
            start, stop = record.payload["byte_start"], record.payload["byte_end"]
            assert (
                text[record.payload["start"] : record.payload["end"]] == data[start:stop].decode()
            )
            bounds = [0, *record.payload.get("cuts", ()), stop - start]
            assert len(bounds) - 1 <= CHUNKS_PER_POINT
            assert record.payload["seq"] == len(seen)
            seen += [
                data[start + a : start + b].decode("utf-8") for a, b in itertools.pairwise(bounds)
            ]
        assert seen == expected
        assert _check_hits(memory, "logs", expected, QUERIES) >= 10


def test_passages_read_back_identical_from_every_raw_store(tmp_path: Path) -> None:
    """Files (a ranged read), SQLite (the view cache), in memory: every passage is its
    chunk's span of the stored text, exactly."""
    first, second = _log(600, seed=3), "second artifact: Zürich 日本 cache\n" * 50
    memory0 = TaskMemory(chunk_tokens=128)
    expected = {"a1": _chunk_texts(first, memory0), "a2": _chunk_texts(second, memory0)}
    memory0.close()
    sqlite = SQLiteStore(tmp_path / "conv.db")

    def check(memory: TaskMemory) -> int:
        seen = 0
        for query in QUERIES:
            for hit in memory.query("logs", query, top_n=5).value:
                assert hit.value == expected[hit.meta["artifact_id"]][hit.meta["chunk_index"]]
                seen += 1
        return seen

    try:
        for make in (
            lambda: TaskMemory(path=tmp_path / "tm", chunk_tokens=128),
            lambda: TaskMemory(store=sqlite, chunk_tokens=128),
            lambda: TaskMemory(chunk_tokens=128),
        ):
            with make() as memory:
                memory.store_artifact("logs", TextArtifact(first, id="a1"))
                memory.store_artifact("logs", TextArtifact(second, id="a2"))
                assert memory.wait_indexed("logs", timeout=120)
                assert check(memory) >= 15
        # Opened afresh, nothing cached: the passages are ranged reads of the files.
        with TaskMemory(path=tmp_path / "tm", chunk_tokens=128) as reopened:
            assert check(reopened) >= 15
            assert reopened.cached_bytes == 0
    finally:
        sqlite.close()


def test_task_memory_has_no_dense_vectors_by_default(tmp_path: Path) -> None:
    with TaskMemory(path=tmp_path / "tm", index="sync") as memory:
        memory.store_artifact("logs", TextArtifact(_log(50)))
        assert memory.vector_store.dense is False
        config = json.loads((tmp_path / "tm/vectors/offprompt/edge_config.json").read_text())
        assert not config.get("vectors")
        assert memory.query("logs", "000042 latency", top_n=1).value[0].value.count("000042")
        with pytest.raises(ValidationError, match="mode='dense' needs dense vectors"):
            memory.query("logs", "latency", mode="dense")
    with TaskMemory() as in_memory:
        assert in_memory.vector_store.dense is False


def test_a_store_keeps_the_dense_vectors_it_was_created_with(tmp_path: Path) -> None:
    path = str(tmp_path / "vectors")
    from offprompt.vectors import VectorRecord

    with QdrantVectorStore(path=path) as store:  # dense, as a user's store may be
        assert store.dense
        store.upsert("docs", [VectorRecord(id="a", text="disk full on node 7")])
    with QdrantVectorStore(path=path, dense=False) as reopened:  # an old index keeps them
        assert reopened.dense
        assert reopened.search("docs", "node", mode="dense")[0].id == "a"
    sparse_only = str(tmp_path / "sparse")
    with QdrantVectorStore(path=sparse_only, dense=False) as store:
        store.upsert("docs", [VectorRecord(id="a", text="disk full on node 7")])
        with pytest.raises(ValidationError, match="has none"):
            store.upsert("docs", [VectorRecord(id="b", text="x", vector=[0.1] * 384)])
    with QdrantVectorStore(path=sparse_only) as reopened:  # default dense=True: kept as is
        assert not reopened.dense
        assert reopened.search("docs", "node")[0].id == "a"

    class CharEmbedder:
        """A real (tiny) embedding model: letter counts."""

        dimensions = 26

        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return [float(text.lower().count(chr(97 + i))) + 0.01 for i in range(26)]

        async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            return self.embed_documents(texts)

        async def aembed_query(self, text: str) -> list[float]:
            return self.embed_query(text)

    with pytest.raises(StorageError, match="created without dense vectors"):
        QdrantVectorStore(path=sparse_only, embedder=CharEmbedder())


def test_client_engine_without_dense_vectors(tmp_path: Path) -> None:
    from offprompt.vectors import VectorRecord

    path = str(tmp_path / "local")
    with QdrantVectorStore(engine="client", path=path, dense=False) as store:
        store.upsert("docs", [VectorRecord(id="a", text="disk full on node 7")])
        assert not store.dense
        assert store.search("docs", "node")[0].id == "a"
        assert store.search("docs", "node")[0].text == "disk full on node 7"
    with QdrantVectorStore(engine="client", path=path) as reopened:  # kept without dense
        assert not reopened.dense
        assert reopened.search("docs", "node")[0].text == "disk full on node 7"


def test_json_and_multibyte_passages_are_exact() -> None:
    value = {"rows": [{"city": "Zürich", "note": "日本 " * 40, "n": i} for i in range(60)]}
    with TaskMemory(chunk_tokens=64, overlap_tokens=16, index="sync") as memory:
        memory.store_artifact("orders", JsonArtifact(value))
        text = json.dumps(value, ensure_ascii=False)
        enc = default_tokenizer().encoding
        chunks = [c.text for c in iter_chunks(text, enc, chunk_tokens=64, overlap_tokens=16)]
        hits = memory.query("orders", "Zürich 日本", top_n=5).value
        assert hits
        for hit in hits:
            assert hit.value == chunks[hit.meta["chunk_index"]]


def test_texts_waiting_for_the_indexer_are_bounded_in_bytes(tmp_path: Path) -> None:
    """Outputs stored faster than they are indexed are not all held in memory: beyond
    ``cache_bytes`` the indexer reads them back from the raw store, with the same result."""
    texts = [_log(400, seed=10 + i) + f"MARKER-{i}\n" for i in range(5)]
    with TaskMemory(path=tmp_path / "tm", cache_bytes=30_000) as memory:
        for i, text in enumerate(texts):
            assert len(text.encode()) > 20_000
            memory.store_artifact(f"log{i}", TextArtifact(text))
            assert memory.indexer.pending.bytes <= 30_000
            assert (
                sum(size for _, size in memory.indexer.pending.texts.values())
                == memory.indexer.pending.bytes
            )
        assert memory.wait_indexed(timeout=120)
        assert memory.indexer.pending.bytes == 0
        for i in range(5):
            hit = memory.query(f"log{i}", f"MARKER-{i}", top_n=1).value[0]
            assert f"MARKER-{i}" in hit.value


def test_a_narrowed_passage_counts_its_own_tokens(tmp_path: Path) -> None:
    """A hit narrowed to one chunk of its point reports that chunk's tokens, from the
    point's ``tokens_per_chunk`` or, for a point indexed before they were kept, counted;
    the query's trace event sums what the passages returned hold."""
    from offprompt.task_memory._points import narrow_hits
    from offprompt.vectors import Hit

    text = _log(800, seed=5)
    tokenizer = default_tokenizer()
    with TaskMemory(path=tmp_path / "tm", chunk_tokens=128, index="sync") as memory:
        memory.store_artifact("logs", TextArtifact(text))
        data = text.encode("utf-8")
        records = memory.vector_store.scroll("logs")
        several = [r for r in records if r.payload.get("cuts")]
        assert several
        for record in several:
            assert len(record.payload["tokens_per_chunk"]) == len(record.payload["cuts"]) + 1
            assert sum(record.payload["tokens_per_chunk"]) == record.payload["tokens"]

        def hits(keep_counts: bool) -> list[Hit]:
            made = []
            for record in several:
                payload = {**record.payload, "chunk_index": record.payload["seq"]}
                if not keep_counts:
                    del payload["tokens_per_chunk"]
                span = data[payload["byte_start"] : payload["byte_end"]].decode("utf-8")
                made.append(Hit(id=record.id, score=0.0, text=span, payload=payload))
            return made

        encoder = memory.vector_store.sparse_encoder
        for query in QUERIES:
            kept = narrow_hits(hits(True), query, encoder, 5, tokenizer.count)
            counted = narrow_hits(hits(False), query, encoder, 5, tokenizer.count)
            assert [h.text for h in kept] == [h.text for h in counted]
            assert [h.payload["tokens"] for h in kept] == [h.payload["tokens"] for h in counted]
            assert [h.payload["tokens"] for h in kept] == [tokenizer.count(h.text) for h in kept]
            assert all(
                "tokens_per_chunk" not in h.payload and "cuts" not in h.payload for h in kept
            )
            assert [h.score for h in kept] == sorted((h.score for h in kept), reverse=True)

        memory.tracer.clear()  # type: ignore[attr-defined]
        found = memory.query("logs", "000123 latency", top_n=5).value
        (event,) = memory.tracer.events("query")  # type: ignore[attr-defined]
        assert event.tokens == sum(tokenizer.count(hit.value) for hit in found) > 0
