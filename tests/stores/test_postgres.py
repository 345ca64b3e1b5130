"""PostgresStore on a real PostgreSQL server (the throwaway cluster): what the contract
suite does not cover: migrations, idempotent retries, racing writers, errors, forget's
residue, and async calls that never touch a thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from postgres_testing import PASSWORD, Cluster
from psycopg_pool import ConnectionPool

from offprompt.errors import NotAStoreError, StorageError, ValidationError
from offprompt.forget import forget
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import PostgresStore, _pg_pool, _pg_schema, _tasks
from offprompt.stores.postgres import SCHEMA_VERSION


def msgs(*texts: str) -> list[Message]:
    return [Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(texts)]


def sql(dsn: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def store(postgres_dsn: str) -> Any:
    made = PostgresStore(postgres_dsn)
    yield made
    made.close()


# Version 1 of the schema, as offprompt 0.x created it: no idempotency keys.
VERSION_1 = """
CREATE TABLE offprompt_schema_version (version integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE offprompt_sessions (tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT '', session_id text NOT NULL,
  next_seq bigint NOT NULL, epoch bigint NOT NULL, message_count bigint NOT NULL,
  last_activity double precision, PRIMARY KEY (tenant, user_id, agent, run, session_id));
CREATE TABLE offprompt_messages (tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT '', session_id text NOT NULL,
  seq bigint NOT NULL, role text NOT NULL, tokens bigint NOT NULL,
  appended_at double precision NOT NULL, body text NOT NULL,
  PRIMARY KEY (tenant, user_id, agent, run, session_id, seq) INCLUDE (tokens, role, appended_at));
CREATE TABLE offprompt_state (tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT '', session_id text NOT NULL,
  key text NOT NULL, value text NOT NULL, PRIMARY KEY (tenant, user_id, agent, run, session_id, key));
CREATE TABLE offprompt_blobs (tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT '', key text NOT NULL,
  data bytea NOT NULL, PRIMARY KEY (tenant, user_id, agent, run, key));
CREATE TABLE offprompt_blob_refs (tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT '', session_id text NOT NULL,
  seq bigint NOT NULL, key text NOT NULL,
  PRIMARY KEY (tenant, user_id, agent, run, session_id, seq, key));
INSERT INTO offprompt_schema_version (version) VALUES (1);
"""


def test_migrates_a_version_1_schema_forward(postgres_dsn: str) -> None:
    sql(postgres_dsn, VERSION_1)
    old = [Message.user("from version 1"), Message.assistant("still here")]
    for seq, message in enumerate(old):
        sql(
            postgres_dsn,
            "INSERT INTO offprompt_messages (tenant, session_id, seq, role, tokens, appended_at,"
            " body) VALUES ('acme', 's', %s, %s, 3, 1.0, %s)",
            (seq, message.role, message.model_dump_json()),
        )
    sql(
        postgres_dsn,
        "INSERT INTO offprompt_sessions (tenant, session_id, next_seq, epoch, message_count)"
        " VALUES ('acme', 's', 2, 0, 2)",
    )
    acme = Scope(tenant="acme")
    with PostgresStore(postgres_dsn) as store:
        assert store.schema_version == SCHEMA_VERSION == 6  # v6: task bytes in part rows
        assert [r.message for r in store.read("s", scope=acme)] == old
        assert store.append("s", msgs("new"), [1], scope=acme, idempotency_key="k") == [2]
        assert store.append("s", msgs("new"), [1], scope=acme, idempotency_key="k") == [2]
        assert store.count("s", scope=acme) == 3
    rows = sql(postgres_dsn, "SELECT version FROM offprompt_schema_version ORDER BY version")
    assert rows == [(1,), (2,), (3,), (4,), (5,), (6,)]
    assert sql(postgres_dsn, "SELECT seq, batch FROM offprompt_messages ORDER BY seq") == [
        (0, None),
        (1, None),
        (2, "k"),
    ]
    with PostgresStore(postgres_dsn) as again:  # opening a current schema changes nothing
        assert again.schema_version == 6
    assert len(sql(postgres_dsn, "SELECT * FROM offprompt_schema_version")) == 6


def test_a_version_4_schema_keeps_its_task_bytes_and_stores_new_ones_without_pglz(
    postgres_dsn: str,
) -> None:
    """v5: a stored output's bytes skip pglz (half the time of storing 50 MB); v6: lz4
    where the server has it, else uncompressed; bytes stored under v4 (pglz) stay
    readable as they are."""
    with psycopg.connect(postgres_dsn, autocommit=True) as conn, conn.transaction():
        for step in range(1, 5):
            for statement in _pg_schema.MIGRATIONS[step]:
                conn.execute(statement)
            conn.execute("INSERT INTO offprompt_schema_version (version) VALUES (%s)", (step,))
    old = b"2026-03-14 INFO api GET /items 200\n" * 20_000  # compressible, TOASTed
    acme = Scope(tenant="acme")
    key = _tasks.content_key(old)
    sql(
        postgres_dsn,
        "INSERT INTO offprompt_task_blobs (tenant, namespace, key, data) VALUES ('acme', 'ns', %s, %s)",
        (key, old),
    )
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'offprompt_task_blobs'::regclass AND attname = 'data'"
    assert sql(postgres_dsn, storage) == [("x",)]  # as v4 left it
    has_lz4 = sql(postgres_dsn, _pg_schema.HAS_LZ4)[0][0]
    with PostgresStore(postgres_dsn) as store:
        assert store.schema_version == 6
        assert store.task_get_blob("ns", key, scope=acme) == old
        new = old.replace(b"200", b"404")
        new_key = store.task_put_blob("ns", new, scope=acme)
        assert store.task_get_blob("ns", new_key, scope=acme) == new
    assert sql(postgres_dsn, storage) == [("x",) if has_lz4 else ("e",)]
    compression = sql(
        postgres_dsn,
        "SELECT key, pg_column_compression(data) FROM offprompt_task_blobs ORDER BY key = %s",
        (key,),
    )
    assert compression == [(new_key, "lz4" if has_lz4 else None), (key, "pglz")]


def test_processes_opening_a_new_database_at_once_migrate_it_once(postgres_dsn: str) -> None:
    def open_one() -> int:
        with PostgresStore(postgres_dsn) as store:
            return store.schema_version

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: open_one(), range(4))) == [SCHEMA_VERSION] * 4
    assert sql(postgres_dsn, "SELECT count(*) FROM offprompt_schema_version") == [(SCHEMA_VERSION,)]


def test_refuses_a_newer_schema_and_a_foreign_table_untouched(postgres_dsn: str) -> None:
    PostgresStore(postgres_dsn).close()
    sql(postgres_dsn, "INSERT INTO offprompt_schema_version (version) VALUES (99)")
    with pytest.raises(StorageError, match=r"schema version 99.*upgrade offprompt"):
        PostgresStore(postgres_dsn)
    sql(postgres_dsn, "DROP TABLE offprompt_schema_version")
    with pytest.raises(NotAStoreError, match="another application"):
        PostgresStore(postgres_dsn)
    assert sql(postgres_dsn, "SELECT to_regclass('offprompt_messages') IS NOT NULL") == [(True,)]


def test_a_retried_batch_returns_the_first_attempts_seqs_and_inserts_nothing(
    store: PostgresStore, postgres_dsn: str
) -> None:
    assert store.append("s", msgs("q", "a"), [1, 1], idempotency_key="batch-1") == [0, 1]
    # The retry comes from another process's store: the key is in the database.
    with PostgresStore(postgres_dsn) as other:
        assert other.append("s", msgs("q", "a"), [1, 1], idempotency_key="batch-1") == [0, 1]
    assert store.count("s") == 2
    assert store.version("s").next_seq == 2  # the retry's numbers were given back
    assert store.append("s", msgs("next"), [1]) == [2]
    assert store.append("other", msgs("q", "a"), [1, 1], idempotency_key="batch-1") == [0, 1]
    with pytest.raises(ValidationError, match="batch of 2 messages"):
        store.append("s", msgs("only one"), [1], idempotency_key="batch-1")
    assert store.batches("s") == {"batch-1": [0, 1]}
    assert [r.message.text for r in store.read("s")] == ["q", "a", "next"]
    for bad in ["", "x" * 257, "new\nline", 7]:
        with pytest.raises(ValidationError, match="idempotency_key"):
            store.append("s", msgs("x"), [1], idempotency_key=bad)  # type: ignore[arg-type]
    assert store.count("s") == 3


def test_racing_retries_of_one_batch_store_it_once(store: PostgresStore) -> None:
    store.append("s", msgs("before"), [1])
    barrier = threading.Barrier(6)

    def attempt(_: int) -> list[int]:
        barrier.wait()
        return store.append("s", msgs("q", "a", "q2"), [1, 1, 1], idempotency_key="once")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        results = list(pool.map(attempt, range(6)))
    assert results == [[1, 2, 3]] * 6
    assert [r.seq for r in store.read("s")] == [0, 1, 2, 3]


async def test_async_retry_and_concurrent_writers_keep_seqs_contiguous(
    store: PostgresStore,
) -> None:
    async def writer(name: str) -> None:
        for i in range(10):
            key = f"{name}-{i}"
            first = await store.aappend(
                "shared", msgs(f"{key}-q", f"{key}-a"), [1, 1], idempotency_key=key
            )
            again = await store.aappend(
                "shared", msgs(f"{key}-q", f"{key}-a"), [1, 1], idempotency_key=key
            )
            assert again == first

    await asyncio.gather(*(writer(f"w{n}") for n in range(4)))
    rows = await store.aread("shared")
    assert [r.seq for r in rows] == list(range(80))
    texts = [r.message.text for r in rows]
    for q, a in zip(texts[::2], texts[1::2], strict=True):
        assert q.endswith("-q") and a == q[:-2] + "-a"
    batches = store.batches("shared")
    assert len(batches) == 40 and sorted(s for seqs in batches.values() for s in seqs) == list(
        range(80)
    )
    await store.aclose()


class _RefusingExecutor(concurrent.futures.ThreadPoolExecutor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the async path ran {fn!r} in a thread")


async def test_async_methods_never_use_a_thread(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_RefusingExecutor())
    started: list[threading.Thread] = []
    real_start = threading.Thread.start
    threading.Thread.start = lambda self: started.append(self)  # type: ignore[method-assign]
    try:
        assert await store.aappend("s", msgs("a", "b"), [1, 2], idempotency_key="k") == [0, 1]
        assert [r.message.text for r in await store.aread("s")] == ["a", "b"]
        assert [e.tokens for e in await store.aread_index("s")] == [1, 2]
        assert (await store.acount("s"), (await store.aversion("s")).next_seq) == (2, 2)
        await store.aset_state("s", "k", {"v": 1})
        assert await store.aget_state("s", "k") == {"v": 1}
        assert await store.astate_keys("s") == ["k"]
        await store.adelete_state("s", "k")
        assert [i.session_id for i in await store.asessions()] == ["s"]
        assert await store.adelete_before("s", 1) == 1
        assert await store.adelete_range("s", 0, 5) == 1
        assert await store.adelete_session("s") == 0
        counts = await store.aforget_scope(Scope(session="s"))
        assert counts.residue
        await store.aclose()
    finally:
        threading.Thread.start = real_start  # type: ignore[method-assign]
    assert started == []


def test_several_stores_share_one_session_without_gaps(postgres_dsn: str) -> None:
    stores = [PostgresStore(postgres_dsn) for _ in range(3)]

    def writer(n: int) -> None:
        for i in range(15):
            stores[n].append("shared", msgs(f"{n}-{i}-q", f"{n}-{i}-a"), [1, 1])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = stores[0].read("shared")
    assert [r.seq for r in rows] == list(range(90))
    assert len({r.message.text for r in rows}) == 90
    for s in stores:
        s.close()


def test_a_pool_passed_in_is_used_and_left_open(postgres_dsn: str) -> None:
    with ConnectionPool(postgres_dsn, min_size=1, max_size=2, open=True) as pool:
        store = PostgresStore(pool=pool)
        assert store.append("s", msgs("via the pool"), [1]) == [0]
        assert pool.get_stats()["requests_num"] >= 1
        store.close()
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT count(*) FROM offprompt_messages").fetchone() == (1,)


def test_a_refused_connection_names_the_host_never_the_password(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        PostgresStore(f"host={tmp_path} port=5999 user=u password=hunter2-secret dbname=d")
    assert str(tmp_path) in str(caught.value) and "5999" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_wrong_password_names_the_host_never_the_password(
    postgres_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = postgres_cluster.tcp_dsn()
    with PostgresStore(good) as store:  # over TCP to 127.0.0.1 with the right password
        assert store.count("s") == 0
    wrong = good.replace(PASSWORD, "not-the-Pa55word")
    with pytest.raises(StorageError, match=r"127\.0\.0\.1") as caught:
        PostgresStore(wrong)
    assert "not-the-Pa55word" not in str(caught.value)
    assert "password authentication failed" in str(caught.value)


@pytest.mark.parametrize(
    "dsn",
    ["host=x port", "postgresql://u:pw-in-url@[bad", "password='sekrit port=5", 42],
)
def test_a_bad_dsn_is_a_clear_error_without_the_password(dsn: Any) -> None:
    with pytest.raises(ValidationError, match=r"connection string|dsn must be") as caught:
        PostgresStore(dsn)
    assert "pw-in-url" not in str(caught.value) and "sekrit" not in str(caught.value)


def test_a_server_gone_and_back_is_a_storage_error_then_works_again(
    postgres_cluster: Cluster, postgres_dsn: str
) -> None:
    store = PostgresStore(postgres_dsn, timeout=2)
    store.append("s", msgs("before"), [1])
    postgres_cluster.stop()
    try:
        with pytest.raises(StorageError, match=str(postgres_cluster.port)) as caught:
            store.append("s", msgs("while down"), [1])
        assert "server down" in str(caught.value) or "connect" in str(caught.value)
    finally:
        postgres_cluster.start()
    assert store.append("s", msgs("after"), [1]) == [1]
    assert [r.message.text for r in store.read("s")] == ["before", "after"]
    store.close()


def _kill_backends(dsn: str, application_name: str) -> None:
    """Terminate the server processes of connections made with ``application_name``."""
    killed = sql(
        dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (application_name,),
    )
    assert killed and all(ok for (ok,) in killed)


@pytest.fixture
def marked(postgres_dsn: str) -> Any:
    """A store whose connections the test can find on the server (and kill)."""
    made = PostgresStore(f"{postgres_dsn} application_name=offprompt-kill-me")
    yield made
    made.close()


def test_a_connection_killed_under_a_recently_used_pool_fails_once_then_is_replaced(
    marked: PostgresStore, postgres_dsn: str
) -> None:
    store = marked
    # A connection used in the last CHECK_AFTER_IDLE_S is handed out unchecked: a
    # backend killed meanwhile fails that one call (a StorageError, nothing stored);
    # the error makes the pool check every connection again, so the next call works.
    store.append("s", msgs("before"), [1])
    _kill_backends(postgres_dsn, "offprompt-kill-me")
    with pytest.raises(StorageError, match="append failed"):
        store.append("s", msgs("lost with the connection"), [1])
    assert store.append("s", msgs("after"), [1]) == [1]
    assert [(r.seq, r.message.text) for r in store.read("s")] == [(0, "before"), (1, "after")]


def test_an_idle_connection_is_checked_before_use(
    marked: PostgresStore, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = marked
    monkeypatch.setattr(_pg_pool, "CHECK_AFTER_IDLE_S", 0.0)
    store.append("s", msgs("before"), [1])
    _kill_backends(postgres_dsn, "offprompt-kill-me")
    assert store.append("s", msgs("after"), [1]) == [1]


async def test_one_statement_appends_keep_seqs_gapless_under_concurrent_writers(
    store: PostgresStore,
) -> None:
    # No key, no images: the append is one autocommit statement (bump + insert).
    async def writer(name: str) -> None:
        for i in range(20):
            await store.aappend("s", msgs(f"{name}{i}a", f"{name}{i}b"), [1, 1])

    await asyncio.gather(*(writer(n) for n in "abc"))
    threads = [
        threading.Thread(target=lambda n=n: [store.append("s", msgs(n), [1]) for _ in range(20)])
        for n in "xy"
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = store.read("s")
    assert [r.seq for r in rows] == list(range(160))
    for name in "abc":
        for i in range(20):
            texts = [r.message.text for r in rows]
            at = texts.index(f"{name}{i}a")
            assert texts[at + 1] == f"{name}{i}b"  # each batch whole and contiguous
    assert store.count("s") == 160


def test_a_window_and_an_append_are_one_statement_each(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One pooled connection: a pool of several may still be opening one in the
    # background, and that one is checked (an extra statement) when first handed out.
    store = PostgresStore(postgres_dsn, max_size=1)
    executed: list[str] = []
    real = psycopg.Cursor.execute

    def counting(self: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        executed.append(str(query))
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counting)
    # A loaded machine may leave a connection idle past the 2 s check window between two
    # calls here; count only the window's and the append's own statements.
    monkeypatch.setattr(_pg_pool, "CHECK_AFTER_IDLE_S", 3600.0)
    store.version("s")
    # a new connection: the pool checked it (psycopg-pool 3.2.2 on: an empty query;
    # 3.2.0 and 3.2.1: SELECT 1)
    assert executed[0] in ("", "SELECT 1")
    executed.clear()
    assert store.append("s", [Message.system("sys"), *msgs(*"abcdef")], [1] * 7) == list(range(7))
    assert len(executed) == 1 and executed[0].startswith("WITH bump AS")
    executed.clear()
    got = store.read_ranges("s", [(0, 1), (5, 7)])
    assert [r.message.text for r in got] == ["sys", "e", "f"]
    assert len(executed) == 1
    store.close()


def test_closed_store_raises_storage_error(store: PostgresStore) -> None:
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.count("s")


def _relation_bytes(cluster: Cluster, dsn: str, table: str) -> bytes:
    """The bytes of ``table``'s files (heap, TOAST, indexes) as the server wrote them."""
    sql(dsn, "CHECKPOINT")
    paths = sql(
        dsn,
        "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = %s::regclass"
        " OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = %s::regclass)"
        " OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
        (table, table, table),
    )
    out = b""
    for (rel,) in paths:
        if rel:
            for file in cluster.data.glob(rel + "*"):
                out += file.read_bytes()
    return out


def test_forget_deletes_vacuums_and_names_what_it_cannot_reach(
    store: PostgresStore, postgres_dsn: str, postgres_cluster: Cluster
) -> None:
    u1, u2 = Scope(tenant="acme", user="u1"), Scope(tenant="acme", user="u2")
    secret = "SECRET-7f3a9c-of-u1"
    store.append("s1", msgs(secret, "reply"), [1, 1], scope=u1, idempotency_key="b1")
    store.set_state("s1", "summary", {"text": secret}, scope=u1)
    store.append("s2", msgs("u2 keeps this"), [1], scope=u2)  # a live row after u1's
    report = forget(Scope(user="u1"), stores=[store])
    assert report.total == 3 and report.complete
    (result,) = report.results
    assert any("WAL" in line for line in result.residue)
    assert any("replicas" in line and "backups" in line for line in result.residue)
    assert not report.purged
    assert store.read("s1", scope=u1) == [] and store.sessions(scope=Scope(user="u1")) == []
    assert store.batches("s1", scope=u1) == {}
    assert sql(postgres_dsn, "SELECT count(*) FROM offprompt_sessions WHERE user_id = 'u1'") == [
        (0,)
    ]
    # What the residue says is true: the WAL still holds the text ...
    wal = b"".join(p.read_bytes() for p in (postgres_cluster.data / "pg_wal").glob("0*"))
    assert secret.encode() in wal
    # ... and purge() rewrites the tables, so it leaves their files.
    remaining = store.purge()
    assert any("WAL" in line for line in remaining)
    for table in ("offprompt_messages", "offprompt_state"):
        assert secret.encode() not in _relation_bytes(postgres_cluster, postgres_dsn, table)
    assert [r.message.text for r in store.read("s2", scope=u2)] == ["u2 keeps this"]


def test_forget_reaches_a_subjects_messages_in_every_tenant_through_the_counter_rows(
    store: PostgresStore, postgres_dsn: str
) -> None:
    """The messages table has no user_id index (schema 3): a forget finds the messages
    through the sessions' counter rows, in every tenant and session of the subject."""
    for tenant in ("a", "b"):
        for session in ("s", "t"):
            store.append(
                session,
                msgs(f"{tenant}{session}", "x"),
                [1, 1],
                scope=Scope(tenant=tenant, user="u"),
            )
            store.append(session, msgs("other's"), [1], scope=Scope(tenant=tenant, user="v"))
    store.append("emptied", msgs("gone"), [1], scope=Scope(tenant="a", user="u"))
    store.delete_session("emptied", scope=Scope(tenant="a", user="u"))  # counter row stays
    counts = store.forget_scope(Scope(user="u"))
    assert (counts.messages, counts.sessions) == (8, 4)  # the emptied session held nothing
    assert sql(postgres_dsn, "SELECT count(*) FROM offprompt_messages WHERE user_id = 'u'") == [
        (0,)
    ]
    assert sql(postgres_dsn, "SELECT count(*) FROM offprompt_sessions WHERE user_id = 'u'") == [
        (0,)
    ]
    for tenant in ("a", "b"):
        for session in ("s", "t"):
            kept = store.read(session, scope=Scope(tenant=tenant, user="v"))
            assert [r.message.text for r in kept] == ["other's"]


def test_blobs_are_stored_once_and_deleted_with_their_last_reference(
    store: PostgresStore,
) -> None:
    from PIL import Image

    from offprompt.artifacts import ImageArtifact

    image = ImageArtifact.from_pil(Image.new("RGB", (4, 4), (1, 2, 3)))
    shot = Message.user([image])
    store.append("s", [shot, shot], [1, 1])
    store.append("t", [shot], [1])
    assert store.blob_count() == 1
    assert [r.message for r in store.read("s")] == [shot, shot]
    store.delete_session("s")
    assert store.blob_count() == 1  # t still uses it
    assert store.delete_before("t", 1) == 1
    assert store.blob_count() == 0


def test_scopes_are_sql_partitions(store: PostgresStore, postgres_dsn: str) -> None:
    a, b = Scope(tenant="a", user="u"), Scope(tenant="b", user="u")
    store.append("s", msgs("in a"), [1], scope=a)
    store.append("s", msgs("in b"), [1], scope=b)
    assert [r.message.text for r in store.read("s", scope=a)] == ["in a"]
    assert store.read("s") == []  # the unscoped partition is another one
    rows = sql(postgres_dsn, "SELECT tenant, user_id, seq FROM offprompt_messages ORDER BY 1")
    assert rows == [("a", "u", 0), ("b", "u", 0)]
    indexes = {
        r[0]
        for r in sql(
            postgres_dsn, "SELECT indexname FROM pg_indexes WHERE tablename LIKE 'offprompt_%%'"
        )
    }
    assert {"offprompt_state_user", "offprompt_sessions_user"} <= indexes
    # messages are reached through their counter row: one index per message row
    assert {i for i in indexes if i.startswith("offprompt_messages")} == {"offprompt_messages_pkey"}


def test_connections_ask_the_server_to_end_abandoned_transactions(store: PostgresStore) -> None:
    # private-ok: the store's own pool, to break a connection under it
    with store._sync_pool().connection() as conn:
        timeout = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
        keepalives = conn.info.get_parameters().get("keepalives")
    assert timeout == ("1min",)
    assert keepalives == "1"


#: A deferred constraint trigger runs at COMMIT; this one ends its own backend there, so
#: the client's connection breaks while the server commits (the reply a cut link loses).
_CUT_AT_COMMIT = """
CREATE FUNCTION offprompt_test_cut_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER offprompt_test_cut_at_commit AFTER INSERT OR UPDATE ON {table}
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION offprompt_test_cut_at_commit();
"""


def test_a_link_lost_during_commit_says_the_outcome_is_unknown(postgres_dsn: str) -> None:
    """A commit whose connection breaks during COMMIT cannot know whether the server
    applied it: the error says so (and to read back), unlike a failure before COMMIT."""
    with PostgresStore(postgres_dsn) as store:
        store.task_commit("first", {"n": 1}, expect=None)
        sql(postgres_dsn, _CUT_AT_COMMIT.format(table="offprompt_tasks"))
        with pytest.raises(StorageError, match="committing a task output failed") as caught:
            store.task_commit("second", {"n": 2}, expect=None)
        assert "outcome is unknown" in str(caught.value)
        assert "read it back" in str(caught.value)
        sql(postgres_dsn, "DROP TRIGGER offprompt_test_cut_at_commit ON offprompt_tasks")
        # The pool recovers; what was committed before is whole, the cut one absent or whole.
        assert store.task_get("first").meta == {"n": 1}  # type: ignore[union-attr]
        second = store.task_get("second")
        assert second is None or second.meta == {"n": 2}
        # A failure before COMMIT (the server refuses a row) is not called unknown.
        sql(
            postgres_dsn,
            "ALTER TABLE offprompt_tasks ADD CONSTRAINT no_third CHECK (namespace <> 'third')",
        )
        with pytest.raises(StorageError, match="no_third") as refused:
            store.task_commit("third", {"n": 3}, expect=None)
        assert "unknown" not in str(refused.value)


async def test_an_async_batch_whose_link_is_lost_during_commit_says_so(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    try:
        await store.aappend("s", msgs("a", "b"), [1, 1])
        sql(postgres_dsn, _CUT_AT_COMMIT.format(table="offprompt_messages"))
        with pytest.raises(StorageError, match="outcome is unknown"):
            # An idempotency key makes the append a transaction (and its retry safe).
            await store.aappend("s", msgs("c", "d"), [1, 1], idempotency_key="cd")
        sql(postgres_dsn, "DROP TRIGGER offprompt_test_cut_at_commit ON offprompt_messages")
        assert [r.message.text for r in await store.aread("s")][:2] == ["a", "b"]
    finally:
        await store.aclose()
