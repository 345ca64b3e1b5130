"""Several processes on one ``TaskMemory(path=)`` (issue 29): real subprocesses.

What one process stores, the others list, grep, read, JSON-query and query (each builds
its own index from the stored text); four writers at once all see all; a writer
SIGKILLed mid-store of a 75 MB output leaves the namespace absent or whole; a delete in
one is seen by the others; everything reopens after all close. The workers are
``shared_worker.py`` (one JSON line per command).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotFoundError
from offprompt.task_memory import TaskMemory

WORKER = Path(__file__).with_name("shared_worker.py")
_spec = importlib.util.spec_from_file_location("shared_worker", WORKER)
assert _spec is not None and _spec.loader is not None
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)


def start(target: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), target, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 240) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def run(target: str, *args: str) -> dict[str, Any]:
    return finish(start(target, *args))


def check_read(found: dict[str, Any], namespace: str, lines: int) -> None:
    text = worker.make(namespace, lines)
    assert found["present"], namespace
    assert found["bytes"] == len(text.encode())
    assert found["needle_line"] == [lines // 2 + 1]
    assert found["line1"] == text.splitlines(keepends=True)[0]
    assert found["sha"] == worker.digest(text)
    assert found["query"] is True  # answered from this process's own index of the whole text


def test_processes_share_one_path(tmp_path: Path) -> None:
    target = f"path:{tmp_path / 'tm'}"
    barrier = tmp_path / "go"
    names = ["w0", "w1", "w2", "w3"]
    writers = [start(target, "store", ns, "5000", "--wait", str(barrier)) for ns in names]
    writers.append(start(target, "store", "orders", "500", "--json", "--wait", str(barrier)))
    barrier.touch()  # four text writers and one JSON writer store at once
    stored = [finish(w) for w in writers]
    assert all("artifact_namespace" in s["reference"] for s in stored)
    # Two readers at once, in processes that stored nothing: everything, whole.
    readers = [start(target, "read", *names, "orders") for _ in range(2)]
    for found in map(finish, readers):
        assert found["namespaces"] == sorted([*names, "orders"])
        for ns in names:
            check_read(found[ns], ns, 5000)
        assert found["orders"]["failed"] == 50  # JMESPath over the stored JSON
    # A delete in one process is seen by the others, which keep the rest.
    assert run(target, "delete", "w2")["deleted"] is True
    after = run(target, "read", "w1", "w2")
    assert after["namespaces"] == ["orders", "w0", "w1", "w3"]
    assert after["w2"] == {"present": False}
    check_read(after["w1"], "w1", 5000)
    # Everything reopens after all closed.
    with TaskMemory(path=tmp_path / "tm") as again:
        assert again.namespaces() == ["orders", "w0", "w1", "w3"]
        assert again.load_artifacts("w3").value[0].value == worker.make("w3", 5000)
        assert "NEEDLE-w0" in again.query("w0", "vault-9 rotation key NEEDLE-w0", top_n=3).to_text()


def test_two_processes_storing_one_namespace_both_land(tmp_path: Path) -> None:
    """Documented outcome: both outputs are appended, in commit order (the later
    commit sees a version conflict, merges, and commits again); neither is lost."""
    target = f"path:{tmp_path / 'tm'}"
    barrier = tmp_path / "go"
    procs = [start(target, "store", "same", str(n), "--wait", str(barrier)) for n in (3000, 4000)]
    barrier.touch()
    for proc in procs:
        finish(proc)
    with TaskMemory(path=tmp_path / "tm") as memory:
        texts = sorted(a.value for a in memory.load_artifacts("same").value)
        assert texts == sorted([worker.make("same", 3000), worker.make("same", 4000)])
        assert memory.grep("same", "NEEDLE-same").total_matches == 2
        assert memory.stats("same").artifacts == 2
        assert memory.query("same", "NEEDLE-same vault-9", top_n=2).value


@pytest.mark.parametrize("delay", [0.05, 0.4])
def test_sigkill_mid_store_of_75_mb_leaves_it_absent_or_whole(tmp_path: Path, delay: float) -> None:
    root = tmp_path / "tm"
    lines = 1_400_000  # ~75 MB of log lines
    run(f"path:{root}", "store", "before", "1000")
    child = start(f"path:{root}", "store", "big", str(lines))
    assert child.stdout is not None
    assert json.loads(child.stdout.readline()) == {"started": True}
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    with TaskMemory(path=root) as memory:
        assert "before" in memory.namespaces()  # what was committed stays
        if "big" in memory.namespaces():
            loaded = memory.load_artifacts("big").value
            assert len(loaded) == 1 and loaded[0].value == worker.make("big", lines)
        else:
            assert memory.load_artifacts("big").value == []
            with pytest.raises(NotFoundError):
                memory.grep("big", "NEEDLE")
        # The directory stays writable: the name can be stored again.
        memory.store_artifact("big", TextArtifact("after the crash\n"))
        assert memory.grep("big", "after the crash").total_matches == 1


def test_a_namespace_deleted_while_another_process_reads_it(tmp_path: Path) -> None:
    """A read that had found the namespace and then loses its bytes to a delete in
    another memory raises NotFoundError naming the deletion; later reads see it gone."""
    root = tmp_path / "tm"
    writer = TaskMemory(path=root)
    writer.store_artifact("doomed", TextArtifact(worker.make("doomed", 500)))
    reader = TaskMemory(path=root)  # its own index (the writer holds vectors/)
    assert reader.index_location == "memory" and reader.has_namespace("doomed")
    raw = reader.storages[TextArtifact].raw_store
    assert raw is not None
    real_get = raw.get

    def get_after_delete(*args: Any, **kwargs: Any) -> bytes:
        writer.delete("doomed")  # lands between the reader's metadata read and its fetch
        return real_get(*args, **kwargs)

    raw.get = get_after_delete  # type: ignore[method-assign]
    with pytest.raises(NotFoundError, match="deleted while it was being read"):
        reader.grep("doomed", "NEEDLE")
    raw.get = real_get  # type: ignore[method-assign]
    with pytest.raises(NotFoundError, match="is not in"):
        reader.grep("doomed", "NEEDLE")
    assert reader.namespaces() == [] and reader.query("doomed", "vault").value == []
    writer.close()
    reader.close()


def test_the_cli_reads_a_memory_another_process_holds_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with TaskMemory(path=home / "qdrant") as held:  # this process holds vectors/
        held.store_artifact("logs", TextArtifact(worker.make("logs", 300)))
        cli = [sys.executable, "-m", "offprompt.cli", "--home", str(home)]
        read = subprocess.run([*cli, "read", "logs"], capture_output=True, text=True, timeout=120)
        assert read.returncode == 0, read.stderr[-2000:]
        assert read.stdout.startswith(worker.make("logs", 300).splitlines()[0])
        query = subprocess.run(
            [*cli, "query", "logs", "vault-9 rotation key NEEDLE-logs"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert query.returncode == 0 and "NEEDLE-logs" in query.stdout, query.stderr[-2000:]
