"""Durable conversation stores behind one protocol.

* :class:`InMemoryStore`: this process only; tests and short sessions.
* :class:`SQLiteStore`: the embedded default (WAL; threads and processes share it).
* :class:`QdrantStore`: a Qdrant collection shared by several machines.
* :class:`PostgresStore`: a PostgreSQL server shared by several machines (the extra
  ``offprompt[postgres]``; imported on first use, so the core needs no psycopg).

All of them pass the same contract test suite. :func:`open_store` is how a memory given
``store=`` or ``path=`` gets its store: one shared :class:`SQLiteStore` per file.
"""

from typing import TYPE_CHECKING, Any

from offprompt.stores.base import (
    MAX_SESSION_ID_LENGTH,
    BaseStore,
    BaseTaskStore,
    ConversationStore,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StateStore,
    StoredMessage,
    TaskStore,
    validate_session_id,
)
from offprompt.stores.memory import InMemoryStore
from offprompt.stores.qdrant import QdrantStore
from offprompt.stores.shared import open_store, release_store
from offprompt.stores.sqlite import SQLiteStore, default_path, default_store

if TYPE_CHECKING:
    from offprompt.stores.postgres import PostgresStore as PostgresStore

# PostgresStore is not in __all__: ``from offprompt.stores import *`` must work without
# the postgres extra (the name itself loads on first use, see __getattr__ below).
__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "BaseStore",
    "BaseTaskStore",
    "ConversationStore",
    "InMemoryStore",
    "IndexEntry",
    "QdrantStore",
    "SQLiteStore",
    "SessionInfo",
    "SessionVersion",
    "StateStore",
    "StoredMessage",
    "TaskStore",
    "default_path",
    "default_store",
    "open_store",
    "release_store",
    "validate_session_id",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        try:
            from offprompt.stores.postgres import PostgresStore as PostgresStore
        except ImportError as exc:
            raise ImportError(
                f"PostgresStore needs psycopg 3 and psycopg_pool ({exc}): "
                "pip install 'offprompt[postgres]'"
            ) from exc
        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
