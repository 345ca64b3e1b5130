"""A full disk under the embedded Qdrant engine is a StorageError, never SIGBUS (issue 14
item 1). Each case runs in a subprocess on a small tmpfs (needs root to mount one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import random
    import sys
    from offprompt.artifacts import TextArtifact
    from offprompt.errors import StorageError
    from offprompt.task_memory import TaskMemory

    path, mode = sys.argv[1], sys.argv[2]
    if mode == "open":
        try:
            TaskMemory(path=path)
        except StorageError as exc:
            print("refused:", exc, flush=True)
        sys.exit(0)
    memory = TaskMemory(path=path)
    rnd = random.Random(7)  # incompressible words: every chunk costs its own disk pages
    if mode == "fill":  # store, then let another writer take every byte left, then close
        for i in range(20):
            words = " ".join(f"w{rnd.getrandbits(40):x}" for _ in range(30_000))
            memory.store_artifact(f"ns{i}", TextArtifact(value=f"doc {i} marker{i} " + words))
        assert memory.wait_indexed(timeout=120)
        with open(sys.argv[3], "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(bytes(1 << 16))
            except OSError as exc:
                print("filled:", exc.strerror, flush=True)
        memory.close()
        print("closed", "yes", flush=True)
        sys.exit(0)
    stored = 0
    try:
        for i in range(1_000):
            words = " ".join(f"w{rnd.getrandbits(40):x}" for _ in range(30_000))
            memory.store_artifact(f"ns{i}", TextArtifact(value=f"doc {i} " + words))
            stored += 1
    except StorageError as exc:
        print("refused:", exc, flush=True)
    print("stored", stored, flush=True)
    memory.close()
    try:  # loading maps every page of the shard's files: the full disk refuses it too
        TaskMemory(path=path)
    except StorageError as exc:
        print("reopen-refused:", exc, flush=True)
    """
)


@pytest.fixture
def tmpfs(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; this test cannot apply unprivileged")
    mount = tmp_path / "mnt"
    mount.mkdir()
    size = request.param
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _run(path: Path, mode: str, *extra: str) -> subprocess.CompletedProcess[str]:
    # faulthandler prints the Python stack if the process still dies of SIGBUS
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", SCRIPT, str(path), mode, *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("tmpfs", ["16m"], indirect=True)
@pytest.mark.timeout(900)  # several subprocesses of up to 300 s
def test_opening_on_a_nearly_full_disk_raises_instead_of_dying(tmpfs: Path) -> None:
    done = _run(tmpfs / "tm", "open")
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # 135 was SIGBUS
    assert "refused: not enough free disk space" in done.stdout


@pytest.mark.parametrize("tmpfs", ["96m"], indirect=True)
@pytest.mark.timeout(900)  # several subprocesses of up to 300 s
def test_ingest_until_the_disk_is_full_raises_and_keeps_what_was_stored(tmpfs: Path) -> None:
    done = _run(tmpfs / "tm", "ingest")
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7 was SIGBUS
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    # Refused by the engine's free-space check, by the blob write (the raw output is
    # written first), or by the metadata commit into task.db (now that the index holds
    # no chunk text nor dense vectors, SQLite may be the first to find the disk full):
    # a StorageError naming the problem in every case, never SIGBUS.
    refused = lines["refused:"]
    assert refused.startswith(("not enough free disk space", "cannot write blob")) or (
        refused.startswith("commit to ") and "disk is full" in refused
    ), refused
    assert lines["reopen-refused:"].startswith("not enough free disk space")
    stored = int(lines["stored"])
    assert stored >= 1
    # Nothing stored before the refusal is lost: on a disk with room, all of it is there.
    roomy = tmpfs.parent / "copy"
    shutil.copytree(tmpfs / "tm", roomy)
    from offprompt.task_memory import TaskMemory

    with TaskMemory(path=roomy) as again:
        assert sorted(again.namespaces()) == sorted(f"ns{i}" for i in range(stored))
        assert again.load_artifacts("ns0").value[0].value.startswith("doc 0 w")


@pytest.mark.parametrize("tmpfs", ["256m"], indirect=True)
@pytest.mark.timeout(900)
def test_closing_after_another_writer_filled_the_disk_keeps_every_output(tmpfs: Path) -> None:
    """The raw outputs beside the index (or any other program) may take the last byte
    after the engine's last checked write: close must not flush into a full disk."""
    done = _run(tmpfs / "tm", "fill", str(tmpfs / "filler"))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["filled:"] == "No space left on device"
    assert lines["closed"] == "yes"
    roomy = tmpfs.parent / "copy"
    shutil.copytree(tmpfs / "tm", roomy)
    from offprompt.task_memory import TaskMemory

    with TaskMemory(path=roomy) as again:
        assert sorted(again.namespaces()) == sorted(f"ns{i}" for i in range(20))
        assert again.wait_indexed(timeout=120)
        for i in (0, 19):  # the first and the last output stored are both searchable
            hits = again.query(f"ns{i}", f"marker{i}", top_n=1).value
            assert hits and f"marker{i}" in hits[0].value, i
