"""Simulated hosts for multi-machine tests: network namespaces on one bridge (root only).

Each :class:`Host` is a network namespace whose only way out is a veth pair plugged into
a bridge on this machine. The bridge carries the "server" address ``10.213.N.1/24``
(``N`` picked free under a file lock, so parallel test runs never share a subnet); host
``i`` has ``10.213.N.(10+i)``. A server that listens on :attr:`Network.server_address`
is reached from a namespace over the veth only, and taking a host's veth down cuts that
host off while the others keep working.

Every namespace, veth and bridge is deleted on exit, also when the test fails; a run that
was killed outright leaves its subnet's leftovers; the next run takes such a subnet back
(its owner's pid is dead) and removes them first.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PREFIX = "10.213"
_LOCK = Path("/tmp/offprompt-netns.lock")
_OWNERS = Path("/tmp/offprompt-netns")


def _ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    command = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


def netns_unavailable() -> str | None:
    """Why this machine cannot make network namespaces, or ``None`` if it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"offprompt-probe-{os.getpid()}"
    try:
        done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    except FileNotFoundError:
        return "the ip command (iproute2) is not installed"
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


@dataclass(frozen=True)
class Host:
    """One simulated machine: a namespace, its address, and the bridge side of its veth."""

    index: int
    netns: str
    address: str
    bridge_port: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.netns, *argv]

    def cut(self) -> None:
        """Take the host's link down: its packets stop, its connections hang."""
        _ip("link", "set", self.bridge_port, "down")

    def restore(self) -> None:
        """Bring the host's link back up."""
        _ip("link", "set", self.bridge_port, "up")


@dataclass(frozen=True)
class Network:
    """A bridge with the server address and the hosts plugged into it."""

    subnet: int
    bridge: str
    hosts: tuple[Host, ...]

    @property
    def server_address(self) -> str:
        return f"{PREFIX}.{self.subnet}.1"

    @property
    def cidr(self) -> str:
        return f"{PREFIX}.{self.subnet}.0/24"


def _names(subnet: int) -> tuple[str, str]:
    """The bridge name and the namespace-name prefix of ``subnet``."""
    return f"opbr{subnet}", f"offprompt-{subnet}-h"


def _remove(subnet: int) -> None:
    bridge, ns_prefix = _names(subnet)
    for line in _ip("netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(ns_prefix):
            # Deleting the namespace deletes its veth end, and with it the bridge end.
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    _ip("link", "delete", bridge, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim_subnet() -> int:
    """A subnet no live run uses; its bridge (with the address) exists on return.

    The owner's pid is kept in ``/tmp/offprompt-netns/N``: a subnet whose owner died
    without cleaning up (SIGKILL, a timeout) is taken back, its leftovers deleted first.
    """
    _OWNERS.mkdir(exist_ok=True)
    with _LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        used = {
            int(m.group(1))
            for m in re.finditer(rf"inet {re.escape(PREFIX)}\.(\d+)\.", _ip("-4", "addr"))
        }
        for subnet in range(1, 255):
            owner = _OWNERS / str(subnet)
            pid = int(owner.read_text()) if owner.exists() else None
            if pid is not None and _alive(pid):
                continue
            if pid is None and subnet in used:
                continue  # someone else's address, not ours to take
            break
        else:
            raise RuntimeError(f"no free subnet left in {PREFIX}.0.0/16")
        _remove(subnet)
        owner.write_text(str(os.getpid()))
        bridge, _ = _names(subnet)
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{PREFIX}.{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        return subnet


@contextmanager
def network(hosts: int) -> Iterator[Network]:
    """A bridge and ``hosts`` namespaces on it; all of it is deleted on exit."""
    subnet = _claim_subnet()
    bridge, ns_prefix = _names(subnet)
    try:
        made = []
        for index in range(hosts):
            netns = f"{ns_prefix}{index}"
            outside, inside = f"op{subnet}h{index}", f"op{subnet}n{index}"
            address = f"{PREFIX}.{subnet}.{10 + index}"
            _ip("netns", "add", netns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", netns)
            _ip("link", "set", outside, "master", bridge)
            _ip("link", "set", outside, "up")
            _ip("addr", "add", f"{address}/24", "dev", inside, netns=netns)
            _ip("link", "set", inside, "up", netns=netns)
            _ip("link", "set", "lo", "up", netns=netns)
            made.append(Host(index, netns, address, outside))
        yield Network(subnet, bridge, tuple(made))
    finally:
        _remove(subnet)
        (_OWNERS / str(subnet)).unlink(missing_ok=True)
