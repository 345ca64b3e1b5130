"""``InMemoryStore``: the process-local store, for tests and short-lived sessions."""

from __future__ import annotations

import bisect
import copy
import json
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from offprompt._validation import lone_surrogate_error
from offprompt.artifacts import BaseArtifact
from offprompt.errors import NotFoundError, SerializationError
from offprompt.messages import Message
from offprompt.scope import PARTITION_FIELDS, Scope, as_scope
from offprompt.stores import _tasks
from offprompt.stores.base import (
    BaseTaskStore,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    TaskRecord,
    check_range,
    check_scope_session,
    check_selector,
    check_state,
    encode_state,
)

_Key = tuple[tuple[str, str, str, str], str]

__all__ = ["InMemoryStore"]


_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def _copy_value(value: Any) -> Any:
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, BaseArtifact):
        return _copy_artifact(value)
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    return copy.deepcopy(value)


def _copy_artifact(part: BaseArtifact) -> BaseArtifact:
    if isinstance(part.value, str):  # a value mutated after validation, as the other stores
        error = lone_surrogate_error(part.value, what=f"{type(part).__name__}.value")
        if error is not None:
            raise SerializationError(f"message part cannot be stored: {error}")
    return part.model_copy(
        update={"value": _copy_value(part.value), "meta": copy.deepcopy(part.meta)}
    )


def _copy_message(message: Message) -> Message:
    """An independent copy: mutating it (or the original) never reaches the other.

    Strings and bytes are shared (immutable); every list, dict and model is new. About
    five times cheaper than ``model_copy(deep=True)``, which matters on every read.
    """
    return message.model_copy(
        update={
            "content": [_copy_artifact(p) for p in message.content],
            "tool_calls": [
                t.model_copy(update={"arguments": copy.deepcopy(t.arguments)})
                for t in message.tool_calls
            ],
            "meta": copy.deepcopy(message.meta),
        }
    )


def _copy_row(row: StoredMessage) -> StoredMessage:
    return StoredMessage(row.session_id, row.seq, _copy_message(row.message), row.tokens)


@dataclass
class _Session:
    seqs: list[int] = field(default_factory=list)
    rows: list[StoredMessage] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    next_seq: int = 0
    epoch: int = 0
    last_activity: datetime | None = None
    state: dict[str, str] = field(default_factory=dict)

    def bounds(self, start: int | None, end: int | None) -> tuple[int, int]:
        lo = 0 if start is None else bisect.bisect_left(self.seqs, start)
        hi = len(self.seqs) if end is None else bisect.bisect_left(self.seqs, end)
        return lo, max(lo, hi)


class InMemoryStore(BaseTaskStore):
    """A :class:`~offprompt.stores.ConversationStore` held in this process's memory.

    Thread-safe. Like the durable stores, it keeps values, not the caller's objects:
    ``append`` stores a copy of each message and ``read`` returns fresh copies, so
    mutating a message on either side never rewrites history or leaves a stored token
    count stale. State values are stored as JSON text, so ``get_state`` returns a fresh
    copy too.

    Example:
        >>> store = InMemoryStore()
        >>> store.append("s", [Message.user("hi")], [4])
        [0]
        >>> [m.message.text for m in store.read("s")]
        ['hi']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Keyed by (scope partition, session id): partitions never share a session.
        self._sessions: dict[_Key, _Session] = {}
        # Task outputs: (partition + session, namespace) -> (version, meta JSON) / blobs.
        self._tasks: dict[tuple[_tasks.Part, str], tuple[int, str]] = {}
        self._task_blobs: dict[tuple[_tasks.Part, str], dict[str, bytes]] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"InMemoryStore(sessions={len(self._sessions)})"

    def _get(self, session_id: str, scope: Scope | None) -> _Session | None:
        return self._sessions.get((check_scope_session(session_id, scope), session_id))

    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        part = check_scope_session(session_id, scope)
        copies = [_copy_message(m) for m in messages]
        now = time.time()
        with self._lock:
            session = self._sessions.setdefault((part, session_id), _Session())
            first = session.next_seq
            seqs = list(range(first, first + len(copies)))
            session.seqs.extend(seqs)
            session.rows.extend(
                StoredMessage(session_id, seq, message, count)
                for seq, message, count in zip(seqs, copies, tokens, strict=True)
            )
            session.roles.extend(message.role for message in copies)
            session.times.extend(now for _ in copies)
            session.next_seq += len(copies)
            if copies:
                session.last_activity = datetime.now(timezone.utc)
            return seqs

    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        with self._lock:
            session = self._get(session_id, scope)
            if session is None:
                return []
            lo, hi = session.bounds(start, end)
            rows = session.rows[lo:hi]
        return [_copy_row(row) for row in rows]

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        check_range(start, None)
        with self._lock:
            session = self._get(session_id, scope)
            if session is None:
                return []
            lo, hi = session.bounds(start, None)
            return [
                IndexEntry(row.seq, row.tokens, role, at)
                for row, role, at in zip(
                    session.rows[lo:hi], session.roles[lo:hi], session.times[lo:hi], strict=True
                )
            ]

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        with self._lock:
            session = self._get(session_id, scope)
            if session is None:
                return SessionVersion(0, 0)
            return SessionVersion(session.next_seq, session.epoch)

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        with self._lock:
            session = self._get(session_id, scope)
            return 0 if session is None else len(session.seqs)

    def _selected(self, scope: Scope | None) -> list[_Key]:
        fields = as_scope(scope).fields()
        want = [(PARTITION_FIELDS.index(f), v) for f, v in fields.items() if f in PARTITION_FIELDS]
        session = fields.get("session")
        return [
            key
            for key in self._sessions
            if all(key[0][i] == v for i, v in want) and (session is None or key[1] == session)
        ]

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        with self._lock:
            keys = self._selected(scope)
            return [
                SessionInfo(
                    sid,
                    len(s.seqs),
                    s.last_activity,
                    Scope.from_partition(part, sid) if any(part) else None,
                )
                for (part, sid), s in sorted(
                    ((k, self._sessions[k]) for k in keys), key=lambda kv: (kv[0][1], kv[0][0])
                )
                if s.seqs or s.state
            ]

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        with self._lock:
            session = self._sessions.get((part, session_id))
            if session is None:
                return 0
            deleted = len(session.seqs)
            # Keep the counters: seqs are never reused, so cached readers notice.
            self._sessions[(part, session_id)] = _Session(
                next_seq=session.next_seq, epoch=session.epoch + 1
            )
            return deleted

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        check_range(start, end)
        with self._lock:
            session = self._get(session_id, scope)
            if session is None:
                return 0
            lo, hi = session.bounds(start, end)
            if hi == lo:
                return 0
            del session.seqs[lo:hi], session.rows[lo:hi], session.roles[lo:hi]
            del session.times[lo:hi]
            session.epoch += 1
            return hi - lo

    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        selected = check_selector(scope, all=all)
        messages = state = sessions = 0
        with self._lock:
            for key in self._selected(selected):
                session = self._sessions.pop(key)
                messages += len(session.seqs)
                state += len(session.state)
                sessions += 1 if session.seqs or session.state else 0
            tasks, blobs = self._forget_tasks(selected)
        return ForgetCounts(messages, state, sessions, blobs, task_outputs=tasks)

    def _forget_tasks(self, selected: Scope) -> tuple[int, int]:
        """Drop the task outputs ``selected`` selects (the caller holds the lock)."""
        fields = ("tenant", "user", "agent", "run", "session")
        wanted = selected.fields()

        def chosen(part: _tasks.Part) -> bool:
            return all(part[fields.index(f)] == v for f, v in wanted.items())

        tasks = [k for k in self._tasks if chosen(k[0])]
        for k in tasks:
            del self._tasks[k]
        blobs = 0
        for k in [k for k in self._task_blobs if chosen(k[0])]:
            blobs += len(self._task_blobs.pop(k))
        return len(tasks), blobs

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        selected = check_selector(scope, all=all)
        with self._lock:
            return self._forget_tasks(selected)

    # -- task outputs ----------------------------------------------------------------
    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        key = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            found = self._tasks.get(key)
        return None if found is None else TaskRecord(namespace, json.loads(found[1]), found[0])

    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        part = _tasks.list_part(scope)
        with self._lock:
            rows = [(k[1], v) for k, v in self._tasks.items() if k[0] == part]
        return [TaskRecord(ns, json.loads(meta), version) for ns, (version, meta) in sorted(rows)]

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
        key = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            found = self._tasks.get(key)
            if (found[0] if found else None) != expect:
                return None
            have = self._task_blobs.get(key, {})
            missing = [k for k in blobs if k not in have]
            if missing:
                raise NotFoundError(f"task blobs not stored (deleted meanwhile?): {missing}")
            version = 1 if expect is None else expect + 1
            self._tasks[key] = (version, text)
        return version

    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        key = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            found = self._tasks.pop(key, None)
            self._task_blobs.pop(key, None)
        return None if found is None else TaskRecord(namespace, json.loads(found[1]), found[0])

    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        key = (_tasks.task_part(namespace, scope), namespace)
        digest = _tasks.content_key(data)
        with self._lock:
            self._task_blobs.setdefault(key, {}).setdefault(digest, bytes(data))
        return digest

    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        where = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            data = self._task_blobs.get(where, {}).get(key)
        if data is None:
            raise NotFoundError(f"no blob {key} in namespace {namespace!r}", namespace=namespace)
        return data

    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        where = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            return sorted(self._task_blobs.get(where, {}))

    def task_delete_blob(
        self,
        namespace: str,
        key: str | None = None,
        *,
        scope: Scope | None = None,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> int:
        where = (_tasks.task_part(namespace, scope), namespace)
        with self._lock:
            found = self._tasks.get(where)
            keep = set(referenced(json.loads(found[1]))) if referenced and found else set()
            blobs = self._task_blobs.get(where, {})
            doomed = [k for k in blobs if k not in keep] if key is None else [key]
            return sum(1 for k in doomed if k not in keep and blobs.pop(k, None) is not None)

    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        check_state(session_id, key)
        with self._lock:
            session = self._get(session_id, scope)
            text = None if session is None else session.state.get(key)
        return None if text is None else json.loads(text)

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        text = encode_state(value)
        with self._lock:
            self._sessions.setdefault((part, session_id), _Session()).state[key] = text

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        check_state(session_id, key)
        with self._lock:
            session = self._get(session_id, scope)
            if session is not None:
                session.state.pop(key, None)

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        with self._lock:
            session = self._get(session_id, scope)
            keys = [] if session is None else list(session.state)
        return sorted(k for k in keys if k.startswith(prefix))

    def close(self) -> None:
        self._closed = True
