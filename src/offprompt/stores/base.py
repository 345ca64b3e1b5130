"""The ``ConversationStore`` protocol, its records, and session-id validation.

A store keeps, per session, an ordered log of messages (each with the token count
computed when it was added) and a few small JSON documents ("state": a summary and its
index, adapter settings). Sequence numbers are assigned by the store, atomically, per
session; they only grow and are never reused within a session, even after
:meth:`ConversationStore.delete_session`, so a reader that caches by sequence number
can always tell whether its cache is current (see :meth:`ConversationStore.version`).
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from typing_extensions import Self

from offprompt._validation import ensure_json
from offprompt.errors import NamespaceError, ValidationError
from offprompt.messages import Message

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "BaseStore",
    "ConversationStore",
    "IndexEntry",
    "SessionInfo",
    "SessionVersion",
    "StoredMessage",
    "check_append",
    "validate_session_id",
]

MAX_SESSION_ID_LENGTH = 256


@dataclass(frozen=True)
class StoredMessage:
    """A message as stored: its session, its sequence number and its token count.

    Attributes:
        session_id: The session the message belongs to.
        seq: Sequence number, unique and increasing within the session.
        message: The message itself.
        tokens: Tokens the message costs, counted once when it was added.
    """

    session_id: str
    seq: int
    message: Message
    tokens: int


@dataclass(frozen=True)
class SessionInfo:
    """One line of :meth:`ConversationStore.sessions`.

    Attributes:
        session_id: The session.
        message_count: Messages stored now.
        last_activity: When a message was last appended (UTC), ``None`` if unknown.
    """

    session_id: str
    message_count: int
    last_activity: datetime | None


@dataclass(frozen=True)
class IndexEntry:
    """What a window needs of a message without reading its body.

    Attributes:
        seq: Sequence number.
        tokens: Stored token count.
        role: The message's role (runs start at ``user`` messages).
    """

    seq: int
    tokens: int
    role: str


@dataclass(frozen=True)
class SessionVersion:
    """A cheap fingerprint of a session's contents.

    ``next_seq`` grows with every append; ``epoch`` grows with every deletion. Two equal
    versions of one session mean the same messages.

    Attributes:
        next_seq: The sequence number the next appended message will get.
        epoch: Number of deletions so far.
    """

    next_seq: int
    epoch: int


def validate_session_id(session_id: Any) -> str:
    """Return ``session_id`` if a store may use it, else raise :class:`NamespaceError`.

    A session id is a non-empty string of at most 256 characters with no NUL or other
    control characters. Everything else (quotes, SQL, any unicode) is allowed: stores
    only ever pass it as a parameter.

    Example:
        >>> validate_session_id("user-42")
        'user-42'
    """
    if not isinstance(session_id, str):
        raise NamespaceError(
            f"session_id must be a str, got {type(session_id).__name__}", session_id=session_id
        )
    if not session_id:
        raise NamespaceError("session_id must not be empty", session_id=session_id)
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise NamespaceError(
            f"session_id is {len(session_id)} characters long; the limit is "
            f"{MAX_SESSION_ID_LENGTH}",
            session_id=session_id[:64],
        )
    for index, char in enumerate(session_id):
        if unicodedata.category(char) == "Cc":
            raise NamespaceError(
                f"session_id contains control character {char!r} at position {index}",
                session_id=session_id,
            )
    return session_id


def check_append(
    session_id: str, messages: Sequence[Message], tokens: Sequence[int]
) -> tuple[list[Message], list[int]]:
    """Validate an append before anything is written; return plain lists."""
    validate_session_id(session_id)
    if isinstance(messages, Message):
        raise ValidationError("append takes a sequence of messages, got a single Message")
    messages = list(messages)
    tokens = list(tokens)
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise ValidationError(
                f"messages[{index}] must be an offprompt Message, got {type(message).__name__}"
            )
    if len(tokens) != len(messages):
        raise ValidationError(
            f"got {len(messages)} messages but {len(tokens)} token counts; give one per message"
        )
    for index, count in enumerate(tokens):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"tokens[{index}] must be a non-negative int, got {count!r}")
    return messages, tokens


def check_state(session_id: str, key: Any) -> None:
    validate_session_id(session_id)
    if not isinstance(key, str) or not key:
        raise ValidationError(f"a state key must be a non-empty str, got {key!r}")


def encode_state(value: Any) -> str:
    return json.dumps(ensure_json(value, field="state value"), ensure_ascii=False)


def check_range(start: int | None, end: int | None) -> None:
    for name, bound in (("start", start), ("end", end)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise ValidationError(f"{name} must be an int or None, got {bound!r}")


@runtime_checkable
class ConversationStore(Protocol):
    """Durable, ordered message logs per session, plus small JSON state documents.

    Every method has an async twin with an ``a`` prefix that does not block the event
    loop. Unknown sessions read as empty; they are never an error.
    """

    def append(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]:
        """Append messages with their token counts in one transaction; return their seqs."""
        ...

    def read(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]:
        """Messages with ``start <= seq < end`` (open bounds when ``None``), by seq."""
        ...

    def read_index(self, session_id: str, *, start: int | None = None) -> list[IndexEntry]:
        """Seq, tokens and role of messages with ``seq >= start``, without their bodies."""
        ...

    def version(self, session_id: str) -> SessionVersion:
        """The session's fingerprint: changes whenever its messages change."""
        ...

    def count(self, session_id: str) -> int:
        """Messages stored for the session."""
        ...

    def sessions(self) -> list[SessionInfo]:
        """Sessions that hold messages or state, sorted by id."""
        ...

    def delete_session(self, session_id: str) -> int:
        """Delete the session's messages and state; return the number of messages deleted."""
        ...

    def delete_range(self, session_id: str, start: int | None, end: int | None) -> int:
        """Delete messages with ``start <= seq < end``; return how many were deleted."""
        ...

    def delete_before(self, session_id: str, seq: int) -> int:
        """Delete messages with ``seq < seq``; return how many were deleted."""
        ...

    def get_state(self, session_id: str, key: str) -> Any | None:
        """The JSON value stored under ``key``, or ``None``."""
        ...

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        """Store a JSON value under ``key`` (replacing any previous one)."""
        ...

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove ``key``; no error if it is absent."""
        ...

    def state_keys(self, session_id: str, prefix: str = "") -> list[str]:
        """Keys of the session's state that start with ``prefix``, sorted."""
        ...

    def close(self) -> None:
        """Release connections and files; the store is unusable afterwards."""
        ...

    async def aappend(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]: ...

    async def aread(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]: ...

    async def aread_index(
        self, session_id: str, *, start: int | None = None
    ) -> list[IndexEntry]: ...

    async def aversion(self, session_id: str) -> SessionVersion: ...

    async def acount(self, session_id: str) -> int: ...

    async def asessions(self) -> list[SessionInfo]: ...

    async def adelete_session(self, session_id: str) -> int: ...

    async def adelete_range(self, session_id: str, start: int | None, end: int | None) -> int: ...

    async def adelete_before(self, session_id: str, seq: int) -> int: ...

    async def aget_state(self, session_id: str, key: str) -> Any | None: ...

    async def aset_state(self, session_id: str, key: str, value: Any) -> None: ...

    async def adelete_state(self, session_id: str, key: str) -> None: ...

    async def astate_keys(self, session_id: str, prefix: str = "") -> list[str]: ...

    async def aclose(self) -> None: ...


class BaseStore(ABC):
    """Shared behaviour of the stores: async twins in a worker thread, ``delete_before``.

    Subclasses implement the sync methods; the async twins run them with
    :func:`asyncio.to_thread`, so the event loop never waits on disk or network I/O.
    """

    @abstractmethod
    def append(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]: ...

    @abstractmethod
    def read(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]: ...

    @abstractmethod
    def read_index(self, session_id: str, *, start: int | None = None) -> list[IndexEntry]: ...

    @abstractmethod
    def version(self, session_id: str) -> SessionVersion: ...

    @abstractmethod
    def count(self, session_id: str) -> int: ...

    @abstractmethod
    def sessions(self) -> list[SessionInfo]: ...

    @abstractmethod
    def delete_session(self, session_id: str) -> int: ...

    @abstractmethod
    def delete_range(self, session_id: str, start: int | None, end: int | None) -> int: ...

    @abstractmethod
    def get_state(self, session_id: str, key: str) -> Any | None: ...

    @abstractmethod
    def set_state(self, session_id: str, key: str, value: Any) -> None: ...

    @abstractmethod
    def delete_state(self, session_id: str, key: str) -> None: ...

    @abstractmethod
    def state_keys(self, session_id: str, prefix: str = "") -> list[str]: ...

    @abstractmethod
    def close(self) -> None: ...

    def delete_before(self, session_id: str, seq: int) -> int:
        """Delete messages with a sequence number below ``seq`` (used by ``max_runs``)."""
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise ValidationError(f"seq must be an int, got {seq!r}")
        return self.delete_range(session_id, None, seq)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aappend(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]:
        return await asyncio.to_thread(self.append, session_id, messages, tokens)

    async def aread(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]:
        return await asyncio.to_thread(self.read, session_id, start=start, end=end)

    async def aread_index(self, session_id: str, *, start: int | None = None) -> list[IndexEntry]:
        return await asyncio.to_thread(self.read_index, session_id, start=start)

    async def aversion(self, session_id: str) -> SessionVersion:
        return await asyncio.to_thread(self.version, session_id)

    async def acount(self, session_id: str) -> int:
        return await asyncio.to_thread(self.count, session_id)

    async def asessions(self) -> list[SessionInfo]:
        return await asyncio.to_thread(self.sessions)

    async def adelete_session(self, session_id: str) -> int:
        return await asyncio.to_thread(self.delete_session, session_id)

    async def adelete_range(self, session_id: str, start: int | None, end: int | None) -> int:
        return await asyncio.to_thread(self.delete_range, session_id, start, end)

    async def adelete_before(self, session_id: str, seq: int) -> int:
        return await asyncio.to_thread(self.delete_before, session_id, seq)

    async def aget_state(self, session_id: str, key: str) -> Any | None:
        return await asyncio.to_thread(self.get_state, session_id, key)

    async def aset_state(self, session_id: str, key: str, value: Any) -> None:
        await asyncio.to_thread(self.set_state, session_id, key, value)

    async def adelete_state(self, session_id: str, key: str) -> None:
        await asyncio.to_thread(self.delete_state, session_id, key)

    async def astate_keys(self, session_id: str, prefix: str = "") -> list[str]:
        return await asyncio.to_thread(self.state_keys, session_id, prefix)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)
