"""Faults under a shared ``TaskMemory(path=)`` (issue 29): a full disk and a read-only
directory. Each runs in a subprocess on a small tmpfs (mounting one needs root)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, random, sys
    from offprompt.artifacts import TextArtifact
    from offprompt.errors import OffpromptError
    from offprompt.task_memory import TaskMemory

    path, mode = sys.argv[1], sys.argv[2]
    out = {}
    try:
        memory = TaskMemory(path=path)
    except OffpromptError as exc:
        print(json.dumps({"open_error": f"{type(exc).__name__}: {exc}"}), flush=True)
        sys.exit(0)
    if mode == "fill":
        rnd, stored = random.Random(7), []
        for i in range(200):
            text = "".join(f"{rnd.getrandbits(64):x}\\n" for _ in range(500_000))
            info = memory.process_output("t", "call", TextArtifact(text, name=f"n{i}"))
            if "was stored in memory" not in info.value:
                out["error"] = info.value
                break
            stored.append([f"n{i}", len(text)])
        out["stored"] = stored
    elif mode == "write":
        memory.store_artifact("seed", TextArtifact("committed before\\n" * 100))
        out["stored"] = True
    elif mode == "read":
        out["namespaces"] = memory.namespaces()
        out["sizes"] = {ns: len(memory.load_artifacts(ns).value[0].value) for ns in out["namespaces"]}
        try:
            memory.store_artifact("late", TextArtifact("x\\n"))
            out["write"] = "ok"
        except OffpromptError as exc:
            out["write"] = f"{type(exc).__name__}: {exc}"
    memory.close()
    print(json.dumps(out), flush=True)
    """
)


@pytest.fixture
def tmpfs(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; this test cannot apply unprivileged")
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={request.param}", "tmpfs", str(mount)], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _run(path: Path, mode: str) -> dict[str, object]:
    import json

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), mode], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("tmpfs", ["160m"], indirect=True)
@pytest.mark.timeout(900)  # several subprocesses of up to 300 s
def test_a_full_disk_refuses_the_store_and_keeps_what_was_committed(tmpfs: Path) -> None:
    filled = _run(tmpfs / "tm", "fill")
    assert "error" in filled and "could not store" in str(filled["error"])  # a clear refusal
    stored = dict(filled["stored"])  # type: ignore[call-overload]
    assert stored  # some fitted before the disk filled
    subprocess.run(["mount", "-o", "remount,size=640m", str(tmpfs)], check=True)
    again = _run(tmpfs / "tm", "read")
    assert again["namespaces"] == sorted(stored)  # nothing half-visible, nothing lost
    assert again["sizes"] == stored and again["write"] == "ok"


@pytest.mark.parametrize("tmpfs", ["320m"], indirect=True)
@pytest.mark.timeout(900)  # several subprocesses of up to 300 s
def test_a_read_only_directory_is_a_clear_error_and_loses_nothing(tmpfs: Path) -> None:
    assert _run(tmpfs / "tm", "write")["stored"] is True
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    refused = _run(tmpfs / "tm", "read")
    assert "StorageError" in str(refused.get("open_error", refused.get("write")))
    subprocess.run(["mount", "-o", "remount,rw", str(tmpfs)], check=True)
    again = _run(tmpfs / "tm", "read")
    assert again["namespaces"] == ["seed"] and again["write"] == "ok"
