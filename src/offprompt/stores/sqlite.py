"""``SQLiteStore``: the embedded, durable default store.

One SQLite file in WAL mode. Every write runs in ``BEGIN IMMEDIATE``: the writer takes
the database's write lock before it reads the session's next sequence number, so
threads and processes appending to one session queue up (``busy_timeout``) instead of
racing, and a batch of messages is one transaction: a process killed mid-write leaves
either all of the batch or none of it. Each thread gets its own connection; a forked
child opens fresh ones.

Schema (versioned in ``offprompt_meta``; older files are migrated forward on open).
Every data table starts with the scope partition ``tenant, user_id, agent, run`` (``''``
for unset, see :class:`~offprompt.scope.Scope`), and every query filters on it::

    offprompt_meta       key, value                      -- app marker, schema_version
    offprompt_messages   <partition>, session_id, seq, role, tokens, appended_at, body (JSON)
    offprompt_state      <partition>, session_id, key, value (JSON)
    offprompt_sessions   <partition>, session_id, next_seq, epoch, message_count, last_activity
    offprompt_blobs      <partition>, key (sha256), data     -- image bytes, stored once
    offprompt_blob_refs  <partition>, session_id, seq, key   -- which message uses which blob
    offprompt_tasks      <partition>, session_id, namespace, version, meta -- TaskMemory outputs
    offprompt_task_blobs <partition>, session_id, namespace, key, data     -- their raw bytes

Connections run with ``secure_delete`` on: deleted rows are overwritten with zeros, so
what :func:`offprompt.forget.forget` deletes does not linger in free pages.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offprompt.errors import NotAStoreError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores import _tasks
from offprompt.stores._blobrefs import decode_cached, externalize
from offprompt.stores._bodies import pack_body, unpack_body
from offprompt.stores._sqlite_tasks import SQLiteTasks
from offprompt.stores.base import (
    SCOPE_COLUMNS,
    BaseTaskStore,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    check_range,
    check_scope_session,
    check_selector,
    check_state,
    encode_state,
)

__all__ = ["CHECKPOINT_WAIT", "SCHEMA_VERSION", "SQLiteStore", "default_path", "default_store"]

SCHEMA_VERSION = 5
#: Seconds :meth:`SQLiteStore.checkpoint` retries while another connection's reader
#: keeps the WAL (``forget`` then reports the WAL as not clean instead of waiting on).
CHECKPOINT_WAIT = 5.0
_MIN_SEQ = -(2**63)
_MAX_SEQ = 2**63 - 1


def default_path() -> Path:
    """``$OFFPROMPT_HOME/memory.db`` if ``OFFPROMPT_HOME`` is set, else ``./.offprompt/memory.db``."""
    home = os.environ.get("OFFPROMPT_HOME")
    return (Path(home) if home else Path.cwd() / ".offprompt") / "memory.db"


def default_store() -> SQLiteStore:
    """A :class:`SQLiteStore` at :func:`default_path`."""
    return SQLiteStore()


def _migrate_1(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE offprompt_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "CREATE TABLE offprompt_messages ("
        " session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,"
        " tokens INTEGER NOT NULL, appended_at REAL NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (session_id, seq))"
    )
    conn.execute(
        "CREATE TABLE offprompt_state ("
        " session_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY (session_id, key))"
    )
    conn.execute("INSERT INTO offprompt_meta VALUES ('app', 'offprompt')")


def _migrate_2(conn: sqlite3.Connection) -> None:
    # v2: per-session counters, so seqs are assigned from a counter that survives
    # deletions (never reused) and versions/counts are O(1) lookups.
    conn.execute(
        "CREATE TABLE offprompt_sessions ("
        " session_id TEXT PRIMARY KEY, next_seq INTEGER NOT NULL, epoch INTEGER NOT NULL,"
        " message_count INTEGER NOT NULL, last_activity REAL)"
    )
    conn.execute(
        "INSERT INTO offprompt_sessions"
        " SELECT session_id, max(seq) + 1, 0, count(*), max(appended_at)"
        " FROM offprompt_messages GROUP BY session_id"
    )
    # A covering index: a window's catch-up reads (seq, tokens, role) without bodies.
    conn.execute(
        "CREATE INDEX offprompt_messages_index"
        " ON offprompt_messages (session_id, seq, tokens, role)"
    )


_PART_COLS = (
    "tenant TEXT NOT NULL DEFAULT '', user_id TEXT NOT NULL DEFAULT '',"
    " agent TEXT NOT NULL DEFAULT '', run TEXT NOT NULL DEFAULT ''"
)
_PART_KEY = "tenant, user_id, agent, run"
#: ``WHERE`` fragment of one exact partition; parameters come from ``Scope.partition()``.
_P = "tenant = ? AND user_id = ? AND agent = ? AND run = ?"
#: The user indexes' condition; a query repeats it word for word so SQLite uses them.
_SCOPED_USER = "user_id <> ''"


def _migrate_3(conn: sqlite3.Connection) -> None:
    # v3: scope partitions (tenant, user, agent, run) in every table's key, and blobs
    # stored once per partition. Old rows land in the unscoped partition ('').
    conn.execute(
        f"CREATE TABLE offprompt_messages_v3 ({_PART_COLS},"
        " session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,"
        " tokens INTEGER NOT NULL, appended_at REAL NOT NULL, body TEXT NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, seq))"
    )
    conn.execute(
        "INSERT INTO offprompt_messages_v3 (session_id, seq, role, tokens, appended_at, body)"
        " SELECT session_id, seq, role, tokens, appended_at, body FROM offprompt_messages"
    )
    conn.execute("DROP TABLE offprompt_messages")
    conn.execute("ALTER TABLE offprompt_messages_v3 RENAME TO offprompt_messages")
    conn.execute(
        "CREATE INDEX offprompt_messages_index ON offprompt_messages"
        f" ({_PART_KEY}, session_id, seq, tokens, role, appended_at)"
    )
    conn.execute("CREATE INDEX offprompt_messages_user ON offprompt_messages (user_id)")
    conn.execute(
        f"CREATE TABLE offprompt_state_v3 ({_PART_COLS},"
        " session_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, key))"
    )
    conn.execute(
        "INSERT INTO offprompt_state_v3 (session_id, key, value)"
        " SELECT session_id, key, value FROM offprompt_state"
    )
    conn.execute("DROP TABLE offprompt_state")
    conn.execute("ALTER TABLE offprompt_state_v3 RENAME TO offprompt_state")
    conn.execute("CREATE INDEX offprompt_state_user ON offprompt_state (user_id)")
    conn.execute(
        f"CREATE TABLE offprompt_sessions_v3 ({_PART_COLS},"
        " session_id TEXT NOT NULL, next_seq INTEGER NOT NULL, epoch INTEGER NOT NULL,"
        " message_count INTEGER NOT NULL, last_activity REAL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id))"
    )
    conn.execute(
        "INSERT INTO offprompt_sessions_v3"
        " (session_id, next_seq, epoch, message_count, last_activity)"
        " SELECT session_id, next_seq, epoch, message_count, last_activity"
        " FROM offprompt_sessions"
    )
    conn.execute("DROP TABLE offprompt_sessions")
    conn.execute("ALTER TABLE offprompt_sessions_v3 RENAME TO offprompt_sessions")
    conn.execute("CREATE INDEX offprompt_sessions_user ON offprompt_sessions (user_id)")
    conn.execute(
        f"CREATE TABLE offprompt_blobs ({_PART_COLS}, key TEXT NOT NULL, data BLOB NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, key))"
    )
    conn.execute(
        f"CREATE TABLE offprompt_blob_refs ({_PART_COLS}, session_id TEXT NOT NULL,"
        " seq INTEGER NOT NULL, key TEXT NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, seq, key))"
    )
    conn.execute(f"CREATE INDEX offprompt_blob_refs_key ON offprompt_blob_refs ({_PART_KEY}, key)")


def _migrate_4(conn: sqlite3.Connection) -> None:
    # v4, for size: state rows clustered on their key (WITHOUT ROWID, so the key is not
    # stored a second time in a separate index), user indexes over scoped rows only, and
    # compact message bodies (no DDL: bodies written before read as they are).
    conn.execute(
        f"CREATE TABLE offprompt_state_v4 ({_PART_COLS},"
        " session_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        f" PRIMARY KEY ({_PART_KEY}, session_id, key)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT INTO offprompt_state_v4 SELECT {_PART_KEY}, session_id, key, value"
        " FROM offprompt_state"
    )
    conn.execute("DROP TABLE offprompt_state")
    conn.execute("ALTER TABLE offprompt_state_v4 RENAME TO offprompt_state")
    for table in ("offprompt_messages", "offprompt_state", "offprompt_sessions"):
        conn.execute(f"DROP INDEX IF EXISTS {table}_user")
        conn.execute(f"CREATE INDEX {table}_user ON {table} (user_id) WHERE {_SCOPED_USER}")


def _migrate_5(conn: sqlite3.Connection) -> None:
    # v5: stored tool outputs (TaskMemory(store=...)): metadata rows and raw bytes.
    for statement in _tasks.TASK_DDL("BLOB"):
        conn.execute(statement)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _migrate_1,
    2: _migrate_2,
    3: _migrate_3,
    4: _migrate_4,
    5: _migrate_5,
}


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (UTF-8 keeps code
    point order, so SQLite's binary comparison agrees), if there is a simple one."""
    if prefix:
        last = ord(prefix[-1]) + 1
        if last <= 0x10FFFF and not 0xD800 <= last <= 0xDFFF:
            return prefix[:-1] + chr(last)
    return None


def _selector(scope: Scope) -> tuple[str, list[str]]:
    """``WHERE`` fragment and parameters of every partition ``scope`` selects."""
    fields = scope.fields()
    if not fields:
        return "1 = 1", []
    terms = [f"{SCOPE_COLUMNS[f]} = ?" for f in fields]
    if fields.get("user"):
        terms.append(_SCOPED_USER)
    return " AND ".join(terms), list(fields.values())


def _check_is_store(path: Path) -> None:
    """Refuse, without writing a byte, a path that is not an offprompt SQLite store.

    The file is looked at only through SQLite, never with a plain ``open()``: on POSIX,
    closing *any* descriptor of a file drops every lock this process holds on it, so
    reading the header while another ``SQLiteStore`` (or any SQLite connection) of this
    process has the file open would strip that connection's locks while other processes
    write, and corrupt the database. SQLite's own VFS shares one lock state per file
    across the connections of a process and defers closing, so a read-only connection
    opened and closed here leaves the others' locks alone.
    """
    if not path.exists():
        return
    if path.is_dir():
        raise NotAStoreError(
            f"{path} is a directory, not an offprompt SQLite store", path=str(path)
        )
    if not os.access(path, os.R_OK):
        raise StorageError(f"cannot read {path}: permission denied", path=str(path))
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        # sqlite_errorname exists from Python 3.11; 3.10 only has the message.
        not_a_db = getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB"
        if not_a_db or "not a database" in str(exc):
            raise NotAStoreError(
                f"{path} is not a SQLite database, or its header is corrupt (SQLite: {exc}); "
                "offprompt left it untouched",
                path=str(path),
            ) from None
        raise NotAStoreError(
            f"{path} looks like SQLite but cannot be read ({exc}); offprompt left it untouched",
            path=str(path),
        ) from None
    if tables and "offprompt_meta" not in tables:
        raise NotAStoreError(
            f"{path} is a SQLite database of another application (tables: "
            f"{', '.join(sorted(tables)[:5])}); offprompt left it untouched",
            path=str(path),
        )


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch ``conn``'s database to WAL mode, retrying while it is locked (up to ``timeout``).

    SQLite answers ``database is locked`` at once, without the busy handler, when
    another connection is switching the same new file to WAL: processes opening one new
    ``task.db`` together (the writers of a ``TaskMemory(path=)``) failed 1 in ~300.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


class SQLiteStore(SQLiteTasks, BaseTaskStore):
    """A :class:`~offprompt.stores.ConversationStore` in one SQLite file (WAL mode).

    Safe with several threads and several processes appending to the same session:
    nothing is lost, nothing is duplicated, and a writer killed mid-write leaves the
    store consistent. A path that is not an offprompt store (a text file, another
    application's database) raises :class:`~offprompt.errors.NotAStoreError` and is left
    byte-identical.

    Args:
        path: The database file; created with its directory if missing. ``None`` means
            :func:`default_path` (``$OFFPROMPT_HOME/memory.db`` or ``./.offprompt/memory.db``).
        timeout: Seconds a writer waits for another writer's lock (``busy_timeout``).
        synchronous: SQLite's ``synchronous`` pragma. ``NORMAL`` (default) survives a
            crashed process; ``FULL`` also survives power loss, at a cost per commit.

    Attributes:
        path: The database file.

    Example:
        >>> import tempfile, pathlib
        >>> store = SQLiteStore(pathlib.Path(tempfile.mkdtemp()) / "memory.db")
        >>> store.append("s", [Message.user("hi")], [4])
        [0]
        >>> store.count("s")
        1
        >>> store.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
    ) -> None:
        if path is not None and str(path) in ("", ":memory:"):
            raise ValidationError(
                "SQLiteStore needs a file path; use InMemoryStore for a store in memory"
            )
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValidationError(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}"
            )
        self.path = Path(path) if path is not None else default_path()
        self._timeout = timeout
        self._synchronous = synchronous.upper()
        _check_is_store(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create {self.path.parent}: {exc}", path=str(self.path)
            ) from None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._closed = False
        with self._write() as conn:
            self._migrate(conn)

    @property
    def binary_state(self) -> bool:
        """``True``: a ``bytes`` state value is kept as a BLOB, as it is."""
        return True

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- connections and transactions ------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageError(f"{self!r} is closed", path=str(self.path))
        if os.getpid() != self._pid:  # forked: never share a connection with the parent
            with self._lock:
                if os.getpid() != self._pid:
                    self._pid = os.getpid()
                    self._local = threading.local()
                    self._connections = []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    str(self.path),
                    timeout=self._timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
                _enable_wal(conn, self._timeout)
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                # Deleted content is zeroed, not left in free pages (forget, retention).
                conn.execute("PRAGMA secure_delete = ON")
            except sqlite3.Error as exc:
                raise StorageError(f"cannot open {self.path}: {exc}", path=str(self.path)) from None
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction for every call this thread makes inside:
        the write lock is taken first, so what is read inside stays true until the
        commit, and a process killed inside leaves none of it."""
        if getattr(self._local, "in_transaction", False):
            yield
            return
        with self._write():
            self._local.in_transaction = True
            try:
                yield
            finally:
                self._local.in_transaction = False

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        if getattr(self._local, "in_transaction", False):
            yield conn  # inside transaction(): it begins, commits or rolls back
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write to {self.path}: {exc}", path=str(self.path)) from None
        try:
            yield conn
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StorageError(
                    f"write to {self.path} failed: {exc}", path=str(self.path)
                ) from None
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise StorageError(
                f"commit to {self.path} failed: {exc}", path=str(self.path)
            ) from None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(
                f"read from {self.path} failed: {exc}", path=str(self.path)
            ) from None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "offprompt_meta" not in tables:
            raise NotAStoreError(
                f"{self.path} is a SQLite database of another application", path=str(self.path)
            )
        version = 0
        if "offprompt_meta" in tables:
            row = conn.execute(
                "SELECT value FROM offprompt_meta WHERE key = 'schema_version'"
            ).fetchone()
            version = int(row[0]) if row else 1
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{self.path} has schema version {version}, newer than this offprompt "
                f"understands ({SCHEMA_VERSION}); upgrade offprompt",
                path=str(self.path),
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[step](conn)
        if version != SCHEMA_VERSION:
            conn.execute(
                "INSERT OR REPLACE INTO offprompt_meta VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        row = self._query("SELECT value FROM offprompt_meta WHERE key = 'schema_version'")
        return int(row[0][0])

    # -- messages --------------------------------------------------------------------
    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        part = check_scope_session(session_id, scope)
        if not messages:
            return []
        # Serialise before taking the write lock: the lock is held only for the inserts.
        encoded = [externalize(m) for m in messages]
        now = time.time()
        with self._write() as conn:
            row = conn.execute(
                f"SELECT next_seq FROM offprompt_sessions WHERE {_P} AND session_id = ?",
                (*part, session_id),
            ).fetchone()
            if row is None:
                conn.execute(
                    f"INSERT INTO offprompt_sessions ({_PART_KEY}, session_id, next_seq, epoch,"
                    " message_count, last_activity) VALUES (?, ?, ?, ?, ?, 0, 0, 0, NULL)",
                    (*part, session_id),
                )
                first = 0
            else:
                first = int(row[0])
            conn.executemany(
                f"INSERT INTO offprompt_messages ({_PART_KEY}, session_id, seq, role, tokens,"
                " appended_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (*part, session_id, first + i, m.role, count, now, pack_body(body))
                    for i, (m, count, (body, _)) in enumerate(
                        zip(messages, tokens, encoded, strict=True)
                    )
                ],
            )
            blobs = {k: v for _, found in encoded for k, v in found.items()}
            if blobs:
                conn.executemany(
                    f"INSERT OR IGNORE INTO offprompt_blobs ({_PART_KEY}, key, data)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [(*part, k, v) for k, v in blobs.items()],
                )
                conn.executemany(
                    f"INSERT OR IGNORE INTO offprompt_blob_refs ({_PART_KEY}, session_id, seq,"
                    " key) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (*part, session_id, first + i, k)
                        for i, (_, found) in enumerate(encoded)
                        for k in found
                    ],
                )
            conn.execute(
                "UPDATE offprompt_sessions SET next_seq = ?, message_count = message_count + ?,"
                f" last_activity = ? WHERE {_P} AND session_id = ?",
                (first + len(messages), len(messages), now, *part, session_id),
            )
        return list(range(first, first + len(messages)))

    def _fetch_blobs(self, part: tuple[str, str, str, str], keys: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            rows = self._query(
                f"SELECT key, data FROM offprompt_blobs WHERE {_P}"
                f" AND key IN ({', '.join('?' * len(chunk))})",
                (*part, *chunk),
            )
            out.update((k, bytes(v)) for k, v in rows)
        return out

    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        part = check_scope_session(session_id, scope)
        rows = self._query(
            "SELECT seq, tokens, body, role FROM offprompt_messages"
            f" WHERE {_P} AND session_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (
                *part,
                session_id,
                _MIN_SEQ if start is None else start,
                _MAX_SEQ if end is None else end,
            ),
        )
        messages = decode_cached(
            [unpack_body(body, role) for _, _, body, role in rows],
            lambda keys: self._fetch_blobs(part, keys),
        )
        return [
            StoredMessage(session_id, seq, message, tokens)
            for (seq, tokens, _, _), message in zip(rows, messages, strict=True)
        ]

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        rows = self._query(
            "SELECT seq, tokens, role, appended_at FROM offprompt_messages"
            f" WHERE {_P} AND session_id = ? AND seq >= ? ORDER BY seq",
            (*part, session_id, _MIN_SEQ if start is None else start),
        )
        return [IndexEntry(seq, tokens, role, at) for seq, tokens, role, at in rows]

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        rows = self._query(
            f"SELECT next_seq, epoch FROM offprompt_sessions WHERE {_P} AND session_id = ?",
            (*part, session_id),
        )
        return SessionVersion(rows[0][0], rows[0][1]) if rows else SessionVersion(0, 0)

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        rows = self._query(
            f"SELECT message_count FROM offprompt_sessions WHERE {_P} AND session_id = ?",
            (*part, session_id),
        )
        return int(rows[0][0]) if rows else 0

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:

        where, params = _selector(as_scope(scope))
        rows = self._query(
            f"SELECT {_PART_KEY}, session_id, message_count, last_activity"
            f" FROM offprompt_sessions WHERE message_count > 0 AND {where} UNION"
            f" SELECT {_PART_KEY}, session_id, coalesce(s.message_count, 0), s.last_activity"
            f" FROM (SELECT DISTINCT {_PART_KEY}, session_id FROM offprompt_state WHERE {where})"
            f" LEFT JOIN offprompt_sessions s USING ({_PART_KEY}, session_id)"
            " ORDER BY 5, 1, 2, 3, 4",
            (*params, *params),
        )
        return [
            SessionInfo(
                sid,
                count,
                None if last is None else datetime.fromtimestamp(last, timezone.utc),
                Scope.from_partition((t, u, a, r), sid) if (t or u or a or r) else None,
            )
            for t, u, a, r, sid, count, last in rows
        ]

    @staticmethod
    def _drop_refs(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> int:
        """Delete blob refs matching ``where`` and the blobs nothing references any more."""
        keys = conn.execute(
            f"SELECT DISTINCT {_PART_KEY}, key FROM offprompt_blob_refs WHERE {where}", params
        ).fetchall()
        if not keys:
            return 0
        conn.execute(f"DELETE FROM offprompt_blob_refs WHERE {where}", params)
        removed = 0
        for t, u, a, r, key in keys:
            removed += conn.execute(
                f"DELETE FROM offprompt_blobs WHERE {_P} AND key = ? AND NOT EXISTS"
                " (SELECT 1 FROM offprompt_blob_refs f WHERE f.tenant = ? AND f.user_id = ?"
                " AND f.agent = ? AND f.run = ? AND f.key = ?)",
                (t, u, a, r, key, t, u, a, r, key),
            ).rowcount
        return removed

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        where = f"{_P} AND session_id = ?"
        with self._write() as conn:
            deleted = conn.execute(
                f"DELETE FROM offprompt_messages WHERE {where}", (*part, session_id)
            ).rowcount
            conn.execute(f"DELETE FROM offprompt_state WHERE {where}", (*part, session_id))
            self._drop_refs(conn, where, (*part, session_id))
            # Keep the counter row: seqs are never reused, so cached readers notice.
            conn.execute(
                f"UPDATE offprompt_sessions SET epoch = epoch + 1, message_count = 0 WHERE {where}",
                (*part, session_id),
            )
        return int(deleted)

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        part = check_scope_session(session_id, scope)
        check_range(start, end)
        where = f"{_P} AND session_id = ? AND seq >= ? AND seq < ?"
        params = (
            *part,
            session_id,
            _MIN_SEQ if start is None else start,
            _MAX_SEQ if end is None else end,
        )
        with self._write() as conn:
            deleted = int(
                conn.execute(f"DELETE FROM offprompt_messages WHERE {where}", params).rowcount
            )
            if deleted:
                self._drop_refs(conn, where, params)
                conn.execute(
                    "UPDATE offprompt_sessions SET epoch = epoch + 1,"
                    f" message_count = message_count - ? WHERE {_P} AND session_id = ?",
                    (deleted, *part, session_id),
                )
        return deleted

    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        selected = check_selector(scope, all=all)
        where, params = _selector(selected)
        with self._write() as conn:
            sessions = conn.execute(
                f"SELECT count(*) FROM (SELECT DISTINCT {_PART_KEY}, session_id FROM"
                f" offprompt_messages WHERE {where} UNION SELECT DISTINCT {_PART_KEY},"
                f" session_id FROM offprompt_state WHERE {where})",
                (*params, *params),
            ).fetchone()[0]
            messages = conn.execute(
                f"DELETE FROM offprompt_messages WHERE {where}", params
            ).rowcount
            state = conn.execute(f"DELETE FROM offprompt_state WHERE {where}", params).rowcount
            blobs = self._drop_refs(conn, where, params)
            if selected.session is None:
                # Blobs live per partition; a partition-wide forget takes them all.
                blob_where, blob_params = _selector(selected.model_copy(update={"session": None}))
                blobs += conn.execute(
                    f"DELETE FROM offprompt_blobs WHERE {blob_where}", blob_params
                ).rowcount
            # The counter rows go too: a session id can itself identify the subject.
            conn.execute(f"DELETE FROM offprompt_sessions WHERE {where}", params)
            tasks, task_blobs = _tasks.run_on(conn.execute, _tasks.op_forget(selected))
        try:
            self.checkpoint()
        except StorageError as exc:
            raise StorageError(
                f"deleted {messages} messages, {state} state documents and {blobs} blobs, "
                f"but the deleted text may remain on disk: {exc}; run forget again once "
                "the reader has finished",
                path=str(self.path),
            ) from None
        return ForgetCounts(
            int(messages), int(state), int(sessions), int(blobs) + task_blobs, task_outputs=tasks
        )

    def blob_count(self, *, scope: Scope | None = None) -> int:

        where, params = _selector(as_scope(scope).model_copy(update={"session": None}))
        return int(self._query(f"SELECT count(*) FROM offprompt_blobs WHERE {where}", params)[0][0])

    def checkpoint(self, *, wait: float | None = None) -> None:
        """Move the WAL into the database file and truncate the WAL to zero bytes.

        After a delete, this leaves no copy of the deleted pages in ``-wal``. A read
        transaction open on another connection (another thread or process) keeps the
        WAL from being truncated: the checkpoint is retried until ``wait`` seconds have
        passed, and if a reader still holds it the call raises rather than return as if
        the WAL were clean.

        Args:
            wait: Seconds to keep retrying while readers hold the WAL (``None``:
                :data:`CHECKPOINT_WAIT`).

        Raises:
            StorageError: The WAL could not be truncated within ``wait`` seconds.
        """
        wait = CHECKPOINT_WAIT if wait is None else max(0.0, wait)
        conn = self._conn()
        deadline = time.monotonic() + wait
        try:
            # Short busy waits per attempt, so the whole call stays within ``wait``.
            conn.execute("PRAGMA busy_timeout = 100")
            while True:
                busy, wal_frames, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy == 0:
                    return
                if time.monotonic() >= deadline:
                    raise StorageError(
                        f"checkpoint of {self.path} stayed busy for {wait:g}s: another "
                        f"connection holds a read transaction, so {self.path.name}-wal "
                        f"({wal_frames} frames) still holds pages written or deleted since "
                        "the last checkpoint",
                        path=str(self.path),
                    )
                time.sleep(0.05)
        except sqlite3.Error as exc:
            raise StorageError(
                f"checkpoint of {self.path} failed: {exc}", path=str(self.path)
            ) from None
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")

    # -- state -----------------------------------------------------------------------
    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        rows = self._query(
            f"SELECT value FROM offprompt_state WHERE {_P} AND session_id = ? AND key = ?",
            (*part, session_id, key),
        )
        if not rows:
            return None
        value = rows[0][0]
        return value if isinstance(value, bytes) else json.loads(value)

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        text = value if type(value) is bytes else encode_state(value)
        with self._write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO offprompt_state ({_PART_KEY}, session_id, key, value)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*part, session_id, key, text),
            )

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        with self._write() as conn:
            conn.execute(
                f"DELETE FROM offprompt_state WHERE {_P} AND session_id = ? AND key = ?",
                (*part, session_id, key),
            )

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        if not isinstance(prefix, str):
            raise ValidationError(f"prefix must be a str, got {type(prefix).__name__}")
        # A key range: the primary key finds the prefix's keys without a scan.
        above = _after_prefix(prefix)
        rows = self._query(
            f"SELECT key FROM offprompt_state WHERE {_P} AND session_id = ? AND key >= ?"
            + ("" if above is None else " AND key < ?")
            + " AND substr(key, 1, ?) = ? ORDER BY key",
            (*part, session_id, prefix, *([] if above is None else [above]), len(prefix), prefix),
        )
        return [r[0] for r in rows]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (the store is then unusable)."""
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
            self._local = threading.local()
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
