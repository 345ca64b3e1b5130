"""``store_artifact(replace=True)``: the namespace holds exactly the new artifacts, in one
commit, and what the old version stored (chunks, raw text, blobs) is discarded.

The cross-process races (two overwriters, a reader) are in
``integrations/langchain/tests/test_deepagents_overwrite_race.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.task_memory import TaskMemory


def log(tag: str, lines: int = 400) -> str:
    return "".join(f"{tag} line {i} status=200 path=/api/{i % 7}\n" for i in range(lines))


@pytest.fixture(params=["memory", "path", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> TaskMemory:
    if request.param == "memory":
        return TaskMemory(index="sync")
    if request.param == "path":
        return TaskMemory(path=tmp_path / "tm", index="sync")
    from offprompt.stores import SQLiteStore

    return TaskMemory(store=SQLiteStore(tmp_path / "s.db"), index="sync")


def raw_keys(memory: TaskMemory, namespace: str) -> list[str]:
    store = memory.storages[TextArtifact].raw_store
    assert store is not None
    return list(store.keys(namespace, tenant=memory.tenant))


def test_a_replacing_write_leaves_only_the_new_text_and_discards_the_old(
    memory: TaskMemory,
) -> None:
    memory.store_artifact("f", TextArtifact(log("old")))
    memory.store_artifact("f", TextArtifact(log("older-appended")))
    created = memory.namespace_metadata("f")["created_at"]
    memory.store_artifact("f", TextArtifact(log("new")), replace=True)
    assert [a.value for a in memory.load_artifacts("f").value] == [log("new")]
    meta = memory.namespace_metadata("f")
    assert meta["created_at"] == created and meta["updated_at"] > created
    assert memory.grep("f", "old").total_matches == 0
    assert memory.grep("f", "new line 399").total_matches == 1
    assert len(raw_keys(memory, "f")) == 1  # the two old raw texts are gone
    hits = memory.query("f", "old line 12 status", top_n=5, mode="sparse").value
    assert hits and all(str(h.value).startswith("new") for h in hits)


def test_replacing_with_the_same_bytes_keeps_them(memory: TaskMemory) -> None:
    memory.store_artifact("f", TextArtifact(log("same")))
    memory.store_artifact("f", TextArtifact(log("same")), replace=True)
    assert memory.read_lines("f", 1, 2).value == "same line 0 status=200 path=/api/0\n"
    assert len(raw_keys(memory, "f")) == 1


def test_a_replacing_write_may_change_the_storage(memory: TaskMemory) -> None:
    memory.store_artifact("f", TextArtifact(log("text")))
    memory.store_artifact("f", BlobArtifact(b"\x00\x01binary"), replace=True)
    assert memory.namespace_metadata("f")["storage"] == "blob"
    assert [a.value for a in memory.load_artifacts("f").value] == [b"\x00\x01binary"]
    memory.store_artifact("f", TextArtifact(log("text again")), replace=True)
    assert [a.value for a in memory.load_artifacts("f").value] == [log("text again")]
    assert len(raw_keys(memory, "f")) == 1  # the blob went with its version


def test_replace_creates_a_namespace_that_does_not_exist(memory: TaskMemory) -> None:
    memory.store_artifact("fresh", TextArtifact(log("first")), replace=True)
    assert memory.read_lines("fresh", 400).value == "first line 399 status=200 path=/api/0\n"


def test_replacing_while_the_old_version_is_indexed_in_the_background(tmp_path: Path) -> None:
    memory = TaskMemory(path=tmp_path / "tm")  # background indexing
    memory.store_artifact("f", TextArtifact(log("old", 40_000)))
    memory.store_artifact("f", TextArtifact(log("new", 300)), replace=True)
    memory.wait_indexed("f")
    meta = memory.namespace_metadata("f")
    assert meta["artifacts"] == 1 and meta["stats"]["lines"] == 300
    hits = memory.query("f", "line 12 status", top_n=3, mode="sparse").value
    assert hits and all(str(h.value).startswith("new") for h in hits)
    memory.close()
