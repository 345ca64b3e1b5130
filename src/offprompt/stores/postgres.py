"""``PostgresStore``: conversations on a PostgreSQL server shared by several machines.

Needs the optional extra ``offprompt[postgres]`` (psycopg 3 and psycopg_pool); this
module is the only one that imports them, and ``offprompt.stores`` loads it lazily.

Sequence numbers. Each session has a counter row in ``offprompt_sessions``. An append
bumps it with ``INSERT ... ON CONFLICT DO UPDATE SET next_seq = next_seq + n RETURNING``
in the same transaction that inserts the messages: the upsert takes the row's lock, so
writers of one session (threads, processes, machines) queue on that row and each gets
the next free range, and a transaction that fails or is rolled back gives its numbers
back with everything else. Seqs are therefore contiguous per session, without gaps or
duplicates, and a batch is one transaction: all of it is stored, or none. Writers of
different sessions never wait on each other.

Idempotent retries. ``append(..., idempotency_key="...")`` records the key, with the
batch's first seq and size, in ``offprompt_batches`` in the same transaction (and on
every message row, column ``batch``). A writer that saw an error (the connection cut
mid-commit, the server restarted) cannot know whether its batch committed; it retries
with the same key: if the first attempt committed, the retry inserts nothing and returns
the seqs of that attempt; if not, the retry is the first to commit. The check runs after
the session row is locked, so two attempts racing each other cannot both insert. Keys
are per session and scope; reusing one for a batch of another size is refused.

Schema (version in ``offprompt_schema_version``, one row per applied migration; older
schemas are migrated forward on open, under an advisory lock so that several processes
opening one database at once migrate it once). Every table starts with the scope
partition ``tenant, user_id, agent, run`` (``''`` for unset) and every query filters on
it in SQL. ``user_id`` has its own index on the counter, state and key tables for a
subject's ``forget``; messages are reached from their session's counter row (every
message row has one: it is written in the append that writes the message), so the
messages table carries a single index, its primary key (schema 3 dropped its
``user_id`` index: a second index per message row was a quarter of an append)::

    offprompt_sessions   <partition>, session_id, next_seq, epoch, message_count, last_activity
    offprompt_messages   <partition>, session_id, seq, role, tokens, appended_at, body, batch
    offprompt_state      <partition>, session_id, key, value (JSON text)
    offprompt_blobs      <partition>, key (sha256), data      -- image bytes, stored once
    offprompt_blob_refs  <partition>, session_id, seq, key    -- which message uses which blob
    offprompt_batches    <partition>, session_id, key, first_seq, size  -- idempotency keys
    offprompt_tasks, offprompt_task_blobs, offprompt_task_parts  -- TaskMemory's outputs
                         (see offprompt.stores._tasks and _pg_tasks: large outputs in
                         part rows written and read over several connections at once)

Tables are created in the connection's ``search_path`` (put
``options=-csearch_path=myschema`` in the dsn for a schema of their own).

Forgetting. :meth:`PostgresStore.forget_scope` deletes the rows (the counter rows and
idempotency keys too), then runs ``VACUUM`` on the tables so the dead rows are removed
from the table and index pages. What it cannot reach is stated in
:attr:`~offprompt.stores.base.ForgetCounts.residue`: PostgreSQL does not overwrite the
freed space (``PostgresStore.purge`` rewrites the tables, ``VACUUM FULL``), the WAL
segments not yet recycled still hold the rows, and replicas, WAL archives and backups
are out of the store's reach.

Dead peers. Unless the dsn says otherwise, the store's own connections use TCP
keepalives and a TCP user timeout (a cut link fails a call within about 30 s instead of
hanging), and ask the server to end a session idle in a transaction for 60 s (a writer
cut off mid-transaction frees the session's counter row within a minute).

Round trips. An append without idempotency key or images is ONE autocommit statement
(a data-modifying CTE: the counter upsert, then the insert taking its seqs from the
upsert's ``RETURNING``), so the guarantees above hold without ``BEGIN``/``COMMIT``;
with a key or images it is the transaction described above. ``read_ranges`` (what a
window calls: the pinned system messages and the runs) is one ``UNION ALL`` statement.
The pool checks a connection before handing it out only when it has been idle for
:data:`CHECK_AFTER_IDLE_S` or a connection error happened since it was last used; a
server process that died within that time (killed, or a restart quicker than that)
fails that one call with a ``StorageError`` (nothing of it stored; a writer retries,
with its key where it needs one) and the pool then checks every connection again.

Async. Every ``a*`` method runs on psycopg's async API, through an
``AsyncConnectionPool`` made in the running event loop (one per loop), never in a
thread. Connecting to a host *name* resolves it with the loop's ``getaddrinfo`` (the
default executor); unix sockets and IP addresses need no executor.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from offprompt.errors import StorageError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores._blobrefs import externalize
from offprompt.stores._pg_ops import (
    MAX_IDEMPOTENCY_KEY_LENGTH,
    check_idempotency_key,
    check_state_prefix,
    op_append,
    op_append_one,
    op_batches,
    op_blob_count,
    op_count,
    op_delete_range,
    op_delete_session,
    op_delete_state,
    op_forget_scope,
    op_get_state,
    op_read,
    op_read_index,
    op_schema_version,
    op_sessions,
    op_set_state,
    op_state_keys,
    op_version,
    residue_of,
    single_statement,
    whole_range,
    with_residue,
)
from offprompt.stores._pg_pool import (
    CHECK_AFTER_IDLE_S,
    PgConnections,
    close_in_loop,
    redact_dsn,
    skipped_tables,
)
from offprompt.stores._pg_schema import SCHEMA_VERSION, migrate, vacuum_sql
from offprompt.stores._pg_tasks import PgTasks
from offprompt.stores.base import (
    BaseTaskStore,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    check_append,
    check_range,
    check_scope_session,
    check_selector,
    check_state,
    encode_state,
    merge_ranges,
)

__all__ = [
    "CHECK_AFTER_IDLE_S",
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "SCHEMA_VERSION",
    "PostgresStore",
    "redact_dsn",
]


class PostgresStore(PgTasks, PgConnections, BaseTaskStore):
    """A :class:`~offprompt.stores.ConversationStore` on a PostgreSQL server.

    Several processes on several machines can append to one session at once: seqs stay
    contiguous without gaps or duplicates, and each batch is stored whole or not at all
    (see the module docstring for the scheme). Pass ``idempotency_key`` to
    :meth:`append` to make a retry after an error safe.

    Args:
        dsn: A libpq connection string (``postgresql://user@host:5432/db`` or
            ``host=... dbname=...``). ``None`` with no pool: libpq's defaults and the
            ``PG*`` environment variables.
        pool: A ``psycopg_pool.ConnectionPool`` to use for the sync methods (yours:
            :meth:`close` leaves it open). Without one the store makes its own.
        async_pool: An ``AsyncConnectionPool`` for the ``a*`` methods (yours, left open;
            it belongs to the event loop that opened it). Without one the store makes
            one per event loop, on first use, in that loop.
        max_size: Connections per pool the store makes (sync, and each loop's).
        timeout: Seconds a call waits for a pooled connection (a restarting server)
            before it fails with :class:`~offprompt.errors.StorageError`.
        connect_timeout: Seconds to wait for the server to answer a new connection.

    Raises:
        ValidationError: ``dsn`` is not a connection string.
        StorageError: The server cannot be reached (the message names the host, never
            the password), or its schema is newer than this offprompt understands.
        NotAStoreError: The database has offprompt's table names in another layout.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        async_pool: AsyncConnectionPool[Any] | None = None,
        max_size: int = 10,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self._connect(
            dsn,
            pool,
            async_pool,
            max_size=max_size,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )
        self._migrate()

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    # -- schema ----------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._admin("opening the store") as conn:
            migrate(conn, self.where)

    @property
    def schema_version(self) -> int:
        """The schema version of the database."""
        rows = self._do(op_schema_version(), action="reading the schema version")
        return rows

    # -- messages --------------------------------------------------------------------
    def append(
        self,
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        *,
        scope: Scope | None = None,
        idempotency_key: str | None = None,
    ) -> list[int]:
        """Append messages with their token counts in one transaction; return their seqs.

        Args:
            idempotency_key: Names this batch within the session: a retry with the same
                key (after an error, when the first attempt may have committed) inserts
                nothing if that attempt committed and returns its seqs.

        Raises:
            ValidationError: Bad input, or ``idempotency_key`` already names a batch of
                another size in this session.
        """
        prepared = self._prepare_append(session_id, messages, tokens, scope, idempotency_key)
        if prepared is None:
            return []
        if single_statement(prepared):
            return self._do(op_append_one(*prepared[:5]), action="append")
        return self._do(op_append(*prepared[:5], key=prepared[5]), action="append", write=True)

    async def aappend(
        self,
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        *,
        scope: Scope | None = None,
        idempotency_key: str | None = None,
    ) -> list[int]:
        """Async twin of :meth:`append` (psycopg's async API)."""
        prepared = self._prepare_append(session_id, messages, tokens, scope, idempotency_key)
        if prepared is None:
            return []
        if single_statement(prepared):
            return await self._ado(op_append_one(*prepared[:5]), action="append")
        return await self._ado(
            op_append(*prepared[:5], key=prepared[5]), action="append", write=True
        )

    @staticmethod
    def _prepare_append(
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        scope: Scope | None,
        idempotency_key: str | None,
    ) -> (
        tuple[
            tuple[str, str, str, str],
            str,
            list[Message],
            list[int],
            list[tuple[str, dict[str, bytes]]],
            str | None,
        ]
        | None
    ):
        part = check_scope_session(session_id, scope)
        items, counts = check_append(session_id, messages, tokens)
        key = check_idempotency_key(idempotency_key)
        if not items:
            return None
        return part, session_id, items, counts, [externalize(m) for m in items], key

    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        # append() itself is overridden: its signature adds idempotency_key, and its
        # async twin runs on psycopg's async API; both check through _prepare_append.
        return self.append(session_id, messages, tokens, scope=scope)

    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        part = check_scope_session(session_id, scope)
        return self._do(op_read(part, session_id, whole_range(start, end)), action="read")

    def read_ranges(
        self,
        session_id: str,
        ranges: Sequence[tuple[int, int]],
        *,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        """Messages whose seq lies in any ``(start, end)`` range, by seq: one round trip."""
        part = check_scope_session(session_id, scope)
        merged = merge_ranges(ranges)
        return self._do(op_read(part, session_id, merged), action="read")

    async def aread(
        self,
        session_id: str,
        *,
        start: int | None = None,
        end: int | None = None,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        return await self._ado(op_read(part, session_id, whole_range(start, end)), action="read")

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        return self._do(op_read_index(part, session_id, start), action="read_index")

    async def aread_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        return await self._ado(op_read_index(part, session_id, start), action="read_index")

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        return self._do(op_version(part, session_id), action="version")

    async def aversion(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        return await self._ado(op_version(part, session_id), action="version")

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return self._do(op_count(part, session_id), action="count")

    async def acount(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return await self._ado(op_count(part, session_id), action="count")

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        return self._do(op_sessions(as_scope(scope)), action="sessions")

    async def asessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        return await self._ado(op_sessions(as_scope(scope)), action="sessions")

    def batches(self, session_id: str, *, scope: Scope | None = None) -> dict[str, list[int]]:
        """The session's idempotency keys and the seqs of the batch each one names."""
        part = check_scope_session(session_id, scope)
        return self._do(op_batches(part, session_id), action="batches")

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return self._do(op_delete_session(part, session_id), action="delete", write=True)

    async def adelete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return await self._ado(op_delete_session(part, session_id), action="delete", write=True)

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        op = op_delete_range(part, session_id, start, end)
        return self._do(op, action="delete", write=True)

    async def adelete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        op = op_delete_range(part, session_id, start, end)
        return await self._ado(op, action="delete", write=True)

    async def adelete_before(self, session_id: str, seq: int, *, scope: Scope | None = None) -> int:
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise ValidationError(f"seq must be an int, got {seq!r}")
        return await self.adelete_range(session_id, None, seq, scope=scope)

    # -- forgetting ------------------------------------------------------------------
    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        """Delete every row ``scope`` selects, then VACUUM; ``residue`` says what remains.

        See :meth:`BaseStore.forget_scope`; the returned counts' ``residue`` names the
        layers PostgreSQL keeps deleted bytes in (free space in pages, the WAL, replicas
        and backups).
        """
        selected = check_selector(scope, all=all)
        counts = self._do(op_forget_scope(selected), action="forget", write=True)
        return with_residue(counts, self._vacuum())

    async def aforget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        selected = check_selector(scope, all=all)
        counts = await self._ado(op_forget_scope(selected), action="forget", write=True)
        return with_residue(counts, await self._avacuum())

    def _vacuum(self, full: bool = False) -> bool:
        skipped: list[str] = []
        with self._admin("VACUUM") as conn:
            handler = skipped_tables(skipped)
            conn.add_notice_handler(handler)
            try:
                conn.execute(vacuum_sql(full))
            finally:
                conn.remove_notice_handler(handler)
        return not skipped

    async def _avacuum(self, full: bool = False) -> bool:
        skipped: list[str] = []
        try:
            pool = await self._async_pool()
            async with pool.connection() as conn:
                previous = conn.autocommit
                await conn.set_autocommit(True)
                handler = skipped_tables(skipped)
                conn.add_notice_handler(handler)
                try:
                    await conn.execute(vacuum_sql(full))
                finally:
                    conn.remove_notice_handler(handler)
                    await conn.set_autocommit(previous)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error("VACUUM", exc) from None
        return not skipped

    def purge(self) -> list[str]:
        """Rewrite the store's tables (``VACUUM FULL``) so freed space leaves their files.

        ``VACUUM FULL`` locks each table exclusively while it copies it: other writers
        and readers of this database wait meanwhile. Returns what still may hold deleted
        bytes (the WAL, replicas, backups).
        """
        if not self._vacuum(full=True):
            raise StorageError(
                f"PostgreSQL at {self.where}: VACUUM FULL did not run on every table "
                "(the store's role must own them)",
                host=self.where,
            )
        return list(residue_of(True)[1:])

    def blob_count(self, *, scope: Scope | None = None) -> int:
        return self._do(op_blob_count(as_scope(scope)), action="blob_count")

    # -- state -----------------------------------------------------------------------
    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        return self._do(op_get_state(part, session_id, key), action="get_state")

    async def aget_state(
        self, session_id: str, key: str, *, scope: Scope | None = None
    ) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        return await self._ado(op_get_state(part, session_id, key), action="get_state")

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = op_set_state(part, session_id, key, encode_state(value))
        self._do(op, action="set_state", write=True)

    async def aset_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = op_set_state(part, session_id, key, encode_state(value))
        await self._ado(op, action="set_state", write=True)

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        self._do(op_delete_state(part, session_id, key), action="delete_state", write=True)

    async def adelete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = op_delete_state(part, session_id, key)
        await self._ado(op, action="delete_state", write=True)

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        check_state_prefix(prefix)
        return self._do(op_state_keys(part, session_id, prefix), action="state_keys")

    async def astate_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        check_state_prefix(prefix)
        return await self._ado(op_state_keys(part, session_id, prefix), action="state_keys")

    # -- closing ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the pools the store made (pools passed in stay open).

        An async pool is closed in its own loop when that loop can still run it; prefer
        :meth:`aclose` from async code.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pool, self._pool = self._pool, None
            pools = list(self._async_pools.items())
            self._async_pools = weakref.WeakKeyDictionary()
        if pool is not None and self._owns_pool:
            pool.close()
        for loop, async_pool in pools:
            close_in_loop(loop, async_pool)

    async def aclose(self) -> None:
        """Close the store: this loop's async pool awaited, the others as :meth:`close`."""
        loop = asyncio.get_running_loop()
        with self._lock:
            mine = self._async_pools.pop(loop, None)
        if mine is not None:
            await mine.close()
        self.close()
