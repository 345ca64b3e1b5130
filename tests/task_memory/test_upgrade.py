"""Upgrade in place (issue 29): a ``path=`` directory written by the release before the
shared layout (3eb5c89, metadata as points in ``vectors/``) opens and keeps every
namespace of every tenant and scope. The fixture was written by that release's code
(``fixtures/make_legacy_path.py``, run with its ``src`` on ``PYTHONPATH``)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import StorageError
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore

FIXTURE = Path(__file__).with_name("fixtures") / "legacy_path_3eb5c89.tar.gz"


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    root = tmp_path / "tm"
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    assert not (root / "task.db").exists() and (root / "vectors").is_dir()
    return root


def test_an_old_directory_opens_with_every_namespace(legacy: Path) -> None:
    with TaskMemory(path=legacy) as memory:
        assert memory.namespaces() == ["logs", "orders", "snap"]
        assert memory.grep("logs", "disk full").total_matches == 20
        assert memory.json_query("orders", "items[0].ok") is False
        assert memory.load_artifacts("snap").value[0].value == b"\x89PNG fixture"
        # Its chunks were indexed by the old release and are used as they are.
        assert memory.wait_indexed("logs", timeout=60)
        assert "node 7" in memory.query("logs", "disk full node", top_n=1).value[0].value
        assert memory.stats("logs").indexed
    with TaskMemory(path=legacy, tenant="acme") as acme:
        assert acme.namespaces() == ["logs"]
        assert "quasar-99" in acme.query("logs", "quasar-99", top_n=1).value[0].value
    with TaskMemory(path=legacy, scope=Scope(tenant="acme", user="bob")) as bob:
        assert bob.read("notes").value == "bob's notes: K-77421\n"
    # Upgraded once: now shared like any new directory (a second process-like open).
    first, second = TaskMemory(path=legacy), TaskMemory(path=legacy)
    assert second.index_location == "memory" and second.namespaces() == first.namespaces()
    assert "node 7" in second.query("logs", "disk full node", top_n=1).value[0].value
    first.close()
    second.close()


def test_an_old_directory_held_by_another_process_is_refused_clearly(legacy: Path) -> None:
    holder = QdrantVectorStore(path=str(legacy / "vectors"))  # e.g. the old release, running
    try:
        with pytest.raises(StorageError, match="open it once alone to upgrade"):
            TaskMemory(path=legacy)
    finally:
        holder.close()
    with TaskMemory(path=legacy) as memory:  # nothing was half-imported
        assert memory.namespaces() == ["logs", "orders", "snap"]


def test_an_old_output_and_a_new_one_answer_together(legacy: Path) -> None:
    # The old release's chunks (cut every 512 tokens, BM25 weighed for 256-token
    # documents) stay as they are; an output added now is cut at line ends and weighed
    # as the defaults say. A query reaches both, and each is read back exactly.
    added = "".join(f"2026-12-02 node-{i} heartbeat ok\n" for i in range(400))
    added += "2026-12-02 node-77 quota exceeded on volume vol-9\n"
    with TaskMemory(path=legacy) as memory:
        assert memory.wait_indexed("logs", timeout=60)
        before = memory.load_artifacts("logs").value[0].value
        memory.store_artifact("logs", TextArtifact(value=added))
        assert memory.wait_indexed("logs", timeout=60)
        old = memory.query("logs", "disk full node", top_n=1, mode="sparse").value[0]
        new = memory.query("logs", "quota exceeded vol-9", top_n=1, mode="sparse").value[0]
        assert "node 7" in old.value and "vol-9" in new.value
        assert new.value.endswith("\n") and new.meta["artifact_id"] != old.meta["artifact_id"]
        assert [a.value for a in memory.load_artifacts("logs").value] == [before, added]


DENSE_FIXTURE = Path(__file__).with_name("fixtures") / "dense_path_cd234e1.tar.gz"


@pytest.fixture
def dense_dir(tmp_path: Path) -> Path:
    root = tmp_path / "dense"
    with tarfile.open(DENSE_FIXTURE) as tar:
        tar.extractall(root, filter="data")
    return root


def test_a_directory_with_dense_vectors_and_chunk_texts_keeps_working(dense_dir: Path) -> None:
    """Written by cd234e1 (``fixtures/make_dense_path.py``): 384-dim dense vectors and each
    chunk's text in its payload. It opens, answers from those chunks, and what is stored
    into it now gets chunks in the new layout (no text) in the same hybrid index."""
    new_text = "".join(f"line {i} ok\n" for i in range(300)) + "WARN quota exceeded for tenant 9\n"
    for _ in range(2):  # and again after a reopen
        with TaskMemory(path=dense_dir) as memory:
            assert memory.vector_store.dense  # the index keeps its dense vectors
            assert set(memory.namespaces()) >= {"logs", "orders"}
            hit = memory.query("logs", "disk full node kestrel", top_n=1).value[0]
            assert "ERROR disk full on node 7 (kestrel-42)" in hit.value
            dense = memory.query("logs", "disk full node kestrel", top_n=1, mode="dense")
            assert dense.value and dense.value[0].value
            assert memory.json_query("orders", "items[0].city") == "Zürich"
            assert memory.grep("logs", "kestrel").total_matches == 1
            if "fresh" not in memory.namespaces():
                memory.store_artifact("fresh", TextArtifact(new_text))
            assert memory.wait_indexed("fresh", timeout=60)
            found = memory.query("fresh", "quota exceeded tenant", top_n=1).value[0]
            assert "WARN quota exceeded for tenant 9" in found.value
            assert found.value in new_text
            chunks = memory.vector_store.scroll("fresh")
            assert chunks and all(r.text == "" and "byte_start" in r.payload for r in chunks)
            old = memory.vector_store.scroll("logs")
            assert old and all(r.text for r in old)  # the old chunks keep their text
