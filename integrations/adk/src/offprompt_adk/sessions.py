"""``OffpromptSessionService``: ADK's ``BaseSessionService`` on an offprompt store.

Each ADK session is one offprompt conversation in the partition of its app and user
(see :mod:`offprompt_adk._layout`): every event one message, converted by
:mod:`offprompt.interop.adk` (the event's JSON kept whole, so it reads back equal), and
the session's record (its own state, times and revision) a state document beside the
messages. ``app:`` state is one document per app, ``user:`` state one per app and user;
``temp:`` state lives only in the session object of the running invocation and is never
stored, exactly as ADK's own services do it.

Stale sessions: every append bumps the stored revision; a session object read before
another writer appended carries an older one, and its append raises ADK's
``StaleSessionError`` (so of two appends from one stale copy, exactly one wins). The
check and the write are one store transaction (SQLite ``BEGIN IMMEDIATE``), so this
holds across processes sharing one file. A store without transactions (``InMemoryStore``;
``PostgresStore`` today) runs them under one lock per service: there it holds within
the process only.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time

# private-ok: ADK's session helpers, so state scoping matches its services
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from offprompt.interop.adk import message_from_event, native_event
from offprompt.scope import Scope
from offprompt.stores import BaseStore
from offprompt.tokens import TiktokenTokenizer
from offprompt_adk._layout import (
    APP_STATE_RUN,
    STATE_SESSION,
    USER_STATE_RUN,
    StoreHolder,
    app_scope,
    raw_value,
    scope_value,
    user_scope,
)

__all__ = ["OffpromptSessionService"]

#: The state key of a session's record in its conversation.
RECORD_KEY = "adk_session"
_STALE = (
    "The last_update_time provided in the session object is earlier than the"
    " update_time in storage. Please check if it is a stale session."
)


def _clean_id(session_id: str | None) -> str | None:
    return session_id.strip() if session_id else None


def _merge(app: dict[str, Any], user: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    merged = dict(own)
    merged.update({State.APP_PREFIX + k: v for k, v in app.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return merged


def _event_json(event: Event) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(event.model_dump_json(exclude_none=True))
    return loaded


def _filter(events: list[Event], config: GetSessionConfig | None) -> list[Event]:
    if config is None:
        return events
    if config.after_timestamp is not None:
        events = [e for e in events if e.timestamp >= config.after_timestamp]
    if config.num_recent_events is not None:
        events = events[-config.num_recent_events :] if config.num_recent_events else []
    return events


class OffpromptSessionService(BaseSessionService):
    """ADK sessions in an offprompt store: a SQLite file, or any offprompt store.

    Pass it as ``Runner(session_service=...)``. Every method is ADK's; reads and
    writes run in worker threads, so the event loop never waits on the store.

    Args:
        path: A SQLite file (shared per file in this process); with neither ``path``
            nor ``store``, ``$OFFPROMPT_HOME/memory.db`` or ``./.offprompt/memory.db``.
        store: Any offprompt store (e.g. a ``PostgresStore``); it stays the caller's to
            close.

    Raises:
        ValidationError: Both ``path`` and ``store``, or a bad one.

    Example:
        >>> import asyncio
        >>> from offprompt.stores import InMemoryStore
        >>> service = OffpromptSessionService(store=InMemoryStore())
        >>> session = asyncio.run(service.create_session(app_name="app", user_id="u1"))
        >>> asyncio.run(service.get_session(app_name="app", user_id="u1", session_id=session.id)) == session
        True
    """

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, store: BaseStore | None = None
    ) -> None:
        self._holder = StoreHolder(path=path, store=store)
        self._tokenizer = TiktokenTokenizer()

    @property
    def store(self) -> BaseStore:
        """The offprompt store the sessions live in."""
        return self._holder.store

    def close(self) -> None:
        """Release the store if this service opened it (``path=``); idempotent."""
        self._holder.close()

    # -- state documents ----------------------------------------------------------------

    def _state(self, scope: Scope) -> dict[str, Any]:
        found = self.store.get_state(STATE_SESSION, "state", scope=scope)
        return dict(found) if isinstance(found, dict) else {}

    def _update_state(self, scope: Scope, delta: dict[str, Any]) -> None:
        if delta:
            state = self._state(scope)
            state.update(delta)
            self.store.set_state(STATE_SESSION, "state", state, scope=scope)

    def _scoped_states(self, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            self._state(app_scope(app_name, APP_STATE_RUN)),
            self._state(user_scope(app_name, user_id, USER_STATE_RUN)),
        )

    def _record(self, app_name: str, user_id: str, session_id: str) -> dict[str, Any] | None:
        found = self.store.get_state(session_id, RECORD_KEY, scope=user_scope(app_name, user_id))
        return dict(found) if isinstance(found, dict) else None

    def _session(
        self, app_name: str, user_id: str, session_id: str, record: dict[str, Any]
    ) -> Session:
        app, user = self._scoped_states(app_name, user_id)
        session = Session(
            app_name=app_name,
            user_id=user_id,
            id=session_id,
            state=_merge(app, user, record["state"]),
            last_update_time=record["update_time"],
        )
        # private-ok: ADK's stale-session marker, set as its own services set it
        session._storage_update_marker = str(record["revision"])
        return session

    # -- the service ----------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new session; ``app:`` / ``user:`` keys of ``state`` go to their scopes.

        Raises:
            AlreadyExistsError: ``session_id`` is taken (ADK's error).
        """
        wanted = _clean_id(session_id) or str(uuid.uuid4())
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = platform_time.get_time()

        def work() -> Session:
            scope = user_scope(app_name, user_id)
            if self._record(app_name, user_id, wanted) is not None:
                raise AlreadyExistsError(f"Session with id {wanted} already exists.")
            self._update_state(app_scope(app_name, APP_STATE_RUN), deltas["app"])
            self._update_state(user_scope(app_name, user_id, USER_STATE_RUN), deltas["user"])
            record = {
                "state": deltas["session"],
                "create_time": now,
                "update_time": now,
                "revision": 0,
            }
            self.store.set_state(wanted, RECORD_KEY, record, scope=scope)
            return self._session(app_name, user_id, wanted, record)

        return await self._holder.run(work)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (``config`` filters them), or ``None``."""
        wanted = _clean_id(session_id)
        if not wanted:
            return None

        def work() -> Session | None:
            record = self._record(app_name, user_id, wanted)
            if record is None:
                return None
            session = self._session(app_name, user_id, wanted, record)
            stored = self.store.read(wanted, scope=user_scope(app_name, user_id))
            events = []
            for item in stored:
                native = native_event(item.message)
                if native is not None:
                    events.append(Event.model_validate_json(json.dumps(native)))
            session.events = _filter(events, config)
            return session

        return await self._holder.run(work)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The sessions of ``user_id`` (every user's with ``None``), without events,
        oldest update first."""

        def work() -> ListSessionsResponse:
            selector = Scope(
                agent=scope_value(app_name, "app_name"),
                user=None if user_id is None else scope_value(user_id, "user_id"),
            )
            sessions = []
            for info in self.store.sessions(scope=selector):
                if info.scope is None or info.scope.run is not None or info.scope.user is None:
                    continue
                owner = raw_value(info.scope.user)
                record = self._record(app_name, owner, info.session_id)
                if record is not None:
                    sessions.append(self._session(app_name, owner, info.session_id, record))
            sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
            return ListSessionsResponse(sessions=sessions)

        return await self._holder.run(work)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and its events (no error if there is none)."""
        wanted = _clean_id(session_id)
        if not wanted:
            return
        await self._holder.run(
            lambda: self.store.delete_session(wanted, scope=user_scope(app_name, user_id))
        )

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state, keys without the prefix."""
        return await self._holder.run(
            lambda: self._state(user_scope(app_name, user_id, USER_STATE_RUN))
        )

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` (``temp:`` state left out) and apply it to ``session``.

        Raises:
            SessionNotFoundError: The session is not stored (ADK's error).
            StaleSessionError: Another writer appended since ``session`` was read.
        """
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await self._holder.run(lambda: self._write(session, event))
        return self._commit_event_to_session(session, event)

    def _write(self, session: Session, event: Event) -> None:
        scope = user_scope(session.app_name, session.user_id)
        record = self._record(session.app_name, session.user_id, session.id)
        if record is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        # private-ok: ADK's stale-session marker, set as its own services set it
        marker = session._storage_update_marker
        if (marker is not None and marker != str(record["revision"])) or (
            marker is None and record["update_time"] > session.last_update_time
        ):
            raise StaleSessionError(_STALE)
        if event.actions and event.actions.state_delta:
            deltas = _session_util.extract_json_safe_state_delta(event.actions.state_delta)
            self._update_state(app_scope(session.app_name, APP_STATE_RUN), deltas["app"])
            self._update_state(
                user_scope(session.app_name, session.user_id, USER_STATE_RUN), deltas["user"]
            )
            record["state"] = {**record["state"], **deltas["session"]}
        message = message_from_event(_event_json(event))
        self.store.append(
            session.id, [message], [self._tokenizer.count_message(message)], scope=scope
        )
        record["update_time"] = event.timestamp
        record["revision"] = int(record["revision"]) + 1
        self.store.set_state(session.id, RECORD_KEY, record, scope=scope)
        session.last_update_time = event.timestamp
        # private-ok: ADK's stale-session marker, set as its own services set it
        session._storage_update_marker = str(record["revision"])
