"""The command line on a task memory another process is writing (real processes).

A writer keeps storing outputs in ``HOME/qdrant`` (it holds the chunk index there);
meanwhile ``offprompt inspect``, ``read`` and ``query`` run in their own processes: each
exits cleanly and shows every output committed before it started, whole, and never
an output half-written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from offprompt.artifacts import TextArtifact
    from offprompt.task_memory import TaskMemory

    def make(i):
        return "".join(f"2026-03-14 INFO out-{i} GET /items/{n} 200\\n" for n in range(3000)) + (
            f"2026-03-14 ERROR out-{i} vault-9 rejected rotation key NEEDLE-{i}\\n")

    memory = TaskMemory(path=sys.argv[1])
    i = 0
    while not os.path.exists(sys.argv[2]):  # store until told to stop
        memory.store_artifact(f"out-{i}", TextArtifact(make(i)))
        print(json.dumps({"stored": i}), flush=True)
        i += 1
        time.sleep(0.2)  # leave the CPU to the commands under test
    memory.close()
    """
)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offprompt.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_cli_reads_while_another_process_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home / "qdrant"), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    try:
        assert json.loads(writer.stdout.readline()) == {"stored": 0}
        # Every command runs while the writer keeps committing new outputs.
        for command in (["read", "out-0"], ["query", "out-0", "vault-9 rotation key NEEDLE-0"]):
            done = cli(home, *command)
            assert done.returncode == 0, done.stderr[-2000:]
            if command[0] == "read":
                assert done.stdout.startswith("2026-03-14 INFO out-0 GET /items/0 200")
            else:
                assert "NEEDLE-0" in done.stdout  # answered from the whole output
        seen = json.loads(writer.stdout.readline())["stored"]  # committed before inspect
        listing = cli(home, "inspect")
        assert listing.returncode == 0, listing.stderr[-2000:]
        for i in range(seen + 1):
            assert f"out-{i}" in listing.stdout
        stop.touch()
        writer.stdout.read()
        assert writer.wait(60) == 0, writer.stderr.read() if writer.stderr else ""
        assert seen >= 1  # the writer committed while the commands ran
    finally:
        stop.touch()
        if writer.poll() is None:
            writer.kill()
            writer.wait(30)
