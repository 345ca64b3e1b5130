"""``TaskMemory(path=)``'s chunk index is derived from the stored text: it has no
write-ahead log, it is compacted as it grows, and a crash or an unreadable shard never
costs an answer (real processes killed with SIGKILL, a real corrupted shard)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.task_memory._points import points_for
from offprompt.task_memory.catalog import INDEX_KEY
from offprompt.vectors import QdrantVectorStore


def _log(name: str, lines: int = 20_000) -> str:
    body = [f"2026-03-14 INFO {name} GET /items/{i} 200 in {i % 97} ms\n" for i in range(lines)]
    body.insert(
        lines - 50, f"2026-03-14 ERROR {name} vault-9 rejected rotation key NEEDLE-{name}\n"
    )
    return "".join(body)


_CHILD = textwrap.dedent(
    """
    import sys, time
    import offprompt.task_memory.storage as storage
    from offprompt.artifacts import TextArtifact
    from offprompt.task_memory import TaskMemory
    sys.path.insert(0, sys.argv[3])
    from test_derived_index import _log

    if sys.argv[2] == "compact-often":
        storage.COMPACT_BYTES = 1  # compact after every output: a kill can land in one
    memory = TaskMemory(path=sys.argv[1])
    for i in range(int(sys.argv[4])):
        memory.process_output("logs", f"c{i}", TextArtifact(_log(f"out{i}"), name=f"out{i}"))
        print("stored", i, flush=True)
        if sys.argv[2] == "wait":
            assert memory.wait_indexed(timeout=300)
            if i == 0:  # a flush point (as every ~32 MiB of chunks, or a compaction)
                memory.vector_store.flush()
            print("indexed", i, flush=True)
    time.sleep(600)
    """
)


def _run_and_kill(tmp_path: Path, root: Path, mode: str, outputs: int, after: str) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD, encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(script), str(root), mode, str(Path(__file__).parent), str(outputs)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        while True:
            line = child.stdout.readline()
            assert line, "the child exited before it was killed"
            if line.strip() == after:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)


def _chunks(root: Path, namespace: str) -> tuple[int, str]:
    with SQLiteStore(root / "task.db") as raw:
        record = raw.task_get(namespace, scope=Scope(tenant="default"))
        assert record is not None
        entry = record.meta["artifacts"][0]
        return int(entry["chunks"]), str(entry["generation"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_after_indexing_leaves_a_walless_index_that_holds_what_it_records(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tm"
    _run_and_kill(tmp_path, root, "wait", 3, after="indexed 2")
    shard = root / "vectors" / "offprompt"
    assert shard.is_dir() and not (shard / "wal").exists()  # no write-ahead log
    # Killed without closing: the index lost what it wrote since its last flush, but
    # every generation it records as held is there whole.
    names = ("out0", "out1", "out2")
    with QdrantVectorStore(path=str(root / "vectors"), lexical="tokens", dense=False) as index:
        assert index.walless and not index.rebuilt
        recorded = []
        for name in names:
            chunks, generation = _chunks(root, name)
            held = index.get_metadata(name, INDEX_KEY) or {}
            if generation in (held.get("generations") or {}):
                recorded.append(name)
                assert index.count(name) == points_for(chunks) > 0
        assert "out0" in recorded  # flushed before the kill: kept
    with TaskMemory(path=root) as memory:  # what was lost is indexed again
        assert memory.wait_indexed(timeout=240)
        for name in names:
            assert memory.vector_store.count(name) == points_for(
                memory.namespace_metadata(name)["chunks"]
            )
            assert f"NEEDLE-{name}" in memory.query(name, "vault-9 rotation key").to_text()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_while_indexing_and_compacting_then_reopen_answers_from_everything(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tm"
    _run_and_kill(tmp_path, root, "compact-often", 4, after="stored 3")
    with TaskMemory(path=root) as memory:
        assert memory.wait_indexed(timeout=300)
        for i in range(4):
            name = f"out{i}"
            meta = memory.namespace_metadata(name)
            assert memory.vector_store.count(name) == points_for(meta["chunks"]) > 0
            assert f"NEEDLE-{name}" in memory.query(name, "vault-9 rotation key").to_text()


def test_an_unreadable_index_is_rebuilt_from_the_stored_text(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    with TaskMemory(path=root) as memory:
        for name in ("a", "b"):
            memory.process_output("logs", name, TextArtifact(_log(name, 5_000), name=name))
        assert memory.wait_indexed(timeout=120)
    shard = root / "vectors" / "offprompt"
    states = list((shard / "segments").glob("*/segment.json"))
    assert states
    for state in states:  # what a crash mid-write can leave: state the engine cannot read
        state.write_text("not json{", encoding="utf-8")
    with TaskMemory(path=root) as memory:
        assert memory.index_location == "path"
        assert memory.vector_store.rebuilt
        assert memory.grep("a", "NEEDLE-a").matches  # the text never depended on the index
        assert memory.wait_indexed(timeout=120)
        for name in ("a", "b"):
            meta = memory.namespace_metadata(name)
            assert memory.vector_store.count(name) == points_for(meta["chunks"]) > 0
            assert f"NEEDLE-{name}" in memory.query(name, "vault-9 rotation key").to_text()
    with TaskMemory(path=root) as memory:  # and the rebuilt index is durable
        assert not memory.vector_store.rebuilt
        assert memory.vector_store.count("a") == points_for(
            memory.namespace_metadata("a")["chunks"]
        )
