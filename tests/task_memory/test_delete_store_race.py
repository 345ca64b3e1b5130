"""A delete racing a store in another process never removes acknowledged bytes (issue 41).

Two long-lived processes (``race_worker.py``) share one task memory, ``path=DIR`` or a
PostgreSQL store. Each round: the storer writes ``x`` once, then the storer stores a
new version of ``x`` while the deleter deletes it, both released at once. After the
round, a third process (this one) reads ``x``. Either outcome of the race is fine (the
delete first, then the store: ``x`` holds the new version; the store first, then the
delete: ``x`` is gone), but a listed ``x`` whose bytes are gone is the bug: before the
fix the deleter's sweep, seeing no metadata, deleted the blob the storer had just
committed (``NotFoundError: no blob ...`` for good).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from race_testing import rounds

WORKER = Path(__file__).with_name("race_worker.py")
sys.path.insert(0, str(WORKER.parent))
from race_worker import digest, version  # noqa: E402

pytestmark = [pytest.mark.race, pytest.mark.slow]
LINES = 2_000  # ~150 KB: the blob write takes long enough to overlap the delete


class Worker:
    """One ``race_worker.py`` process: a command in, its JSON answer out."""

    def __init__(self, target: str, *, slow_sweep: float = 0.0) -> None:
        env = {**os.environ, "RACE_SLOW_SWEEP_S": str(slow_sweep)} if slow_sweep else None
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), target],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.receive() == {"ready": True}

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            _, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"worker died: {err[-3000:]}")
        return dict(json.loads(line))

    def ask(self, **command: Any) -> dict[str, Any]:
        self.send(**command)
        return self.receive()

    def close(self) -> None:
        _, err = self.proc.communicate(timeout=60)  # closes stdin: the worker ends
        assert self.proc.returncode == 0, err[-3000:]


def race(target: str, count: int, *, slow_sweep: float = 0.0, lag: float = 0.0) -> list[str]:
    """``count`` rounds of store-against-delete; what went wrong, per round.

    ``slow_sweep``: the deleter's sweep of the deleted data sleeps that long first;
    ``lag``: the store is sent that long after the delete.
    """
    storer, reader = Worker(target), Worker(target)
    deleter = Worker(target, slow_sweep=slow_sweep)
    problems: list[str] = []
    try:
        for r in range(count):
            namespace = f"x{r}"
            first = storer.ask(op="store", ns=namespace, seed=0, lines=LINES)
            assert "stored" in first, first
            # Both commands are on their way before either answer is read.
            deleter.send(op="delete", ns=namespace)
            time.sleep(lag)
            storer.send(op="store", ns=namespace, seed=1, lines=LINES)
            stored, deleted = storer.receive(), deleter.receive()
            if "error" in stored or "error" in deleted:
                problems.append(f"round {r}: store {stored}, delete {deleted}")
                continue
            found = reader.ask(op="read", ns=namespace)
            new = digest(version(namespace, 1, LINES))
            old = digest(version(namespace, 0, LINES))
            if found.get("absent"):
                continue  # the delete landed after the store: nothing was promised past it
            if "error" in found:
                problems.append(f"round {r}: x listed but unreadable: {found}")
            elif found["digests"] not in ([new], [old, new]):
                problems.append(f"round {r}: x holds {found['digests']}, not [new] or [old, new]")
    finally:
        for w in (storer, deleter, reader):
            w.close()
    return problems


@pytest.mark.timeout(900)
def test_a_delete_racing_a_store_never_removes_the_committed_bytes_path(tmp_path: Path) -> None:
    assert race(f"path:{tmp_path / 'tm'}", rounds(25)) == []


@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_a_delete_racing_a_store_never_removes_the_committed_bytes_postgres(
    postgres_dsn: str,
) -> None:
    assert race(f"pg:{postgres_dsn}", rounds(25)) == []


@pytest.mark.parametrize("kind", ["path", pytest.param("pg", marks=pytest.mark.postgres)])
@pytest.mark.timeout(900)
def test_a_store_landing_inside_a_slow_sweep_keeps_its_bytes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The issue's loss, made to happen every round: the delete drops the metadata, the
    store (sent 0.1 s later) finds the namespace absent and commits a fresh one, and only
    then does the sweep (slowed to 0.4 s) look at what to delete. Before the fix it
    deleted every blob of the namespace: the store's acknowledged bytes were gone for good.
    """
    target = (
        f"path:{tmp_path / 'tm'}"
        if kind == "path"
        else f"pg:{request.getfixturevalue('postgres_dsn')}"
    )
    assert race(target, rounds(4), slow_sweep=0.4, lag=0.1) == []
