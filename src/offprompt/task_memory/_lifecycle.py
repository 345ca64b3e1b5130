"""Deleting what ``TaskMemory`` stored: one namespace, what retention evicts, a scope.

Metadata goes first (a namespace disappears at once); its data (chunks, raw text,
blobs) is discarded once its indexing job has stopped, so no chunk is written after
the deletion. Retention is :func:`offprompt.retention.evict` over the namespaces'
last-write times and token counts.
"""

from __future__ import annotations

from offprompt.errors import ValidationError
from offprompt.names import validate_namespace
from offprompt.retention import PruneReport, Retained, RetentionPolicy, evict
from offprompt.scope import Scope
from offprompt.task_memory._index_jobs import Indexer
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.vectors._scratch import sweep_stale

__all__ = ["Lifecycle"]


class Lifecycle:
    """Deletion, retention and forgetting of one memory's namespaces."""

    def __init__(self, parts: Parts, indexer: Indexer) -> None:
        self.parts = parts
        self.indexer = indexer

    def discard_deleted(self, namespace: str, meta: NamespaceMeta) -> None:
        """Delete the data of a namespace whose metadata is gone, once its indexing job
        (told to stop) has finished, so no chunk is written after the deletion."""
        parts = self.parts
        self.indexer.stop_job(namespace)
        for generation in meta.generations():
            self.indexer.pending.take(generation)
        storage = parts.kind_storage(meta.storage)
        # What is committed is read, and what it does not keep deleted, in one block that no
        # other process's commit lands in (catalog.guard; raw bytes in the store keep what is
        # committed themselves): a store racing this sweep keeps its bytes.
        with parts.lock, parts.catalog.guard(namespace):
            current = parts.meta(namespace)
            if current is None:
                storage.discard(namespace, None, tenant=parts.tenant)
                self.indexer.forget_index(namespace)
            else:  # written again meanwhile: keep the new generations
                gone = meta.generations()
                storage.discard(namespace, current.entries(), tenant=parts.tenant, generations=gone)

    def prune(
        self,
        policy: RetentionPolicy | None = None,
        *,
        now: float | None = None,
        keep: str | None = None,
    ) -> PruneReport:
        """What :meth:`TaskMemory.prune` does (its docstring says what)."""
        parts = self.parts
        policy = policy or parts.retention
        if policy is None:
            raise ValidationError("prune needs a RetentionPolicy (none given, none configured)")
        with parts.lock:
            docs = parts.ours()
            order = sorted(docs, key=lambda ns: (docs[ns].written_at(), ns))
            items = [Retained(ns, docs[ns].tokens, docs[ns].written_at()) for ns in order]
            evicted = evict(items, policy, now=now, protect=() if keep is None else (keep,))
            doomed = [e.id for e in evicted]
            for ns in doomed:
                parts.catalog.delete(ns)
        for ns in doomed:
            self.discard_deleted(ns, docs[ns])
        if doomed:
            parts.trace("evict", dropped=[{"namespace": e.id, "reason": e.reason} for e in evicted])
        return PruneReport(namespaces=len(doomed))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> dict[str, int]:
        """What :meth:`TaskMemory.forget_scope` does (its docstring says what)."""
        parts = self.parts
        self.indexer.drain()
        sweep_stale()
        points = parts.vector_store.forget_scope(scope, all=all)
        outputs = parts.catalog.forget_scope(scope, all=all)
        blobs = 0
        seen: set[int] = set()
        for storage in parts.storages.values():
            store = getattr(storage, "blob_store", None)
            if store is None or id(store) in seen:
                continue
            seen.add(id(store))
            forget = getattr(store, "forget_scope", None)
            if callable(forget):
                blobs += int(forget(scope, all=all))
        return {"points": points, "blobs": blobs, "outputs": outputs}

    def delete(self, namespace: str) -> bool:
        """What :meth:`TaskMemory.delete` does (its docstring says what)."""
        parts = self.parts
        validate_namespace(namespace)
        with parts.lock:
            meta = parts.meta(namespace)
            if meta is None:
                return False
            parts.catalog.delete(namespace)
        self.discard_deleted(namespace, meta)
        parts.trace(
            "delete",
            dropped=[{"namespace": namespace, "reason": "delete"}],
            detail={"namespace": namespace, "memory": "task"},
        )
        return True
