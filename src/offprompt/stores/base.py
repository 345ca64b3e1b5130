"""The store base classes (``BaseStore``, ``BaseTaskStore``), their records, their checks.

A store keeps, per session, an ordered log of messages (each with the token count
computed when it was added) and a few small JSON documents ("state": a summary and its
index, adapter settings). Sequence numbers are assigned by the store, atomically, per
session; they only grow and are never reused within a session, even after
:meth:`BaseStore.delete_session`, so a reader that caches by sequence number
can always tell whether its cache is current (see :meth:`BaseStore.version`).

A store offers up to three capabilities (:mod:`offprompt.stores.protocols`): every
``BaseStore`` is a ``ConversationStore`` and a ``StateStore``; a ``BaseTaskStore`` is a
``TaskStore`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from typing_extensions import Self

from offprompt._validation import MAX_SESSION_ID_LENGTH, ensure_json, validate_session_id
from offprompt.errors import NamespaceError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores.protocols import ConversationStore, StateStore, TaskStore

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "BaseStore",
    "BaseTaskStore",
    "ConversationStore",
    "ForgetCounts",
    "IndexEntry",
    "ScopedStore",
    "SessionInfo",
    "SessionVersion",
    "StateStore",
    "StoredMessage",
    "TaskRecord",
    "TaskStore",
    "check_append",
    "validate_session_id",
]


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
        scope: The partition the session lives in (``None`` for the unscoped one).
    """

    session_id: str
    message_count: int
    last_activity: datetime | None
    scope: Scope | None = None


@dataclass(frozen=True)
class IndexEntry:
    """What a window needs of a message without reading its body.

    Attributes:
        seq: Sequence number.
        tokens: Stored token count.
        role: The message's role (runs start at ``user`` messages).
        appended_at: When the message was stored (POSIX seconds), if the store knows.
    """

    seq: int
    tokens: int
    role: str
    appended_at: float | None = None


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


@dataclass(frozen=True)
class TaskRecord:
    """One stored tool output's metadata, as a store keeps it (see ``TaskMemory``).

    Attributes:
        namespace: The namespace.
        meta: The metadata document (JSON).
        version: Bumped by every commit; a commit names the version it read.
    """

    namespace: str
    meta: dict[str, Any]
    version: int


#: Scope field -> SQL column, for the SQL stores' selector (``forget``, listing) filters.
SCOPE_COLUMNS = {
    "tenant": "tenant",
    "user": "user_id",
    "agent": "agent",
    "run": "run",
    "session": "session_id",
}


def scope_key(scope: Scope | None) -> tuple[str, str, str, str]:
    """The partition key of ``scope``: ``(tenant, user, agent, run)``, ``""`` for unset."""
    return as_scope(scope).partition()


def check_scope_session(session_id: str, scope: Scope | None) -> tuple[str, str, str, str]:
    """Validate ``session_id`` against ``scope`` and return the partition key."""
    validate_session_id(session_id)
    resolved = as_scope(scope)
    if resolved.session is not None and resolved.session != session_id:
        raise NamespaceError(
            f"scope.session {resolved.session!r} differs from session_id {session_id!r}",
            session_id=session_id,
        )
    return resolved.partition()


def check_selector(scope: Scope | None, *, all: bool = False) -> Scope:
    """A scope used to select data for deletion: refuses the empty scope unless ``all``."""
    resolved = as_scope(scope)
    if resolved.is_empty and not all:
        raise ValidationError(
            "an empty scope selects everything stored; pass all=True to really delete it all"
        )
    return resolved


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
    """``ValidationError`` unless ``session_id`` is a valid session id and ``key`` a non-empty str."""
    validate_session_id(session_id)
    if not isinstance(key, str) or not key:
        raise ValidationError(f"a state key must be a non-empty str, got {key!r}")


def encode_state(value: Any) -> str:
    """``value`` as the JSON text a store keeps (``ValidationError`` when it is not JSON)."""
    return json.dumps(ensure_json(value, field="state value"), ensure_ascii=False)


def check_range(start: int | None, end: int | None) -> None:
    """``ValidationError`` unless ``start`` and ``end`` are each an int or ``None``."""
    for name, bound in (("start", start), ("end", end)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise ValidationError(f"{name} must be an int or None, got {bound!r}")


def merge_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` checked, empty ones dropped, sorted, overlapping or adjacent ones merged.

    Raises:
        ValidationError: A range is not a pair of ints.
    """
    checked: list[tuple[int, int]] = []
    for item in ranges:
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValidationError(f"a range must be a (start, end) tuple of ints, got {item!r}")
        start, end = item
        if start is None or end is None:
            raise ValidationError(f"a range must be a (start, end) tuple of ints, got {item!r}")
        check_range(start, end)
        if start < end:
            checked.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(checked):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


@dataclass(frozen=True)
class ForgetCounts:
    """What :meth:`BaseStore.forget_scope` deleted.

    Attributes:
        messages: Message rows/points deleted.
        state: State documents deleted (summaries, steps, plans, traces...).
        sessions: Sessions that lost data.
        blobs: Blobs (image bytes) deleted.
        residue: Layers of the store that may still hold the deleted bytes (a server's
            WAL, replicas, backups); empty when they are gone from its files too.
    """

    messages: int = 0
    state: int = 0
    sessions: int = 0
    blobs: int = 0
    residue: tuple[str, ...] = ()
    task_outputs: int = 0

    @property
    def total(self) -> int:
        """Records deleted: messages, state entries, blobs and task outputs."""
        return self.messages + self.state + self.blobs + self.task_outputs


class BaseStore(ABC):
    """Durable, ordered message logs per session, plus small JSON state documents.

    A :class:`~offprompt.stores.protocols.ConversationStore` and a
    :class:`~offprompt.stores.protocols.StateStore`; a store that also keeps task
    outputs subclasses :class:`BaseTaskStore`.
    Subclasses implement the sync methods; every one has an async twin with an ``a``
    prefix that runs it with :func:`asyncio.to_thread`, so the event loop never waits on
    disk or network I/O. Unknown sessions read as empty; they are never an error.

    Every per-session method takes a keyword-only ``scope``
    (:class:`~offprompt.scope.Scope`): the scope's tenant, user, agent and run pick the
    partition the session lives in, and the store filters by it itself (SQL ``WHERE``,
    Qdrant payload filter). ``None`` is the unscoped partition. :meth:`sessions` takes
    ``scope`` as a selector instead (every partition whose fields match).
    """

    def append(
        self,
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        *,
        scope: Scope | None = None,
    ) -> list[int]:
        """Append messages with their token counts in one transaction; return their seqs.

        Raises:
            ValidationError: A bad session id, a non-``Message`` item, or token counts
                that are not one non-negative int per message (nothing is written).
        """
        items, counts = check_append(session_id, messages, tokens)
        return self._append(session_id, items, counts, scope=scope)

    @abstractmethod
    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        """:meth:`append` of checked input: write it in one transaction."""

    def read(
        self,
        session_id: str,
        *,
        start: int | None = None,
        end: int | None = None,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        """Messages with ``start <= seq < end`` (open bounds when ``None``), by seq.

        Raises:
            ValidationError: ``start`` or ``end`` is not an int or ``None``.
        """
        check_range(start, end)
        return self._read(session_id, start=start, end=end, scope=scope)

    @abstractmethod
    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        """:meth:`read` of checked bounds."""

    def read_ranges(
        self,
        session_id: str,
        ranges: Sequence[tuple[int, int]],
        *,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        """Messages whose seq lies in any ``(start, end)`` range (``start <= seq < end``).

        Each message once, by seq. A window reads its pinned system messages and its
        runs with one call; this default reads each merged range with :meth:`read`, and
        a store that can read them in one round trip (``PostgresStore``) overrides it.
        """
        found: list[StoredMessage] = []
        for start, end in merge_ranges(ranges):
            found.extend(self.read(session_id, start=start, end=end, scope=scope))
        return found

    @abstractmethod
    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        """Seq, tokens and role of messages with ``seq >= start``, without their bodies."""

    @abstractmethod
    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        """The session's fingerprint: changes whenever its messages change."""

    @abstractmethod
    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Messages stored for the session."""

    @abstractmethod
    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        """Sessions that hold messages or state, sorted by id; ``scope`` selects partitions."""

    @abstractmethod
    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Delete the session's messages and state; return the number of messages deleted."""

    @abstractmethod
    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        """Delete messages with ``start <= seq < end``; return how many were deleted."""

    @property
    def binary_state(self) -> bool:
        """``True`` if :meth:`set_state` also keeps a ``bytes`` value as it is (and
        :meth:`get_state` gives it back as ``bytes``); JSON values work on every store."""
        return False

    @abstractmethod
    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        """The JSON value stored under ``key``, or ``None``."""

    @abstractmethod
    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        """Store a JSON value under ``key`` (replacing any previous one)."""

    @abstractmethod
    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        """Remove ``key``; no error if it is absent."""

    @abstractmethod
    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        """Keys of the session's state that start with ``prefix``, sorted."""

    @abstractmethod
    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        """Delete messages, state and blobs of every partition ``scope`` selects.

        ``scope`` is a selector: ``Scope(user="u1")`` deletes u1's data in every tenant;
        ``scope.session`` restricts it to that session. The empty scope is refused
        unless ``all=True``. Deleted bytes are overwritten on disk (SQLite
        ``secure_delete``), not just unlinked.
        """

    def blob_count(self, *, scope: Scope | None = None) -> int:
        """Blobs (deduplicated image bytes) stored in ``scope``'s partitions (selector)."""
        return 0

    @abstractmethod
    def close(self) -> None:
        """Release connections and files; the store is unusable afterwards."""

    def scoped(self, scope: Scope) -> ScopedStore:
        """A view of this store that passes ``scope`` to every call.

        Example:
            >>> from offprompt.scope import Scope
            >>> from offprompt.stores import InMemoryStore
            >>> view = InMemoryStore().scoped(Scope(tenant="acme"))
            >>> view.append("s", [Message.user("hi")], [1])
            [0]
        """
        return ScopedStore(self, scope)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the calls made inside as one unit where the store can (SQLite: one
        ``BEGIN IMMEDIATE`` transaction of this thread, so reads inside see a state no
        other writer changes until it commits, and a crash keeps all of it or none).

        Stores without transactions run the calls one by one (this default). Nesting is
        allowed; the outermost block commits.

        Example:
            >>> from offprompt.stores import InMemoryStore
            >>> store = InMemoryStore()
            >>> with store.transaction():
            ...     store.set_state("s", "a", 1)
            ...     store.set_state("s", "b", 2)
            >>> store.state_keys("s")
            ['a', 'b']
        """
        yield

    def delete_before(self, session_id: str, seq: int, *, scope: Scope | None = None) -> int:
        """Delete messages with ``seq < seq``; return how many were deleted (``max_runs``)."""
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise ValidationError(f"seq must be an int, got {seq!r}")
        return self.delete_range(session_id, None, seq, scope=scope)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aappend(
        self,
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        *,
        scope: Scope | None = None,
    ) -> list[int]:
        """Async twin of :meth:`append` (in a worker thread)."""
        return await asyncio.to_thread(self.append, session_id, messages, tokens, scope=scope)

    async def aread(
        self,
        session_id: str,
        *,
        start: int | None = None,
        end: int | None = None,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        """Async twin of :meth:`read` (in a worker thread)."""
        return await asyncio.to_thread(self.read, session_id, start=start, end=end, scope=scope)

    async def aread_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        """Async twin of :meth:`read_index` (in a worker thread)."""
        return await asyncio.to_thread(self.read_index, session_id, start=start, scope=scope)

    async def aversion(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        """Async twin of :meth:`version` (in a worker thread)."""
        return await asyncio.to_thread(self.version, session_id, scope=scope)

    async def acount(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Async twin of :meth:`count` (in a worker thread)."""
        return await asyncio.to_thread(self.count, session_id, scope=scope)

    async def asessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        """Async twin of :meth:`sessions` (in a worker thread)."""
        return await asyncio.to_thread(self.sessions, scope=scope)

    async def adelete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Async twin of :meth:`delete_session` (in a worker thread)."""
        return await asyncio.to_thread(self.delete_session, session_id, scope=scope)

    async def adelete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        """Async twin of :meth:`delete_range` (in a worker thread)."""
        return await asyncio.to_thread(self.delete_range, session_id, start, end, scope=scope)

    async def adelete_before(self, session_id: str, seq: int, *, scope: Scope | None = None) -> int:
        """Async twin of :meth:`delete_before` (in a worker thread)."""
        return await asyncio.to_thread(self.delete_before, session_id, seq, scope=scope)

    async def aget_state(
        self, session_id: str, key: str, *, scope: Scope | None = None
    ) -> Any | None:
        """Async twin of :meth:`get_state` (in a worker thread)."""
        return await asyncio.to_thread(self.get_state, session_id, key, scope=scope)

    async def aset_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        """Async twin of :meth:`set_state` (in a worker thread)."""
        await asyncio.to_thread(self.set_state, session_id, key, value, scope=scope)

    async def adelete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        """Async twin of :meth:`delete_state` (in a worker thread)."""
        await asyncio.to_thread(self.delete_state, session_id, key, scope=scope)

    async def astate_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        """Async twin of :meth:`state_keys` (in a worker thread)."""
        return await asyncio.to_thread(self.state_keys, session_id, prefix, scope=scope)

    async def aforget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        """Async twin of :meth:`forget_scope` (in a worker thread)."""
        return await asyncio.to_thread(self.forget_scope, scope, all=all)

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (in a worker thread)."""
        await asyncio.to_thread(self.close)


class BaseTaskStore(BaseStore):
    """A :class:`BaseStore` that also keeps task outputs (``TaskMemory(store=...)``):
    the :class:`~offprompt.stores.protocols.TaskStore` capability.

    A namespace's metadata document, versioned, and the content-addressed raw bytes it
    refers to. ``scope`` is the exact partition (tenant, user, agent, run and session).
    ``SQLiteStore``, ``PostgresStore`` and ``InMemoryStore`` are task stores;
    ``QdrantStore`` is not, and ``TaskMemory(store=...)`` refuses it at construction.
    """

    @abstractmethod
    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        """The committed metadata of ``namespace``, or ``None``."""

    @abstractmethod
    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        """Every committed namespace of the partition, sorted by namespace."""

    @abstractmethod
    def task_commit(
        self,
        namespace: str,
        meta: dict[str, Any],
        *,
        expect: int | None,
        blobs: Sequence[str] = (),
        scope: Scope | None = None,
    ) -> int | None:
        """Commit ``meta`` if the stored version is still ``expect`` (``None``: the
        namespace must not exist) and every blob key in ``blobs`` is stored, in one
        transaction. Returns the new version, or ``None`` on a version conflict.

        Raises:
            NotFoundError: A blob in ``blobs`` is not stored (nothing was written).
        """

    @abstractmethod
    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        """Delete the namespace's metadata and blobs at once; returns what was deleted."""

    @abstractmethod
    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        """Store ``data`` (durably, before returning); returns its key (SHA-256)."""

    @abstractmethod
    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        """The bytes stored under ``key``.

        Raises:
            NotFoundError: No such blob.
        """

    @abstractmethod
    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        """Keys of the namespace's blobs, sorted."""

    @abstractmethod
    def task_delete_blob(
        self,
        namespace: str,
        key: str | None = None,
        *,
        scope: Scope | None = None,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> int:
        """Delete one blob (every blob of the namespace when ``key`` is None); how many went.

        With ``referenced`` (the blob keys a committed metadata document refers to), a
        blob the namespace's committed metadata refers to stays: the check and the delete
        are one step, exclusive with every :meth:`task_commit` and :meth:`task_delete` of
        the namespace in every process and host, so a delete racing a store never removes
        the bytes that store committed.
        """

    @abstractmethod
    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        """Delete the task outputs (and their blobs) of every partition ``scope`` selects,
        and nothing else; returns ``(outputs, blobs)``. :meth:`forget_scope` does this too."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _forwarded(
    method: Callable[Concatenate[BaseStore, _P], _R],
) -> Callable[Concatenate[ScopedStore, _P], _R]:
    """``method`` of the wrapped store, called with the view's scope (signature kept)."""
    name = method.__name__

    def forward(self: ScopedStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        kwargs["scope"] = self._s(cast("Scope | None", kwargs.get("scope")))
        result: _R = getattr(self.inner, name)(*args, **kwargs)
        return result

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = method.__doc__
    return forward


def _task_forwarded(
    method: Callable[Concatenate[BaseTaskStore, _P], _R],
) -> Callable[Concatenate[ScopedStore, _P], _R]:
    """``method`` of the wrapped task store, called with the view's scope; a
    ``StorageError`` when the wrapped store keeps no task outputs."""
    name = method.__name__

    def forward(self: ScopedStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not isinstance(self.inner, BaseTaskStore):
            raise StorageError(f"{type(self.inner).__name__} does not keep task outputs")
        kwargs["scope"] = self._s(cast("Scope | None", kwargs.get("scope")))
        result: _R = getattr(self.inner, name)(*args, **kwargs)
        return result

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = method.__doc__
    return forward


class ScopedStore(BaseTaskStore):
    """A store view that passes one fixed scope to every call.

    Hand it to anything that takes a store (``ConversationMemory``, ``PlanMemory``,
    ``AgentMemory.save``) to put all of its data in the scope's partition. An explicit
    ``scope=`` different from the view's is refused. ``sessions()`` lists only sessions
    the view's scope selects.

    Attributes:
        inner: The wrapped store.
        scope: The scope passed to every call.
    """

    def __init__(self, inner: BaseStore, scope: Scope) -> None:
        self.inner = inner
        self.scope = as_scope(scope)

    def __repr__(self) -> str:
        return f"ScopedStore({self.inner!r}, scope={str(self.scope)!r})"

    def _s(self, scope: Scope | None) -> Scope:
        if scope is not None and scope != self.scope:
            raise NamespaceError(
                f"this store view is scoped to {self.scope}; got a call for {scope}"
            )
        return self.scope

    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        return self.inner.append(session_id, messages, tokens, scope=self._s(scope))

    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        return self.inner.read(session_id, start=start, end=end, scope=self._s(scope))

    read_ranges = _forwarded(BaseStore.read_ranges)
    read_index = _forwarded(BaseStore.read_index)
    version = _forwarded(BaseStore.version)
    count = _forwarded(BaseStore.count)
    sessions = _forwarded(BaseStore.sessions)
    delete_session = _forwarded(BaseStore.delete_session)
    delete_range = _forwarded(BaseStore.delete_range)
    get_state = _forwarded(BaseStore.get_state)
    set_state = _forwarded(BaseStore.set_state)
    delete_state = _forwarded(BaseStore.delete_state)
    state_keys = _forwarded(BaseStore.state_keys)
    blob_count = _forwarded(BaseStore.blob_count)
    task_get = _task_forwarded(BaseTaskStore.task_get)
    task_list = _task_forwarded(BaseTaskStore.task_list)
    task_commit = _task_forwarded(BaseTaskStore.task_commit)
    task_delete = _task_forwarded(BaseTaskStore.task_delete)
    task_put_blob = _task_forwarded(BaseTaskStore.task_put_blob)
    task_get_blob = _task_forwarded(BaseTaskStore.task_get_blob)
    task_blob_keys = _task_forwarded(BaseTaskStore.task_blob_keys)
    task_delete_blob = _task_forwarded(BaseTaskStore.task_delete_blob)

    def _narrowed(self, scope: Scope) -> Scope:
        given = as_scope(scope).fields()
        mine = self.scope.fields()
        clash = [f for f in given if f in mine and given[f] != mine[f]]
        if clash:
            raise NamespaceError(f"scope {scope} lies outside this view's scope {self.scope}")
        return Scope(**{**mine, **given})

    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        """Forget ``scope`` narrowed to this view's scope (never reaches outside it)."""
        return self.inner.forget_scope(self._narrowed(scope), all=all)

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        """The wrapped task store's :meth:`~BaseTaskStore.task_forget_scope`, narrowed to
        this view's scope."""
        if not isinstance(self.inner, BaseTaskStore):
            raise StorageError(f"{type(self.inner).__name__} does not keep task outputs")
        return self.inner.task_forget_scope(self._narrowed(scope), all=all)

    @property
    def binary_state(self) -> bool:
        """The wrapped store's :attr:`~BaseStore.binary_state`."""
        return self.inner.binary_state

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """The wrapped store's :meth:`~BaseStore.transaction`."""
        with self.inner.transaction():
            yield

    def checkpoint(self) -> None:
        """Checkpoint the wrapped store if it can (SQLite's WAL), else do nothing.

        Raises:
            StorageError: The wrapped store's WAL stayed busy (see ``SQLiteStore.checkpoint``).
        """
        inner = getattr(self.inner, "checkpoint", None)
        if callable(inner):
            inner()

    def close(self) -> None:
        """Close the wrapped store (a view is the store, seen through a scope)."""
        self.inner.close()
