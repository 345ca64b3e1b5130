"""Four processes open one fresh ``TaskMemory(path=)`` at the same moment and store.

This is how a deployment starts (``uvicorn --workers 4``, or four containers on one
volume): nobody opened the directory before, and every process opens it at once. Each
process waits at a barrier (a file), opens the memory, stores one output and lists what
it sees; every one of them must succeed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PROCESSES = 4

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from offprompt.artifacts import TextArtifact
    from offprompt.task_memory import TaskMemory

    root, go, ready, index = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    ready.touch()
    while not go.exists():
        time.sleep(0.002)
    memory = TaskMemory(path=root)
    text = "".join(f"line {i} of process {index}\\n" for i in range(20_000))
    memory.process_output("tool", "call", TextArtifact(text, name=f"out-{index}"))
    print(json.dumps(sorted(memory.namespaces())))
    memory.close()
    """
)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("attempt", range(2))  # the race showed in 2 of 3 before the fix
def test_four_processes_open_a_fresh_path_at_once(tmp_path: Path, attempt: int) -> None:
    root, go = tmp_path / "task", tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), str(go), str(tmp_path / f"ready-{i}"), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [c.communicate(timeout=150) for c in children]
    failures = [
        f"process {i} exited {c.returncode}: {err.strip().splitlines()[-1:]}"
        for i, (c, (_, err)) in enumerate(zip(children, results, strict=True))
        if c.returncode != 0
    ]
    assert not failures, "\n".join(failures)
    for i, (out, _) in enumerate(results):
        assert f"out-{i}" in json.loads(out.strip().splitlines()[-1])  # its own, at least
    # After all have stored, every output is there for a new process.
    reopened = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json; from offprompt.task_memory import TaskMemory; "
            "m = TaskMemory(path=sys.argv[1]); print(json.dumps(sorted(m.namespaces()))); m.close()",
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reopened.returncode == 0, reopened.stderr[-2000:]
    assert json.loads(reopened.stdout.strip().splitlines()[-1]) == [
        f"out-{i}" for i in range(PROCESSES)
    ]
