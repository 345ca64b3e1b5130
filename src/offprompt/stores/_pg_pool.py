"""The PostgreSQL store's connections: dsn parsing and redaction, the dead-peer
settings, the sync and the per-loop async pools with their cheap checks, and the two
drivers that run an operation of :mod:`offprompt.stores._pg_ops` on a cursor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from offprompt.errors import StorageError, ValidationError
from offprompt.stores._pg_ops import PgOp, ReplayedBatch, ResultT

#: libpq settings (unless the dsn sets them) that notice a peer gone silent (a cut
#: link) within seconds: TCP keepalives while waiting for an answer, and a user timeout
#: on unacknowledged sends. The server side gets ``idle_in_transaction_session_timeout``
#: (60 s) in ``options``, so a writer cut off mid-transaction releases the session's row
#: lock within a minute instead of the hours the OS's keepalives take.
_DEAD_PEER_DEFAULTS = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}

#: A pooled connection returned within this many seconds is handed out again without
#: the pool's check (a ``SELECT`` round trip, once per call it doubled the cost of a
#: small read). Any connection error since it was returned voids the exemption, so
#: after a cut link or a server restart every pooled connection is checked again.
CHECK_AFTER_IDLE_S = 2.0


class _Checks:
    """The pools' ``check`` callbacks: check a pooled connection only when it may be dead."""

    def __init__(self) -> None:
        self.returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self.failed_at = -1.0

    def fresh(self, conn: Any) -> bool:
        """Returned recently, and no connection error since."""
        at = self.returned.pop(conn, None)
        return at is not None and at > self.failed_at and time.monotonic() - at < CHECK_AFTER_IDLE_S

    def failed(self) -> None:
        self.failed_at = time.monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        if not self.fresh(conn):
            ConnectionPool.check_connection(conn)

    async def acheck(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if not self.fresh(conn):
            await AsyncConnectionPool.check_connection(conn)

    def used(self, conn: Any) -> None:
        """``conn`` answered a call and goes back to the pool."""
        self.returned[conn] = time.monotonic()


_SECRET_IN_URL = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_SECRET_PARAM = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_dsn(text: str) -> str:
    """``text`` with any password of a dsn in it replaced by ``***`` (for messages, logs)."""
    return _SECRET_PARAM.sub(r"\1***", _SECRET_IN_URL.sub(r"\1***@", text))


def _parse_dsn(dsn: str) -> dict[str, Any]:
    if not isinstance(dsn, str):
        raise ValidationError(f"dsn must be a str, got {type(dsn).__name__}")
    try:
        return pg_conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise ValidationError(
            f"not a PostgreSQL connection string: {redact_dsn(dsn)!r} "
            f"({redact_dsn(str(exc).strip())}); give 'postgresql://user@host:port/dbname' "
            "or 'host=... port=... dbname=...'"
        ) from None


def _describe(params: dict[str, Any]) -> str:
    """``host:port/dbname`` of a parsed dsn (libpq's defaults filled in), never the password."""
    host = str(params.get("host") or os.environ.get("PGHOST") or "localhost")
    port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
    dbname = str(params.get("dbname") or os.environ.get("PGDATABASE") or params.get("user") or "")
    return f"{host}:{port}/{dbname}"


def _run_sync(cur: psycopg.Cursor[Any], op: PgOp[ResultT]) -> ResultT:
    try:
        query = next(op)
        while True:
            cur.execute(query.sql, query.params, binary=query.binary)
            query = op.send(cur.fetchall() if query.fetch == "rows" else cur.rowcount)
    except StopIteration as stop:
        result: ResultT = stop.value
        return result


async def _run_async(cur: psycopg.AsyncCursor[Any], op: PgOp[ResultT]) -> ResultT:
    try:
        query = next(op)
        while True:
            await cur.execute(query.sql, query.params, binary=query.binary)
            query = op.send(await cur.fetchall() if query.fetch == "rows" else cur.rowcount)
    except StopIteration as stop:
        result: ResultT = stop.value
        return result


def skipped_tables(into: list[str]) -> Any:
    """A notice handler that collects VACUUM's warnings (a table it had to skip)."""

    def handler(diag: psycopg.errors.Diagnostic) -> None:
        if diag.severity_nonlocalized == "WARNING":
            into.append(str(diag.message_primary))

    return handler


def close_in_loop(loop: asyncio.AbstractEventLoop, pool: AsyncConnectionPool[Any]) -> None:
    """Close ``pool`` from sync code, in the loop it belongs to if that loop can run it."""
    if loop.is_closed():
        return  # its tasks died with the loop; the connections close when collected
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        loop.create_task(pool.close())
    elif loop.is_running():
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(pool.close(), loop).result(timeout=10)
    else:
        loop.run_until_complete(pool.close())


class PgConnections:
    """The store's connections (a mixin of :class:`~offprompt.stores.postgres.PostgresStore`):
    its pools, made on first use (one per event loop for the async API, new ones after a
    fork), errors as :class:`~offprompt.errors.StorageError` naming the host.
    """

    def _connect(
        self,
        dsn: str | None,
        pool: ConnectionPool[Any] | None,
        async_pool: AsyncConnectionPool[Any] | None,
        *,
        max_size: int,
        timeout: float,
        connect_timeout: float,
    ) -> None:
        if dsn is None:
            source = pool if pool is not None else async_pool
            given = source.conninfo if source is not None else ""
        else:
            given = dsn
        self._params = _parse_dsn(given if isinstance(given, str) else str(given))
        if "connect_timeout" not in self._params:
            self._params["connect_timeout"] = max(1, round(connect_timeout))
        for name, value in _DEAD_PEER_DEFAULTS.items():
            self._params.setdefault(name, value)
        options = str(self._params.get("options") or "")
        if "idle_in_transaction_session_timeout" not in options:
            self._params["options"] = (
                f"{options} -c idle_in_transaction_session_timeout=60000".strip()
            )
        self._conninfo = pg_conninfo.make_conninfo(**self._params)
        self._password = str(self._params.get("password") or "")
        self.where = _describe(self._params)
        self._max_size = max_size
        self._timeout = timeout
        self._pool = pool
        self._owns_pool = pool is None
        self._given_async_pool = async_pool
        self._async_pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncConnectionPool[Any]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._checks = _Checks()
        self._pid = os.getpid()
        self._closed = False

    # -- errors ----------------------------------------------------------------------
    def _error(self, action: str, exc: BaseException, *, at_commit: bool = False) -> StorageError:
        """The StorageError for ``exc``; ``at_commit`` when the link broke during COMMIT."""
        detail = str(exc).strip() or type(exc).__name__
        if isinstance(exc, PoolTimeout):
            detail = (
                f"no working connection within {self._timeout:g}s "
                "(is the server down, restarting or unreachable?)"
            )
        if at_commit:
            # The server may have committed and lost only its reply: no client can know.
            detail = (
                "the connection was lost while the server was committing, so the outcome"
                " is unknown: it may have been applied (read it back before doing it"
                f" again): {detail}"
            )
        if self._password:
            detail = detail.replace(self._password, "***")
        return StorageError(
            f"PostgreSQL at {self.where}: {action} failed: {redact_dsn(detail)}", host=self.where
        )

    # -- connections -----------------------------------------------------------------
    def _sync_pool(self) -> ConnectionPool[Any]:
        if self._closed:
            raise StorageError(f"{self!r} is closed", host=self.where)
        with self._lock:
            if os.getpid() != self._pid:  # forked: never share the parent's connections
                self._pid = os.getpid()
                if self._owns_pool:
                    self._pool = None
                self._async_pools = weakref.WeakKeyDictionary()
            if self._pool is None:
                self._pool = ConnectionPool(
                    self._conninfo,
                    min_size=1,
                    max_size=self._max_size,
                    kwargs={"autocommit": True},
                    check=self._checks.check,
                    timeout=self._timeout,
                    name=f"offprompt {self.where}",
                    open=True,
                )
            return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        if self._closed:
            raise StorageError(f"{self!r} is closed", host=self.where)
        if self._given_async_pool is not None:
            return self._given_async_pool
        loop = asyncio.get_running_loop()
        pool = self._async_pools.get(loop)
        if pool is None:
            pool = AsyncConnectionPool(
                self._conninfo,
                min_size=1,
                max_size=self._max_size,
                kwargs={"autocommit": True},
                check=self._checks.acheck,
                timeout=self._timeout,
                name=f"offprompt {self.where} (async)",
                open=False,
            )
            self._async_pools[loop] = pool
            await pool.open()
        return pool

    def _do(self, op: PgOp[ResultT], *, action: str, write: bool = False) -> ResultT:
        committing = lost_at_commit = False
        try:
            with self._sync_pool().connection() as conn:
                try:
                    if not write:
                        return _run_sync(conn.cursor(), op)
                    with conn.transaction():
                        result = _run_sync(conn.cursor(), op)
                        committing = True
                    return result
                except ReplayedBatch as replay:
                    return replay.seqs  # type: ignore[return-value]
                except psycopg.OperationalError:
                    lost_at_commit = committing and conn.broken
                    raise
                finally:
                    self._checks.used(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            if isinstance(exc, (psycopg.OperationalError, PoolTimeout)):
                self._checks.failed()
            raise self._error(action, exc, at_commit=lost_at_commit) from None

    async def _ado(self, op: PgOp[ResultT], *, action: str, write: bool = False) -> ResultT:
        committing = lost_at_commit = False
        try:
            pool = await self._async_pool()
            async with pool.connection() as conn:
                try:
                    if not write:
                        return await _run_async(conn.cursor(), op)
                    async with conn.transaction():
                        result = await _run_async(conn.cursor(), op)
                        committing = True
                    return result
                except ReplayedBatch as replay:
                    return replay.seqs  # type: ignore[return-value]
                except psycopg.OperationalError:
                    lost_at_commit = committing and conn.broken
                    raise
                finally:
                    self._checks.used(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            if isinstance(exc, (psycopg.OperationalError, PoolTimeout)):
                self._checks.failed()
            raise self._error(action, exc, at_commit=lost_at_commit) from None

    @contextlib.contextmanager
    def _admin(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection outside any pool's transaction (migrations, VACUUM)."""
        try:
            if self._pool is not None and not self._owns_pool:
                with self._pool.connection() as conn:
                    previous = conn.autocommit
                    conn.autocommit = True
                    try:
                        yield conn
                    finally:
                        conn.autocommit = previous
            else:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(action, exc) from None
