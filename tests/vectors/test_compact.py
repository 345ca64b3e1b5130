"""The embedded engine's derived-index options: a collection without a write-ahead log
(``wal=False``), its own lock, its rebuild when unreadable, and ``compact()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offprompt.errors import StorageError
from offprompt.vectors import QdrantVectorStore, VectorRecord


def _records(start: int, stop: int) -> list[VectorRecord]:
    return [
        VectorRecord(
            id=f"r{i}",
            text=f"host-{i} disk usage {i % 97} percent on volume vol-{i % 13}",
            payload={"n": i},
        )
        for i in range(start, stop)
    ]


def _store(path: Path, **kw: object) -> QdrantVectorStore:
    return QdrantVectorStore(path=str(path), lexical="tokens", dense=False, **kw)  # type: ignore[arg-type]


def test_a_walless_collection_has_no_wal_and_reopens_with_every_point(tmp_path: Path) -> None:
    store = _store(tmp_path, wal=False)
    assert store.walless and not store.rebuilt
    store.upsert("ns", _records(0, 300))
    store.put_metadata("ns", "state", {"v": 1})
    store.close()
    shard = tmp_path / "offprompt"
    assert not (shard / "wal").exists()
    assert json.loads((shard / "edge_config.json").read_text())["wal_enabled"] is False
    # reopened without saying wal=False: the collection keeps what it was created with
    again = _store(tmp_path)
    try:
        assert again.walless and not again.rebuilt
        assert again.count("ns") == 300
        assert again.get_metadata("ns", "state") == {"v": 1}
        assert again.search("ns", "host-123 disk", top_n=1)[0].id == "r123"
    finally:
        again.close()
    # and a collection made with a WAL keeps its WAL
    wal_dir = tmp_path / "with-wal"
    with _store(wal_dir) as kept:
        assert not kept.walless
        kept.upsert("ns", _records(0, 10))
    assert (wal_dir / "offprompt" / "wal").is_dir()


def test_a_second_open_of_a_walless_collection_is_refused_as_locked(tmp_path: Path) -> None:
    # the engine locks a shard only through its WAL; without one offprompt's lock does
    first = _store(tmp_path, wal=False)
    try:
        with pytest.raises(StorageError, match="locked by another process"):
            _store(tmp_path, wal=False)
    finally:
        first.close()
    _store(tmp_path).close()  # released on close


def _corrupt(shard: Path) -> None:
    for state in (shard / "segments").glob("*/segment.json"):
        state.write_text("not json{", encoding="utf-8")


def test_an_unreadable_walless_collection_is_created_again_empty(tmp_path: Path) -> None:
    with _store(tmp_path, wal=False) as store:
        store.upsert("ns", _records(0, 50))
    _corrupt(tmp_path / "offprompt")
    again = _store(tmp_path)
    try:
        assert again.rebuilt and again.walless
        assert again.count("ns") == 0
        again.upsert("ns", _records(0, 5))
        assert again.count("ns") == 5
    finally:
        again.close()


def test_an_unreadable_collection_with_a_wal_is_an_error_and_kept(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.upsert("ns", _records(0, 50))
    shard = tmp_path / "offprompt"
    _corrupt(shard)
    before = sorted(str(p.relative_to(shard)) for p in shard.rglob("*"))
    with pytest.raises(StorageError, match="cannot open embedded Qdrant shard"):
        _store(tmp_path)
    assert sorted(str(p.relative_to(shard)) for p in shard.rglob("*")) == before


def test_compact_seals_the_points_and_keeps_every_answer(tmp_path: Path) -> None:
    store = _store(tmp_path, wal=False)
    try:
        store.upsert("ns", _records(0, 2000))
        queries = ["host-1234 disk", "vol-7 usage 42 percent", "host-5 volume"]
        before = [[h.id for h in store.search("ns", q, top_n=5)] for q in queries]
        assert not store.compact(min_bytes=1 << 40)  # too little written: nothing done
        assert store.compact()
        assert not store.compact()  # nothing written since
        assert [[h.id for h in store.search("ns", q, top_n=5)] for q in queries] == before
        assert store.count("ns") == 2000
        # writes, deletes and filters work on the reloaded collection
        store.upsert("ns", _records(2000, 2100))
        assert store.delete("ns", ids=["r1", "r2001"]) == 2
        assert store.count("ns") == 2098
        assert store.count("ns", filter={"n": 1234}) == 1
        assert store.compact()
        assert store.count("ns") == 2098
    finally:
        store.close()
    with _store(tmp_path) as again:
        assert again.count("ns") == 2098
        # the whole text of one point: "host-2050 disk" alone ties r2050 with r2054 on the
        # token "205" and the order of ties moved with the sealed index's float16 weights
        text = _records(2050, 2051)[0].text
        assert again.search("ns", text, top_n=1)[0].id == "r2050"


def test_compact_of_a_store_in_memory_does_nothing() -> None:
    with QdrantVectorStore(lexical="tokens", dense=False) as store:
        store.upsert("ns", _records(0, 100))
        assert not store.compact()
        assert store.count("ns") == 100
