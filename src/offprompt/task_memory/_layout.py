"""Where a ``TaskMemory`` keeps things: the ``path=`` directory and the shared-store registry.

``path=`` holds ``task.db`` (SQLite: the namespace metadata), ``blobs/`` (raw outputs)
and ``vectors/`` (the chunk index of the first process to open it; the others keep one
in a temporary directory). A directory written before the shared layout is upgraded in
place on first open (:func:`import_legacy`). Each process whose embedded index mirrors a
shared store records itself there (:func:`register`), so a forget can name what it
could not reach.
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from pathlib import Path
from typing import Literal

from offprompt.errors import (
    OffpromptError,
    StorageError,
)
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore, BaseTaskStore
from offprompt.task_memory._namespace_meta import referenced_blobs
from offprompt.task_memory.blobs import BlobStore, FileBlobStore
from offprompt.task_memory.catalog import StoreBlobStore, StoreCatalog, VectorCatalog
from offprompt.vectors import QdrantVectorStore

# BM25 over tiktoken ids for tool outputs: logs and JSON are full of identifiers, paths
# and numbers whose sub-word pieces match where whole words do not (QdrantVectorStore's
# ``lexical`` documents the measure); conversations and long-term memory count words.
TOOL_OUTPUT_LEXICAL: Literal["words", "tokens"] = "tokens"
# No dense vectors in task memory's own index: with the offline HashingEmbedder (the only
# one it can pick itself) they were the largest part of the index on disk and in the WAL
# and added nothing to recall, BM25 alone found as many rare Loghub events
# (benchmarks/RESULTS_query_memory_loghub.md). A vector_store= with an embedding model
# keeps hybrid retrieval; an index written with dense vectors keeps them.
TOOL_OUTPUT_DENSE = False
_LEGACY = ("offprompt-task-memory", "legacy-vectors-imported")
#: State session listing the processes whose embedded index mirrors the store.
_INDEXES = ("offprompt-task-indexes",)  # a session id: one state key per process

__all__ = [
    "TOOL_OUTPUT_DENSE",
    "TOOL_OUTPUT_LEXICAL",
    "IndexRegistration",
    "PathLayout",
    "alive",
    "open_catalog",
]


class PathLayout:
    """The files of a ``TaskMemory(path=root)`` directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def blobs(self) -> Path:
        """The directory of the raw outputs (content-addressed files)."""
        return self.root / "blobs"

    def open_index(self) -> tuple[QdrantVectorStore, str]:
        """This process's chunk index for ``path=``: ``root/vectors`` if no other process
        holds it (its lock), else an embedded index in a temporary directory of its own
        (removed on close), built from the stored text as namespaces are queried."""
        root = self.root
        try:
            root.mkdir(parents=True, exist_ok=True)
            # Processes opening a new directory at once would race to create the shard:
            # the first creates it while the others wait here, then find it locked.
            lock = open(root / ".open.lock", "a+b")  # noqa: SIM115 - held for the open only
        except OSError as exc:
            raise StorageError(
                f"cannot open task memory at {root}: {exc}", path=str(root)
            ) from None
        try:
            with contextlib.suppress(ImportError):
                import fcntl

                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                # Derived from the stored text (rebuilt from it if unreadable): no WAL.
                return QdrantVectorStore(
                    path=str(root / "vectors"),
                    lexical=TOOL_OUTPUT_LEXICAL,
                    dense=TOOL_OUTPUT_DENSE,
                    wal=False,
                ), "path"
            except StorageError as exc:
                if "WouldBlock" not in str(exc) and "lock" not in str(exc).lower():
                    raise
                return QdrantVectorStore(
                    lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE
                ), "memory"
        finally:
            lock.close()  # closing the descriptor releases the flock

    def open_sqlite(self) -> BaseTaskStore:
        """The SQLite store of the namespace records, ``root/task.db``."""
        root = self.root
        from offprompt.stores.sqlite import SQLiteStore

        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create task memory at {root}: {exc}", path=str(root)
            ) from None
        return SQLiteStore(root / "task.db")

    def import_legacy(
        self, store: BaseTaskStore, vectors: QdrantVectorStore, location: str
    ) -> None:
        """Move the namespace metadata a release before the shared layout kept as points in
        ``root/vectors`` into ``task.db``, once (every tenant and scope; the raw text is
        already in ``blobs/``), and record that this index holds their indexed chunks."""
        root = self.root
        if store.get_state(*_LEGACY) or not (root / "vectors").is_dir():
            return
        if location != "path":
            raise StorageError(
                f"{root} was written by an earlier offprompt and its index is open in another "
                "process (an earlier release?); open it once alone to upgrade it in place",
                path=str(root),
            )
        from offprompt.task_memory import _legacy

        with store.transaction():
            if store.get_state(*_LEGACY):
                return
            moved = _legacy.import_points(store, vectors)
            store.set_state(*_LEGACY, True)
        _legacy.drop_points(moved)


class IndexRegistration:
    """This process's record in a shared store of the embedded index it keeps, so a
    forget elsewhere can say which indexes it could not reach (removed on close).

    Args:
        store: The shared store (None: nothing to record).
        location: Where the index lives: ``"path"`` (the directory's durable one),
            ``"memory"`` (a private one), ``"given"`` (the caller's: not recorded).
        root: The ``path=`` directory, if any.
    """

    def __init__(self, store: BaseStore | None, location: str, root: Path | None) -> None:
        self.store = store
        self.location = location
        self.root = root
        self.key: str | None = None

    def register(self) -> None:
        """Record this process's embedded index in the shared store (so a forget can say
        which indexes it could not reach); removed on close."""
        if self.store is None or self.location == "given":
            return
        key = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        try:
            index = (
                str(self.root / "vectors")
                if self.root is not None and self.location == "path"
                else "private"
            )
            self.store.set_state(
                _INDEXES[0],
                key,
                {"host": socket.gethostname(), "pid": os.getpid(), "index": index},
            )
        except OffpromptError:
            return
        self.key = key

    def unregister(self) -> None:
        """Remove this process's record (on close)."""
        if self.key is not None and self.store is not None:
            with contextlib.suppress(OffpromptError):
                self.store.delete_state(_INDEXES[0], self.key)
            self.key = None

    def unreached(self) -> list[str]:
        """What :meth:`TaskMemory.forget_unreached` answers (its docstring says what)."""
        store = self.store
        if store is None:
            return []
        others: list[str] = []
        durable: list[str] = []
        with contextlib.suppress(OffpromptError):
            for key in store.state_keys(_INDEXES[0]):
                if key == self.key:
                    continue
                host, pid = key.split(":")[:2]
                if host == socket.gethostname() and not alive(int(pid)):
                    store.delete_state(_INDEXES[0], key)  # a process that died
                    continue
                others.append(f"{host}:{pid}")
                record = store.get_state(_INDEXES[0], key)
                index = record.get("index") if isinstance(record, dict) else None
                if index and index != "private":
                    durable.append(f"{index} (kept open by process {host}:{pid})")
        if not others:
            return []
        found = [
            f"the embedded chunk indexes of {len(others)} other open process(es) sharing "
            f"this memory's store ({', '.join(sorted(others))}): they drop the forgotten "
            "namespaces' chunks when next used and never answer from them"
        ]
        # The durable index is a file of the shared directory: name it, so the report
        # says the directory still holds bytes (forget from that process, purge=True).
        found += [f"the durable chunk index {d}: its files keep the deleted bytes" for d in durable]
        return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_catalog(
    layout: PathLayout | None,
    store: BaseStore | None,
    blob_store: BlobStore | None,
    *,
    row_scope: Scope,
    scoped_vectors: QdrantVectorStore,
    vector_store: QdrantVectorStore,
    index_location: str,
) -> tuple[VectorCatalog | StoreCatalog, BlobStore | None]:
    """Where the namespace records live, and the blob store (the default one of the
    layout: ``blobs/`` under ``path=``, the store's rows for ``store=``)."""
    if layout is not None:
        sqlite = layout.open_sqlite()
        catalog = StoreCatalog(sqlite, row_scope, scoped_vectors, blobs_in_store=False, owned=True)
        try:
            layout.import_legacy(sqlite, vector_store, index_location)
        except BaseException:
            sqlite.close()
            raise
        return catalog, blob_store if blob_store is not None else FileBlobStore(layout.blobs)
    if store is not None:
        catalog = StoreCatalog(
            store, row_scope, scoped_vectors, blobs_in_store=blob_store is None, owned=False
        )
        if blob_store is None:
            blob_store = StoreBlobStore(catalog.store, row_scope, referenced=referenced_blobs)
        return catalog, blob_store
    return VectorCatalog(scoped_vectors), blob_store
