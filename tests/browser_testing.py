"""Headless Chromium for the tests that check a page as a browser renders it.

Debian's ``chromium`` (the Makefile's test setup installs it). The browser gets a proxy
that points nowhere, so a page can load nothing beyond the loopback interface.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def place_fds(sources: Sequence[int], first: int = 3) -> None:
    """Put ``sources`` at ``first``, ``first + 1``, ... and make them inheritable.

    For a ``preexec_fn`` (it runs in the child, between fork and exec). ``os.dup2`` clears
    close-on-exec on the copy, but a descriptor that already sits at its target (a pipe
    that landed on fd 3) is not copied, so its flag is cleared here instead. A source that
    sits on another source's target is first moved out of the way, so no dup2 clobbers it.
    """
    end = first + len(sources)
    placed = [
        fcntl.fcntl(fd, fcntl.F_DUPFD, end) if first <= fd < end and fd != first + i else fd
        for i, fd in enumerate(sources)
    ]
    for i, fd in enumerate(placed):
        target = first + i
        if fd == target:
            os.set_inheritable(fd, True)
        else:
            os.dup2(fd, target)  # the copy is inheritable (close-on-exec cleared)


def find_chromium() -> str | None:
    """The path of the ``chromium`` (or ``chromium-browser``) command, or ``None``."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium() -> str:
    """The path of ``chromium``; AssertionError saying how to install it when missing."""
    path = find_chromium()
    if path:
        return path
    raise AssertionError(
        "chromium is not installed: run `apt-get install -y chromium` (make test does)"
    )


# Headless, no sandbox (root in CI), nothing fetched in the background.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",  # anything that tries the network (beyond loopback) fails
)


def dump_dom(url: str, profile: Path, *, budget_ms: int = 5000) -> str:
    """The DOM of ``url`` after ``budget_ms`` of virtual time (scripts, workers, loads)."""
    done = subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Browser:
    """A headless Chromium driven over the DevTools protocol (``--remote-debugging-pipe``).

    For pages that work after load (a search that runs in a web worker): navigate, type,
    and poll the page with JavaScript until a condition holds, on real time.
    """

    def __init__(self, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def at_3_and_4() -> None:  # the protocol pipe: Chromium reads fd 3, writes fd 4
            place_fds((to_chrome_r, from_chrome_w))

        self._proc = subprocess.Popen(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=at_3_and_4,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        targets = self._call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self._call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )["sessionId"]

    def _call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    raise AssertionError("chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression: str) -> Any:
        result = self._call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        return result["result"].get("value")

    def open(self, url: str, *, timeout: float = 30) -> None:
        self._call("Page.navigate", {"url": url}, session=True)
        self.wait_for(
            "document.readyState === 'complete' && location.href !== 'about:blank'", timeout=timeout
        )

    def type(self, text: str) -> None:
        self._call("Input.insertText", {"text": text}, session=True)

    def wait_for(self, expression: str, *, timeout: float = 30) -> Any:
        """Poll ``expression`` until it is truthy; its value, or AssertionError at timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"still false after {timeout} s: {expression}")
            time.sleep(0.2)

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        finally:
            os.close(self._to_chrome)
            os.close(self._from_chrome)
