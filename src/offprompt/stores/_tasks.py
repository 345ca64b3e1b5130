"""The task-output tables of the SQL stores: one copy of the SQL, for SQLite and PostgreSQL.

A stored tool output (``TaskMemory``) is a namespace's metadata document (JSON, with
a version that every commit bumps) and the raw bytes it refers to (content-addressed
blobs). Rows carry the scope partition plus the session, like every other table::

    offprompt_tasks       <partition>, session_id, namespace, version, meta (JSON), updated_at
    offprompt_task_blobs  <partition>, session_id, namespace, key (sha256), data
    offprompt_task_parts  <partition>, session_id, namespace, upload, part, data, stored_at
                          (PostgreSQL only, schema 6)

PostgreSQL splits a large output's bytes into part rows (:data:`PART_BYTES` each) that
several connections write at once, each part its own transaction, under an upload id
of the writer's own; the blob's row in ``offprompt_task_blobs`` (``upload``, ``parts``,
``size``, empty ``data``) is written after every part, in a transaction that locks the
parts and checks them all there, so a blob row exists only for a whole blob. Parts of an
upload that never got its blob row (a writer killed or cut off) are garbage: the next
commit deletes those older than a grace period (:func:`op_collect_parts`). Deletes
remove parts before blob rows, in the order the blob row's transaction locks them.
SQLite keeps one row per blob (``parts`` stays 0): it has one writer at a time and no
TOAST, so there is nothing to write in parallel.

Commit protocol: the blobs are written first (each write is its own transaction); the
metadata row is written last, and only if its version is still the one the writer read
(``expect``), and only if every blob it refers to is there, in one transaction. So a
namespace is absent or whole for every reader, and two writers of one namespace never
lose each other's artifacts: the second gets a conflict and merges.

Deletes racing commits (issue 41): a blob that the namespace's committed metadata refers
to is never deleted by a blob delete (:func:`op_delete_blob` with ``referenced``), and
that check, every commit's blob check and a namespace's delete are exclusive with each
other for one namespace, across processes and hosts: SQLite runs every write in ``BEGIN
IMMEDIATE`` (one writer at a time), PostgreSQL's operations start with an advisory
transaction lock on the namespace (:func:`op_locked`). An in-flight upload's parts (no
blob row yet) are left to their writer, and to :func:`op_collect_parts` if it died.

The operations are generators of :class:`Stmt` (``?`` placeholders) that receive each
statement's rows or rowcount; ``SQLiteStore`` runs them on its connection and
``PostgresStore`` through its pool (``?`` becomes ``%s``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from offprompt.errors import NotFoundError, ValidationError
from offprompt.names import validate_namespace
from offprompt.scope import Scope, as_scope
from offprompt.stores.base import SCOPE_COLUMNS, TaskRecord

__all__ = ["PARTS_DDL", "TASK_DDL", "Stmt", "task_part"]

_T = TypeVar("_T")
TASK_KEY = "tenant, user_id, agent, run, session_id"
_TP = "tenant = ? AND user_id = ? AND agent = ? AND run = ? AND session_id = ?"
Part = tuple[str, str, str, str, str]


def TASK_DDL(blob_type: str) -> tuple[str, ...]:
    """The two tables, with the dialect's binary type (``BLOB`` / ``bytea``)."""
    cols = (
        "tenant TEXT NOT NULL DEFAULT '', user_id TEXT NOT NULL DEFAULT '',"
        " agent TEXT NOT NULL DEFAULT '', run TEXT NOT NULL DEFAULT '',"
        " session_id TEXT NOT NULL DEFAULT '', namespace TEXT NOT NULL"
    )
    return (
        f"CREATE TABLE offprompt_tasks ({cols}, version BIGINT NOT NULL, meta TEXT NOT NULL,"
        f" updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY ({TASK_KEY}, namespace))",
        "CREATE INDEX offprompt_tasks_user ON offprompt_tasks (user_id)",
        f"CREATE TABLE offprompt_task_blobs ({cols}, key TEXT NOT NULL,"
        f" data {blob_type} NOT NULL, PRIMARY KEY ({TASK_KEY}, namespace, key))",
        "CREATE INDEX offprompt_task_blobs_user ON offprompt_task_blobs (user_id)",
    )


#: PostgreSQL schema 6: the part rows, and the columns of a blob row that points to them.
PARTS_DDL = (
    "CREATE TABLE offprompt_task_parts (tenant TEXT NOT NULL DEFAULT '',"
    " user_id TEXT NOT NULL DEFAULT '', agent TEXT NOT NULL DEFAULT '',"
    " run TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '',"
    " namespace TEXT NOT NULL, upload TEXT NOT NULL, part INTEGER NOT NULL,"
    " data BYTEA NOT NULL,"
    " stored_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp()),"
    f" PRIMARY KEY ({TASK_KEY}, namespace, upload, part))",
    "CREATE INDEX offprompt_task_parts_user ON offprompt_task_parts (user_id)",
    "ALTER TABLE offprompt_task_parts ALTER COLUMN data SET STORAGE EXTERNAL",
    "ALTER TABLE offprompt_task_blobs ADD COLUMN upload TEXT,"
    " ADD COLUMN parts INTEGER NOT NULL DEFAULT 0, ADD COLUMN size BIGINT",
)
#: Bytes per part row (PostgreSQL): a blob larger than this is split.
PART_BYTES = 4 << 20


@dataclass(frozen=True)
class Stmt:
    """One statement of an operation and what the operation wants back (its rows or
    its rowcount); ``PostgresStore``'s operations use it too, as ``_Q``. ``binary``:
    ask for the rows in binary (PostgreSQL: a ``bytea`` of 50 MB comes as 50 MB, not
    as 100 MB of hex text to parse; SQLite has one format)."""

    sql: str
    params: Sequence[Any] = ()
    fetch: Literal["rows", "rowcount"] = "rows"
    binary: bool = False


Op = Generator[Stmt, Any, _T]


def task_part(namespace: str, scope: Scope | None) -> Part:
    """The row key of ``scope``: ``(tenant, user, agent, run, session)``, ``""`` unset."""
    validate_namespace(namespace)
    resolved = as_scope(scope)
    tenant, user, agent, run = resolved.partition()
    return (tenant, user, agent, run, resolved.session or "")


def list_part(scope: Scope | None) -> Part:
    resolved = as_scope(scope)
    tenant, user, agent, run = resolved.partition()
    return (tenant, user, agent, run, resolved.session or "")


def content_key(data: bytes | bytearray | memoryview) -> str:
    """The content address of ``data`` (SHA-256 hex, as the blob stores use)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
    return hashlib.sha256(data).hexdigest()


def check_meta(meta: Any) -> str:
    if not isinstance(meta, dict):
        raise ValidationError(f"task metadata must be a dict, got {type(meta).__name__}")
    return json.dumps(meta, ensure_ascii=False)


def op_get(part: Part, namespace: str) -> Op[TaskRecord | None]:
    rows = yield Stmt(
        f"SELECT version, meta FROM offprompt_tasks WHERE {_TP} AND namespace = ?",
        (*part, namespace),
    )
    return TaskRecord(namespace, json.loads(rows[0][1]), int(rows[0][0])) if rows else None


def op_list(part: Part) -> Op[list[TaskRecord]]:
    rows = yield Stmt(
        f"SELECT namespace, version, meta FROM offprompt_tasks WHERE {_TP} ORDER BY namespace",
        part,
    )
    return [TaskRecord(str(ns), json.loads(meta), int(v)) for ns, v, meta in rows]


def op_locked(part: Part, namespace: str, op: Op[_T]) -> Op[_T]:
    """``op`` after a PostgreSQL advisory lock on the namespace, held to the end of the
    transaction: the operations that must not interleave for one namespace (commit,
    delete, guarded blob delete) take it first. SQLite needs none: its writes are
    serial."""
    name = json.dumps([*part, namespace], ensure_ascii=False)
    yield Stmt("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (name,))
    return (yield from op)


def op_commit(
    part: Part, namespace: str, meta: str, *, expect: int | None, blobs: Sequence[str], now: float
) -> Op[int | None]:
    """Write the metadata if its version is still ``expect`` (None: it must not exist)."""
    if expect is None:
        done = yield Stmt(
            f"INSERT INTO offprompt_tasks ({TASK_KEY}, namespace, version, meta, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING",
            (*part, namespace, meta, now),
            "rowcount",
        )
        version = 1
    else:
        done = yield Stmt(
            "UPDATE offprompt_tasks SET version = version + 1, meta = ?, updated_at = ?"
            f" WHERE {_TP} AND namespace = ? AND version = ?",
            (meta, now, *part, namespace, expect),
            "rowcount",
        )
        version = expect + 1
    if not done:
        return None
    wanted = sorted(set(blobs))
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        rows = yield Stmt(
            f"SELECT key FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?"
            f" AND key IN ({', '.join('?' * len(chunk))})",
            (*part, namespace, *chunk),
        )
        found = {r[0] for r in rows}
        if len(found) != len(chunk):
            # Raised inside the transaction, so the runner rolls the write back.
            missing = ", ".join(k for k in chunk if k not in found)
            raise NotFoundError(
                f"namespace {namespace!r}: task blobs not stored (deleted meanwhile?): {missing}",
                namespace=namespace,
            )
    return version


def _delete_parts(part: Part, namespace: str, key: str | None = None) -> Stmt:
    """Delete the part rows of the namespace's blob rows (of blob ``key`` only, when
    given): before the blob rows, the order in which a blob row's transaction locks them.
    Parts of an upload with no blob row yet are a writer's in flight: left to it (a delete
    racing a store must not fail the store), and collected by :func:`op_collect_parts`
    once they are older than the grace period if their writer died."""
    only = "" if key is None else " AND key = ?"
    return Stmt(
        f"DELETE FROM offprompt_task_parts WHERE {_TP} AND namespace = ? AND upload IN"
        f" (SELECT upload FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?{only})",
        (*part, namespace, *part, namespace, *(() if key is None else (key,))),
        "rowcount",
    )


def op_delete(part: Part, namespace: str, *, parts: bool = False) -> Op[TaskRecord | None]:
    """Delete a namespace: its metadata and blobs (``parts``: and part rows, PostgreSQL)."""
    if parts:
        yield _delete_parts(part, namespace)
    found = yield from op_get(part, namespace)
    yield Stmt(
        f"DELETE FROM offprompt_tasks WHERE {_TP} AND namespace = ?", (*part, namespace), "rowcount"
    )
    yield Stmt(
        f"DELETE FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?",
        (*part, namespace),
        "rowcount",
    )
    return found


def op_put_blob(part: Part, namespace: str, key: str, data: bytes) -> Op[None]:
    yield Stmt(
        f"INSERT INTO offprompt_task_blobs ({TASK_KEY}, namespace, key, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (*part, namespace, key, data),
        "rowcount",
    )


def op_put_part(
    part: Part, namespace: str, upload: str, index: int, data: bytes | memoryview
) -> Op[None]:
    """Write part ``index`` of upload ``upload`` (PostgreSQL; its own transaction)."""
    yield Stmt(
        f"INSERT INTO offprompt_task_parts ({TASK_KEY}, namespace, upload, part, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*part, namespace, upload, index, data),
        "rowcount",
    )


def op_seal_parts(
    part: Part, namespace: str, key: str, *, upload: str, count: int, size: int
) -> Op[bool]:
    """Write the blob row of an upload whose ``count`` parts are stored, in one
    transaction; False if the blob was stored already (this upload's parts are dropped).

    The ``UPDATE`` locks the parts (a concurrent delete or collection waits, and then
    finds them fresh) and says which are there: all of them, or nothing is written.
    """
    rows = yield Stmt(
        "UPDATE offprompt_task_parts SET stored_at = extract(epoch FROM clock_timestamp())"
        f" WHERE {_TP} AND namespace = ? AND upload = ? RETURNING part, octet_length(data)",
        (*part, namespace, upload),
    )
    if (
        sorted(int(r[0]) for r in rows) != list(range(count))
        or sum(int(r[1]) for r in rows) != size
    ):
        # Raised inside the transaction, so the runner rolls it back.
        raise NotFoundError(
            f"namespace {namespace!r}: {count - len(rows)} of the {count} parts of blob {key}"
            " are gone before it was complete (deleted meanwhile?)",
            namespace=namespace,
        )
    done = yield Stmt(
        f"INSERT INTO offprompt_task_blobs ({TASK_KEY}, namespace, key, data, upload, parts,"
        " size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (*part, namespace, key, b"", upload, count, size),
        "rowcount",
    )
    if not done:
        yield Stmt(
            f"DELETE FROM offprompt_task_parts WHERE {_TP} AND namespace = ? AND upload = ?",
            (*part, namespace, upload),
            "rowcount",
        )
    return bool(done)


def op_drop_upload(part: Part, namespace: str, upload: str) -> Op[int]:
    """Delete the parts of an upload that failed (its writer cleans up after itself)."""
    n = yield Stmt(
        f"DELETE FROM offprompt_task_parts WHERE {_TP} AND namespace = ? AND upload = ?"
        f" AND NOT EXISTS (SELECT 1 FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?"
        " AND upload = ?)",
        (*part, namespace, upload, *part, namespace, upload),
        "rowcount",
    )
    return int(n)


def op_get_head(part: Part, namespace: str, key: str) -> Op[tuple[str, int, int, bytes] | None]:
    """A blob row (PostgreSQL): ``(upload, parts, size, data)``; ``data`` is the bytes when
    ``parts`` is 0 (one row, as schema 5 wrote every blob), else empty."""
    rows = yield Stmt(
        "SELECT coalesce(upload, ''), parts, coalesce(size, 0), data FROM offprompt_task_blobs"
        f" WHERE {_TP} AND namespace = ? AND key = ?",
        (*part, namespace, key),
        binary=True,
    )
    if not rows:
        return None
    upload, count, size, data = rows[0]
    return str(upload), int(count), int(size), bytes(data)


def op_get_parts(
    part: Part, namespace: str, upload: str, indexes: Sequence[int]
) -> Op[dict[int, bytes]]:
    """Parts ``indexes`` of an upload, by index (those still there)."""
    rows = yield Stmt(
        "SELECT part, data FROM offprompt_task_parts"
        f" WHERE {_TP} AND namespace = ? AND upload = ? AND part = ANY(?)",
        (*part, namespace, upload, list(indexes)),
        binary=True,
    )
    return {int(i): bytes(d) for i, d in rows}


def op_collect_parts(grace: float) -> Op[int]:
    """Delete the parts, older than ``grace`` seconds (the server's clock), of uploads
    that have no blob row: what writers killed or cut off mid-store left."""
    n = yield Stmt(
        "DELETE FROM offprompt_task_parts p"
        " WHERE p.stored_at < extract(epoch FROM clock_timestamp()) - ?"
        " AND NOT EXISTS (SELECT 1 FROM offprompt_task_blobs b WHERE b.tenant = p.tenant"
        " AND b.user_id = p.user_id AND b.agent = p.agent AND b.run = p.run"
        " AND b.session_id = p.session_id AND b.namespace = p.namespace"
        " AND b.upload = p.upload)",
        (grace,),
        "rowcount",
    )
    return int(n)


def op_get_blob(part: Part, namespace: str, key: str) -> Op[bytes | None]:
    rows = yield Stmt(
        f"SELECT data FROM offprompt_task_blobs WHERE {_TP} AND namespace = ? AND key = ?",
        (*part, namespace, key),
        binary=True,
    )
    return bytes(rows[0][0]) if rows else None


def op_blob_keys(part: Part, namespace: str) -> Op[list[str]]:
    rows = yield Stmt(
        f"SELECT key FROM offprompt_task_blobs WHERE {_TP} AND namespace = ? ORDER BY key",
        (*part, namespace),
    )
    return [str(r[0]) for r in rows]


def op_delete_blob(
    part: Part,
    namespace: str,
    key: str | None,
    *,
    parts: bool = False,
    referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
) -> Op[int]:
    """Delete blob ``key`` (every blob of the namespace when None); with ``referenced``
    (the keys a committed metadata document refers to), never a blob the namespace's
    committed metadata refers to, read in the same transaction."""
    keep: set[str] = set()
    if referenced is not None:
        found = yield from op_get(part, namespace)
        if found is not None:
            keep = set(referenced(found.meta))
    if key is not None and key in keep:
        return 0
    if key is not None:
        doomed: list[str] | None = [key]
    elif keep:
        doomed = [k for k in (yield from op_blob_keys(part, namespace)) if k not in keep]
    else:
        doomed = None  # all of them
    if doomed is None:
        if parts:
            yield _delete_parts(part, namespace)
        n = yield Stmt(
            f"DELETE FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?",
            (*part, namespace),
            "rowcount",
        )
        return int(n)
    removed = 0
    for one in doomed:
        if parts:
            yield _delete_parts(part, namespace, one)
        n = yield Stmt(
            f"DELETE FROM offprompt_task_blobs WHERE {_TP} AND namespace = ? AND key = ?",
            (*part, namespace, one),
            "rowcount",
        )
        removed += int(n)
    return removed


def _selector(scope: Scope) -> tuple[str, list[str]]:
    fields = scope.fields()
    if not fields:
        return "1 = 1", []
    return " AND ".join(f"{SCOPE_COLUMNS[f]} = ?" for f in fields), list(fields.values())


def op_forget(selected: Scope, *, parts: bool = False) -> Op[tuple[int, int]]:
    """Delete the task outputs and their blobs of every partition ``selected`` selects
    (``parts``: their part rows too, PostgreSQL)."""
    where, params = _selector(selected)
    if parts:
        yield Stmt(f"DELETE FROM offprompt_task_parts WHERE {where}", params, "rowcount")
    tasks = yield Stmt(f"DELETE FROM offprompt_tasks WHERE {where}", params, "rowcount")
    blobs = yield Stmt(f"DELETE FROM offprompt_task_blobs WHERE {where}", params, "rowcount")
    return int(tasks), int(blobs)


def run_on(execute: Any, op: Op[_T]) -> _T:
    """Run ``op`` with ``execute(sql, params) -> cursor`` (a SQLite connection's)."""
    try:
        stmt = next(op)
        while True:
            cur = execute(stmt.sql, stmt.params)
            stmt = op.send(cur.fetchall() if stmt.fetch == "rows" else cur.rowcount)
    except StopIteration as stop:
        result: _T = stop.value
        return result
