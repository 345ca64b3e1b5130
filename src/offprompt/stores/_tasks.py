"""The task-output tables of the SQL stores: one copy of the SQL, for SQLite and PostgreSQL.

A stored tool output (``TaskMemory``) is a namespace's metadata document (JSON, with
a version that every commit bumps) and the raw bytes it refers to (content-addressed
blobs). Rows carry the scope partition plus the session, like every other table::

    offprompt_tasks       <partition>, session_id, namespace, version, meta (JSON), updated_at
    offprompt_task_blobs  <partition>, session_id, namespace, key (sha256), data

Commit protocol: the blobs are written first (each write is its own transaction); the
metadata row is written last, and only if its version is still the one the writer read
(``expect``), and only if every blob it refers to is there, in one transaction. So a
namespace is absent or whole for every reader, and two writers of one namespace never
lose each other's artifacts: the second gets a conflict and merges.

The operations are generators of :class:`Stmt` (``?`` placeholders) that receive each
statement's rows or rowcount; ``SQLiteStore`` runs them on its connection and
``PostgresStore`` through its pool (``?`` becomes ``%s``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from offprompt.errors import NotFoundError, ValidationError
from offprompt.names import validate_namespace
from offprompt.scope import Scope, as_scope
from offprompt.stores.base import SCOPE_COLUMNS, TaskRecord

__all__ = ["TASK_DDL", "Stmt", "task_part"]

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


def content_key(data: bytes) -> str:
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


def op_commit(
    part: Part, namespace: str, meta: str, expect: int | None, blobs: Sequence[str], now: float
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


def op_delete(part: Part, namespace: str) -> Op[TaskRecord | None]:
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


def op_delete_blob(part: Part, namespace: str, key: str | None) -> Op[int]:
    if key is None:
        n = yield Stmt(
            f"DELETE FROM offprompt_task_blobs WHERE {_TP} AND namespace = ?",
            (*part, namespace),
            "rowcount",
        )
    else:
        n = yield Stmt(
            f"DELETE FROM offprompt_task_blobs WHERE {_TP} AND namespace = ? AND key = ?",
            (*part, namespace, key),
            "rowcount",
        )
    return int(n)


def _selector(scope: Scope) -> tuple[str, list[str]]:
    fields = scope.fields()
    if not fields:
        return "1 = 1", []
    return " AND ".join(f"{SCOPE_COLUMNS[f]} = ?" for f in fields), list(fields.values())


def op_forget(selected: Scope) -> Op[tuple[int, int]]:
    """Delete the task outputs and their blobs of every partition ``selected`` selects."""
    where, params = _selector(selected)
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
