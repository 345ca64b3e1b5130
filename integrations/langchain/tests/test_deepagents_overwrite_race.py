"""Two processes overwriting one deepagents file while a third reads it (issue 41).

Each of the three is a real process with its own ``TaskMemory`` and ``OffpromptBackend``
over one shared memory (``path=DIR``, or a PostgreSQL store). A read must give one whole
version of the file, old or new: before overwrites were one replacing commit, the two
overwriters both wrote the free slot, reads returned both versions glued together
(4,000 lines instead of 2,000) and the file could be left unreadable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from race_testing import rounds

pytest.importorskip("deepagents")

WORKER = Path(__file__).with_name("deepagents_race_worker.py")
sys.path.insert(0, str(WORKER.parent))
from deepagents_race_worker import judge, open_backend, version  # noqa: E402

pytestmark = [pytest.mark.race, pytest.mark.slow]
FILE = "/large_tool_results/call_1"


def overwrite_race(target: str, tmp_path: Path, writes: int) -> list[str]:
    """What went wrong: in any process, or in the file left at the end."""
    backend, memory, store = open_backend(target)
    try:
        assert backend.write(FILE, version(9, 0)).error is None  # it exists throughout
        go, stop = tmp_path / "go", tmp_path / "stop"

        def start(*args: str) -> subprocess.Popen[str]:
            command = [sys.executable, str(WORKER), target, *args[:2], str(go), str(stop)]
            return subprocess.Popen(
                [*command, *args[2:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )

        writers = [start("write", FILE, str(w), str(writes)) for w in (1, 2)]
        reader = start("read", FILE)
        go.touch()
        outs = []
        for proc in writers:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            outs.append(json.loads(out))
        stop.touch()
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err[-3000:]
        outs.append(json.loads(out))
        assert outs[-1]["reads"] > 0
        problems = [p for o in outs for p in o["problems"]]
        final = backend.read(FILE, 0, 5_000)
        if final.error or final.file_data is None:
            problems.append(f"final read: {final.error}")
        else:
            wrong = judge(final.file_data["content"])
            if wrong:
                problems.append(f"final file: {wrong}")
            elif final.file_data["content"] not in (version(1, writes - 1), version(2, writes - 1)):
                problems.append("final file is not either writer's last version")
        return problems
    finally:
        memory.close()
        if store is not None:
            store.close()


@pytest.mark.timeout(900)
def test_concurrent_overwrites_never_glue_versions_path(tmp_path: Path) -> None:
    assert overwrite_race(f"path:{tmp_path / 'tm'}", tmp_path, rounds(20)) == []


@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_concurrent_overwrites_never_glue_versions_postgres(
    tmp_path: Path, postgres_dsn: str
) -> None:
    assert overwrite_race(f"pg:{postgres_dsn}", tmp_path, rounds(20)) == []
