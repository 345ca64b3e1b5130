"""The PostgreSQL store's operations, sans IO: each is a generator of SQL statements
that receives each one's rows or rowcount, so the sync and the async driver
(:mod:`offprompt.stores._pg_pool`) run the same ones and each SQL sequence is written
once. Also the input checks and the row mapping they need.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Generator, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import _tasks
from offprompt.stores._blobrefs import decode_cached, ref_keys
from offprompt.stores._pg_schema import PART_KEY
from offprompt.stores.base import (
    SCOPE_COLUMNS,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
)

# ReplayedBatch is left out: a signal between these operations and the drivers
# (_pg_pool), never raised to a caller, so not one of the library's exceptions.
__all__ = [
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "PgOp",
    "ResultT",
    "as_pg_op",
    "check_idempotency_key",
    "check_state_prefix",
    "op_append",
    "op_append_one",
    "op_batches",
    "op_blob_count",
    "op_count",
    "op_delete_range",
    "op_delete_session",
    "op_delete_state",
    "op_forget_scope",
    "op_get_state",
    "op_read",
    "op_read_index",
    "op_schema_version",
    "op_sessions",
    "op_set_state",
    "op_state_keys",
    "op_version",
    "residue_of",
    "single_statement",
    "whole_range",
    "with_residue",
]

MAX_IDEMPOTENCY_KEY_LENGTH = 256
_MIN_SEQ = -(2**63)
_MAX_SEQ = 2**63 - 1
#: ``WHERE`` fragment of one exact partition; parameters come from ``Scope.partition()``.
_P = "tenant = %s AND user_id = %s AND agent = %s AND run = %s"

ResultT = TypeVar("ResultT")


#: One statement of an operation, and what the operation wants back from it (the task
#: operations' statement type: the same three fields, ``%s`` placeholders here).
_Q = _tasks.Stmt


#: An operation: a generator of statements that receives each one's rows or rowcount.
#: The sync and the async driver run the same operations, so each SQL sequence is
#: written once.
PgOp = Generator[_Q, Any, ResultT]


class ReplayedBatch(Exception):
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


def check_idempotency_key(key: Any) -> str | None:
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


def _insert_messages(first: str, batch: str, source: str = "") -> str:
    """The ``INSERT`` of a batch's messages, numbered from ``first`` (SQL), with ``batch``
    (SQL) as their idempotency key; ``source`` adds a relation to ``FROM`` (the CTE the
    numbering comes from).

    The arrays go in binary (``%b``): psycopg dumps a text-format array by escaping every
    element with a regex, which made that dump most of an append's time (bodies are long).
    """
    return (
        f"INSERT INTO offprompt_messages ({PART_KEY}, session_id, seq, role, tokens,"
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
    f" ({PART_KEY}, session_id, next_seq, epoch, message_count, last_activity)"
    " VALUES (%s, %s, %s, %s, %s, %s, 0, %s, %s)"
    f" ON CONFLICT ({PART_KEY}, session_id) DO UPDATE SET"
    " next_seq = s.next_seq + EXCLUDED.next_seq,"
    " message_count = s.message_count + EXCLUDED.message_count,"
    " last_activity = EXCLUDED.last_activity"
    " RETURNING s.next_seq - %s AS first"
)


#: An append without idempotency key or images, as one statement: autocommit makes it
#: its own transaction (no BEGIN/COMMIT round trips). The upsert locks the session's
#: counter row first, exactly as in :func:`op_append`, and the insert takes its seqs
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


def op_append_one(
    part: tuple[str, str, str, str],
    session_id: str,
    items: list[Message],
    counts: list[int],
    encoded: list[tuple[str, dict[str, bytes]]],
) -> PgOp[list[int]]:
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


def op_append(
    part: tuple[str, str, str, str],
    session_id: str,
    items: list[Message],
    counts: list[int],
    encoded: list[tuple[str, dict[str, bytes]]],
    *,
    key: str | None,
) -> PgOp[list[int]]:
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
            raise ReplayedBatch(list(range(done_first, done_first + n)))
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
            f"INSERT INTO offprompt_blobs ({PART_KEY}, key, data)"
            " SELECT %s, %s, %s, %s, k, d FROM unnest(%b::text[], %b::bytea[]) AS t(k, d)"
            f" ON CONFLICT ({PART_KEY}, key) DO UPDATE SET key = EXCLUDED.key",
            (*part, list(blobs), list(blobs.values())),
            "rowcount",
        )
        refs = [(first + i, k) for i, (_, found_blobs) in enumerate(encoded) for k in found_blobs]
        yield _Q(
            f"INSERT INTO offprompt_blob_refs ({PART_KEY}, session_id, seq, key)"
            " SELECT %s, %s, %s, %s, %s, s, k FROM unnest(%s::bigint[], %s::text[]) AS t(s, k)"
            " ON CONFLICT DO NOTHING",
            (*part, session_id, [s for s, _ in refs], [k for _, k in refs]),
            "rowcount",
        )
    if key is not None:
        yield _Q(
            f"INSERT INTO offprompt_batches ({PART_KEY}, session_id, key, first_seq, size,"
            " committed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (*part, session_id, key, first, n, now),
            "rowcount",
        )
    return list(range(first, first + n))


def single_statement(prepared: tuple[Any, ...]) -> bool:
    """Whether an append can be :data:`_APPEND_ONE`: no idempotency key, no images."""
    encoded: list[tuple[str, dict[str, bytes]]] = prepared[4]
    return prepared[5] is None and not any(blobs for _, blobs in encoded)


def op_read(
    part: tuple[str, str, str, str], session_id: str, ranges: Sequence[tuple[int, int]]
) -> PgOp[list[StoredMessage]]:
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


def whole_range(start: int | None, end: int | None) -> list[tuple[int, int]]:
    """The one range ``start <= seq < end`` (open bounds when ``None``)."""
    return [(_MIN_SEQ if start is None else start, _MAX_SEQ if end is None else end)]


def op_read_index(
    part: tuple[str, str, str, str], session_id: str, start: int | None
) -> PgOp[list[IndexEntry]]:
    rows = yield _Q(
        "SELECT seq, tokens, role, appended_at FROM offprompt_messages"
        f" WHERE {_P} AND session_id = %s AND seq >= %s ORDER BY seq",
        (*part, session_id, _MIN_SEQ if start is None else start),
    )
    return [IndexEntry(int(seq), int(tokens), role, at) for seq, tokens, role, at in rows]


def op_version(part: tuple[str, str, str, str], session_id: str) -> PgOp[SessionVersion]:
    rows = yield _Q(
        f"SELECT next_seq, epoch FROM offprompt_sessions WHERE {_P} AND session_id = %s",
        (*part, session_id),
    )
    return SessionVersion(int(rows[0][0]), int(rows[0][1])) if rows else SessionVersion(0, 0)


def op_count(part: tuple[str, str, str, str], session_id: str) -> PgOp[int]:
    rows = yield _Q(
        f"SELECT message_count FROM offprompt_sessions WHERE {_P} AND session_id = %s",
        (*part, session_id),
    )
    return int(rows[0][0]) if rows else 0


def op_sessions(scope: Scope) -> PgOp[list[SessionInfo]]:
    where, params = _selector(scope)
    rows = yield _Q(
        f"SELECT * FROM (SELECT {PART_KEY}, session_id, message_count, last_activity"
        f" FROM offprompt_sessions WHERE message_count > 0 AND {where} UNION"
        f" SELECT d.tenant, d.user_id, d.agent, d.run, d.session_id,"
        " coalesce(s.message_count, 0), s.last_activity"
        f" FROM (SELECT DISTINCT {PART_KEY}, session_id FROM offprompt_state WHERE {where}) d"
        f" LEFT JOIN offprompt_sessions s USING ({PART_KEY}, session_id)) AS listed"
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


def _op_drop_refs(where: str, params: Sequence[Any]) -> PgOp[int]:
    """Delete blob refs matching ``where``, then the blobs nothing references any more."""
    gone = yield _Q(
        f"DELETE FROM offprompt_blob_refs WHERE {where} RETURNING {PART_KEY}, key", params
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
        f"SELECT 1 FROM offprompt_blobs b WHERE ({PART_KEY}, key) IN"
        f" (SELECT tenant, user_id, agent, run, key {candidates}) FOR UPDATE",
        columns,
    )
    removed = yield _Q(
        f"DELETE FROM offprompt_blobs b WHERE ({PART_KEY}, key) IN"
        f" (SELECT tenant, user_id, agent, run, key {candidates})"
        " AND NOT EXISTS (SELECT 1 FROM offprompt_blob_refs f WHERE f.tenant = b.tenant"
        " AND f.user_id = b.user_id AND f.agent = b.agent AND f.run = b.run AND f.key = b.key)",
        columns,
        "rowcount",
    )
    return int(removed)


def _op_lock_session(part: tuple[str, str, str, str], session_id: str) -> PgOp[None]:
    # Taken before a delete, so a concurrent append either committed (and its rows are
    # deleted and counted) or waits and lands after the delete.
    yield _Q(
        f"SELECT 1 FROM offprompt_sessions WHERE {_P} AND session_id = %s FOR UPDATE",
        (*part, session_id),
    )


def op_delete_session(part: tuple[str, str, str, str], session_id: str) -> PgOp[int]:
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


def op_delete_range(
    part: tuple[str, str, str, str], session_id: str, start: int | None, end: int | None
) -> PgOp[int]:
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


def op_forget_scope(selected: Scope) -> PgOp[ForgetCounts]:
    where, params = _selector(selected)
    in_sessions, _ = _selector(selected, table="s")
    # Every message row has its session's counter row (the append that writes the one
    # writes the other, and only a forget removes a counter row, after its messages),
    # so a scope's messages are reached through the counter rows: the sessions table
    # has a user_id index, the messages table only its primary key.
    of_session = " AND ".join(f"m.{c} = s.{c}" for c in (*PART_KEY.split(", "), "session_id"))
    rows = yield _Q(
        f"SELECT count(*) FROM (SELECT {PART_KEY}, session_id FROM offprompt_sessions s"
        f" WHERE {in_sessions} AND EXISTS (SELECT 1 FROM offprompt_messages m"
        f" WHERE {of_session}) UNION SELECT {PART_KEY}, session_id FROM offprompt_state"
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
    tasks, task_blobs = yield from as_pg_op(_tasks.op_forget(selected, parts=True))
    return ForgetCounts(
        int(messages), int(state), int(rows[0][0]), int(blobs) + task_blobs, task_outputs=tasks
    )


def as_pg_op(op: _tasks.Op[ResultT]) -> PgOp[ResultT]:
    """A task operation (``?`` placeholders) as one of this module's operations."""
    try:
        stmt = next(op)
        while True:
            result = yield _Q(stmt.sql.replace("?", "%s"), stmt.params, stmt.fetch, stmt.binary)
            stmt = op.send(result)
    except StopIteration as stop:
        done: ResultT = stop.value
        return done


def op_get_state(part: tuple[str, str, str, str], session_id: str, key: str) -> PgOp[Any]:
    rows = yield _Q(
        f"SELECT value FROM offprompt_state WHERE {_P} AND session_id = %s AND key = %s",
        (*part, session_id, key),
    )
    return json.loads(rows[0][0]) if rows else None


def op_set_state(
    part: tuple[str, str, str, str], session_id: str, key: str, text: str
) -> PgOp[None]:
    yield _Q(
        f"INSERT INTO offprompt_state ({PART_KEY}, session_id, key, value)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)"
        f" ON CONFLICT ({PART_KEY}, session_id, key) DO UPDATE SET value = EXCLUDED.value",
        (*part, session_id, key, text),
        "rowcount",
    )


def op_delete_state(part: tuple[str, str, str, str], session_id: str, key: str) -> PgOp[None]:
    yield _Q(
        f"DELETE FROM offprompt_state WHERE {_P} AND session_id = %s AND key = %s",
        (*part, session_id, key),
        "rowcount",
    )


def op_state_keys(part: tuple[str, str, str, str], session_id: str, prefix: str) -> PgOp[list[str]]:
    rows = yield _Q(
        f"SELECT key FROM offprompt_state WHERE {_P} AND session_id = %s"
        ' AND left(key, %s) = %s ORDER BY key COLLATE "C"',
        (*part, session_id, len(prefix), prefix),
    )
    return [r[0] for r in rows]


def op_blob_count(scope: Scope) -> PgOp[int]:
    where, params = _selector(scope.model_copy(update={"session": None}))
    rows = yield _Q(f"SELECT count(*) FROM offprompt_blobs WHERE {where}", params)
    return int(rows[0][0])


def op_batches(part: tuple[str, str, str, str], session_id: str) -> PgOp[dict[str, list[int]]]:
    rows = yield _Q(
        "SELECT key, first_seq, size FROM offprompt_batches"
        f" WHERE {_P} AND session_id = %s ORDER BY first_seq",
        (*part, session_id),
    )
    return {key: list(range(int(first), int(first) + int(size))) for key, first, size in rows}


def residue_of(vacuumed: bool) -> tuple[str, ...]:
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


def op_schema_version() -> PgOp[int]:
    rows = yield _Q("SELECT coalesce(max(version), 0) FROM offprompt_schema_version")
    return int(rows[0][0])


def check_state_prefix(prefix: Any) -> None:
    if not isinstance(prefix, str):
        raise ValidationError(f"prefix must be a str, got {type(prefix).__name__}")


def with_residue(counts: ForgetCounts, vacuumed: bool) -> ForgetCounts:
    return dataclasses.replace(counts, residue=residue_of(vacuumed))
