"""Deleting what ``TaskMemory`` stored: one namespace, what retention evicts, a scope.

Metadata goes first (a namespace disappears at once); its data (chunks, raw text,
blobs) is discarded once its indexing job has stopped, so no chunk is written after
the deletion. Retention is :func:`offprompt.retention.evict` over the namespaces'
last-write times and token counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offprompt.errors import ExpiredError, NotFoundError, ValidationError
from offprompt.names import validate_namespace
from offprompt.retention import PruneReport, Retained, RetentionPolicy, evict
from offprompt.scope import Scope
from offprompt.task_memory import (
    _index_jobs,
)
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.trace import TraceEvent, emit_safely
from offprompt.vectors._scratch import sweep_stale

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory


def missing(memory: TaskMemory, namespace: str) -> NotFoundError:
    """The error for a namespace the memory cannot read: expired (older than the
    retention's ``max_age``, not yet pruned) or unknown (never stored, deleted, pruned,
    or another memory's: no other memory's name is given away)."""
    found = memory._catalog.get(namespace)
    age = None if memory.retention is None else memory.retention.age_seconds
    if found is not None and found.memory == memory.name and age is not None:
        return ExpiredError(
            f"namespace {namespace!r} in {memory.name} has expired: it is older than the "
            f"retention's max_age of {age:g} s and can no longer be read",
            namespace=namespace,
        )
    return NotFoundError(f"namespace {namespace!r} is not in {memory.name}", namespace=namespace)


def discard_deleted(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> None:
    """Delete the data of a namespace whose metadata is gone, once its indexing job
    (told to stop) has finished, so no chunk is written after the deletion."""
    if memory._indexer is not None and memory._indexer.pending(namespace):
        memory._cancelled.add(namespace)
        try:
            memory._indexer.wait(namespace)
        finally:
            memory._cancelled.discard(namespace)
    for generation in meta.generations():
        memory._pending.take(generation)
    storage = memory._kind_storage(meta.storage)
    # What is committed is read, and what it does not keep deleted, in one block that no
    # other process's commit lands in (catalog.guard; raw bytes in the store keep what is
    # committed themselves): a store racing this sweep keeps its bytes.
    with memory._lock, memory._catalog.guard(namespace):
        current = memory._meta(namespace)
        if current is None:
            storage.discard(namespace, None, tenant=memory.tenant)
            _index_jobs.forget_index(memory, namespace)
        else:  # written again meanwhile: keep the new generations
            gone = meta.generations()
            storage.discard(namespace, current.entries(), tenant=memory.tenant, generations=gone)


def prune(
    memory: TaskMemory,
    policy: RetentionPolicy | None = None,
    *,
    now: float | None = None,
    keep: str | None = None,
) -> PruneReport:
    """The body of :meth:`TaskMemory.prune` (its docstring says what it does)."""
    policy = policy or memory.retention
    if policy is None:
        raise ValidationError("prune needs a RetentionPolicy (none given, none configured)")
    with memory._lock:
        docs = {
            ns: meta
            for ns, meta in memory._catalog.list_all().items()
            if meta.memory == memory.name
        }
        order = sorted(docs, key=lambda ns: (docs[ns].written_at(), ns))
        items = [Retained(ns, docs[ns].tokens, docs[ns].written_at()) for ns in order]
        evicted = evict(items, policy, now=now, protect=() if keep is None else (keep,))
        doomed = [e.id for e in evicted]
        for ns in doomed:
            memory._catalog.delete(ns)
    for ns in doomed:
        discard_deleted(memory, ns, docs[ns])
    if doomed:
        emit_safely(
            memory.tracer,
            TraceEvent(
                "evict",
                scope=memory._scope_fields(),
                dropped=[{"namespace": e.id, "reason": e.reason} for e in evicted],
            ),
        )
    return PruneReport(namespaces=len(doomed))


def forget_scope(memory: TaskMemory, scope: Scope, *, all: bool = False) -> dict[str, int]:
    """The body of :meth:`TaskMemory.forget_scope` (its docstring says what it does)."""
    if memory._indexer is not None:
        memory._indexer.wait()
    sweep_stale()
    points = memory.vector_store.forget_scope(scope, all=all)
    outputs = memory._catalog.forget_scope(scope, all=all)
    blobs = 0
    seen: set[int] = set()
    for storage in memory.storages.values():
        store = getattr(storage, "blob_store", None)
        if store is None or id(store) in seen:
            continue
        seen.add(id(store))
        forget = getattr(store, "forget_scope", None)
        if callable(forget):
            blobs += int(forget(scope, all=all))
    return {"points": points, "blobs": blobs, "outputs": outputs}


def delete(memory: TaskMemory, namespace: str) -> bool:
    """The body of :meth:`TaskMemory.delete` (its docstring says what it does)."""
    validate_namespace(namespace)
    with memory._lock:
        meta = memory._meta(namespace)
        if meta is None:
            return False
        memory._catalog.delete(namespace)
    discard_deleted(memory, namespace, meta)
    emit_safely(
        memory.tracer,
        TraceEvent(
            "delete",
            scope=memory._scope_fields(),
            dropped=[{"namespace": namespace, "reason": "delete"}],
            detail={"namespace": namespace, "memory": "task"},
        ),
    )
    return True
