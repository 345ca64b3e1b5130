"""An index that cannot be written is said, not hidden (issue 41, item 5).

With room for the raw output but not for its index, the store succeeds and grep and
read serve the whole output, but before this ``query`` returned ``[]`` with no error
(and ``query_memory`` told the model "no passage matches"). Now ``query`` tries the
index again, then raises ``StorageError`` naming the cause and saying that grep and
read still work; once space is back, the next query builds the index and answers.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import StorageError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import memory_tool_specs

pytestmark = pytest.mark.race


def log(lines: int) -> str:
    return (
        "".join(
            f"2026-12-06 12:{i % 60:02d} worker-{i % 13} job {i} finished status=ok\n"
            for i in range(lines)
        )
        + "2026-12-06 13:00 worker-7 job 99999 FAILED checksum mismatch\n"
    )


def test_a_failed_index_job_makes_query_raise_and_the_next_query_builds_it(
    tmp_path: Path,
) -> None:
    memory = TaskMemory(path=tmp_path / "tm")
    vectors = memory.vector_store
    real = vectors.upsert
    failures = {"n": 0}

    def full_disk(*args: Any, **kwargs: Any) -> None:
        failures["n"] += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    vectors.upsert = full_disk  # type: ignore[method-assign]
    memory.store_artifact("log", TextArtifact(log(5_000)))  # the raw output is committed
    assert memory.grep("log", "FAILED checksum").total_matches == 1
    assert memory.wait_indexed("log") is False
    with pytest.raises(StorageError) as raised:
        memory.query("log", "FAILED checksum mismatch")
    message = str(raised.value)
    assert "'log'" in message and "No space left on device" in message
    assert "grep and read do not need the index" in message
    tried = failures["n"]
    assert tried >= 2  # the job that failed at store time, and the query's own retry
    # What the model is told: the failure and what still works, not "no passage matches".
    tools = {t.name: t for t in memory_tool_specs(memory)}
    said = tools["query_memory"].call(artifact_namespace="log", query="FAILED checksum")
    assert said.is_error and "No space left on device" in said.text and "grep" in said.text
    # Space is back: the next query indexes the output and answers from all of it.
    vectors.upsert = real  # type: ignore[method-assign]
    hits = memory.query("log", "FAILED checksum mismatch", top_n=1).value
    assert hits and "job 99999 FAILED" in str(hits[0].value)
    assert memory.wait_indexed("log") is True
    memory.close()


SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from test_index_full_disk import log
    from offprompt.artifacts import TextArtifact
    from offprompt.errors import OffpromptError
    from offprompt.task_memory import TaskMemory

    memory = TaskMemory(path=sys.argv[1])
    out = {}
    try:
        memory.store_artifact("log", TextArtifact(log(int(sys.argv[3]))))
        out["stored"] = True
    except OffpromptError as exc:
        out["stored"] = f"{type(exc).__name__}: {exc}"
    out["grep"] = memory.grep("log", "FAILED checksum").total_matches
    out["indexed"] = memory.wait_indexed("log")

    def ask():
        try:
            hits = memory.query("log", "FAILED checksum mismatch", top_n=1).value
            return {"hits": [str(h.value) for h in hits]}
        except OffpromptError as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    out["query"] = ask()
    print(json.dumps(out), flush=True)
    sys.stdin.readline()  # the test makes room meanwhile
    print(json.dumps({"query": ask(), "indexed": memory.wait_indexed("log")}), flush=True)
    memory.close()
    """
)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; this test cannot apply unprivileged")
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.timeout(600)
def test_a_disk_full_during_indexing_is_said_and_the_index_follows_once_space_is_back(
    small_tmpfs: Path,
) -> None:
    # ~44 MB of log on a 128 MiB tmpfs: the raw output fits, its index does not (the
    # embedded engine keeps 64 MiB free, see check_free_space).
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(small_tmpfs / "tm"),
            str(Path(__file__).parent),
            "760000",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    first = json.loads(proc.stdout.readline() or "{}")
    assert first.get("stored") is True, (first, proc.stderr.read()[-3000:] if not first else "")
    assert first["grep"] == 1 and first["indexed"] is False
    error = first["query"].get("error", "")
    assert error.startswith("StorageError") and "'log'" in error, first["query"]
    assert "grep and read do not need the index" in error
    subprocess.run(["mount", "-o", "remount,size=400m", str(small_tmpfs)], check=True)
    proc.stdin.write("grown\n")
    proc.stdin.flush()
    second = json.loads(proc.stdout.readline())
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    assert second["indexed"] is True, second
    assert second["query"]["hits"] and "job 99999 FAILED" in second["query"]["hits"][0]
