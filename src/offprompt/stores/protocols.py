"""The three capabilities a store can have, as protocols.

:class:`~offprompt.stores.base.BaseStore` is one class for the stores offprompt ships,
but what a memory needs from it is one of three smaller interfaces, checked where the
memory is built:

* :class:`ConversationStore`: ordered message logs per session (``ConversationMemory``,
  the framework histories and sessions).
* :class:`StateStore`: small JSON documents per session (summaries, settings, traces,
  the file trees of the deepagents backend and the memory tool).
* :class:`TaskStore`: versioned task-output metadata and content-addressed raw bytes
  (``TaskMemory(store=...)``). Stores that keep task outputs subclass
  :class:`~offprompt.stores.base.BaseTaskStore`; :func:`task_store` refuses any other
  store at construction, with the reason, rather than at the first write.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from offprompt.errors import ValidationError

if TYPE_CHECKING:
    from offprompt.messages import Message
    from offprompt.scope import Scope
    from offprompt.stores.base import (
        BaseTaskStore,
        IndexEntry,
        SessionInfo,
        SessionVersion,
        StoredMessage,
        TaskRecord,
    )

__all__ = ["ConversationStore", "StateStore", "TaskStore", "task_store"]


@runtime_checkable
class ConversationStore(Protocol):
    """Durable, ordered message logs per session (every ``BaseStore`` is one)."""

    def append(
        self,
        session_id: str,
        messages: Sequence[Message],
        tokens: Sequence[int],
        *,
        scope: Scope | None = None,
    ) -> list[int]:
        """Append messages with their token counts in one transaction; return their seqs."""
        ...

    def read(
        self,
        session_id: str,
        *,
        start: int | None = None,
        end: int | None = None,
        scope: Scope | None = None,
    ) -> list[StoredMessage]:
        """Messages with ``start <= seq < end`` (open bounds when ``None``), by seq."""
        ...

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        """Seq, tokens and role of messages with ``seq >= start``, without their bodies."""
        ...

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        """The session's fingerprint: changes whenever its messages change."""
        ...

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Messages stored for the session."""
        ...

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:
        """Sessions that hold messages or state, sorted by id."""
        ...

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        """Delete the session's messages and state; return the number of messages deleted."""
        ...

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        """Delete messages with ``start <= seq < end``; return how many were deleted."""
        ...


@runtime_checkable
class StateStore(Protocol):
    """Small JSON documents per session, by key (every ``BaseStore`` is one)."""

    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        """The JSON value stored under ``key``, or ``None``."""
        ...

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        """Store a JSON value under ``key`` (replacing any previous one)."""
        ...

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        """Remove ``key``; no error if it is absent."""
        ...

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        """Keys of the session's state that start with ``prefix``, sorted."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Run the calls made inside as one unit (one transaction where the store has
        them: SQLite, PostgreSQL)."""
        ...


@runtime_checkable
class TaskStore(Protocol):
    """Versioned task-output metadata and the raw bytes it refers to, per partition."""

    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        """The committed metadata of ``namespace``, or ``None``."""
        ...

    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        """Every committed namespace of the partition, sorted by namespace."""
        ...

    def task_commit(
        self,
        namespace: str,
        meta: dict[str, Any],
        *,
        expect: int | None,
        blobs: Sequence[str] = (),
        scope: Scope | None = None,
    ) -> int | None:
        """Commit ``meta`` if the stored version is still ``expect``; the new version, or
        ``None`` on a version conflict."""
        ...

    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        """Delete the namespace's metadata and blobs at once; returns what was deleted."""
        ...

    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        """Store ``data`` durably; returns its key (SHA-256)."""
        ...

    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        """The bytes stored under ``key`` (``NotFoundError`` if none)."""
        ...

    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        """Keys of the namespace's blobs, sorted."""
        ...

    def task_delete_blob(
        self,
        namespace: str,
        key: str | None = None,
        *,
        scope: Scope | None = None,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> int:
        """Delete one blob (every blob of the namespace when ``key`` is None)."""
        ...

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        """Delete the task outputs of every partition ``scope`` selects."""
        ...


def task_store(store: object, *, who: str) -> BaseTaskStore:
    """``store`` as a task store, or a ``ValidationError`` that says why not.

    A store keeps task outputs when it subclasses
    :class:`~offprompt.stores.base.BaseTaskStore` (a :class:`~offprompt.stores.base.ScopedStore`
    view when the store it wraps does). Checked where a memory is built, so
    ``TaskMemory(store=QdrantStore(...))`` fails there, not at its first write.

    Args:
        store: The store given.
        who: The memory being built, for the message (``"TaskMemory"``).

    Raises:
        ValidationError: ``store`` keeps no task outputs.
    """
    from offprompt.stores.base import BaseStore, BaseTaskStore, ScopedStore

    inner = store
    while isinstance(inner, ScopedStore):
        inner = inner.inner
    if isinstance(inner, BaseTaskStore):
        assert isinstance(store, BaseTaskStore)  # itself, or a ScopedStore view of one
        return store
    if isinstance(inner, BaseStore):
        raise ValidationError(
            f"{who} needs a store that keeps task outputs; {type(inner).__name__} does not "
            "(use SQLiteStore, PostgresStore or InMemoryStore, or path=)"
        )
    raise ValidationError(f"store must be an offprompt store, got {type(store).__name__}")
