"""``OffpromptSessionRepository``: a Strands ``SessionRepository`` on an offprompt store.

Strands' ``RepositorySessionManager(session_id=..., session_repository=...)`` keeps an
agent's session (the ``Session``, each ``SessionAgent`` with its state, each
``SessionMessage``, multi-agent states) through a repository; this one keeps them in
any offprompt store: the embedded SQLite file by default (``$OFFPROMPT_HOME/memory.db``
or ``./.offprompt/memory.db``), ``path=`` another SQLite file, ``store=`` e.g. a
:class:`~offprompt.stores.PostgresStore` shared by several hosts. Every write is one
store transaction, readable at once by every process on the store.

Layout: a Strands session ``sid`` is the offprompt session ``strands:sid``; its records
are JSON state documents of it (``session``, ``agent/{agent_id}``,
``message/{agent_id}/{message_id}``, ``multi_agent/{id}``), each exactly the
``to_dict()`` Strands' own ``FileSessionManager`` writes to its files. ``offprompt forget``
and :meth:`OffpromptSessionRepository.delete_session` delete all of it.

Errors are those of ``FileSessionManager``: ``SessionException`` for a session that
already exists (create) or does not (delete), an agent or message to update that does not
exist, and messages listed for an agent never created; ``ValueError`` for an id with a
path separator or a message id that is not an int.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

# private-ok: Strands' own id check, so its errors are Strands'
from strands import _identifier
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from offprompt.errors import ValidationError
from offprompt.stores import BaseStore
from offprompt.stores.shared import open_store, release_store

if TYPE_CHECKING:
    from strands.multiagent import MultiAgentBase

__all__ = ["SESSION_PREFIX", "OffpromptSessionRepository"]

#: Start of the offprompt session id that holds a Strands session.
SESSION_PREFIX = "strands:"

_SESSION = "session"


def _session_id(session_id: str) -> str:
    return SESSION_PREFIX + _identifier.validate(session_id, _identifier.Identifier.SESSION)


def _agent_key(agent_id: str) -> str:
    return "agent/" + _identifier.validate(agent_id, _identifier.Identifier.AGENT)


def _multi_agent_key(multi_agent_id: str) -> str:
    return "multi_agent/" + _identifier.validate(multi_agent_id, _identifier.Identifier.AGENT)


def _messages_prefix(agent_id: str) -> str:
    return "message/" + _identifier.validate(agent_id, _identifier.Identifier.AGENT) + "/"


def _message_key(agent_id: str, message_id: int) -> str:
    if isinstance(message_id, bool) or not isinstance(message_id, int):
        raise ValueError(f"message_id=<{message_id}> | message id must be an integer")
    return f"{_messages_prefix(agent_id)}{message_id}"


class OffpromptSessionRepository(SessionRepository):
    """Strands sessions, agents and messages in an offprompt store.

    Pass it as ``RepositorySessionManager(session_id=..., session_repository=repo)``.

    Args:
        path: A SQLite file (shared per file in this process); the default file when
            neither ``path`` nor ``store`` is given.
        store: Any offprompt store; it stays the caller's to close.

    Raises:
        ValidationError: Both ``path`` and ``store``, or a ``store`` that is no
            offprompt store.

    Attributes:
        store: The offprompt store the records live in.

    Example:
        >>> import tempfile, pathlib
        >>> from strands.types.session import Session, SessionType
        >>> repo = OffpromptSessionRepository(path=pathlib.Path(tempfile.mkdtemp()) / "m.db")
        >>> repo.create_session(Session("user-42", SessionType.AGENT)).session_id
        'user-42'
        >>> repo.read_session("user-42").session_id
        'user-42'
        >>> repo.close()
    """

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, store: BaseStore | None = None
    ) -> None:
        if path is not None and store is not None:
            raise ValidationError("give path or store, not both")
        if store is not None and not isinstance(store, BaseStore):
            raise ValidationError(f"store must be an offprompt store, got {type(store).__name__}")
        self._owns_store = store is None
        self.store = open_store(store, path=Path(path) if path is not None else None)
        self._lock = threading.RLock()
        self._closed = False

    def __repr__(self) -> str:
        return f"OffpromptSessionRepository(store={self.store!r})"

    def close(self) -> None:
        """Release the store this repository opened (not one passed as ``store``)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_store:
            release_store(self.store)

    def __enter__(self) -> OffpromptSessionRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- records -------------------------------------------------------------------------

    def _get(self, session_id: str, key: str) -> dict[str, Any] | None:
        value = self.store.get_state(_session_id(session_id), key)
        if value is not None and not isinstance(value, dict):
            raise SessionException(f"Invalid record {key} in session {session_id}: {value!r}")
        return value

    def _set(self, session_id: str, key: str, value: dict[str, Any]) -> None:
        self.store.set_state(_session_id(session_id), key, value)

    # -- sessions ------------------------------------------------------------------------

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        """Create a new session.

        Raises:
            SessionException: The session already exists.
        """
        with self._lock, self.store.transaction():
            if self._get(session.session_id, _SESSION) is not None:
                raise SessionException(f"Session {session.session_id} already exists")
            self._set(session.session_id, _SESSION, session.to_dict())
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        """The session, or None when it does not exist."""
        data = self._get(session_id, _SESSION)
        return None if data is None else Session.from_dict(data)

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Delete the session and all its agents, messages and multi-agent states.

        Raises:
            SessionException: The session does not exist.
        """
        with self._lock, self.store.transaction():
            if self._get(session_id, _SESSION) is None:
                raise SessionException(f"Session {session_id} does not exist")
            self.store.delete_session(_session_id(session_id))

    # -- agents --------------------------------------------------------------------------

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Create (or overwrite) an agent of the session."""
        self._set(session_id, _agent_key(session_agent.agent_id), session_agent.to_dict())

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        """The agent, or None when it does not exist."""
        data = self._get(session_id, _agent_key(agent_id))
        return None if data is None else SessionAgent.from_dict(data)

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Update an agent, keeping its ``created_at``.

        Raises:
            SessionException: The agent does not exist.
        """
        agent_id = session_agent.agent_id
        with self._lock, self.store.transaction():
            previous = self.read_agent(session_id, agent_id)
            if previous is None:
                raise SessionException(f"Agent {agent_id} in session {session_id} does not exist")
            session_agent.created_at = previous.created_at
            self._set(session_id, _agent_key(agent_id), session_agent.to_dict())

    # -- messages ------------------------------------------------------------------------

    def create_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        """Create (or overwrite) a message of the agent.

        Raises:
            ValueError: The message id is not an int.
        """
        key = _message_key(agent_id, session_message.message_id)
        self._set(session_id, key, session_message.to_dict())

    def read_message(
        self, session_id: str, agent_id: str, message_id: int, **kwargs: Any
    ) -> SessionMessage | None:
        """The message, or None when it does not exist."""
        data = self._get(session_id, _message_key(agent_id, message_id))
        return None if data is None else SessionMessage.from_dict(data)

    def update_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        """Update a message (a guardrail's redaction), keeping its ``created_at``.

        Raises:
            SessionException: The message does not exist.
        """
        message_id = session_message.message_id
        with self._lock, self.store.transaction():
            previous = self.read_message(session_id, agent_id, message_id)
            if previous is None:
                raise SessionException(f"Message {message_id} does not exist")
            session_message.created_at = previous.created_at
            self._set(session_id, _message_key(agent_id, message_id), session_message.to_dict())

    def list_messages(
        self,
        session_id: str,
        agent_id: str,
        limit: int | None = None,
        offset: int = 0,
        **kwargs: Any,
    ) -> list[SessionMessage]:
        """The agent's messages by message id, ``limit`` of them from ``offset``.

        Raises:
            SessionException: The agent was never created in the session.
        """
        with self._lock, self.store.transaction():
            if self._get(session_id, _agent_key(agent_id)) is None:
                raise SessionException(
                    f"Messages directory missing from agent: {agent_id} in session {session_id}"
                )
            prefix = _messages_prefix(agent_id)
            keys = self.store.state_keys(_session_id(session_id), prefix)
            ordered = sorted(keys, key=lambda key: int(key[len(prefix) :]))
            chosen = ordered[offset : offset + limit] if limit is not None else ordered[offset:]
            records = [self._get(session_id, key) for key in chosen]
        return [SessionMessage.from_dict(record) for record in records if record is not None]

    # -- multi-agent states --------------------------------------------------------------

    def create_multi_agent(
        self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any
    ) -> None:
        """Store a multi-agent's state (``serialize_state()``) in the session."""
        self._set(session_id, _multi_agent_key(multi_agent.id), multi_agent.serialize_state())

    def read_multi_agent(
        self, session_id: str, multi_agent_id: str, **kwargs: Any
    ) -> dict[str, Any] | None:
        """A multi-agent's state, or None when it was never stored."""
        return self._get(session_id, _multi_agent_key(multi_agent_id))

    def update_multi_agent(
        self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any
    ) -> None:
        """Replace a multi-agent's state.

        Raises:
            SessionException: It was never stored.
        """
        key = _multi_agent_key(multi_agent.id)
        state = multi_agent.serialize_state()
        with self._lock, self.store.transaction():
            if self._get(session_id, key) is None:
                raise SessionException(
                    f"MultiAgent state {multi_agent.id} in session {session_id} does not exist"
                )
            self._set(session_id, key, state)
