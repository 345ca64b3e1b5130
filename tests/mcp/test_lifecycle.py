"""The proxy's lifecycle, with real processes: when the client leaves (closes stdin,
sends SIGTERM or SIGINT) the proxy stops its upstream's whole process group, children
included, and exits 0 within the 2 s that MCP clients (the Inspector, desktop and IDE
clients) give a server between closing its stdin and SIGTERM, with no stack trace on
its stderr; ``offprompt mcp serve`` exits as cleanly.

Upstreams: the Python fixture (it exits when its stdin closes), npm's server-everything
with its timers on (it does not: the proxy must SIGTERM it; ``node`` is a wrapper that
runs the real node as its child), and one that ignores SIGTERM and has a child that
does too (SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_testing import (
    child_pids,
    initialize_over,
    live_members,
    proxy_of,
    read_answer,
    reference_server,
    send_line,
    serve_command,
    upstream_command,
)

CONTRACT = 2.0  # seconds the clients give; the tests allow half a second more
SLACK = 0.5

# An upstream that ignores SIGTERM and stdin's end, with a child that ignores SIGTERM
# too (ignored signals are inherited): only SIGKILL stops them.
STUBBORN = textwrap.dedent(
    """
    import json, signal, subprocess, sys, time

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "600"])
    sys.stderr.write(f"stubborn upstream: child {child.pid}\\n")
    sys.stderr.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        if request["method"] == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stubborn", "version": "1"},
            }
        else:
            result = {"tools": []}
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    time.sleep(600)
    """
)


class Running:
    """A proxy (or ``mcp serve``) started with Popen, its stderr in a file."""

    def __init__(self, command: list[str], stderr: Path) -> None:
        self.stderr_path = stderr
        self.group: int | None = None
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr.open("wb")
        )

    def upstream_group(self) -> int:
        """The upstream's pid, also its process group's id (a session of its own)."""
        (upstream,) = [pid for pid in child_pids(self.process.pid) if os.getpgid(pid) == pid]
        self.group = upstream
        return upstream

    def leave(self, way: str) -> float:
        """Leave as a client does; the seconds until the process exited."""
        started = time.monotonic()
        if way == "stdin":
            assert self.process.stdin is not None
            self.process.stdin.close()
        else:
            self.process.send_signal(getattr(signal, way))
        try:
            self.process.wait(timeout=CONTRACT + SLACK)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {CONTRACT + SLACK} s after {way}:\n{self.stderr()}")
        return time.monotonic() - started

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.group is not None:  # a failed test leaves nothing running either
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, signal.SIGKILL)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for each in started:
        each.stop()


def start(running: list[Running], command: list[str], tmp_path: Path) -> Running:
    process = Running(command, tmp_path / f"stderr-{len(running)}.txt")
    running.append(process)
    return process


def assert_gone(pgid: int, by: float, *also: int) -> None:
    """Nothing of the group (nor ``also``) runs any more, at the latest at ``by``."""
    while True:
        left = set(live_members(pgid)) | {pid for pid in also if _runs(pid)}
        if not left or time.monotonic() > by:
            break
        time.sleep(0.02)
    assert not left, f"still running after the proxy exited: {sorted(left)}"


def _runs(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def assert_quiet(log: str) -> None:
    for sign in ("Traceback", "EPIPE", "Error:"):
        assert sign not in log, f"{sign!r} on the client's stderr:\n{log}"


WAYS = ["stdin", "SIGTERM", "SIGINT", "SIGHUP"]


@pytest.mark.parametrize("way", WAYS)
def test_leaving_stops_the_fixture_upstream_in_time(way, home, tmp_path, running):
    proxy = start(running, proxy_of(home, upstream_command()), tmp_path)
    assert initialize_over(proxy.process)["serverInfo"]["name"].startswith("offprompt-proxy")
    pgid = proxy.upstream_group()
    send_line(proxy.process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert read_answer(proxy.process, 2)["result"]["tools"]
    took = proxy.leave(way)
    assert proxy.process.returncode == 0, proxy.stderr()
    assert_gone(pgid, time.monotonic() + max(0.0, CONTRACT + SLACK - took))
    assert_quiet(proxy.stderr())


@pytest.mark.parametrize("way", WAYS)
def test_leaving_stops_server_everything_and_its_child_in_time(way, home, tmp_path, running):
    proxy = start(running, proxy_of(home, reference_server("everything", "stdio")), tmp_path)
    initialize_over(proxy.process)
    pgid = proxy.upstream_group()
    # Its timers on, it no longer exits when its stdin closes (as a busy server).
    for request_id, tool in enumerate(("toggle-simulated-logging", "toggle-subscriber-updates"), 2):
        call = {"name": tool, "arguments": {}}
        send_line(
            proxy.process,
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call},
        )
        assert "error" not in read_answer(proxy.process, request_id)
    assert len(live_members(pgid)) >= 1
    took = proxy.leave(way)
    assert proxy.process.returncode == 0, proxy.stderr()
    assert_gone(pgid, time.monotonic() + max(0.0, CONTRACT + SLACK - took))
    log = proxy.stderr()
    assert "Starting default (STDIO) server..." in log  # its stderr reached ours, running
    assert_quiet(log)


def test_an_upstream_that_ignores_sigterm_is_killed_with_its_child(home, tmp_path, running):
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    proxy = start(running, proxy_of(home, [sys.executable, str(script)]), tmp_path)
    initialize_over(proxy.process)
    pgid = proxy.upstream_group()
    (child,) = child_pids(pgid)
    assert os.getpgid(child) == pgid
    took = proxy.leave("SIGTERM")
    assert proxy.process.returncode == 0, proxy.stderr()
    assert_gone(pgid, time.monotonic() + max(0.0, CONTRACT + SLACK - took), pgid, child)
    log = proxy.stderr()
    assert f"stubborn upstream: child {child}" in log
    assert_quiet(log)


@pytest.mark.parametrize("way", WAYS)
def test_mcp_serve_exits_cleanly_in_time(way, home, tmp_path, running):
    served = start(running, serve_command(home), tmp_path)
    assert initialize_over(served.process)["serverInfo"]["name"] == "offprompt-memory"
    send_line(served.process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert read_answer(served.process, 2)["result"]["tools"]
    served.leave(way)
    assert served.process.returncode == 0, served.stderr()
    assert_quiet(served.stderr())
