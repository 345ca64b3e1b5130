"""Where the ADK services keep things in an offprompt store (one rule for all three).

An ADK ``(app_name, user_id)`` pair is the store partition ``Scope(agent=app_name,
user=user_id)``, so ``offprompt forget --user`` reaches a user's sessions, artifacts
and memories. A value that is not a valid scope value as it is (a ``/``, ``..``, an
empty string, a ``%``) is percent-encoded, which keeps the mapping one-to-one: a raw
value never holds a ``%`` and an encoded one always does. App-scoped data lives in
``Scope(agent=app_name, run=...)``; each service marks its own partitions with a
``run`` of its own, so sessions, artifacts, memories and state never meet.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote, unquote

from offprompt.errors import NamespaceError, ValidationError
from offprompt.scope import Scope
from offprompt.stores import BaseStore, release_store
from offprompt.stores.shared import open_store

_T = TypeVar("_T")

#: The ``run`` of the partitions that hold app state and user state.
APP_STATE_RUN = "adk-app-state"
USER_STATE_RUN = "adk-user-state"
#: The store session id of a state document in its partition.
STATE_SESSION = "state"


def scope_value(value: str, what: str) -> str:
    """``value`` as a scope value: itself when valid and ``%``-free, else percent-encoded."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a str, got {type(value).__name__}")
    if "%" not in value and value:
        try:
            Scope(user=value)
        except NamespaceError:
            pass
        else:
            return value
    encoded = quote(value, safe="").replace(".", "%2E") if value else "%"
    if len(encoded) > 200:
        raise ValidationError(f"{what} is too long to store ({len(value)} characters)")
    return encoded


def raw_value(value: str) -> str:
    """The ADK value a scope value stands for (inverse of :func:`scope_value`)."""
    if "%" not in value:
        return value
    return "" if value == "%" else unquote(value)


def user_scope(app_name: str, user_id: str, run: str | None = None) -> Scope:
    """The partition of ``user_id``'s data in ``app_name``."""
    return Scope(
        agent=scope_value(app_name, "app_name"), user=scope_value(user_id, "user_id"), run=run
    )


def app_scope(app_name: str, run: str) -> Scope:
    """The partition of ``app_name``'s app-wide data of kind ``run``."""
    return Scope(agent=scope_value(app_name, "app_name"), run=run)


class StoreHolder:
    """A store from ``path=`` / ``store=`` plus one lock; runs its I/O in worker threads."""

    def __init__(self, *, path: object = None, store: BaseStore | None = None) -> None:
        if path is not None and store is not None:
            raise ValidationError("give at most one of path and store")
        self._owned = store is None
        self.store: BaseStore = open_store(store, path=path)  # type: ignore[arg-type]
        # One writer at a time in this process (a store without transactions, such as
        # InMemoryStore, runs its calls one by one); SQLite's BEGIN IMMEDIATE orders the
        # writers of other processes.
        self.lock = threading.RLock()
        self._closed = False

    def atomic(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` under the lock, as one store transaction."""
        if self._closed:
            raise ValidationError("this service is closed")
        with self.lock, self.store.transaction():
            return work()

    async def run(self, work: Callable[[], _T]) -> _T:
        """:meth:`atomic` in a worker thread (the event loop never waits on the store)."""
        return await asyncio.to_thread(self.atomic, work)

    def close(self) -> None:
        """Give the store back if this service opened it (a given ``store=`` stays open)."""
        if not self._closed:
            self._closed = True
            if self._owned:
                release_store(self.store)
