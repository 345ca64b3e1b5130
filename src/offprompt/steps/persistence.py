"""Where a run's steps live in a conversation store, and how they are read back.

Layout, per session::

    steps/{run_id}/meta        {"format": 1, "count": n, "system_prompt": "..."}
    steps/{run_id}/{i:08d}     the i-th step's to_dict()

``meta.count`` is written after the steps it counts, so an append interrupted by a crash
leaves the run as it was before the append.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from offprompt.errors import (
    DeserializationError,
    NamespaceError,
    NotFoundError,
    StorageError,
    UnknownTypeError,
)
from offprompt.scope import Scope
from offprompt.steps.records import MemoryStep
from offprompt.stores.base import ScopedStore

__all__ = ["FORMAT_VERSION", "AsyncStateStore", "StateStore"]

FORMAT_VERSION = 1


@runtime_checkable
class StateStore(Protocol):
    """The part of a conversation store (``offprompt.stores``) that step memory uses."""

    def get_state(self, session_id: str, key: str) -> Any | None:
        """The value stored under ``key`` in the session, or ``None``."""
        ...

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        """Store the JSON value ``value`` under ``key`` in the session."""
        ...

    def delete_state(self, session_id: str, key: str) -> None:
        """Delete ``key`` from the session (a missing key is not an error)."""
        ...

    def state_keys(self, session_id: str, prefix: str = "") -> list[str]:
        """The session's keys that start with ``prefix``, sorted."""
        ...


@runtime_checkable
class AsyncStateStore(Protocol):
    """The async twins of :class:`StateStore`."""

    async def aget_state(self, session_id: str, key: str) -> Any | None:
        """Async twin of :meth:`StateStore.get_state`."""
        ...

    async def aset_state(self, session_id: str, key: str, value: Any) -> None:
        """Async twin of :meth:`StateStore.set_state`."""
        ...

    async def adelete_state(self, session_id: str, key: str) -> None:
        """Async twin of :meth:`StateStore.delete_state`."""
        ...

    async def astate_keys(self, session_id: str, prefix: str = "") -> list[str]:
        """Async twin of :meth:`StateStore.state_keys`."""
        ...


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a valid run id (non-empty, no ``/``, at most 256 characters),
    else ``NamespaceError``."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise NamespaceError(f"run_id must be a non-empty string, got {run_id!r}", run_id=run_id)
    if "/" in run_id or len(run_id) > 256:
        raise NamespaceError(
            f"run_id must not contain '/' and must be at most 256 characters, got {run_id[:80]!r}",
            run_id=run_id,
        )
    return run_id


def meta_key(run_id: str) -> str:
    """The state key of a run's step-memory header."""
    return f"steps/{run_id}/meta"


def step_key(run_id: str, index: int) -> str:
    """The state key of a run's step ``index`` (zero-padded, so keys sort by index)."""
    return f"steps/{run_id}/{index:08d}"


def parse_meta(meta: Any, run_id: str, session_id: str) -> tuple[int, str]:
    """``(step count, system prompt)`` of a stored header; ``NotFoundError`` when there is
    none, ``StorageError`` when it is corrupt or of another format."""
    if meta is None:
        raise NotFoundError(
            f"no step memory saved for run {run_id!r} in session {session_id!r}",
            run_id=run_id,
            session_id=session_id,
        )
    if (
        not isinstance(meta, Mapping)
        or not isinstance(meta.get("count"), int)
        or meta["count"] < 0
        or not isinstance(meta.get("system_prompt"), str)
    ):
        raise StorageError(
            f"corrupt step-memory header for run {run_id!r}: {str(meta)[:200]}", run_id=run_id
        )
    if meta.get("format") != FORMAT_VERSION:
        raise StorageError(
            f"run {run_id!r} was saved in step-memory format {meta.get('format')!r}; "
            f"this version reads format {FORMAT_VERSION}",
            run_id=run_id,
        )
    return meta["count"], meta["system_prompt"]


def load_step(data: Any, index: int, run_id: str) -> MemoryStep:
    """The stored step ``index`` of ``run_id``; ``StorageError`` (or ``UnknownTypeError``)
    naming the step when it is missing or cannot be read."""
    if data is None:
        raise StorageError(
            f"step {index} of run {run_id!r} is missing from the store", run_id=run_id
        )
    try:
        return MemoryStep.from_dict(data)
    except UnknownTypeError as exc:
        raise UnknownTypeError(
            f"step {index} of run {run_id!r}: {exc}", run_id=run_id, **exc.context
        ) from None
    except DeserializationError as exc:
        raise DeserializationError(
            f"step {index} of run {run_id!r}: {exc}", run_id=run_id
        ) from None


def with_scope(store: Any, scope: Scope | None) -> Any:
    """``store`` seen through ``scope`` (a :class:`~offprompt.stores.ScopedStore`)."""
    if scope is None:
        return store
    return ScopedStore(store, scope)
