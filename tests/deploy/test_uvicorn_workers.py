"""A real deployment: ``uvicorn --workers 4`` on loopback, one thread's turns on several workers.

The app (``deploy_app.py``) serves a LangChain ``create_agent`` agent
(``OffpromptMiddleware(TaskMemory(path=...))``, ``checkpointer=OffpromptSaver(path=...)``)
and a LlamaIndex ``FunctionAgent`` (``offprompt_tool``, ``TaskMemoryToolSpec``,
``OffpromptMemory``). The models are scripted fakes (no LLM): each reply is a function of
the messages shown, so every worker replies alike. Everything else is real: four worker
processes opening the same directory, HTTP over TCP with a new connection per request
(so the kernel hands each turn to whichever worker accepts it first), the pid of the
worker that served each turn recorded and checked.

A tool returns a real Loghub excerpt (HDFS, 800 lines, committed under ``data/``); it
goes off-prompt in one worker, then ``grep_memory``, ``read_memory``, ``json_memory`` and
``query_memory`` on that reference are each repeated until a worker other than the one
that stored it served them, and every answer is checked against the log itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

HERE = Path(__file__).parent
LOG_LINES = (HERE / "data" / "HDFS_800.log").read_text(encoding="utf-8").splitlines()
WORKERS = 4
STARTUP_SECONDS = 90  # four workers importing both frameworks on a loaded machine
MAX_TRIES = 12  # turns of one op before giving up on another worker serving it
MIN_PIDS = 3  # distinct workers that must serve the thread

pytestmark = [pytest.mark.allow_hosts(["127.0.0.1"]), pytest.mark.timeout(240)]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Deployment:
    """A running ``uvicorn --workers N``: its url, its log and its workers' pids."""

    url: str
    root: Path
    log: Path
    process: subprocess.Popen[bytes]

    def workers(self) -> set[int]:
        ready = self.root / "ready"
        return {int(p.name) for p in ready.iterdir()} if ready.exists() else set()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _start(root: Path) -> Deployment:
    port = _free_port()
    log = root / "uvicorn.log"
    env = {**os.environ, "OFFPROMPT_DEPLOY_DIR": str(root), "OFFPROMPT_HOME": str(root / "home")}
    command = [sys.executable, "-m", "uvicorn", "deploy_app:app", "--app-dir", str(HERE)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(WORKERS)]
    command += ["--log-level", "info", "--no-access-log"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: teardown kills every worker
        )
    return Deployment(f"http://127.0.0.1:{port}", root, log, process)


def _stop(deployment: Deployment) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(deployment.process.pid, signal.SIGTERM)
    try:
        deployment.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(deployment.process.pid, signal.SIGKILL)
        deployment.process.wait(timeout=15)
    # A worker that outlived its supervisor would hold the port and the files: kill it too.
    for pid in deployment.workers():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """``uvicorn --workers 4`` serving ``deploy_app``, up once every worker has opened the memory."""
    server = _start(tmp_path_factory.mktemp("deploy"))
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while len(server.workers()) < WORKERS:
            if server.process.poll() is not None:
                pytest.fail(f"uvicorn exited ({server.process.returncode}):\n{server.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"only {len(server.workers())} of {WORKERS} workers opened the shared "
                    f"memory within {STARTUP_SECONDS} s; uvicorn's log:\n{server.log_tail()}"
                )
            time.sleep(0.2)
        yield server
    finally:
        _stop(server)


@dataclass
class Thread:
    """One conversation driven over HTTP; remembers which worker served each turn."""

    deployment: Deployment
    framework: str
    name: str
    served: list[tuple[str, int]] = field(default_factory=list)

    def turn(self, op: str, source: str | None = None, **args: Any) -> tuple[int, str]:
        command = {"op": op, "source": source, "args": args}
        # A new client per request: a new TCP connection, so any worker may accept it.
        with httpx.Client(timeout=60, headers={"Connection": "close"}) as client:
            response = client.post(
                f"{self.deployment.url}/{self.framework}/turn",
                json={"thread": self.name, "text": json.dumps(command)},
            )
        assert response.status_code == 200, (
            f"{op} on {self.framework}: HTTP {response.status_code} {response.text[:2000]}\n"
            f"{self.deployment.log_tail()}"
        )
        body = response.json()
        self.served.append((op, body["pid"]))
        return body["pid"], body["answer"]

    def pids(self) -> set[int]:
        return {pid for _, pid in self.served}


# -- what the answers must be, computed from the log itself -----------------------------------


def _lines_of(answer: str) -> dict[int, str]:
    """``N: text`` lines of a grep or read answer, by line number."""
    found: dict[int, str] = {}
    for line in answer.splitlines():
        number, sep, text = line.partition(": ")
        if sep and number.isdigit():
            found[int(number)] = text
    return found


def check_grep(answer: str) -> None:
    expected = [(n, line) for n, line in enumerate(LOG_LINES, 1) if " WARN " in line]
    assert f"{len(expected)} matching line(s)" in answer, answer[:500]
    assert _lines_of(answer) == dict(expected[:5]), answer[:2000]


def check_read(answer: str) -> None:
    assert answer.startswith(f"Lines 400-404 of {len(LOG_LINES)} "), answer[:300]
    assert _lines_of(answer) == {n: LOG_LINES[n - 1] for n in range(400, 405)}, answer


def check_json(answer: str) -> None:
    head, _, body = answer.partition("\n")
    assert head.startswith("Result of \"events[?level=='WARN'].line\""), answer[:300]
    assert json.loads(body) == [n for n, line in enumerate(LOG_LINES, 1) if " WARN " in line]


def check_query(answer: str) -> None:
    # The two lines of the log that name this block, found by meaning-and-words search.
    wanted = [line for line in LOG_LINES if "blk_-8775602795571523802" in line]
    assert len(wanted) == 2
    assert re.match(r"\d+ (passage\(s\)|of \d+ passages) from ", answer) and any(
        line in answer for line in wanted
    ), answer[:2000]


OPS: list[tuple[str, str, dict[str, Any], Callable[[str], None]]] = [
    ("grep_memory", "fetch_log", {"pattern": " WARN ", "max_matches": 5}, check_grep),
    ("read_memory", "fetch_log", {"start_line": 400, "end_line": 404}, check_read),
    ("json_memory", "log_events", {"expression": "events[?level=='WARN'].line"}, check_json),
    (
        "query_memory",
        "fetch_log",
        {"query": "Deleting block blk_-8775602795571523802", "top_n": 3},
        check_query,
    ),
]


def _store(thread: Thread, op: str) -> tuple[int, str]:
    pid, answer = thread.turn(op)
    words = answer.split()
    assert len(words) == 3 and words[0] == "stored", f"{op} was not stored off-prompt: {answer!r}"
    return pid, words[2]


def drive(deployment: Deployment, framework: str) -> Thread:
    """Store two outputs, then read each from other workers; return the served turns."""
    thread = Thread(deployment, framework, f"{framework}-thread")
    stored_by = {op: _store(thread, op) for op in ("fetch_log", "log_events")}
    for op, source, args, check in OPS:
        storer = stored_by[source][0]
        for _ in range(MAX_TRIES):
            pid, answer = thread.turn(op, source, **args)
            check(answer)  # right in every worker, the storing one included
            if pid != storer:
                break
        else:
            pytest.fail(f"{MAX_TRIES} turns of {op}, all served by the storing worker {storer}")
    extra = 0
    while len(thread.pids()) < MIN_PIDS and extra < 3 * MAX_TRIES:
        op, source, args, check = OPS[extra % len(OPS)]
        check(thread.turn(op, source, **args)[1])
        extra += 1
    print(f"\n{framework}: stored by {[stored_by[s][0] for s in stored_by]}; turns {thread.served}")
    assert thread.pids() <= deployment.workers()
    assert len(thread.pids()) >= MIN_PIDS, f"only workers {thread.pids()} served {thread.served}"
    return thread


def test_langchain_agent_thread_across_uvicorn_workers(deployment: Deployment) -> None:
    drive(deployment, "langchain")


def test_llamaindex_agent_thread_across_uvicorn_workers(deployment: Deployment) -> None:
    drive(deployment, "llamaindex")
