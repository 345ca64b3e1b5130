"""``browser_testing.place_fds``: the DevTools pipe reaches the child at fds 3 and 4.

Run in a fresh Python (not pytest's process) so the test can put pipes on fds 3 and 4
without disturbing descriptors pytest holds. The child is a plain Python that echoes what
it reads on fd 3 to fd 4, as Chromium's ``--remote-debugging-pipe`` reads and writes them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

# Puts the read end of pipe A (parent -> child) and the write end of pipe B (child ->
# parent) on the descriptors argv names, close-on-exec set as os.pipe leaves it, then runs
# an echo child with place_fds as its preexec_fn.
PARENT = textwrap.dedent(
    """
    import fcntl, os, subprocess, sys
    from browser_testing import place_fds

    mode = sys.argv[1]
    for fd in range(3, 10):
        try:
            os.close(fd)
        except OSError:
            pass
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    if mode == "pipe-on-3":  # what os.pipe gives with fd 3 free: A's read end is fd 3
        assert a_r == 3, a_r
    else:
        at = {"both-at-target": (3, 4), "swapped": (4, 3)}[mode]
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 30) for fd in (a_r, a_w, b_r, b_w)]
        for fd in (a_r, a_w, b_r, b_w):
            os.close(fd)
        a_r, a_w, b_r, b_w = high
        os.dup2(a_r, at[0], inheritable=False)
        os.dup2(b_w, at[1], inheritable=False)
        os.close(a_r)
        os.close(b_w)
        a_r, b_w = at
    assert not os.get_inheritable(a_r) and not os.get_inheritable(b_w)
    child = subprocess.Popen(
        [sys.executable, "-c", "import os; os.write(4, os.read(3, 100).upper())"],
        close_fds=False,
        preexec_fn=lambda: place_fds((a_r, b_w)),
    )
    os.close(a_r)
    os.close(b_w)
    os.write(a_w, b"ping")
    os.close(a_w)
    reply = os.read(b_r, 100)
    assert child.wait(timeout=30) == 0, "the child could not use fds 3 and 4"
    print(reply.decode())
    """
)


@pytest.mark.parametrize("mode", ["pipe-on-3", "both-at-target", "swapped"])
def test_place_fds_hands_the_pipe_to_the_child_at_3_and_4(mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PARENT, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "PING"
