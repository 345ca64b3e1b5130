"""Durable conversation stores behind one protocol.

* :class:`InMemoryStore`: this process only; tests and short sessions.
* :class:`SQLiteStore`: the embedded default (WAL; threads and processes share it).
* :class:`QdrantStore`: a Qdrant collection shared by several machines.

All three pass the same contract test suite. :func:`open_store` is how a memory given
``store=`` or ``path=`` gets its store: one shared :class:`SQLiteStore` per file.
"""

from offprompt.stores.base import (
    MAX_SESSION_ID_LENGTH,
    BaseStore,
    ConversationStore,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    validate_session_id,
)
from offprompt.stores.memory import InMemoryStore
from offprompt.stores.qdrant import QdrantStore
from offprompt.stores.shared import open_store, release_store, shared_holders
from offprompt.stores.sqlite import SQLiteStore, default_path, default_store

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "BaseStore",
    "ConversationStore",
    "InMemoryStore",
    "IndexEntry",
    "QdrantStore",
    "SQLiteStore",
    "SessionInfo",
    "SessionVersion",
    "StoredMessage",
    "default_path",
    "default_store",
    "open_store",
    "release_store",
    "shared_holders",
    "validate_session_id",
]
