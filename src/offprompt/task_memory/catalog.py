"""Where ``TaskMemory`` keeps the truth about its namespaces, and what its index holds.

The store holds the truth; the index is derived (DESIGN.md, "Shared"):

* :class:`StoreCatalog`: namespace metadata (with the card's statistics) as versioned
  rows of a conversation store (``SQLiteStore`` for ``path=``, any store passed as
  ``store=``: ``PostgresStore`` for several hosts). A commit names the version it read,
  so two processes writing one namespace never lose each other's artifacts. What the
  chunk index of *this* process holds is recorded in the index itself (one metadata
  point per namespace, ``task_index``: generation -> first chunk seq), so a process
  whose index lacks a namespace another process stored knows it must catch up.
* :class:`VectorCatalog`: the single-process layout of earlier releases, kept for
  ``TaskMemory()`` in memory and ``TaskMemory(vector_store=...)``: the metadata is a
  point in the vector store and the index holds exactly the artifacts marked indexed.

Both hand out :class:`~offprompt.task_memory._namespace_meta.NamespaceMeta` models
whose ``version`` (not stored) :meth:`commit` checks and bumps.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

from offprompt.errors import NotFoundError, StorageError
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore, BaseTaskStore
from offprompt.stores.protocols import task_store
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory.blobs import VerifiedBlobs, check_content, content_key
from offprompt.vectors import QdrantVectorStore

__all__ = ["INDEX_KEY", "META_KEY", "StoreBlobStore", "StoreCatalog", "VectorCatalog"]

META_KEY = "task_memory"
INDEX_KEY = "task_index"

Meta = NamespaceMeta


class VectorCatalog:
    """Metadata as points of the (process-local or server) vector store."""

    shared = False
    checks_blobs = True  # nothing to check: one process holds data and metadata

    def __init__(self, vector_store: QdrantVectorStore) -> None:
        self.vector_store = vector_store
        self._lock = threading.Lock()

    def get(self, namespace: str) -> Meta | None:
        """The namespace's metadata, or ``None`` when it has none."""
        record = self.vector_store.get_metadata(namespace, META_KEY)
        return None if record is None else NamespaceMeta.parse(namespace, record, 1)

    def list_all(self) -> dict[str, Meta]:
        """Every namespace's metadata, by namespace."""
        docs = self.vector_store.list_metadata(META_KEY)
        return {ns: NamespaceMeta.parse(ns, record, 1) for ns, record in docs.items()}

    def commit(self, namespace: str, meta: Meta, *, blobs: Sequence[str] = ()) -> bool:
        """Write the namespace's metadata (one point, so always at once); ``True``."""
        self.vector_store.put_metadata(namespace, META_KEY, meta.to_record())
        meta.version = 1
        return True

    def delete(self, namespace: str) -> Meta | None:
        """Delete the namespace's metadata; what it was, or ``None``."""
        meta = self.get(namespace)
        self.vector_store.delete_metadata(namespace, META_KEY)
        return meta

    def guard(self, namespace: str) -> contextlib.AbstractContextManager[None]:
        """A null block: one process holds data and metadata (its ``TaskMemory`` lock
        already orders commits and sweeps)."""
        return contextlib.nullcontext()

    def held(self, namespace: str, meta: Meta) -> dict[str, int]:
        """Generations the index holds: the artifacts marked indexed."""
        return {e.generation: e.first_seq for e in meta.indexed_artifacts()}

    def mark_held(self, namespace: str, held: dict[str, int]) -> None:
        """Nothing to record: the metadata's ``indexed`` flags are the record."""

    def indexed_namespaces(self) -> list[str]:
        """Namespaces tracked as indexed apart from their metadata: none (the vector store is the
        catalog).
        """
        return []

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Nothing to do here: the metadata points go with the vector store's ``forget_scope``; 0."""
        return 0  # the metadata points go with the vector store's forget_scope

    def close(self) -> None:
        """The vector store is closed by its owner."""


class StoreCatalog:
    """Metadata rows in a conversation store; the index's holdings in the index.

    Args:
        store: Any store with the task-output API (``SQLiteStore``, ``PostgresStore``,
            ``InMemoryStore``).
        scope: The exact partition of every row (tenant, user, agent, run, session).
        vector_store: This process's index (already scoped).
        blobs_in_store: The raw bytes live in ``store`` too, so a commit checks they
            are there in its transaction.
        owned: Close ``store`` on :meth:`close`.
    """

    shared = True

    def __init__(
        self,
        store: BaseStore,
        scope: Scope,
        vector_store: QdrantVectorStore,
        *,
        blobs_in_store: bool,
        owned: bool,
    ) -> None:
        self.store: BaseTaskStore = task_store(store, who="TaskMemory")
        self.scope = scope
        self.vector_store = vector_store
        self.checks_blobs = blobs_in_store
        self._owned = owned

    def get(self, namespace: str) -> Meta | None:
        """The namespace's committed metadata (with its version), or ``None``."""
        record = self.store.task_get(namespace, scope=self.scope)
        if record is None:
            return None
        return NamespaceMeta.parse(namespace, record.meta, record.version)

    def list_all(self) -> dict[str, Meta]:
        """Every committed namespace's metadata (with its version), by namespace."""
        return {
            r.namespace: NamespaceMeta.parse(r.namespace, r.meta, r.version)
            for r in self.store.task_list(scope=self.scope)
        }

    def commit(self, namespace: str, meta: Meta, *, blobs: Sequence[str] = ()) -> bool:
        """Write ``meta`` if nobody committed since it was read; False on a conflict.

        Raises:
            NotFoundError: A blob in ``blobs`` is gone (deleted meanwhile).
        """
        version = self.store.task_commit(
            namespace,
            meta.to_record(),
            expect=meta.version,
            blobs=blobs if self.checks_blobs else (),
            scope=self.scope,
        )
        if version is None:
            return False
        meta.version = version
        return True

    def delete(self, namespace: str) -> Meta | None:
        """Delete the namespace's record from the store; its last metadata, or ``None``."""
        record = self.store.task_delete(namespace, scope=self.scope)
        return (
            None if record is None else NamespaceMeta.parse(namespace, record.meta, record.version)
        )

    def guard(self, namespace: str) -> contextlib.AbstractContextManager[None]:
        """A block that no commit or delete of ``namespace`` in another process lands
        in, for raw bytes kept outside the store (``path=``: files beside ``task.db``):
        the store's write transaction (SQLite's ``BEGIN IMMEDIATE``), which every commit
        takes too. A commit checks its files inside it, and a sweep reads what is
        committed and deletes what is not inside it, so neither sees the other half done.

        Raw bytes kept in the store need none (a null block): the store's own commit and
        guarded delete are one transaction each (``StoreBlobStore(referenced=...)``).
        A store without transactions (PostgreSQL with a ``blob_store=`` of your own)
        serialises only this process's threads there.
        """
        if self.checks_blobs:
            return contextlib.nullcontext()
        return self.store.transaction()

    def held(self, namespace: str, meta: Meta) -> dict[str, int]:
        """The generations of the namespace this process's index holds, by artifact."""
        doc = self.vector_store.get_metadata(namespace, INDEX_KEY) or {}
        return {str(k): int(v) for k, v in (doc.get("generations") or {}).items()}

    def mark_held(self, namespace: str, held: dict[str, int]) -> None:
        """Record which generations this process's index holds (none: forget the record)."""
        if held:
            self.vector_store.put_metadata(namespace, INDEX_KEY, {"generations": held})
        else:
            self.vector_store.delete_metadata(namespace, INDEX_KEY)

    def indexed_namespaces(self) -> list[str]:
        """Namespaces this process's index holds chunks of."""
        return sorted(self.vector_store.list_metadata(INDEX_KEY))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete the stored outputs (metadata and raw bytes) ``scope`` selects."""
        return self.store.task_forget_scope(scope, all=all)[0]

    def close(self) -> None:
        """Close the store if this catalog opened it."""
        if self._owned:
            self.store.close()


class StoreBlobStore:
    """A :class:`~offprompt.task_memory.blobs.BlobStore` over a store's task blobs.

    ``TaskMemory(store=...)`` keeps raw outputs (and image bytes) here, so every
    process and host that opens the store reads them.

    Args:
        store: The store holding the blobs.
        scope: The partition of every call that passes none.
        referenced: The blob keys a committed metadata record refers to. Given, a
            delete never removes a blob the namespace's committed metadata refers to,
            checked in the store's transaction (``BaseTaskStore.task_delete_blob``): how
            a delete racing a store in another process keeps the bytes it committed.
    """

    def __init__(
        self,
        store: BaseTaskStore,
        scope: Scope,
        *,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> None:
        self.store = store
        self.scope = scope
        self.referenced = referenced
        #: The blobs whose bytes this process hashed against their key (rows never
        #: change under a key, so once is enough).
        self.verified = VerifiedBlobs()

    def _scope(self, tenant: str, scope: Scope | None) -> Scope:
        chosen = scope if scope is not None else self.scope
        if chosen.tenant is None or (scope is None and tenant != chosen.tenant):
            chosen = chosen.model_copy(update={"tenant": tenant})
        return chosen

    def put(
        self, namespace: str, data: bytes, *, tenant: str = "default", scope: Scope | None = None
    ) -> str:
        """Store ``data`` through the store's task-blob API; its content key (checked to be the
        SHA-256).
        """
        key = self.store.task_put_blob(namespace, data, scope=self._scope(tenant, scope))
        if key != content_key(bytes(data)):
            raise StorageError(f"store returned blob key {key!r}, not the content's SHA-256")
        return key

    def get(
        self, namespace: str, key: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> bytes:
        """The bytes stored under ``key``, checked to hash to it (once per key and process).

        Raises:
            NotFoundError: No blob ``key`` in the namespace.
            StorageError: The stored bytes are not the content of ``key`` (damaged).
        """
        chosen = self._scope(tenant, scope)
        data = self.store.task_get_blob(namespace, key, scope=chosen)
        blob = (tuple(sorted(chosen.fields().items())), namespace, key)
        if not self.verified.holds(blob, True):
            check_content(namespace, key, data, where="the store holds")
            self.verified.add(blob, True)
        return data

    def delete(
        self,
        namespace: str,
        key: str | None = None,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> int:
        """Delete the blob ``key``, or the whole namespace when ``key`` is None; how many blobs
        went.
        """
        return self.store.task_delete_blob(
            namespace, key, scope=self._scope(tenant, scope), referenced=self.referenced
        )

    def keys(
        self, namespace: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> list[str]:
        """The namespace's blob keys."""
        return self.store.task_blob_keys(namespace, scope=self._scope(tenant, scope))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """The store's ``forget_scope`` deletes task blobs with the rows (counted there)."""
        return 0


def missing_blob(namespace: str, exc: NotFoundError) -> NotFoundError:
    """The ``NotFoundError`` for a blob that vanished because its namespace was deleted mid-read."""
    return NotFoundError(
        f"namespace {namespace!r} was deleted while it was being read ({exc})",
        namespace=namespace,
    )
