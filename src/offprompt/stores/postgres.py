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
import contextlib
import dataclasses
import json
import os
import re
import threading
import time
import weakref
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from offprompt.errors import NotAStoreError, NotFoundError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores import _tasks
from offprompt.stores._blobrefs import decode_cached, externalize, ref_keys
from offprompt.stores.base import (
    SCOPE_COLUMNS,
    BaseStore,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    TaskRecord,
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

SCHEMA_VERSION = 5
MAX_IDEMPOTENCY_KEY_LENGTH = 256
_MIN_SEQ = -(2**63)
_MAX_SEQ = 2**63 - 1
#: Taken by every migration, so concurrent first opens migrate once.
_MIGRATION_LOCK = 0x0FF9_0A57
_TABLES = (
    "offprompt_messages",
    "offprompt_state",
    "offprompt_sessions",
    "offprompt_blobs",
    "offprompt_blob_refs",
    "offprompt_batches",
    "offprompt_tasks",
    "offprompt_task_blobs",
)

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


_PART_COLS = (
    "tenant text NOT NULL DEFAULT '', user_id text NOT NULL DEFAULT '',"
    " agent text NOT NULL DEFAULT '', run text NOT NULL DEFAULT ''"
)
_PART_KEY = "tenant, user_id, agent, run"
#: ``WHERE`` fragment of one exact partition; parameters come from ``Scope.partition()``.
_P = "tenant = %s AND user_id = %s AND agent = %s AND run = %s"

#: Migration N takes the schema from version N-1 to N.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE offprompt_schema_version ("
        " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        f"CREATE TABLE offprompt_sessions ({_PART_COLS}, session_id text NOT NULL,"
        " next_seq bigint NOT NULL, epoch bigint NOT NULL, message_count bigint NOT NULL,"
        f" last_activity double precision, PRIMARY KEY ({_PART_KEY}, session_id))",
        "CREATE INDEX offprompt_sessions_user ON offprompt_sessions (user_id)",
        # The key covers what a window's catch-up reads, so read_index skips the bodies.
        f"CREATE TABLE offprompt_messages ({_PART_COLS}, session_id text NOT NULL,"
        " seq bigint NOT NULL, role text NOT NULL, tokens bigint NOT NULL,"
        " appended_at double precision NOT NULL, body text NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, seq) INCLUDE (tokens, role, appended_at))",
        "CREATE INDEX offprompt_messages_user ON offprompt_messages (user_id)",
        f"CREATE TABLE offprompt_state ({_PART_COLS}, session_id text NOT NULL,"
        f" key text NOT NULL, value text NOT NULL, PRIMARY KEY ({_PART_KEY}, session_id, key))",
        "CREATE INDEX offprompt_state_user ON offprompt_state (user_id)",
        f"CREATE TABLE offprompt_blobs ({_PART_COLS}, key text NOT NULL, data bytea NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, key))",
        f"CREATE TABLE offprompt_blob_refs ({_PART_COLS}, session_id text NOT NULL,"
        " seq bigint NOT NULL, key text NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, seq, key))",
        f"CREATE INDEX offprompt_blob_refs_key ON offprompt_blob_refs ({_PART_KEY}, key)",
    ),
    2: (
        # v2: idempotency keys, so a writer that saw an error can retry a batch safely.
        "ALTER TABLE offprompt_messages ADD COLUMN batch text",
        f"CREATE TABLE offprompt_batches ({_PART_COLS}, session_id text NOT NULL,"
        " key text NOT NULL, first_seq bigint NOT NULL, size integer NOT NULL,"
        f" committed_at double precision NOT NULL, PRIMARY KEY ({_PART_KEY}, session_id, key))",
        "CREATE INDEX offprompt_batches_user ON offprompt_batches (user_id)",
    ),
    3: (
        # v3: messages are found through their session's counter row (see _op_forget),
        # so an append updates one index per message instead of two.
        "DROP INDEX IF EXISTS offprompt_messages_user",
    ),
    # v4: stored tool outputs (TaskMemory(store=...)): metadata rows and raw bytes.
    4: _tasks.TASK_DDL("bytea"),
    # v5: a stored output's bytes go to TOAST uncompressed. pglz, the default, took about
    # half of storing a 50 MB output (one backend compressing at ~30 MB/s); logs and JSON
    # take ~3x the space uncompressed. Applies to bytes stored from now on.
    5: ("ALTER TABLE offprompt_task_blobs ALTER COLUMN data SET STORAGE EXTERNAL",),
}

_T = TypeVar("_T")


#: One statement of an operation, and what the operation wants back from it (the task
#: operations' statement type: the same three fields, ``%s`` placeholders here).
_Q = _tasks.Stmt


#: An operation: a generator of statements that receives each one's rows or rowcount.
#: The sync and the async driver run the same operations, so each SQL sequence is
#: written once.
_Op = Generator[_Q, Any, _T]


class _Replay(Exception):
    """A retried batch whose first attempt committed: roll back, return its seqs."""

    def __init__(self, seqs: list[int]) -> None:
        self.seqs = seqs


def _selector(scope: Scope, *, table: str | None = None) -> tuple[str, list[str]]:
    """``WHERE`` fragment and parameters of every partition ``scope`` selects.

    ``table`` qualifies the columns (``s.user_id``) in a statement joining two tables.
    """
    fields = scope.fields()
    if not fields:
        return "TRUE", []
    prefix = f"{table}." if table else ""
    return " AND ".join(f"{prefix}{SCOPE_COLUMNS[f]} = %s" for f in fields), list(fields.values())


def _check_key(key: Any) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key:
        raise ValidationError(f"idempotency_key must be a non-empty str or None, got {key!r}")
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise ValidationError(
            f"idempotency_key is {len(key)} characters; at most {MAX_IDEMPOTENCY_KEY_LENGTH}"
        )
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in key):
        raise ValidationError(
            "idempotency_key must not contain control characters or lone surrogates"
        )
    return key


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


def _insert_messages(first: str, batch: str, source: str = "") -> str:
    """The ``INSERT`` of a batch's messages, numbered from ``first`` (SQL), with ``batch``
    (SQL) as their idempotency key; ``source`` adds a relation to ``FROM`` (the CTE the
    numbering comes from).

    The arrays go in binary (``%b``): psycopg dumps a text-format array by escaping every
    element with a regex, which made that dump most of an append's time (bodies are long).
    """
    return (
        f"INSERT INTO offprompt_messages ({_PART_KEY}, session_id, seq, role, tokens,"
        " appended_at, body, batch)"
        f" SELECT %s, %s, %s, %s, %s, {first} + t.i - 1, t.role, t.tokens, %s, t.body, {batch}"
        f" FROM {source}unnest(%b::text[], %b::bigint[], %b::text[])"
        " WITH ORDINALITY AS t(role, tokens, body, i)"
    )


_INSERT_MESSAGES = _insert_messages("%s", "%s")
#: The counter upsert: locks the session's row and reserves ``n`` seqs, returning the
#: first of them.
_BUMP = (
    "INSERT INTO offprompt_sessions AS s"
    f" ({_PART_KEY}, session_id, next_seq, epoch, message_count, last_activity)"
    " VALUES (%s, %s, %s, %s, %s, %s, 0, %s, %s)"
    f" ON CONFLICT ({_PART_KEY}, session_id) DO UPDATE SET"
    " next_seq = s.next_seq + EXCLUDED.next_seq,"
    " message_count = s.message_count + EXCLUDED.message_count,"
    " last_activity = EXCLUDED.last_activity"
    " RETURNING s.next_seq - %s AS first"
)


#: An append without idempotency key or images, as one statement: autocommit makes it
#: its own transaction (no BEGIN/COMMIT round trips). The upsert locks the session's
#: counter row first, exactly as in :func:`_op_append`, and the insert takes its seqs
#: from the upsert's RETURNING, so the guarantees are the same: gapless, batch whole.
_APPEND_ONE = (
    f"WITH bump AS ({_BUMP}), ins AS ({_insert_messages('bump.first', 'NULL', 'bump, ')})"
    " SELECT first FROM bump"
)


def _bump_params(
    part: tuple[str, str, str, str], session_id: str, n: int, now: float
) -> tuple[Any, ...]:
    return (*part, session_id, n, n, now, n)


def _message_arrays(
    items: list[Message], counts: list[int], encoded: list[tuple[str, dict[str, bytes]]]
) -> tuple[list[str], list[int], list[str]]:
    """The roles, token counts and bodies the insert unnests."""
    return [m.role for m in items], counts, [body for body, _ in encoded]


def _op_append_one(
    part: tuple[str, str, str, str],
    session_id: str,
    items: list[Message],
    counts: list[int],
    encoded: list[tuple[str, dict[str, bytes]]],
) -> _Op[list[int]]:
    n = len(items)
    now = time.time()
    rows = yield _Q(
        _APPEND_ONE,
        (
            *_bump_params(part, session_id, n, now),
            *part,
            session_id,
            now,
            *_message_arrays(items, counts, encoded),
        ),
    )
    first = int(rows[0][0])
    return list(range(first, first + n))


def _op_append(
    part: tuple[str, str, str, str],
    session_id: str,
    items: list[Message],
    counts: list[int],
    encoded: list[tuple[str, dict[str, bytes]]],
    key: str | None,
) -> _Op[list[int]]:
    n = len(items)
    now = time.time()
    rows = yield _Q(_BUMP, _bump_params(part, session_id, n, now))
    first = int(rows[0][0])
    if key is not None:
        found = yield _Q(
            "SELECT first_seq, size FROM offprompt_batches"
            f" WHERE {_P} AND session_id = %s AND key = %s",
            (*part, session_id, key),
        )
        if found:
            done_first, done_size = int(found[0][0]), int(found[0][1])
            if done_size != n:
                raise ValidationError(
                    f"idempotency_key {key!r} was used for a batch of {done_size} messages "
                    f"in session {session_id!r}; this batch has {n}: use a new key"
                )
            raise _Replay(list(range(done_first, done_first + n)))
    yield _Q(
        _INSERT_MESSAGES,
        (
            *part,
            session_id,
            first,
            now,
            key,
            *_message_arrays(items, counts, encoded),
        ),
        "rowcount",
    )
    blobs = {k: v for _, found_blobs in encoded for k, v in found_blobs.items()}
    if blobs:
        # DO UPDATE (not NOTHING) locks an existing blob row, so a concurrent delete of
        # "unreferenced" blobs waits for this reference instead of dropping the blob.
        yield _Q(
            f"INSERT INTO offprompt_blobs ({_PART_KEY}, key, data)"
            " SELECT %s, %s, %s, %s, k, d FROM unnest(%b::text[], %b::bytea[]) AS t(k, d)"
            f" ON CONFLICT ({_PART_KEY}, key) DO UPDATE SET key = EXCLUDED.key",
            (*part, list(blobs), list(blobs.values())),
            "rowcount",
        )
        refs = [(first + i, k) for i, (_, found_blobs) in enumerate(encoded) for k in found_blobs]
        yield _Q(
            f"INSERT INTO offprompt_blob_refs ({_PART_KEY}, session_id, seq, key)"
            " SELECT %s, %s, %s, %s, %s, s, k FROM unnest(%s::bigint[], %s::text[]) AS t(s, k)"
            " ON CONFLICT DO NOTHING",
            (*part, session_id, [s for s, _ in refs], [k for _, k in refs]),
            "rowcount",
        )
    if key is not None:
        yield _Q(
            f"INSERT INTO offprompt_batches ({_PART_KEY}, session_id, key, first_seq, size,"
            " committed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (*part, session_id, key, first, n, now),
            "rowcount",
        )
    return list(range(first, first + n))


def _single_statement(prepared: tuple[Any, ...]) -> bool:
    """Whether an append can be :data:`_APPEND_ONE`: no idempotency key, no images."""
    encoded: list[tuple[str, dict[str, bytes]]] = prepared[4]
    return prepared[5] is None and not any(blobs for _, blobs in encoded)


def _op_read(
    part: tuple[str, str, str, str], session_id: str, ranges: Sequence[tuple[int, int]]
) -> _Op[list[StoredMessage]]:
    """Messages in any of ``ranges`` (sorted, disjoint), in one statement."""
    if not ranges:
        return []
    # One index range scan per range. An OR of ranges, or a join with an array of
    # them, let the planner scan the whole session when its statistics are stale.
    one = (
        "SELECT seq, tokens, body FROM offprompt_messages"
        f" WHERE {_P} AND session_id = %s AND seq >= %s AND seq < %s"
    )
    rows = yield _Q(
        " UNION ALL ".join([f"({one})"] * len(ranges)) + " ORDER BY seq",
        [value for lo, hi in ranges for value in (*part, session_id, lo, hi)],
    )
    keys = sorted({k for _, _, body in rows for k in ref_keys(body)})
    blobs: dict[str, bytes] = {}
    if keys:
        found = yield _Q(
            f"SELECT key, data FROM offprompt_blobs WHERE {_P} AND key = ANY(%s)",
            (*part, keys),
        )
        blobs = {k: bytes(v) for k, v in found}
    messages = decode_cached([body for _, _, body in rows], lambda _: blobs)
    return [
        StoredMessage(session_id, int(seq), message, int(tokens))
        for (seq, tokens, _), message in zip(rows, messages, strict=True)
    ]


def _whole(start: int | None, end: int | None) -> list[tuple[int, int]]:
    """The one range ``start <= seq < end`` (open bounds when ``None``)."""
    return [(_MIN_SEQ if start is None else start, _MAX_SEQ if end is None else end)]


def _op_read_index(
    part: tuple[str, str, str, str], session_id: str, start: int | None
) -> _Op[list[IndexEntry]]:
    rows = yield _Q(
        "SELECT seq, tokens, role, appended_at FROM offprompt_messages"
        f" WHERE {_P} AND session_id = %s AND seq >= %s ORDER BY seq",
        (*part, session_id, _MIN_SEQ if start is None else start),
    )
    return [IndexEntry(int(seq), int(tokens), role, at) for seq, tokens, role, at in rows]


def _op_version(part: tuple[str, str, str, str], session_id: str) -> _Op[SessionVersion]:
    rows = yield _Q(
        f"SELECT next_seq, epoch FROM offprompt_sessions WHERE {_P} AND session_id = %s",
        (*part, session_id),
    )
    return SessionVersion(int(rows[0][0]), int(rows[0][1])) if rows else SessionVersion(0, 0)


def _op_count(part: tuple[str, str, str, str], session_id: str) -> _Op[int]:
    rows = yield _Q(
        f"SELECT message_count FROM offprompt_sessions WHERE {_P} AND session_id = %s",
        (*part, session_id),
    )
    return int(rows[0][0]) if rows else 0


def _op_sessions(scope: Scope) -> _Op[list[SessionInfo]]:
    where, params = _selector(scope)
    rows = yield _Q(
        f"SELECT * FROM (SELECT {_PART_KEY}, session_id, message_count, last_activity"
        f" FROM offprompt_sessions WHERE message_count > 0 AND {where} UNION"
        f" SELECT d.tenant, d.user_id, d.agent, d.run, d.session_id,"
        " coalesce(s.message_count, 0), s.last_activity"
        f" FROM (SELECT DISTINCT {_PART_KEY}, session_id FROM offprompt_state WHERE {where}) d"
        f" LEFT JOIN offprompt_sessions s USING ({_PART_KEY}, session_id)) AS listed"
        # Code-point order, as Python sorts ids, whatever the database's collation.
        ' ORDER BY session_id COLLATE "C", tenant COLLATE "C", user_id COLLATE "C",'
        ' agent COLLATE "C", run COLLATE "C"',
        (*params, *params),
    )
    return [
        SessionInfo(
            sid,
            int(count),
            None if last is None else datetime.fromtimestamp(last, timezone.utc),
            Scope.from_partition((t, u, a, r), sid) if (t or u or a or r) else None,
        )
        for t, u, a, r, sid, count, last in rows
    ]


def _op_drop_refs(where: str, params: Sequence[Any]) -> _Op[int]:
    """Delete blob refs matching ``where``, then the blobs nothing references any more."""
    gone = yield _Q(
        f"DELETE FROM offprompt_blob_refs WHERE {where} RETURNING {_PART_KEY}, key", params
    )
    if not gone:
        return 0
    keys = sorted(set(gone))
    columns = [[row[i] for row in keys] for i in range(5)]
    candidates = (
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
        " AS g(tenant, user_id, agent, run, key)"
    )
    # Lock the candidate blobs first: an append referencing one of them (it locks the
    # row too) then either committed before, and the check below sees its reference,
    # or waits until this transaction has deleted the blob, and inserts it again.
    yield _Q(
        f"SELECT 1 FROM offprompt_blobs b WHERE ({_PART_KEY}, key) IN"
        f" (SELECT tenant, user_id, agent, run, key {candidates}) FOR UPDATE",
        columns,
    )
    removed = yield _Q(
        f"DELETE FROM offprompt_blobs b WHERE ({_PART_KEY}, key) IN"
        f" (SELECT tenant, user_id, agent, run, key {candidates})"
        " AND NOT EXISTS (SELECT 1 FROM offprompt_blob_refs f WHERE f.tenant = b.tenant"
        " AND f.user_id = b.user_id AND f.agent = b.agent AND f.run = b.run AND f.key = b.key)",
        columns,
        "rowcount",
    )
    return int(removed)


def _op_lock_session(part: tuple[str, str, str, str], session_id: str) -> _Op[None]:
    # Taken before a delete, so a concurrent append either committed (and its rows are
    # deleted and counted) or waits and lands after the delete.
    yield _Q(
        f"SELECT 1 FROM offprompt_sessions WHERE {_P} AND session_id = %s FOR UPDATE",
        (*part, session_id),
    )


def _op_delete_session(part: tuple[str, str, str, str], session_id: str) -> _Op[int]:
    where = f"{_P} AND session_id = %s"
    params = (*part, session_id)
    yield from _op_lock_session(part, session_id)
    deleted = yield _Q(f"DELETE FROM offprompt_messages WHERE {where}", params, "rowcount")
    yield _Q(f"DELETE FROM offprompt_state WHERE {where}", params, "rowcount")
    yield from _op_drop_refs(where, params)
    # Keep the counter row: seqs are never reused, so cached readers notice.
    yield _Q(
        f"UPDATE offprompt_sessions SET epoch = epoch + 1, message_count = 0 WHERE {where}",
        params,
        "rowcount",
    )
    return int(deleted)


def _op_delete_range(
    part: tuple[str, str, str, str], session_id: str, start: int | None, end: int | None
) -> _Op[int]:
    where = f"{_P} AND session_id = %s AND seq >= %s AND seq < %s"
    params = (
        *part,
        session_id,
        _MIN_SEQ if start is None else start,
        _MAX_SEQ if end is None else end,
    )
    yield from _op_lock_session(part, session_id)
    deleted = int((yield _Q(f"DELETE FROM offprompt_messages WHERE {where}", params, "rowcount")))
    if deleted:
        yield from _op_drop_refs(where, params)
        yield _Q(
            "UPDATE offprompt_sessions SET epoch = epoch + 1,"
            f" message_count = message_count - %s WHERE {_P} AND session_id = %s",
            (deleted, *part, session_id),
            "rowcount",
        )
    return deleted


def _op_forget(selected: Scope) -> _Op[ForgetCounts]:
    where, params = _selector(selected)
    in_sessions, _ = _selector(selected, table="s")
    # Every message row has its session's counter row (the append that writes the one
    # writes the other, and only a forget removes a counter row, after its messages),
    # so a scope's messages are reached through the counter rows: the sessions table
    # has a user_id index, the messages table only its primary key.
    of_session = " AND ".join(f"m.{c} = s.{c}" for c in (*_PART_KEY.split(", "), "session_id"))
    rows = yield _Q(
        f"SELECT count(*) FROM (SELECT {_PART_KEY}, session_id FROM offprompt_sessions s"
        f" WHERE {in_sessions} AND EXISTS (SELECT 1 FROM offprompt_messages m"
        f" WHERE {of_session}) UNION SELECT {_PART_KEY}, session_id FROM offprompt_state"
        f" WHERE {where}) AS touched",
        (*params, *params),
    )
    messages = yield _Q(
        f"DELETE FROM offprompt_messages m USING offprompt_sessions s"
        f" WHERE {in_sessions} AND {of_session}",
        params,
        "rowcount",
    )
    state = yield _Q(f"DELETE FROM offprompt_state WHERE {where}", params, "rowcount")
    blobs = yield from _op_drop_refs(where, params)
    if selected.session is None:
        # Blobs live per partition; a partition-wide forget takes them all.
        blob_where, blob_params = _selector(selected.model_copy(update={"session": None}))
        blobs += yield _Q(
            f"DELETE FROM offprompt_blobs WHERE {blob_where}", blob_params, "rowcount"
        )
    # The counter rows and keys go too: a session id can itself identify the subject.
    yield _Q(f"DELETE FROM offprompt_sessions WHERE {where}", params, "rowcount")
    yield _Q(f"DELETE FROM offprompt_batches WHERE {where}", params, "rowcount")
    tasks, task_blobs = yield from _pg(_tasks.op_forget(selected))
    return ForgetCounts(
        int(messages), int(state), int(rows[0][0]), int(blobs) + task_blobs, task_outputs=tasks
    )


def _pg(op: _tasks.Op[_T]) -> _Op[_T]:
    """A task operation (``?`` placeholders) as one of this module's operations."""
    try:
        stmt = next(op)
        while True:
            result = yield _Q(stmt.sql.replace("?", "%s"), stmt.params, stmt.fetch, stmt.binary)
            stmt = op.send(result)
    except StopIteration as stop:
        done: _T = stop.value
        return done


def _op_get_state(part: tuple[str, str, str, str], session_id: str, key: str) -> _Op[Any]:
    rows = yield _Q(
        f"SELECT value FROM offprompt_state WHERE {_P} AND session_id = %s AND key = %s",
        (*part, session_id, key),
    )
    return json.loads(rows[0][0]) if rows else None


def _op_set_state(
    part: tuple[str, str, str, str], session_id: str, key: str, text: str
) -> _Op[None]:
    yield _Q(
        f"INSERT INTO offprompt_state ({_PART_KEY}, session_id, key, value)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)"
        f" ON CONFLICT ({_PART_KEY}, session_id, key) DO UPDATE SET value = EXCLUDED.value",
        (*part, session_id, key, text),
        "rowcount",
    )


def _op_delete_state(part: tuple[str, str, str, str], session_id: str, key: str) -> _Op[None]:
    yield _Q(
        f"DELETE FROM offprompt_state WHERE {_P} AND session_id = %s AND key = %s",
        (*part, session_id, key),
        "rowcount",
    )


def _op_state_keys(part: tuple[str, str, str, str], session_id: str, prefix: str) -> _Op[list[str]]:
    rows = yield _Q(
        f"SELECT key FROM offprompt_state WHERE {_P} AND session_id = %s"
        ' AND left(key, %s) = %s ORDER BY key COLLATE "C"',
        (*part, session_id, len(prefix), prefix),
    )
    return [r[0] for r in rows]


def _op_blob_count(scope: Scope) -> _Op[int]:
    where, params = _selector(scope.model_copy(update={"session": None}))
    rows = yield _Q(f"SELECT count(*) FROM offprompt_blobs WHERE {where}", params)
    return int(rows[0][0])


def _op_batches(part: tuple[str, str, str, str], session_id: str) -> _Op[dict[str, list[int]]]:
    rows = yield _Q(
        "SELECT key, first_seq, size FROM offprompt_batches"
        f" WHERE {_P} AND session_id = %s ORDER BY first_seq",
        (*part, session_id),
    )
    return {key: list(range(int(first), int(first) + int(size))) for key, first, size in rows}


def _run_sync(cur: psycopg.Cursor[Any], op: _Op[_T]) -> _T:
    try:
        query = next(op)
        while True:
            cur.execute(query.sql, query.params, binary=query.binary)
            query = op.send(cur.fetchall() if query.fetch == "rows" else cur.rowcount)
    except StopIteration as stop:
        result: _T = stop.value
        return result


async def _run_async(cur: psycopg.AsyncCursor[Any], op: _Op[_T]) -> _T:
    try:
        query = next(op)
        while True:
            await cur.execute(query.sql, query.params, binary=query.binary)
            query = op.send(await cur.fetchall() if query.fetch == "rows" else cur.rowcount)
    except StopIteration as stop:
        result: _T = stop.value
        return result


def _residue(vacuumed: bool) -> tuple[str, ...]:
    pages = (
        "table and index pages: VACUUM freed the deleted rows' space, but PostgreSQL "
        "does not overwrite it until it is reused (PostgresStore.purge() rewrites the "
        "tables with VACUUM FULL)"
        if vacuumed
        else "table and index pages: the deleted rows stay as dead tuples until VACUUM "
        "runs (it could not run here: the store's role does not own the tables, or a "
        "transaction is open); PostgresStore.purge() rewrites the tables"
    )
    return (
        pages,
        "the server's WAL: pg_wal segments not yet recycled still hold the deleted rows",
        "replicas, WAL archives and backups of the server, which offprompt cannot reach",
    )


class PostgresStore(BaseStore):
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
        self._migrate()

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    # -- errors ----------------------------------------------------------------------
    def _error(self, action: str, exc: BaseException) -> StorageError:
        detail = str(exc).strip() or type(exc).__name__
        if isinstance(exc, PoolTimeout):
            detail = (
                f"no working connection within {self._timeout:g}s "
                "(is the server down, restarting or unreachable?)"
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

    def _do(self, op: _Op[_T], *, action: str, write: bool = False) -> _T:
        try:
            with self._sync_pool().connection() as conn:
                try:
                    if not write:
                        return _run_sync(conn.cursor(), op)
                    with conn.transaction():
                        return _run_sync(conn.cursor(), op)
                except _Replay as replay:
                    return replay.seqs  # type: ignore[return-value]
                finally:
                    self._checks.used(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            if isinstance(exc, (psycopg.OperationalError, PoolTimeout)):
                self._checks.failed()
            raise self._error(action, exc) from None

    async def _ado(self, op: _Op[_T], *, action: str, write: bool = False) -> _T:
        try:
            pool = await self._async_pool()
            async with pool.connection() as conn:
                try:
                    if not write:
                        return await _run_async(conn.cursor(), op)
                    async with conn.transaction():
                        return await _run_async(conn.cursor(), op)
                except _Replay as replay:
                    return replay.seqs  # type: ignore[return-value]
                finally:
                    self._checks.used(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            if isinstance(exc, (psycopg.OperationalError, PoolTimeout)):
                self._checks.failed()
            raise self._error(action, exc) from None

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

    # -- schema ----------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._admin("opening the store") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            found = conn.execute(
                "SELECT to_regclass('offprompt_schema_version') IS NOT NULL,"
                " to_regclass('offprompt_messages') IS NOT NULL"
            ).fetchone()
            assert found is not None
            has_versions, has_messages = found
            if has_messages and not has_versions:
                raise NotAStoreError(
                    f"PostgreSQL at {self.where} has an offprompt_messages table but no "
                    "offprompt_schema_version: another application's table? offprompt "
                    "left it untouched",
                    host=self.where,
                )
            version = 0
            if has_versions:
                row = conn.execute(
                    "SELECT coalesce(max(version), 0) FROM offprompt_schema_version"
                ).fetchone()
                version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StorageError(
                    f"PostgreSQL at {self.where} has offprompt schema version {version}, "
                    f"newer than this offprompt understands ({SCHEMA_VERSION}); upgrade "
                    "offprompt",
                    host=self.where,
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                # One round trip per migration: statements without parameters can share one.
                conn.execute(
                    "; ".join(
                        (*MIGRATIONS[step], f"INSERT INTO offprompt_schema_version VALUES ({step})")
                    )
                )

    @property
    def schema_version(self) -> int:
        """The schema version of the database."""
        rows = self._do(_op_schema_version(), action="reading the schema version")
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
        if _single_statement(prepared):
            return self._do(_op_append_one(*prepared[:5]), action="append")
        return self._do(_op_append(*prepared), action="append", write=True)

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
        if _single_statement(prepared):
            return await self._ado(_op_append_one(*prepared[:5]), action="append")
        return await self._ado(_op_append(*prepared), action="append", write=True)

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
        key = _check_key(idempotency_key)
        if not items:
            return None
        return part, session_id, items, counts, [externalize(m) for m in items], key

    def read(
        self,
        session_id: str,
        *,
        start: int | None = None,
        end: int | None = None,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        return self._do(_op_read(part, session_id, _whole(start, end)), action="read")

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
        return self._do(_op_read(part, session_id, merged), action="read")

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
        return await self._ado(_op_read(part, session_id, _whole(start, end)), action="read")

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        return self._do(_op_read_index(part, session_id, start), action="read_index")

    async def aread_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        return await self._ado(_op_read_index(part, session_id, start), action="read_index")

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        return self._do(_op_version(part, session_id), action="version")

    async def aversion(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        return await self._ado(_op_version(part, session_id), action="version")

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return self._do(_op_count(part, session_id), action="count")

    async def acount(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return await self._ado(_op_count(part, session_id), action="count")

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        return self._do(_op_sessions(as_scope(scope)), action="sessions")

    async def asessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        return await self._ado(_op_sessions(as_scope(scope)), action="sessions")

    def batches(self, session_id: str, *, scope: Scope | None = None) -> dict[str, list[int]]:
        """The session's idempotency keys and the seqs of the batch each one names."""
        part = check_scope_session(session_id, scope)
        return self._do(_op_batches(part, session_id), action="batches")

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return self._do(_op_delete_session(part, session_id), action="delete", write=True)

    async def adelete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return await self._ado(_op_delete_session(part, session_id), action="delete", write=True)

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        op = _op_delete_range(part, session_id, start, end)
        return self._do(op, action="delete", write=True)

    async def adelete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        op = _op_delete_range(part, session_id, start, end)
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
        counts = self._do(_op_forget(selected), action="forget", write=True)
        return _with_residue(counts, self._vacuum())

    async def aforget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        selected = check_selector(scope, all=all)
        counts = await self._ado(_op_forget(selected), action="forget", write=True)
        return _with_residue(counts, await self._avacuum())

    def _vacuum(self, full: bool = False) -> bool:
        skipped: list[str] = []
        with self._admin("VACUUM") as conn:
            handler = _skipped_tables(skipped)
            conn.add_notice_handler(handler)
            try:
                conn.execute(_vacuum_sql(full))
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
                handler = _skipped_tables(skipped)
                conn.add_notice_handler(handler)
                try:
                    await conn.execute(_vacuum_sql(full))
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
        return list(_residue(True)[1:])

    def blob_count(self, *, scope: Scope | None = None) -> int:
        return self._do(_op_blob_count(as_scope(scope)), action="blob_count")

    # -- state -----------------------------------------------------------------------
    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        return self._do(_op_get_state(part, session_id, key), action="get_state")

    async def aget_state(
        self, session_id: str, key: str, *, scope: Scope | None = None
    ) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        return await self._ado(_op_get_state(part, session_id, key), action="get_state")

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = _op_set_state(part, session_id, key, encode_state(value))
        self._do(op, action="set_state", write=True)

    async def aset_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = _op_set_state(part, session_id, key, encode_state(value))
        await self._ado(op, action="set_state", write=True)

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        self._do(_op_delete_state(part, session_id, key), action="delete_state", write=True)

    async def adelete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        op = _op_delete_state(part, session_id, key)
        await self._ado(op, action="delete_state", write=True)

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        _check_prefix(prefix)
        return self._do(_op_state_keys(part, session_id, prefix), action="state_keys")

    async def astate_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        _check_prefix(prefix)
        return await self._ado(_op_state_keys(part, session_id, prefix), action="state_keys")

    # -- task outputs ----------------------------------------------------------------
    def _task(self, op: _tasks.Op[_T], action: str, *, write: bool = False) -> _T:
        return self._do(_pg(op), action=action, write=write)

    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        part = _tasks.task_part(namespace, scope)
        return self._task(_tasks.op_get(part, namespace), "reading a task output")

    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        return self._task(_tasks.op_list(_tasks.list_part(scope)), "listing task outputs")

    def task_commit(
        self,
        namespace: str,
        meta: dict[str, Any],
        *,
        expect: int | None,
        blobs: Sequence[str] = (),
        scope: Scope | None = None,
    ) -> int | None:
        text = _tasks.check_meta(meta)
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_commit(part, namespace, text, expect, blobs, time.time())
        return self._task(op, "committing a task output", write=True)

    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        part = _tasks.task_part(namespace, scope)
        return self._task(_tasks.op_delete(part, namespace), "deleting a task output", write=True)

    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        part = _tasks.task_part(namespace, scope)
        key = _tasks.content_key(data)
        op = _tasks.op_put_blob(part, namespace, key, bytes(data))
        self._task(op, "storing a task output's bytes", write=True)
        return key

    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        part = _tasks.task_part(namespace, scope)
        data = self._task(_tasks.op_get_blob(part, namespace, key), "reading a task blob")
        if data is None:
            raise NotFoundError(f"no blob {key} in namespace {namespace!r}", namespace=namespace)
        return data

    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        part = _tasks.task_part(namespace, scope)
        return self._task(_tasks.op_blob_keys(part, namespace), "listing task blobs")

    def task_delete_blob(
        self, namespace: str, key: str | None = None, *, scope: Scope | None = None
    ) -> int:
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_delete_blob(part, namespace, key)
        return self._task(op, "deleting a task blob", write=True)

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        selected = check_selector(scope, all=all)
        return self._task(_tasks.op_forget(selected), "forgetting task outputs", write=True)

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
            _close_in_loop(loop, async_pool)

    async def aclose(self) -> None:
        """Close the store: this loop's async pool awaited, the others as :meth:`close`."""
        loop = asyncio.get_running_loop()
        with self._lock:
            mine = self._async_pools.pop(loop, None)
        if mine is not None:
            await mine.close()
        self.close()


def _op_schema_version() -> _Op[int]:
    rows = yield _Q("SELECT coalesce(max(version), 0) FROM offprompt_schema_version")
    return int(rows[0][0])


def _check_prefix(prefix: Any) -> None:
    if not isinstance(prefix, str):
        raise ValidationError(f"prefix must be a str, got {type(prefix).__name__}")


def _vacuum_sql(full: bool) -> str:
    return f"VACUUM {'FULL ' if full else ''}{', '.join(_TABLES)}"


def _skipped_tables(into: list[str]) -> Any:
    """A notice handler that collects VACUUM's warnings (a table it had to skip)."""

    def handler(diag: psycopg.errors.Diagnostic) -> None:
        if diag.severity_nonlocalized == "WARNING":
            into.append(str(diag.message_primary))

    return handler


def _with_residue(counts: ForgetCounts, vacuumed: bool) -> ForgetCounts:
    return dataclasses.replace(counts, residue=_residue(vacuumed))


def _close_in_loop(loop: asyncio.AbstractEventLoop, pool: AsyncConnectionPool[Any]) -> None:
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
