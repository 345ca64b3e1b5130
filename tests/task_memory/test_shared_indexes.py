"""Where each process's chunk index lives on one ``TaskMemory(path=DIR)``, how it goes
away, and what ``forget`` reaches across processes (real subprocesses).

The first process keeps ``DIR/vectors``; every other one runs a private embedded index
in ``$TMPDIR/offprompt-edge-*`` (locked by its process), removed on close and, after a
SIGKILL, by the next private index any process creates. ``forget(scope)`` deletes the
rows in ``DIR/task.db``, the files in ``DIR/blobs`` and (``purge=True``) the chunks in
``DIR/vectors`` when this process holds it, removes the indexes of processes that died,
and names the live processes' private indexes it could not reach.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.forget import forget
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Private indexes of this test and its subprocesses go to a temp dir of its own:
    every private index any process creates sweeps the dead owners' directories of its
    temp dir, so a parallel test's sweep could remove the killed process's index before
    this test looks at it."""
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))


HOLDER = textwrap.dedent(
    """
    import json, sys
    from offprompt.scope import Scope
    from offprompt.task_memory import TaskMemory

    root, user, namespace = sys.argv[1:4]
    memory = TaskMemory(path=root, scope=Scope(user=user))
    hits = memory.query(namespace, "rotation key", top_n=3).to_text() if namespace != "-" else ""
    backend = memory.vector_store._backend
    print(json.dumps({"index": memory.index_location, "dir": str(backend.directory.parent),
                      "hits": hits}), flush=True)
    for line in sys.stdin:  # "query NS": answer from this process's index; EOF: close
        hits = memory.query(line.split()[1], "rotation key", top_n=3).to_text()
        print(json.dumps({"hits": hits}), flush=True)
    memory.close()
    """
)


def hold(root: Path, user: str, namespace: str = "-") -> tuple[subprocess.Popen[str], dict]:
    """A process that opens ``root`` (a private index: this test holds ``vectors/``),
    queries ``namespace`` and keeps the memory open until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), user, namespace],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def test_a_private_index_is_removed_on_close_and_after_a_sigkill(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    with TaskMemory(path=root) as first:  # holds root/vectors: the children go private
        first.store_artifact("logs", TextArtifact("vault-9 rejected rotation key\n" * 50))
        assert first.index_location == "path"
        closed, seen = hold(root, "u1")
        private = Path(seen["dir"])
        assert private.name.startswith("offprompt-edge-") and not private.is_relative_to(root)
        assert private.is_dir()
        closed.communicate(timeout=60)  # stdin closed: it closes its memory
        assert closed.returncode == 0 and not private.exists()

        killed, seen = hold(root, "u1")
        live, live_seen = hold(root, "u1")
        stale = Path(seen["dir"])
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(30)
        assert stale.is_dir()  # a killed process cannot remove its own index
        with TaskMemory(path=root) as after:  # the next private index sweeps it
            assert after.index_location == "memory"
            assert not stale.exists()
            assert Path(live_seen["dir"]).is_dir()  # a live process's index is kept
            assert after.grep("logs", "rotation").total_matches == 50
        live.communicate(timeout=60)
        assert not Path(live_seen["dir"]).exists()


def test_forget_reaches_every_file_of_the_directory_and_names_what_it_could_not(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tm"
    secret = "vault-9 rejected rotation key SECRET-4f1c9e-subject-u1\n"
    kept = "vault-9 rejected rotation key KEPT-77ab-subject-u2\n"
    first = TaskMemory(path=root, scope=Scope(user="u1"), index="sync")
    other_user = TaskMemory(path=root, scope=Scope(user="u2"), index="sync")
    try:
        first.store_artifact("secret", TextArtifact(secret * 200))
        other_user.store_artifact("kept", TextArtifact(kept * 200))
        first.wait_indexed("secret")
        # A live process and a killed one, each with the secret in its private index.
        live, seen = hold(root, "u1", "secret")
        assert "SECRET-4f1c9e" in seen["hits"]
        killed, dead_seen = hold(root, "u1", "secret")
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(30)
        needle = b"SECRET-4f1c9e"
        # The chunk index holds no chunk text (locations and sparse vectors): its chunks
        # are found in the engine's files by their namespace.
        marker = b"secret"
        assert any(p.startswith("vectors") for p in files_holding(root, marker))
        assert any(p.startswith("blobs") for p in files_holding(root, needle))
        assert Path(dead_seen["dir"]).is_relative_to(tmp_path)  # out of other tests' sweeps
        assert files_holding(Path(dead_seen["dir"]), marker)

        report = forget(Scope(user="u1"), task_memory=first, purge=True)

        assert files_holding(root, needle) == []  # task.db, its WAL, blobs/
        assert not [p for p in files_holding(root, marker) if p.startswith("vectors")]
        assert not Path(dead_seen["dir"]).exists()  # a dead process's index is removed
        residue = " ".join(r for result in report.results for r in result.residue)
        assert f":{live.pid}" in residue and "other open process" in residue
        assert str(killed.pid) not in residue
        assert not report.purged  # the live process's private index is not reached
        assert first.namespaces() == [] and other_user.namespaces() == ["kept"]
        assert files_holding(root, b"KEPT-77ab")  # another subject's output stays
        # The live process never answers from the forgotten output.
        assert live.stdin is not None and live.stdout is not None
        live.stdin.write("query secret\n")
        live.stdin.flush()
        assert "SECRET" not in json.loads(live.stdout.readline())["hits"]
        live.communicate(timeout=60)
        assert live.returncode == 0 and not Path(seen["dir"]).exists()
    finally:
        other_user.close()
        first.close()


def test_forget_from_a_process_without_the_durable_index_says_it_keeps_bytes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tm"
    scope = Scope(user="u1")
    with TaskMemory(path=root, scope=scope) as holder, TaskMemory(path=root, scope=scope) as other:
        assert (holder.index_location, other.index_location) == ("path", "memory")
        holder.store_artifact("secret", TextArtifact("vault-9 rotation key SECRET-9d2\n" * 50))
        holder.wait_indexed("secret")
        report = forget(scope, task_memory=other, purge=True)
        residue = [r for result in report.results for r in result.residue]
        durable = [r for r in residue if "durable chunk index" in r]
        assert durable == [
            f"the durable chunk index {root / 'vectors'} (kept open by process "
            f"{socket.gethostname()}:{os.getpid()}): its files keep the deleted bytes"
        ]
        assert not report.purged and other.namespaces() == holder.namespaces() == []
        # From the holder, the same forget clears the directory's files.
        forget(scope, task_memory=holder, purge=True)
        assert files_holding(root, b"SECRET-9d2") == []
