"""PostgresStore's part rows (schema 6) on a real server: a large task output's bytes
split into parts written and read over several connections at once, the blob row last;
every delete reaches the parts; a writer killed mid-store leaves the namespace absent
and its parts are collected by a later commit; a database written under schema 5
opens and keeps every task output readable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import psycopg
import pytest
from postgres_testing import Cluster

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotFoundError, StorageError
from offprompt.scope import Scope
from offprompt.stores import PostgresStore, _pg_schema, _tasks
from offprompt.task_memory import TaskMemory

ACME = Scope(tenant="acme")


def sql(dsn: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def logs(lines: int, tag: str = "") -> bytes:
    return "".join(
        f"2026-03-14 INFO api{tag} GET /items/{i} {404 if i % 7 == 0 else 200} in {i % 97} ms\n"
        for i in range(lines)
    ).encode()


def part_rows(dsn: str, namespace: str | None = None) -> int:
    if namespace is None:
        return int(sql(dsn, "SELECT count(*) FROM offprompt_task_parts")[0][0])
    where = "SELECT count(*) FROM offprompt_task_parts WHERE namespace = %s"
    return int(sql(dsn, where, (namespace,))[0][0])


def orphan_parts(dsn: str) -> int:
    """Parts of uploads no blob row points to."""
    return int(
        sql(
            dsn,
            "SELECT count(*) FROM offprompt_task_parts p WHERE NOT EXISTS (SELECT 1"
            " FROM offprompt_task_blobs b WHERE b.namespace = p.namespace AND b.upload = p.upload"
            " AND b.tenant = p.tenant AND b.session_id = p.session_id)",
        )[0][0]
    )


def test_a_large_blob_goes_in_parts_and_comes_back_whole(postgres_dsn: str) -> None:
    data = logs(300_000)  # ~19 MB: 5 parts of 4 MiB
    count = -(-len(data) // _tasks.PART_BYTES)
    assert count > 1
    with PostgresStore(postgres_dsn) as store:
        key = store.task_put_blob("big", data, scope=ACME)
        assert key == _tasks.content_key(data)
        assert store.task_commit("big", {"n": 1}, expect=None, blobs=[key], scope=ACME) == 1
        rows = sql(
            postgres_dsn,
            "SELECT parts, size, octet_length(data) FROM offprompt_task_blobs WHERE key = %s",
            (key,),
        )
        assert rows == [(count, len(data), 0)]
        assert part_rows(postgres_dsn, "big") == count
        assert store.task_blob_keys("big", scope=ACME) == [key]
        with PostgresStore(postgres_dsn) as other:  # another connection pool reads it
            assert other.task_get_blob("big", key, scope=ACME) == data
        # The same bytes again: one blob row, and the second upload's parts dropped.
        assert store.task_put_blob("big", bytearray(data), scope=ACME) == key
        assert part_rows(postgres_dsn, "big") == count
        small = b"short output\n"
        small_key = store.task_put_blob("big", small, scope=ACME)
        assert store.task_get_blob("big", small_key, scope=ACME) == small
        assert part_rows(postgres_dsn, "big") == count  # a small blob stays one row
    has_lz4 = sql(postgres_dsn, _pg_schema.HAS_LZ4)[0][0]
    compression = sql(
        postgres_dsn, "SELECT DISTINCT pg_column_compression(data) FROM offprompt_task_parts"
    )
    assert compression == [("lz4" if has_lz4 else None,)]


def test_every_delete_reaches_the_parts(postgres_dsn: str) -> None:
    data = logs(150_000)
    bob = Scope(tenant="acme", user="bob", session="s1")
    with PostgresStore(postgres_dsn) as store:
        keys = {}
        for ns, scope in (("a", ACME), ("b", ACME), ("c", bob), ("d", ACME)):
            keys[ns] = store.task_put_blob(ns, data + ns.encode(), scope=scope)
            store.task_commit(ns, {"ns": ns}, expect=None, blobs=[keys[ns]], scope=scope)
        assert all(part_rows(postgres_dsn, ns) > 1 for ns in "abcd")
        assert store.task_delete("a", scope=ACME) is not None
        assert part_rows(postgres_dsn, "a") == 0
        assert store.task_delete_blob("b", keys["b"], scope=ACME) == 1
        assert part_rows(postgres_dsn, "b") == 0
        assert store.task_forget_scope(Scope(user="bob")) == (1, 1)
        assert part_rows(postgres_dsn, "c") == 0
        assert part_rows(postgres_dsn, "d") > 1  # untouched
        assert store.task_get_blob("d", keys["d"], scope=ACME) == data + b"d"
        store.forget_scope(Scope(tenant="acme"))  # the conversation store's forget too
        assert part_rows(postgres_dsn) == 0


def test_a_delete_racing_a_writer_leaves_its_parts_so_its_store_lands_whole(
    postgres_dsn: str,
) -> None:
    """A namespace deleted while a writer stores its parts (issue 41): a delete takes
    whole blobs only, so the writer's parts stay, its blob row is written, and the store
    it finishes commits and reads back whole (before, the delete took the parts and the
    racing store failed)."""
    data = logs(100_000)
    part = _tasks.task_part("ns", ACME)
    with PostgresStore(postgres_dsn) as store:
        # private-ok: the store's part operations, driven one step at a time
        store._task(_tasks.op_put_part(part, "ns", "u1", 0, data[:1000]), "test")
        # private-ok: the store's part operations, driven one step at a time
        store._task(_tasks.op_put_part(part, "ns", "u1", 1, data[1000:2000]), "test")
        store.task_delete("ns", scope=ACME)
        assert part_rows(postgres_dsn, "ns") == 2  # the writer's, in flight
        key = _tasks.content_key(data[:2000])
        seal = _tasks.op_seal_parts(part, "ns", key, upload="u1", count=2, size=2000)
        # private-ok: the store's part operations, driven one step at a time
        assert store._task(seal, "test", write=True) is True
        assert store.task_commit("ns", {}, expect=None, blobs=[key], scope=ACME) == 1
        assert store.task_get_blob("ns", key, scope=ACME) == data[:2000]


def test_a_blob_row_is_refused_when_its_parts_went_meanwhile(postgres_dsn: str) -> None:
    """Parts gone before the blob row is written (collected as abandoned, or deleted by
    hand): the blob row is not written (a clear error), so the metadata commit that would
    name the blob fails too."""
    data = logs(100_000)
    part = _tasks.task_part("ns", ACME)
    with PostgresStore(postgres_dsn) as store:
        # private-ok: the store's part operations, driven one step at a time
        store._task(_tasks.op_put_part(part, "ns", "u1", 0, data[:1000]), "test")
        # private-ok: the store's part operations, driven one step at a time
        store._task(_tasks.op_put_part(part, "ns", "u1", 1, data[1000:2000]), "test")
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM offprompt_task_parts WHERE namespace = 'ns'")
        key = _tasks.content_key(data[:2000])
        seal = _tasks.op_seal_parts(part, "ns", key, upload="u1", count=2, size=2000)
        with pytest.raises(NotFoundError, match=r"2 of the 2 parts of blob .* are gone"):
            # private-ok: the store's part operations, driven one step at a time
            store._task(seal, "test", write=True)
        assert store.task_blob_keys("ns", scope=ACME) == []
        with pytest.raises(NotFoundError, match="task blobs not stored"):
            store.task_commit("ns", {}, expect=None, blobs=[key], scope=ACME)


WRITER = """
import sys
from offprompt.scope import Scope
from offprompt.stores import PostgresStore
data = b"".join(b"line %09d of a long log status=404\\n" % i for i in range(4_000_000))
store = PostgresStore(sys.argv[1])
print("ready", flush=True)
key = store.task_put_blob("killed", data, scope=Scope(tenant="acme"))
store.task_commit("killed", {}, expect=None, blobs=[key], scope=Scope(tenant="acme"))
print("committed", flush=True)
"""


@pytest.mark.timeout(300)
def test_a_writer_killed_mid_store_leaves_nothing_visible_and_its_parts_are_collected(
    postgres_dsn: str,
) -> None:
    with PostgresStore(postgres_dsn) as store:
        kept = logs(100_000)
        kept_key = store.task_put_blob("kept", kept, scope=ACME)
        store.task_commit("kept", {}, expect=None, blobs=[kept_key], scope=ACME)
        kept_parts = part_rows(postgres_dsn, "kept")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_dsn], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 120
        while part_rows(postgres_dsn, "killed") == 0:  # some parts stored, not all
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert store.task_get("killed", scope=ACME) is None
        assert store.task_blob_keys("killed", scope=ACME) == []
        left = part_rows(postgres_dsn, "killed")
        assert left > 0 and orphan_parts(postgres_dsn) == left
        # A commit collects parts only once they are older than the grace period ...
        fresh = PostgresStore(postgres_dsn)
        fresh.task_commit("other", {}, expect=None, scope=ACME)
        assert part_rows(postgres_dsn, "killed") == left
        fresh.close()
        # ... and then (grace 0 here) every abandoned one, nothing that is committed.
        later = PostgresStore(postgres_dsn)
        later.task_part_grace = 0.0
        later.task_commit("another", {}, expect=None, scope=ACME)
        later.close()
        assert part_rows(postgres_dsn, "killed") == 0 and orphan_parts(postgres_dsn) == 0
        assert part_rows(postgres_dsn, "kept") == kept_parts
        assert store.task_get_blob("kept", kept_key, scope=ACME) == kept


def test_a_failed_store_drops_its_own_parts(postgres_dsn: str) -> None:
    """A part refused by the server (a constraint added here refuses every part past the
    second) fails the store with a StorageError and leaves no parts behind."""
    with PostgresStore(postgres_dsn) as store:
        sql(
            postgres_dsn,
            "ALTER TABLE offprompt_task_parts ADD CONSTRAINT few_parts CHECK (part < 2)",
        )
        with pytest.raises(StorageError, match="few_parts"):
            store.task_put_blob("ns", logs(200_000), scope=ACME)
        assert part_rows(postgres_dsn) == 0
        assert store.task_blob_keys("ns", scope=ACME) == []


def _schema_5(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        for step in range(1, 6):
            for statement in _pg_schema.MIGRATIONS[step]:
                conn.execute(statement)
            conn.execute("INSERT INTO offprompt_schema_version (version) VALUES (%s)", (step,))


def test_a_schema_5_database_opens_and_keeps_every_task_output(
    postgres_cluster: Cluster, postgres_dsn: str
) -> None:
    """The outputs are made by TaskMemory (in a schema-6 database), then written into a
    schema-5 database row for row as schema 5 stored them (every blob one row, through
    the blob statement schema 5 used), then opened by this code."""
    big = logs(200_000).decode()  # ~12 MB: parts today, one row under schema 5
    small = "2026-03-14 ERROR db pool exhausted NEEDLE\n" * 50
    source = postgres_cluster.create_schema()
    with PostgresStore(source) as store, TaskMemory(store=store) as memory:
        memory.process_output("tool", "big", TextArtifact(big, name="big"))
        memory.process_output("tool", "small", TextArtifact(small, name="small"))
        names = memory.namespaces()
        assert sorted(names) == ["big", "small"]
        records = sql(source, "SELECT * FROM offprompt_tasks")
        blobs = []
        for t, u, a, r, s, ns, key in sql(
            source,
            "SELECT tenant, user_id, agent, run, session_id, namespace, key"
            " FROM offprompt_task_blobs",
        ):
            scope = Scope(
                tenant=t, user=u or None, agent=a or None, run=r or None, session=s or None
            )
            blobs.append(((t, u, a, r, s), ns, key, store.task_get_blob(ns, key, scope=scope)))
    assert any(len(data) > _tasks.PART_BYTES for _, _, _, data in blobs)
    _schema_5(postgres_dsn)
    columns = ", ".join(
        r[0]
        for r in sql(
            source,
            "SELECT column_name FROM information_schema.columns WHERE table_name ="
            " 'offprompt_tasks' AND table_schema = current_schema() ORDER BY ordinal_position",
        )
    )
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for row in records:
            conn.execute(
                f"INSERT INTO offprompt_tasks ({columns}) VALUES ({', '.join(['%s'] * len(row))})",
                row,
            )
        for row_key, ns, key, data in blobs:
            schema_5_put = _tasks.op_put_blob(row_key, ns, key, data)
            stmt = next(schema_5_put)
            conn.execute(stmt.sql.replace("?", "%s"), stmt.params)
    assert sql(postgres_dsn, "SELECT max(version) FROM offprompt_schema_version") == [(5,)]
    with PostgresStore(postgres_dsn) as store, TaskMemory(store=store) as memory:
        assert store.schema_version == 6
        assert sorted(memory.namespaces()) == ["big", "small"]
        assert memory.load_artifacts("big").value[0].value == big
        assert memory.grep("small", "NEEDLE").total_matches == 50
        assert memory.grep("big", " 404 in ").total_matches == big.count(" 404 in ")
        memory.process_output("tool", "new", TextArtifact(big + "more\n", name="new"))
        assert memory.load_artifacts("new").value[0].value == big + "more\n"
    assert part_rows(postgres_dsn, "big") == 0  # schema-5 rows stay as they were
    assert part_rows(postgres_dsn, "new") > 1
    with PostgresStore(postgres_dsn) as again, TaskMemory(store=again) as memory:
        assert sorted(memory.namespaces()) == ["big", "new", "small"]


def test_retention_prune_and_forget_of_task_memory_reach_every_part(postgres_dsn: str) -> None:
    from offprompt.forget import forget
    from offprompt.retention import RetentionPolicy

    big = logs(150_000).decode()  # ~9 MB: 3 parts
    with PostgresStore(postgres_dsn) as store, TaskMemory(store=store) as memory:
        for ns in ("old", "kept"):
            memory.store_artifact(ns, TextArtifact(big + ns))
        assert part_rows(postgres_dsn, "old") > 1 and part_rows(postgres_dsn, "kept") > 1
        report = memory.prune(RetentionPolicy(max_count=1), keep="kept")
        assert report.namespaces == 1
        assert part_rows(postgres_dsn, "old") == 0 and part_rows(postgres_dsn, "kept") > 1
        assert memory.load_artifacts("kept").value[0].value == big + "kept"
        forget(Scope(tenant="default"), task_memory=memory)
        assert memory.namespaces() == []
    assert part_rows(postgres_dsn) == 0
    assert sql(postgres_dsn, "SELECT count(*) FROM offprompt_task_blobs") == [(0,)]


def test_the_first_task_call_keeps_parallel_connections_only_in_the_stores_own_pool(
    postgres_dsn: str,
) -> None:
    from psycopg_pool import ConnectionPool

    from offprompt.stores import _pg_tasks

    with PostgresStore(postgres_dsn) as store:
        store.count("s", scope=ACME)  # conversations alone keep one connection
        # private-ok: the store's own pool, to break a connection under it
        assert store._sync_pool().min_size == 1
        store.task_list(scope=ACME)
        # private-ok: the store's own pool, to break a connection under it
        assert store._sync_pool().min_size == _pg_tasks.PARALLEL
        key = store.task_put_blob("ns", logs(150_000), scope=ACME)
        assert len(store.task_get_blob("ns", key, scope=ACME)) > _tasks.PART_BYTES
    pool = ConnectionPool(postgres_dsn, min_size=1, max_size=2, kwargs={"autocommit": True})
    with pool, PostgresStore(postgres_dsn, pool=pool) as store:
        data = logs(150_000)
        key = store.task_put_blob("ns2", data, scope=ACME)
        assert store.task_get_blob("ns2", key, scope=ACME) == data  # 2 at a time
        assert pool.min_size == 1
