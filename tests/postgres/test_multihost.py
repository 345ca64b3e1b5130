"""Several "machines" write one PostgreSQL session: network namespaces, real faults.

Four hosts (network namespaces, each behind its own veth on a bridge; see
``tests/netns_testing.py``) run ``tests/postgres/writer.py`` against one throwaway
PostgreSQL server that listens on the bridge address. Each writer appends 50 batches of
10 tagged messages to ONE session and logs every batch the store acknowledged. The
faults are real: a writer SIGKILLed inside an open transaction, a writer killed after its
commit but before it heard of it, a host's link taken down mid-write, and the server
restarted (``pg_ctl restart -m fast``) under load. Afterwards the session must hold
exactly what was sent, once: seqs 0..N-1 with no gap and no duplicate, every batch whole
and contiguous, every acknowledged batch at the seqs it was acknowledged with.

The test process reads over the server's unix socket (pytest-socket forbids TCP here);
the writers are subprocesses and use TCP through their namespace.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from netns_testing import Host, Network, network
from postgres_testing import Cluster, start_cluster
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from offprompt.stores import PostgresStore

pytestmark = [pytest.mark.netns, pytest.mark.postgres, pytest.mark.timeout(900)]

WRITER = Path(__file__).with_name("writer.py")
HOSTS = 4
#: The table whose insert the mid-transaction kill blocks (PostgresStore's schema).
MESSAGES_TABLE = "offprompt_messages"
BATCHES = 50
SIZE = 10
# A dead peer must turn into an error within seconds, on both ends: the client's
# unacknowledged data times out (tcp_user_timeout, ms) and the server's keepalives end a
# backend whose client vanished mid-transaction, releasing its locks.
CLIENT_TIMEOUTS = {
    "connect_timeout": "2",
    "tcp_user_timeout": "1500",
    "keepalives": "1",
    "keepalives_idle": "1",
    "keepalives_interval": "1",
    "keepalives_count": "2",
}
SERVER_SETTINGS = {
    "tcp_keepalives_idle": "1",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "2",
    "tcp_user_timeout": "1500",
}


@dataclass
class Server:
    cluster: Cluster
    net: Network

    def local(self) -> psycopg.Connection:
        """A superuser connection over the unix socket, autocommit."""
        return psycopg.connect(self.cluster.dsn, autocommit=True)

    def dsn_for(self, host: Host) -> str:
        """The TCP dsn a writer on ``host`` uses: the bridge address, short timeouts."""
        params = conninfo_to_dict(self.cluster.tcp_dsn(host=self.net.server_address))
        params.update(CLIENT_TIMEOUTS, application_name=f"writer-{host.netns}")
        return make_conninfo(**params)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with network(HOSTS) as net:
        cluster = start_cluster(listen_addresses=net.server_address, settings=SERVER_SETTINGS)
        try:
            yield Server(cluster, net)
        finally:
            cluster.destroy()


class Writers:
    """The writer processes of one test, one per host, each with its log."""

    def __init__(self, server: Server, workdir: Path, session: str, **options: object) -> None:
        self.server = server
        self.workdir = workdir
        self.session = session
        self.options = options
        self.procs: dict[int, subprocess.Popen[str]] = {}
        self.reports: dict[int, list[dict[str, Any]]] = {}

    def log(self, host: Host) -> Path:
        return self.workdir / f"{host.netns}.log"

    def start(self, host: Host, **extra: object) -> subprocess.Popen[str]:
        argv = [
            sys.executable,
            str(WRITER),
            "--dsn",
            self.server.dsn_for(host),
            "--session",
            self.session,
            "--host",
            f"h{host.index}",
            "--log",
            str(self.log(host)),
            "--batches",
            str(BATCHES),
            "--size",
            str(SIZE),
        ]
        for name, value in {**self.options, **extra}.items():
            argv += [f"--{name.replace('_', '-')}", str(value)]
        proc = subprocess.Popen(
            host.command(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.procs[host.index] = proc
        return proc

    def acked(self, host: Host) -> list[dict[str, Any]]:
        path = self.log(host)
        if not path.exists():
            return []
        # A line is complete once its newline is there; a torn last line is not yet acked.
        return [json.loads(line) for line in path.read_text().split("\n")[:-1]]

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
        give_up = time.monotonic() + timeout
        while not condition():
            for index, proc in self.procs.items():
                if proc.poll() not in (None, 0, -signal.SIGKILL):
                    raise AssertionError(f"writer on host {index} failed: {proc.stderr.read()}")
            if time.monotonic() > give_up:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.02)

    def finish(self, proc: subprocess.Popen[str], index: int) -> dict[str, Any]:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"writer on host {index} exited {proc.returncode}: {err}"
        report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        self.reports.setdefault(index, []).append(report)
        return report

    def finish_all(self) -> None:
        for index, proc in self.procs.items():
            if proc.returncode is None or proc.returncode == 0:
                self.finish(proc, index)

    def kill_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def errors(self, host: Host) -> list[str]:
        """The errors the host's writer runs retried."""
        return [e for r in self.reports.get(host.index, []) for e in r["errors"]]


@pytest.fixture
def writers(server: Server, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Writers]:
    made = Writers(server, tmp_path, session=request.node.name[:100])
    try:
        yield made
    finally:
        made.kill_all()


def assert_converged(server: Server, writers: Writers, hosts: list[Host]) -> None:
    """Exactly the batches sent, once each, whole, at the seqs the writers were told."""
    with PostgresStore(server.cluster.dsn) as store:
        stored = store.read(writers.session)
    total = len(hosts) * BATCHES * SIZE
    seqs = [m.seq for m in stored]
    assert seqs == list(range(total)), "seqs must be 0..N-1 without gaps or duplicates"
    texts = [m.message.text for m in stored]
    expected = {f"h{h.index}:{b}:{i}" for h in hosts for b in range(BATCHES) for i in range(SIZE)}
    assert len(set(texts)) == len(texts) == total
    assert set(texts) == expected
    where = {text: seq for text, seq in zip(texts, seqs, strict=True)}
    for host in hosts:
        acked = writers.acked(host)
        keys = [entry["key"] for entry in acked]
        assert sorted(keys, key=lambda k: int(str(k).split(":")[1])) == [
            f"h{host.index}:{b}" for b in range(BATCHES)
        ], "every batch acknowledged exactly once"
        for entry in acked:
            batch_seqs = [where[f"{entry['key']}:{i}"] for i in range(SIZE)]
            assert batch_seqs == list(range(batch_seqs[0], batch_seqs[0] + SIZE)), (
                f"batch {entry['key']} is not whole and in order: {batch_seqs}"
            )
            assert entry["seqs"] == batch_seqs, f"batch {entry['key']} acked at other seqs"


def test_four_hosts_append_to_one_session(server: Server, writers: Writers) -> None:
    hosts = list(server.net.hosts)
    for host in hosts:
        writers.start(host)
    writers.finish_all()
    for host in hosts:
        (report,) = writers.reports[host.index]
        assert report["client_addr"] == host.address, "each writer reached the server via its veth"
    assert_converged(server, writers, hosts)


def _blocked_in_transaction(server: Server, host: Host) -> bool:
    with server.local() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            " AND backend_xid IS NOT NULL AND wait_event_type = 'Lock'",
            (f"writer-{host.netns}",),
        ).fetchone()
    return row is not None and row[0] > 0


@contextlib.contextmanager
def _parked_in_transaction(
    server: Server, writers: Writers, host: Host, others: list[Host], what: str
) -> Iterator[None]:
    """Start ``host``'s writer and, after its first batches, park it inside an open
    transaction that has already written (a held lock blocks its message insert), with
    ``others`` started and queued behind it. The caller acts on it (kill, cut) inside
    the block; the lock is released when the block ends."""
    writers.options["pause"] = 0.01
    writers.start(host)
    writers.wait_until(lambda: len(writers.acked(host)) >= 5, f"{what}'s first batches")
    with server.local() as blocker:
        blocker.autocommit = False
        blocker.execute(f"LOCK TABLE {MESSAGES_TABLE} IN SHARE MODE")
        writers.wait_until(
            lambda: _blocked_in_transaction(server, host), f"{what} inside its transaction"
        )
        for other in others:
            writers.start(other)
        yield
        blocker.rollback()


def test_writer_killed_mid_transaction(server: Server, writers: Writers) -> None:
    hosts = list(server.net.hosts[:2])  # the victim and one writer queued behind it
    victim, others = hosts[0], hosts[1:]
    # killed inside an open transaction that has already written
    with _parked_in_transaction(server, writers, victim, others, "the victim"):
        writers.procs[victim.index].kill()
        writers.procs[victim.index].wait()
    assert len(writers.acked(victim)) < BATCHES
    writers.start(victim)  # the same writer again: it resumes from its log, same keys
    writers.finish_all()
    assert_converged(server, writers, hosts)


def test_killed_after_commit_retries_with_same_key(server: Server, writers: Writers) -> None:
    host = server.net.hosts[0]
    first = writers.start(host, die_after_commit=10)
    first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL
    assert len(writers.acked(host)) == 10, "batch 10 was committed but never logged"
    with PostgresStore(server.cluster.dsn) as store:
        committed = [
            m.seq for m in store.read(writers.session) if m.message.text.startswith("h0:10:")
        ]
    assert len(committed) == SIZE
    writers.start(host)
    writers.finish_all()
    assert_converged(server, writers, [host])
    (entry,) = [e for e in writers.acked(host) if e["key"] == "h0:10"]
    assert entry["seqs"] == committed, "the retry got the first commit's seqs back"


def test_link_cut_mid_write(server: Server, writers: Writers) -> None:
    hosts = list(server.net.hosts[:2])  # the cut host and one that keeps writing
    cut, others = hosts[1], hosts[:1]
    # the link goes down while the request is sent and no answer has come back
    with _parked_in_transaction(server, writers, cut, others, "the cut host"):
        cut.cut()
    try:
        cut_at = len(writers.acked(cut))
        # The others go on while the host is cut off: the server ends the cut host's
        # backend (its answer cannot be delivered), which releases the session's lock.
        writers.wait_until(
            lambda: sum(len(writers.acked(h)) for h in others) >= 10,
            "the other hosts writing during the cut",
        )
        time.sleep(1.0)
        assert len(writers.acked(cut)) == cut_at, "the cut host cannot have gone on"
    finally:
        cut.restore()
    writers.finish_all()
    assert writers.errors(cut), "the cut host's writer saw its connection fail"
    assert_converged(server, writers, hosts)


def _writers_waiting(server: Server) -> int:
    """Writer backends inside a transaction, waiting on a lock."""
    with server.local() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'writer-%%'"
            " AND xact_start IS NOT NULL AND wait_event_type = 'Lock'"
        ).fetchone()
    return 0 if row is None else int(row[0])


def test_server_restart_under_load(server: Server, writers: Writers) -> None:
    hosts = list(server.net.hosts)
    writers.options["pause"] = 0.02
    for host in hosts:
        writers.start(host)
    writers.wait_until(
        lambda: all(len(writers.acked(h)) >= 5 for h in hosts), "all writers under way"
    )
    # Every writer parked inside an append (one on the blocked insert, the rest queued
    # on the session's lock), then the server restarts: each loses a transaction.
    blocker = psycopg.connect(server.cluster.dsn)
    try:
        blocker.execute(f"LOCK TABLE {MESSAGES_TABLE} IN SHARE MODE")
        writers.wait_until(lambda: _writers_waiting(server) == len(hosts), "all writers parked")
        server.cluster.restart()
    finally:
        blocker.close()
    writers.finish_all()
    for host in hosts:
        assert writers.errors(host), f"the restart broke host {host.index}'s transaction"
    assert_converged(server, writers, hosts)
