"""Stored tool outputs across hosts (issue 29): ``TaskMemory(store=PostgresStore(dsn))``.

A reference stored on host A is read, grepped and queried on hosts B and C (network
namespaces behind veth pairs, see ``tests/netns_testing.py``; each host process builds
its own embedded index from the text in PostgreSQL). Faults: A's link cut mid-store of
a 75 MB output, and the server restarted mid-store: the namespace is absent or whole on
every other host, and what was committed before stays; two processes storing one
namespace name at once both land; a namespace deleted while another connection reads it
is a clear NotFoundError. The same processes over the server's unix socket run without
network namespaces.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from netns_testing import Host, Network, network
from postgres_testing import Cluster, start_cluster
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from offprompt.scope import Scope
from offprompt.stores import PostgresStore
from offprompt.task_memory import TaskMemory

WORKER = Path(__file__).parents[1] / "task_memory" / "shared_worker.py"
_spec = importlib.util.spec_from_file_location("shared_worker", WORKER)
assert _spec is not None and _spec.loader is not None
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)
BIG = 1_400_000  # lines: ~75 MB
# The dead-peer timeouts of test_multihost.py (a cut link turns into an error in seconds).
_mh_spec = importlib.util.spec_from_file_location(
    "_multihost_settings", Path(__file__).with_name("test_multihost.py")
)
assert _mh_spec is not None and _mh_spec.loader is not None
_multihost = importlib.util.module_from_spec(_mh_spec)
sys.modules[_mh_spec.name] = _multihost  # its dataclasses look their module up
_mh_spec.loader.exec_module(_multihost)
CLIENT_TIMEOUTS: dict[str, str] = _multihost.CLIENT_TIMEOUTS
SERVER_SETTINGS: dict[str, str] = _multihost.SERVER_SETTINGS


def start(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def check_read(found: dict[str, Any], namespace: str, lines: int) -> None:
    text = worker.make(namespace, lines)
    assert found["present"] and found["bytes"] == len(text.encode())
    assert found["needle_line"] == [lines // 2 + 1]
    assert found["sha"] == worker.digest(text) and found["query"] is True


def absent_or_whole(dsn: str, namespace: str, lines: int) -> bool:
    """True if ``namespace`` is whole, False if absent; fails if it is anything else."""
    with PostgresStore(dsn) as store, TaskMemory(store=store) as memory:
        if namespace not in memory.namespaces():
            assert store.task_get(namespace, scope=Scope(tenant="default")) is None
            return False
        loaded = memory.load_artifacts(namespace).value
        assert len(loaded) == 1 and loaded[0].value == worker.make(namespace, lines)
        return True


def parts_whole_then_collected(dsn: str) -> int:
    """Every blob row stored in parts has all of them; the parts a failed writer left (no
    blob row) are collected by the next commit (grace 0 here); how many there were."""
    key = "tenant, user_id, agent, run, session_id, namespace, upload"
    orphans = (
        "SELECT count(*) FROM offprompt_task_parts p WHERE NOT EXISTS (SELECT 1"
        f" FROM offprompt_task_blobs b WHERE ({key}) = (p.{key.replace(', ', ', p.')}))"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT b.parts, count(p.part), b.size, coalesce(sum(octet_length(p.data)), 0)"
            f" FROM offprompt_task_blobs b LEFT JOIN offprompt_task_parts p USING ({key})"
            f" WHERE b.parts > 0 GROUP BY {key}, b.key, b.parts, b.size"
        ).fetchall()
        assert all(int(n) == int(c) and int(size) == int(got) for n, c, size, got in rows)
        left = int(conn.execute(orphans).fetchone()[0])  # type: ignore[index]
        with PostgresStore(dsn) as store:
            store.task_part_grace = 0.0
            store.task_commit("gc-probe", {}, expect=None, scope=Scope(tenant="probe"))
            store.task_delete("gc-probe", scope=Scope(tenant="probe"))
        assert conn.execute(orphans).fetchone() == (0,)
    return left


def test_processes_share_one_postgres(postgres_dsn: str, tmp_path: Path) -> None:
    target = f"pg:{postgres_dsn}"
    barrier = tmp_path / "go"
    cmd = [sys.executable, str(WORKER), target]
    writers = [
        start([*cmd, "store", ns, "3000", "--wait", str(barrier)]) for ns in ("p0", "p1", "p2")
    ]
    writers.append(start([*cmd, "store", "orders", "300", "--json", "--wait", str(barrier)]))
    barrier.touch()
    for proc in writers:
        finish(proc)
    found = finish(start([*cmd, "read", "p0", "p1", "p2", "orders"]))
    assert found["namespaces"] == ["orders", "p0", "p1", "p2"]
    for ns in ("p0", "p1", "p2"):
        check_read(found[ns], ns, 3000)
    assert found["orders"]["failed"] == 30
    assert finish(start([*cmd, "delete", "p1"]))["deleted"] is True
    after = finish(start([*cmd, "read", "p1"]))
    assert after["p1"] == {"present": False} and "p1" not in after["namespaces"]


@pytest.mark.timeout(900)
def test_server_restart_mid_store(postgres_cluster: Cluster, postgres_dsn: str) -> None:
    cmd = [sys.executable, str(WORKER), f"pg:{postgres_dsn}"]
    finish(start([*cmd, "store", "kept", "500"]))
    child = start([*cmd, "store", "big", str(BIG)])
    assert child.stdout is not None and json.loads(child.stdout.readline()) == {"started": True}
    time.sleep(0.3)
    postgres_cluster.restart()
    out, err = child.communicate(timeout=300)  # an error, or success if it committed before
    assert child.returncode == 0, err[-3000:]
    stored = json.loads(out.strip().splitlines()[-1])["stored"]
    # A reference is handed out only for a whole output; a failure leaves none.
    assert absent_or_whole(postgres_dsn, "big", BIG) == stored
    parts_whole_then_collected(postgres_dsn)
    with PostgresStore(postgres_dsn) as store, TaskMemory(store=store) as memory:
        assert memory.grep("kept", "NEEDLE-kept").total_matches == 1


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[Network, Cluster]]:
    with network(3) as net:
        cluster = start_cluster(listen_addresses=net.server_address, settings=SERVER_SETTINGS)
        try:
            yield net, cluster
        finally:
            cluster.destroy()


def _dsn_for(net: Network, cluster: Cluster, host: Host) -> str:
    params = conninfo_to_dict(cluster.tcp_dsn(host=net.server_address))
    params.update(CLIENT_TIMEOUTS, application_name=f"task-{host.netns}")
    return make_conninfo(**params)


@pytest.mark.netns
@pytest.mark.timeout(900)
def test_stored_on_host_a_read_on_b_and_c_and_a_cut_link(
    hosts: tuple[Network, Cluster],
) -> None:
    net, cluster = hosts
    a, b, c = net.hosts

    def on(host: Host, *args: str) -> subprocess.Popen[str]:
        target = f"pg:{_dsn_for(net, cluster, host)}"
        return start(host.command([sys.executable, str(WORKER), target, *args]))

    finish(on(a, "store", "from-a", "20000"))
    for found in (finish(on(b, "read", "from-a")), finish(on(c, "read", "from-a"))):
        check_read(found["from-a"], "from-a", 20000)
    # A's link goes down mid-store of 75 MB: A fails; B and C see it absent or whole.
    writer = on(a, "store", "cut", str(BIG))
    assert writer.stdout is not None and json.loads(writer.stdout.readline()) == {"started": True}
    time.sleep(0.5)
    a.cut()
    stored = False
    try:
        try:
            out, _ = writer.communicate(timeout=120)
            lines = out.strip().splitlines()
            stored = bool(lines) and bool(json.loads(lines[-1]).get("stored"))
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.communicate()
    finally:
        a.restore()
    seen = finish(on(b, "read", "cut", "from-a"))
    check_read(seen["from-a"], "from-a", 20000)  # committed before the cut: intact
    if seen["cut"]["present"]:
        check_read(seen["cut"], "cut", BIG)
    else:
        assert "cut" not in seen["namespaces"]
    # A writer told "stored" was; one told otherwise may still have committed: when the
    # link dies between the server's commit and its reply (the cut lands about when a
    # 75 MB store commits), no client can know, so "not stored" means absent or whole.
    if stored:
        assert seen["cut"]["present"]
    parts_whole_then_collected(cluster.dsn)


def test_two_processes_storing_one_namespace_on_postgres_both_land(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """Documented outcome, as with ``path=``: both outputs land, in commit order (the
    later commit sees a version conflict, merges and commits again); neither is lost."""
    barrier = tmp_path / "go"
    cmd = [sys.executable, str(WORKER), f"pg:{postgres_dsn}"]
    procs = [start([*cmd, "store", "same", str(n), "--wait", str(barrier)]) for n in (2000, 3000)]
    barrier.touch()
    assert all(finish(proc)["stored"] for proc in procs)
    with PostgresStore(postgres_dsn) as store, TaskMemory(store=store) as memory:
        texts = sorted(a.value for a in memory.load_artifacts("same").value)
        assert texts == sorted([worker.make("same", 2000), worker.make("same", 3000)])
        assert memory.grep("same", "NEEDLE-same").total_matches == 2
        assert memory.stats("same").artifacts == 2


def test_a_namespace_deleted_on_postgres_while_another_process_reads_it(
    postgres_dsn: str,
) -> None:
    """A read that found the namespace and then loses its bytes to a delete through
    another connection raises NotFoundError naming the deletion; later reads see it gone."""
    from offprompt.artifacts import TextArtifact
    from offprompt.errors import NotFoundError

    with (
        PostgresStore(postgres_dsn) as writer_store,
        PostgresStore(postgres_dsn) as reader_store,
        TaskMemory(store=writer_store) as writer,
        TaskMemory(store=reader_store) as reader,
    ):
        writer.store_artifact("doomed", TextArtifact(worker.make("doomed", 500)))
        writer.store_artifact("kept", TextArtifact(worker.make("kept", 500)))
        assert reader.has_namespace("doomed")
        raw = reader.storages[TextArtifact].raw_store
        assert raw is not None
        real_get = raw.get

        def get_after_delete(*args: Any, **kwargs: Any) -> bytes:
            writer.delete("doomed")  # lands between the reader's metadata read and its fetch
            return real_get(*args, **kwargs)

        raw.get = get_after_delete  # type: ignore[method-assign]
        with pytest.raises(NotFoundError, match="deleted while it was being read"):
            reader.grep("doomed", "NEEDLE")
        raw.get = real_get  # type: ignore[method-assign]
        with pytest.raises(NotFoundError, match="is not in"):
            reader.grep("doomed", "NEEDLE")
        assert reader.namespaces() == ["kept"] and reader.query("doomed", "vault").value == []
        assert reader.grep("kept", "NEEDLE-kept").total_matches == 1  # committed: intact
