"""Typed namespace metadata: the records the code before the typed models wrote (the
literals below were written by it, ``TaskMemory(path=..., index="sync")`` at d118759)
parse, open and round-trip; keys a newer writer adds survive our commits."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import StorageError
from offprompt.scope import Scope
from offprompt.stores.sqlite import SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.task_memory._namespace_meta import NamespaceMeta

FIRST = "disk full on node 7\nretry ok\n"
SECOND = "second part: node 9 down\n"
BLOB = b"\x00\x01binary"
ROWS = Scope(tenant="default")

TEXT_RECORD: dict[str, Any] = {
    "activity": "fetch",
    "artifacts": [
        {
            "bytes": 29,
            "chars": 29,
            "chunks": 1,
            "first_seq": 0,
            "generation": "a9636ed8bafe44f7940a0b01660d900c",
            "id": "a1",
            "indexed": True,
            "meta": {},
            "name": "logs",
            "raw": "e67c52f8865183b2ea56273dc8366a61a2ec527e69a32f18b990c11afe32118b",
            "reference": None,
            "tokens": 10,
            "type": "TextArtifact",
        },
        {
            "bytes": 25,
            "chars": 25,
            "chunks": 1,
            "first_seq": 1,
            "generation": "98227828217c4c1bb977f975f12163dc",
            "id": "a2",
            "indexed": True,
            "meta": {},
            "name": "a2",
            "raw": "df6de225c919e4dd0df9487321fb3a476902b8678b0e2f67b6ec236d6cd6fa3c",
            "reference": None,
            "tokens": 8,
            "type": "TextArtifact",
        },
    ],
    "bytes": 54,
    "chunks": 2,
    "created_at": "2026-12-02T06:04:03.735318+00:00",
    "memory": "TaskMemory",
    "pages_exact": True,
    "sensitive": False,
    "stats": {
        "artifacts": 2,
        "bytes": 54,
        "column_count": 0,
        "columns": [],
        "head": [[1, "disk full on node 7"], [2, "retry ok"], [3, "second part: node 9 down"]],
        "indexed": True,
        "json_outline": None,
        "kind": "text",
        "lines": 3,
        "page_tokens": 936,
        "pages": 1,
        "sample": None,
        "tail": [],
        "tokens": 18,
        "tokens_estimated": False,
        "tools": ["grep_memory", "read_memory", "query_memory", "summarize_memory"],
    },
    "storage": "text",
    "subtasks": [
        {
            "actions": "fetch()",
            "answer": 'Output of "logs.fetch" was stored in memory with memory_name '
            '"TaskMemory" and artifact_namespace "logs".',
            "meta": {},
            "thought": "need logs",
        }
    ],
    "tokens": 18,
    "tool": "logs",
    "updated_at": "2026-12-02T06:04:03.791857+00:00",
}

BLOB_RECORD: dict[str, Any] = {
    "activity": None,
    "artifacts": [
        {
            "artifact": {
                "id": "b1",
                "meta": {},
                "mime_type": "application/octet-stream",
                "name": "b1",
                "reference": None,
                "type": "BlobArtifact",
            },
            "bytes": 8,
            "chunks": 1,
            "first_seq": 0,
            "generation": "84baacc87cf94b8c85e7e8f495e57c3a",
            "id": "b1",
            "indexed": True,
            "key": "f8c1ccc7df7243da4740c5b7875f88b70e3f935d99c7b37a5f7239d152d994e6",
            "meta": {},
            "name": "b1",
            "reference": None,
            "tokens": 0,
            "type": "BlobArtifact",
        }
    ],
    "bytes": 8,
    "chunks": 1,
    "created_at": "2026-12-02T06:04:03.794046+00:00",
    "memory": "TaskMemory",
    "sensitive": False,
    "stats": {
        "artifacts": 1,
        "bytes": 8,
        "column_count": 0,
        "columns": [],
        "head": [],
        "indexed": True,
        "json_outline": None,
        "kind": "binary",
        "lines": 0,
        "page_tokens": 936,
        "pages": 1,
        "sample": None,
        "tail": [],
        "tokens": 0,
        "tokens_estimated": False,
        "tools": [],
    },
    "storage": "blob",
    "subtasks": [],
    "tokens": 0,
    "tool": None,
    "updated_at": "2026-12-02T06:04:03.794046+00:00",
}


def _store_with(tmp_path: Path, records: dict[str, dict[str, Any]]) -> SQLiteStore:
    """A store holding ``records`` and their bytes, as the earlier code committed them."""
    store = SQLiteStore(tmp_path / "shared.db")
    for data in (FIRST.encode(), SECOND.encode()):
        store.task_put_blob("logs", data, scope=ROWS)
    store.task_put_blob("blob", BLOB, scope=ROWS)
    for namespace, record in records.items():
        assert store.task_commit(namespace, record, expect=None, scope=ROWS) is not None
    return store


@pytest.mark.parametrize("record", [TEXT_RECORD, BLOB_RECORD], ids=["text", "blob"])
def test_an_earlier_record_round_trips_key_for_key(record: dict[str, Any]) -> None:
    meta = NamespaceMeta.parse("ns", copy.deepcopy(record), 3)
    assert meta.version == 3 and meta.artifacts[0].indexed
    assert meta.to_record() == record
    assert [e for e in meta.entries()] == record["artifacts"]  # what the storages read


def test_a_store_written_by_the_earlier_code_opens_and_serves(tmp_path: Path) -> None:
    store = _store_with(tmp_path, {"logs": TEXT_RECORD, "blob": BLOB_RECORD})
    try:
        with TaskMemory(store=store) as memory:
            assert memory.namespaces() == ["blob", "logs"]
            assert memory.read("logs", 1).value == FIRST + SECOND
            assert memory.grep("logs", "node [0-9]").total_matches == 2
            # This process's index is built from the stored text when first queried.
            assert "node 9" in memory.query("logs", "node 9 down", top_n=1).value[0].value
            assert memory.stats("logs").model_dump() == TEXT_RECORD["stats"] | {
                "head": [tuple(h) for h in TEXT_RECORD["stats"]["head"]],
                "notices": [],  # fields the earlier code did not write: their defaults
                "body_line": 0,
            }
            info = memory.namespace_metadata("logs")
            assert (info["tool"], info["tokens"], info["pages"]) == ("logs", 18, 1)
            assert info["subtasks"] == TEXT_RECORD["subtasks"]
            assert memory.load_artifacts("blob").value[0].value == BLOB
    finally:
        store.close()


def test_keys_a_newer_writer_added_survive_our_commits(tmp_path: Path) -> None:
    newer = copy.deepcopy(TEXT_RECORD)
    newer["retention_class"] = {"tier": "gold"}
    newer["artifacts"][0]["checksum_algo"] = "sha256"
    store = _store_with(tmp_path, {"logs": newer})
    try:
        with TaskMemory(store=store, index="sync") as memory:
            memory.store_artifact("logs", TextArtifact("third part: node 11 up\n", id="a3"))
            assert memory.grep("logs", "node").total_matches == 3
        after = store.task_get("logs", scope=ROWS)
        assert after is not None
        assert after.meta["retention_class"] == {"tier": "gold"}
        assert after.meta["artifacts"][0]["checksum_algo"] == "sha256"
        assert [e["id"] for e in after.meta["artifacts"]] == ["a1", "a2", "a3"]
        # The keys it did not touch are as they were; what changed is what was written.
        assert after.meta["artifacts"][:2] == newer["artifacts"]
        assert after.meta["created_at"] == newer["created_at"]
        assert after.meta["updated_at"] != newer["updated_at"]
    finally:
        store.close()


def test_a_record_older_than_the_card_and_the_indexed_flag_opens(tmp_path: Path) -> None:
    """Before background indexing an entry had no ``indexed`` flag (it was indexed when
    written); before the card a record had no ``stats``: both are computed now."""
    old = copy.deepcopy(TEXT_RECORD)
    for key in ("stats", "pages_exact"):
        del old[key]
    for entry in old["artifacts"]:
        del entry["indexed"]
    assert all(e.indexed for e in NamespaceMeta.parse("logs", old).artifacts)
    store = _store_with(tmp_path, {"logs": old})
    try:
        with TaskMemory(store=store) as memory:
            stats = memory.stats("logs")
            assert (stats.lines, stats.tokens, stats.indexed) == (3, 18, True)
            assert memory.wait_indexed("logs", timeout=60)
            assert "node 7" in memory.query("logs", "disk full node 7", top_n=1).value[0].value
    finally:
        store.close()


def test_a_record_that_is_not_metadata_is_refused_by_name(tmp_path: Path) -> None:
    broken = copy.deepcopy(TEXT_RECORD)
    del broken["artifacts"][1]["generation"]
    store = _store_with(tmp_path, {"logs": broken})
    try:
        with TaskMemory(store=store) as memory, pytest.raises(StorageError, match="'logs'"):
            memory.read("logs", 1)
    finally:
        store.close()


def test_blob_records_of_the_earlier_code_append(tmp_path: Path) -> None:
    store = _store_with(tmp_path, {"blob": BLOB_RECORD})
    try:
        with TaskMemory(store=store) as memory:
            memory.store_artifact("blob", BlobArtifact(b"more bytes", id="b2"))
            values = [a.value for a in memory.load_artifacts("blob").value]
            assert values == [BLOB, b"more bytes"]
    finally:
        store.close()
