"""``open_store``: the store a memory given ``store=`` or ``path=`` uses, shared per file.

The rule, for every adapter and the core alike:

* ``store=`` is used as given: it belongs to the caller (any :class:`BaseStore`: SQLite,
  Qdrant, in memory, a server store).
* otherwise ``path=`` names a SQLite file (``None``: :func:`default_path`), and the
  process keeps **one** :class:`SQLiteStore` per resolved path, shared by every memory,
  history and chat store that opens that path: one set of connections and one lock
  state per file, however many objects a framework builds (a LangChain history factory
  builds one per call). Each :func:`open_store` counts one holder;
  :func:`release_store` counts one less and closes the store after the last holder.
  Holders that never release (histories have no ``close``) keep it open until the
  process exits. A shared store someone closed directly is reopened by the next
  :func:`open_store`.
* a URL in ``path=`` (``postgresql://...``) is the place for server stores named by
  address; none is opened that way yet: pass ``store=`` (see :func:`_open_url`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from offprompt.errors import ValidationError
from offprompt.stores.base import BaseStore
from offprompt.stores.sqlite import SQLiteStore, default_path

__all__ = ["open_store", "release_store", "shared_holders"]

_URL_SCHEMES = ("postgresql://", "postgres://")

_lock = threading.Lock()
_shared: dict[Path, SQLiteStore] = {}
_holders: dict[int, int] = {}  # id(store) -> holders, for the stores in _shared


def _open_url(url: str) -> BaseStore:
    # Server stores named by URL plug in here (e.g. "postgresql://..." ->
    # offprompt.stores.postgres.PostgresStore(url), shared per URL as a file is per path).
    raise ValidationError(
        f"path= takes a SQLite file, not a URL ({url.split('://', 1)[0]}://...); "
        "pass the store itself as store= (e.g. store=PostgresStore(...))"
    )


def _resolve(path: str | os.PathLike[str] | None) -> Path:
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ValidationError(f"path must be a str or a path, got {type(path).__name__}")
    return Path(path if path is not None else default_path()).expanduser().resolve()


def open_store(
    store: BaseStore | None = None, *, path: str | os.PathLike[str] | None = None
) -> BaseStore:
    """The store to use for ``store=`` / ``path=`` (see the module's rule).

    Args:
        store: A store the caller owns; returned as is.
        path: A SQLite file, shared per resolved path in this process; ``None`` (and no
            ``store``) means :func:`default_path`. Given with ``store``, it must name that
            store's own file (as a serialised memory does when it is reopened).

    Raises:
        ValidationError: ``store`` is not a :class:`BaseStore`, ``path`` names another
            file than ``store``'s, or ``path`` is a URL.

    Example:
        >>> import tempfile, pathlib
        >>> db = pathlib.Path(tempfile.mkdtemp()) / "memory.db"
        >>> first, second = open_store(path=db), open_store(path=str(db))
        >>> first is second, shared_holders(first)
        (True, 2)
        >>> release_store(first); release_store(second)
        >>> first.closed
        True
    """
    if store is not None:
        if not isinstance(store, BaseStore):
            raise ValidationError(
                f"store must be an offprompt ConversationStore, got {type(store).__name__}"
            )
        if path is not None and not (
            isinstance(store, SQLiteStore) and _resolve(path) == _resolve(store.path)
        ):
            raise ValidationError(
                f"give at most one of store and path, not both ({store!r} and path "
                f"{str(path)!r} are different stores)"
            )
        return store
    if isinstance(path, str) and path.lower().startswith(_URL_SCHEMES):
        return _open_url(path)
    resolved = _resolve(path)
    with _lock:
        shared = _shared.get(resolved)
        if shared is None or shared.closed:
            if shared is not None:
                _holders.pop(id(shared), None)
            shared = _shared[resolved] = SQLiteStore(resolved)
        _holders[id(shared)] = _holders.get(id(shared), 0) + 1
        return shared


def release_store(store: BaseStore) -> None:
    """Done with ``store``: a shared one closes after its last holder, any other now."""
    with _lock:
        holders = _holders.get(id(store))
        if holders is not None:
            if holders > 1:
                _holders[id(store)] = holders - 1
                return
            del _holders[id(store)]
            for key, value in list(_shared.items()):
                if value is store:
                    del _shared[key]
    store.close()


def shared_holders(store: BaseStore) -> int:
    """How many holders share ``store`` (0: it is not a shared store)."""
    with _lock:
        return _holders.get(id(store), 0)
