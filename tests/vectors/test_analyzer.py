"""The word analyzer, the BM25 encoder over it, every BM25 using it, and old stores.

``data/store_3eb5c89.tar.xz`` is an embedded store written by commit 3eb5c89 (BM25
over tiktoken ids, sparse vector ``"sparse"``): ``data/make_store_3eb5c89.py`` run by
the interpreter of a checkout at 3eb5c89, then ``tar -cJf`` of its output directory.
"""

from __future__ import annotations

import json
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from offprompt.errors import ValidationError
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import (
    Analyzer,
    BM25SparseEncoder,
    BM25WordEncoder,
    QdrantVectorStore,
    VectorRecord,
)
from offprompt.vectors.analyzer import term_index

DATA = Path(__file__).parent / "data"


def test_case_folding_and_unicode_normalisation() -> None:
    a = Analyzer()
    assert a.terms("PARIS Paris paris") == ["pari"] * 3
    assert a.terms("Straße") == a.terms("STRASSE") == a.terms("strasse")
    # NFKC: full-width letters and ligatures become their plain letters
    assert a.terms("\uff23\uff21\uff2d\uff30\uff29\uff2e\uff27") == a.terms("camping") == ["camp"]
    assert Analyzer(language=None).terms("\ufb01le") == ["file"]


def test_stemming_joins_word_forms() -> None:
    a = Analyzer()
    assert a.terms("camp camping camped camps") == ["camp"] * 4
    assert a.terms("painted paintings") == ["paint", "paint"]
    assert Analyzer(stem=False).terms("camping camped") == ["camping", "camped"]
    assert Analyzer(language=None).terms("camping") == ["camping"]


def test_stop_words_are_dropped_and_configurable() -> None:
    assert Analyzer().terms("What did she do with the kids?") == ["kid"]
    assert Analyzer(stop_words=()).terms("What did she do") == ["what", "did", "she", "do"]
    assert Analyzer(stop_words=["KIDS"]).terms("the kids") == ["the"]
    with pytest.raises(ValidationError, match="iterable of words"):
        Analyzer(stop_words="the")


def test_words_not_subword_pieces_and_numbers_kept() -> None:
    a = Analyzer(language=None)
    assert a.terms("blk_-42 node7:disk-full") == ["blk_", "42", "node7", "disk", "full"]
    assert Analyzer().terms("in 2023 ran 10km") == ["2023", "ran", "10km"]
    long = "x" * 500
    assert Analyzer(language=None, max_word_chars=64).terms(long) == ["x" * 64]


def test_empty_input_and_lone_surrogates() -> None:
    a = Analyzer()
    assert a.terms("") == [] and a.terms("  ,;!? ") == [] and a.terms("the of a") == []
    assert a.terms("camp\udcffing trip\ud800") == ["camp", "ing", "trip"]
    enc = BM25WordEncoder()
    assert len(enc.encode_query("")) == 0 and len(enc.encode_document("")) == 0
    assert enc.encode_documents([]) == []
    assert [len(v) for v in enc.encode_documents(["", "trip", "\udcff"])] == [0, 1, 0]
    with pytest.raises(ValidationError, match="must be str"):
        a.terms(b"bytes")  # type: ignore[arg-type]


def test_unknown_language_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="unknown language 'klingon'"):
        Analyzer(language="klingon")
    # no stop word list ships for French: "les" stays unless stop_words= is given
    assert Analyzer(language="french").terms("Les chanteuses chantaient") == [
        "le",
        "chanteux",
        "chant",
    ]


def test_term_index_is_a_stable_32_bit_hash() -> None:
    assert 0 <= term_index("camp") < 2**32
    assert Analyzer().indices("Camping") == [term_index("camp")]
    # stable across processes: CRC-32 of the UTF-8 bytes, not Python's salted hash()
    import zlib

    assert term_index("café") == zlib.crc32("café".encode())


def test_write_and_query_side_are_identical() -> None:
    enc = BM25WordEncoder()
    doc = enc.encode_document("Caroline went CAMPING at the lake; camping again!")
    query = enc.encode_query("caroline camped lake")
    assert set(query.indices) <= set(doc.indices)
    assert query.values == [1.0, 1.0, 1.0]
    # the repeated term carries a larger BM25 weight than a single one
    weight = dict(zip(doc.indices, doc.values, strict=True))
    assert weight[term_index("camp")] > weight[term_index("lake")]


def test_feedback_terms_share_a_fraction_of_the_query_weight() -> None:
    enc = BM25WordEncoder(feedback_weight=2.0)
    plain = enc.encode_query("sister city")
    widened = enc.encode_query("sister city", feedback=["Maya Lisbon Lisbon"])
    got = dict(zip(widened.indices, widened.values, strict=True))
    assert got[term_index("sister")] == 1.0
    assert got[term_index("lisbon")] == pytest.approx(2.0 * 2 / 3)
    assert got[term_index("maya")] == pytest.approx(2.0 / 3)
    assert set(plain.indices) < set(widened.indices)
    with pytest.raises(ValidationError, match="feedback_weight"):
        BM25WordEncoder(feedback_weight=-1)


def test_store_uses_the_analyzer_for_writes_and_queries() -> None:
    with QdrantVectorStore() as store:
        assert isinstance(store.sparse_encoder, BM25WordEncoder)
        store.upsert(
            "docs",
            [
                VectorRecord(id="a", text="Caroline went camping with the kids", payload={}),
                VectorRecord(id="b", text="Melanie paints sunsets", payload={}),
            ],
        )
        # case, stemming and stop words: no tiktoken piece of " CAMP" matches "camping"
        assert [h.id for h in store.search("docs", "Who CAMPS?", top_n=1, mode="sparse")] == ["a"]
        assert store.search("docs", "the what", top_n=2, mode="sparse") == []
    french = Analyzer(language="french")
    with QdrantVectorStore(analyzer=french) as store:
        encoder = store.sparse_encoder
        assert isinstance(encoder, BM25WordEncoder) and encoder.analyzer is french


def test_longterm_memory_bm25_uses_the_analyzer() -> None:
    with LongTermMemory() as ltm:
        assert isinstance(ltm.store.sparse_encoder, BM25WordEncoder)
        ltm.write(
            MemoryFragment(observation="Caroline went CAMPING at the lake", scope=Scope(user="u"))
        )
        ltm.write(MemoryFragment(observation="Melanie paints sunsets", scope=Scope(user="u")))
        (hit,) = ltm.search("camped", k=1, scope=Scope(user="u"), mode="sparse")
        assert hit.fragment.observation.startswith("Caroline")


def test_task_memory_chunks_count_tiktoken_ids_and_can_count_words() -> None:
    # Tool outputs keep BM25 over tiktoken ids (lexical="tokens"; the Loghub rare-event
    # benchmark favours it); a task memory on a words store runs the analyzer.
    from offprompt.artifacts import TextArtifact
    from offprompt.task_memory import TaskMemory
    from offprompt.vectors import BM25SparseEncoder

    with TaskMemory() as memory:
        assert isinstance(memory.vector_store.sparse_encoder, BM25SparseEncoder)
    with TaskMemory(vector_store=QdrantVectorStore(lexical="words")) as memory:
        assert isinstance(memory.vector_store.sparse_encoder, BM25WordEncoder)
        lines = [f"INFO heartbeat {i} ok" for i in range(400)]
        lines[123] = "ERROR Disk FULL on node-7 while Writing block"
        memory.store_artifact("log", TextArtifact(value="\n".join(lines)))
        memory.wait_indexed()
        hits = memory.query("log", "disks full writes", top_n=1, mode="sparse")
        assert hits.value and "Disk FULL on node-7" in hits.value[0].value


def test_langgraph_store_keyword_search_uses_the_analyzer() -> None:
    from offprompt_langchain.store import OffpromptStore

    store = OffpromptStore(fields=["text"])
    try:
        assert isinstance(store.vector_store.sparse_encoder, BM25WordEncoder)
        store.put(("u",), "1", {"text": "Caroline went CAMPING at the lake"})
        store.put(("u",), "2", {"text": "Melanie paints sunsets"})
        found = store.search(("u",), query="camped", limit=1)
        assert found and found[0].key == "1"
    finally:
        store.close()


def _unpack(tmp_path: Path) -> Path:
    with tarfile.open(DATA / "store_3eb5c89.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path


def test_a_store_written_by_3eb5c89_reads_and_writes_back(tmp_path: Path) -> None:
    path = _unpack(tmp_path)
    config = json.loads((path / "offprompt" / "edge_config.json").read_text())
    assert list(config["sparse_vectors"]) == ["sparse"]  # tiktoken ids, as 3eb5c89 wrote
    t1 = datetime(2026, 11, 1, 13, 0, tzinfo=timezone.utc)
    with QdrantVectorStore(path=str(path)) as store:
        # the collection keeps the encoder it was written with
        assert isinstance(store.sparse_encoder, BM25SparseEncoder)
        ltm = LongTermMemory(store, clock=lambda: t1)
        assert ltm.count() == 4 and ltm.count(scope=Scope(user="alice")) == 3
        (hit,) = ltm.search("camping lake", k=1, scope=Scope(user="alice"), mode="sparse")
        assert hit.fragment.observation.startswith("Caroline went camping")
        assert hit.fragment.meta == {"v": "3eb5c89"}
        hybrid = ltm.read("Who is a nurse?", k=1, scope=Scope(user="alice"))
        assert hybrid[0].observation == "Caroline's sister Maya is a nurse in Lyon."
        docs = store.search("docs", "disk full node-7", top_n=1, mode="sparse")
        assert docs[0].id == "log-1"
        # new writes go to the same vector, with the same encoder: they are found too
        ltm.write(
            MemoryFragment(
                observation="Maya flies to Oslo in May.", importance=0.5, scope=Scope(user="alice")
            )
        )
        (new,) = ltm.search("Oslo flight", k=1, scope=Scope(user="alice"), mode="sparse")
        assert new.fragment.observation == "Maya flies to Oslo in May."
    with QdrantVectorStore(path=str(path)) as store:  # and it opens again afterwards
        assert LongTermMemory(store).count(scope=Scope(user="alice")) == 4
        assert json.loads((path / "offprompt" / "edge_config.json").read_text())[
            "sparse_vectors"
        ].keys() == {"sparse"}


def test_a_new_store_writes_the_words_vector(tmp_path: Path) -> None:
    with QdrantVectorStore(path=str(tmp_path)) as store:
        store.upsert("docs", [VectorRecord(id="a", text="camping trip", payload={})])
    config = json.loads((tmp_path / "offprompt" / "edge_config.json").read_text())
    assert list(config["sparse_vectors"]) == ["words"]
    with QdrantVectorStore(path=str(tmp_path)) as store:
        assert isinstance(store.sparse_encoder, BM25WordEncoder)
        assert [h.id for h in store.search("docs", "camps", top_n=1, mode="sparse")] == ["a"]


def test_client_engine_keeps_an_old_collections_sparse_vector() -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "offprompt",
        vectors_config={"dense": models.VectorParams(size=384, distance=models.Distance.COSINE)},
        sparse_vectors_config={"sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantVectorStore(client=client)
    assert isinstance(store.sparse_encoder, BM25SparseEncoder)
    store.upsert("docs", [VectorRecord(id="a", text="disk full on node 7", payload={})])
    assert [h.id for h in store.search("docs", "disk full", top_n=1, mode="sparse")] == ["a"]
    fresh = QdrantVectorStore(client=QdrantClient(":memory:"))
    assert isinstance(fresh.sparse_encoder, BM25WordEncoder)
