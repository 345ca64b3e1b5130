"""``InMemoryStore``: the process-local store, for tests and short-lived sessions."""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from offprompt.messages import Message
from offprompt.stores.base import (
    BaseStore,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    check_append,
    check_range,
    check_state,
    encode_state,
    validate_session_id,
)

__all__ = ["InMemoryStore"]


@dataclass
class _Session:
    seqs: list[int] = field(default_factory=list)
    rows: list[StoredMessage] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    next_seq: int = 0
    epoch: int = 0
    last_activity: datetime | None = None
    state: dict[str, str] = field(default_factory=dict)

    def bounds(self, start: int | None, end: int | None) -> tuple[int, int]:
        lo = 0 if start is None else bisect.bisect_left(self.seqs, start)
        hi = len(self.seqs) if end is None else bisect.bisect_left(self.seqs, end)
        return lo, max(lo, hi)


class InMemoryStore(BaseStore):
    """A :class:`~offprompt.stores.ConversationStore` held in this process's memory.

    Thread-safe. Messages are kept as the objects given, not copied: treat a stored
    message as a value and do not mutate it. State values are stored as JSON text, so
    ``get_state`` returns a fresh copy.

    Example:
        >>> store = InMemoryStore()
        >>> store.append("s", [Message.user("hi")], [4])
        [0]
        >>> [m.message.text for m in store.read("s")]
        ['hi']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"InMemoryStore(sessions={len(self._sessions)})"

    def append(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]:
        items, counts = check_append(session_id, messages, tokens)
        with self._lock:
            session = self._sessions.setdefault(session_id, _Session())
            first = session.next_seq
            seqs = list(range(first, first + len(items)))
            session.seqs.extend(seqs)
            session.rows.extend(
                StoredMessage(session_id, seq, message, count)
                for seq, message, count in zip(seqs, items, counts, strict=True)
            )
            session.roles.extend(message.role for message in items)
            session.next_seq += len(items)
            if items:
                session.last_activity = datetime.now(timezone.utc)
            return seqs

    def read(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]:
        validate_session_id(session_id)
        check_range(start, end)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            lo, hi = session.bounds(start, end)
            return session.rows[lo:hi]

    def read_index(self, session_id: str, *, start: int | None = None) -> list[IndexEntry]:
        validate_session_id(session_id)
        check_range(start, None)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            lo, hi = session.bounds(start, None)
            return [
                IndexEntry(row.seq, row.tokens, role)
                for row, role in zip(session.rows[lo:hi], session.roles[lo:hi], strict=True)
            ]

    def version(self, session_id: str) -> SessionVersion:
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return SessionVersion(0, 0)
            return SessionVersion(session.next_seq, session.epoch)

    def count(self, session_id: str) -> int:
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            return 0 if session is None else len(session.seqs)

    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            return [
                SessionInfo(sid, len(s.seqs), s.last_activity)
                for sid, s in sorted(self._sessions.items())
                if s.seqs or s.state
            ]

    def delete_session(self, session_id: str) -> int:
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            deleted = len(session.seqs)
            # Keep the counters: seqs are never reused, so cached readers notice.
            self._sessions[session_id] = _Session(
                next_seq=session.next_seq, epoch=session.epoch + 1
            )
            return deleted

    def delete_range(self, session_id: str, start: int | None, end: int | None) -> int:
        validate_session_id(session_id)
        check_range(start, end)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            lo, hi = session.bounds(start, end)
            if hi == lo:
                return 0
            del session.seqs[lo:hi], session.rows[lo:hi], session.roles[lo:hi]
            session.epoch += 1
            return hi - lo

    def get_state(self, session_id: str, key: str) -> Any | None:
        check_state(session_id, key)
        with self._lock:
            session = self._sessions.get(session_id)
            text = None if session is None else session.state.get(key)
        return None if text is None else json.loads(text)

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        check_state(session_id, key)
        text = encode_state(value)
        with self._lock:
            self._sessions.setdefault(session_id, _Session()).state[key] = text

    def delete_state(self, session_id: str, key: str) -> None:
        check_state(session_id, key)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.state.pop(key, None)

    def state_keys(self, session_id: str, prefix: str = "") -> list[str]:
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            keys = [] if session is None else list(session.state)
        return sorted(k for k in keys if k.startswith(prefix))

    def close(self) -> None:
        self._closed = True
