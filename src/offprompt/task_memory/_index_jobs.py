"""The indexing jobs of ``TaskMemory``: chunk, embed and index stored text, and catch up.

A committed text artifact marked ``indexed: false`` is indexed by :func:`index_job`,
now (``index="sync"``) or in the :class:`~offprompt.task_memory.indexing.BackgroundIndexer`
thread, which yields to reads of its process between batches. With a shared store
(``path=``, ``store=``) each process's chunk index records which generations it holds
(:mod:`~offprompt.task_memory.catalog`): a process catches up what others stored when
it opens (its index is durable) or when a namespace is first queried, and drops what
they deleted. The exact page count is cut once, on first need (:func:`pages_job`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from offprompt.errors import (
    NotFoundError,
    OffpromptError,
    StorageError,
)
from offprompt.names import validate_namespace
from offprompt.task_memory import (
    _card_stats,
    _commit,
    _reads,
)
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory.catalog import StoreCatalog
from offprompt.task_memory.indexing import BackgroundIndexer
from offprompt.task_memory.storage import (
    IndexCancelled,
)
from offprompt.trace import TraceEvent, emit_safely

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory

_HOLD_ATTEMPTS = 3
#: Failed indexing jobs a query runs before it says the output cannot be searched.
_FAILED_TRIES = 2
#: Longest a background indexing batch waits for reads of this process to finish
#: (:func:`yield_to_reads`): indexing still moves on under steady reads.
_YIELD_SECONDS = 1.0
_SWEEP_EVERY_S = 5.0


def schedule(memory: TaskMemory, namespace: str) -> None:
    """Index ``namespace``'s unindexed artifacts, now (``sync``) or in the worker."""
    # The exact page count (a second tokenisation of the whole output) is not part of
    # indexing: it doubled the indexing time. It is computed on first need instead
    # (stats, describe, namespace_metadata; read() cuts its pages itself), see
    # ensure_exact_pages.
    if memory.index_mode == "sync":
        index_job(memory, namespace, lambda: False)
        return
    with memory._lock:
        if memory._closed:
            return
        if memory._indexer is None:
            memory._indexer = BackgroundIndexer(
                functools.partial(run_job, memory), on_error=functools.partial(index_failed, memory)
            )
    memory._indexer.submit(namespace)


def run_job(memory: TaskMemory, namespace: str, should_stop: Callable[[], bool]) -> None:
    """The background indexer's job: :func:`index_job`, stopping when told to, when the
    namespace is being deleted, and yielding to reads between batches."""

    def stop() -> bool:
        yield_to_reads(memory, should_stop)
        return should_stop() or namespace in memory._cancelled

    try:
        index_job(memory, namespace, stop)
    except OffpromptError:
        if memory._meta(namespace) is None:
            return  # deleted (or pruned) meanwhile: nothing left to index
        raise


@contextlib.contextmanager
def reading(memory: TaskMemory) -> Iterator[None]:
    """Mark a read of this process as running (see :func:`yield_to_reads`)."""
    with memory._reads_done:
        memory._reads += 1
    try:
        yield
    finally:
        with memory._reads_done:
            memory._reads -= 1
            if not memory._reads:
                memory._reads_done.notify_all()


def yield_to_reads(memory: TaskMemory, should_stop: Callable[[], bool]) -> None:
    """Between background indexing steps: wait while reads of this process run (at
    most ``_YIELD_SECONDS``, then index on as long before yielding again).

    A read is a few C calls over the raw text, an indexing batch mostly Python and
    Rust calls that keep the GIL for tens of ms (the embedded engine's upsert): beside
    a running indexer, a grep of 50 MB that takes 0.1 s alone took 0.5 to 1 s.
    Queries are not reads here: they may wait for this very indexer.
    """
    with memory._reads_done:
        if not memory._reads or time.monotonic() < memory._yield_after:
            return
        if not memory._reads_done.wait_for(
            lambda: not memory._reads or memory._closed or should_stop(),
            timeout=_YIELD_SECONDS,
        ):  # reads kept running: index on as long before yielding again
            memory._yield_after = time.monotonic() + _YIELD_SECONDS


def index_failed(memory: TaskMemory, key: str, exc: BaseException) -> None:
    """Trace an indexing job's failure (an ``offload`` event with stage ``index``)."""
    emit_safely(
        memory.tracer,
        TraceEvent(
            "offload",
            scope=memory._scope_fields(),
            detail={
                "namespace": key.split("\x00")[0],
                "stage": "index",
                "error": str(exc)[:500],
            },
        ),
    )


def resume_unindexed(memory: TaskMemory) -> None:
    """Schedule every namespace whose metadata lists an artifact not yet indexed.

    With a shared store, a process whose index is durable (``path=``'s first
    process) also catches up what others stored and drops what they deleted; the
    others index a namespace when it is first queried (:func:`hold_whole`).
    """
    try:
        docs = memory._catalog.list_all()
        if isinstance(memory._catalog, StoreCatalog):
            if memory.index_location != "path":
                return
            sweep_index(memory, docs)
    except OffpromptError:
        return
    for namespace, meta in sorted(docs.items()):
        if meta.memory == memory.name and not fully_held(memory, namespace, meta):
            schedule(memory, namespace)


def sweep_index(memory: TaskMemory, docs: Mapping[str, NamespaceMeta]) -> None:
    """Drop the chunks of namespaces another process deleted (shared store only)."""
    for namespace in memory._catalog.indexed_namespaces():
        if namespace not in docs:
            forget_index(memory, namespace)


def forget_index(memory: TaskMemory, namespace: str) -> None:
    """Remove ``namespace``'s chunks and holdings record from this process's index."""
    if isinstance(memory._catalog, StoreCatalog):
        memory.vector_store.delete(namespace)
        memory._catalog.mark_held(namespace, {})


def hold_whole(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> NamespaceMeta:
    """``meta`` once this process's index holds all of ``namespace``, for a query.

    Stored by another process, or still being indexed here: it is indexed (or its job
    waited for) first, so a query never answers from part of an output. A job can lose
    a race with another process indexing or updating the same namespace, so it runs
    again, a few times; a job that failed (a full disk, a store gone) is tried again
    once within the query (twice at most per query), and again by the next query, so
    the index is built as soon as the cause is gone.

    Raises:
        StorageError: Still not indexed after that: the job's failure, and that grep and
            read do not need the index (a damaged output is their own error to say).
    """
    failure: str | None = None
    failed = 0
    for _ in range(_HOLD_ATTEMPTS):
        if _holds(memory, namespace, meta) or failed == _FAILED_TRIES:
            break
        failed, failure = _tally(failed, failure, _index_now(memory, namespace))
        found = memory._meta(namespace)
        if found is None:
            return meta  # deleted meanwhile: the query finds nothing of it
        meta = found
    if _holds(memory, namespace, meta):
        return meta
    cause = failure or "its indexing did not finish"
    raise StorageError(
        f"namespace {namespace!r} is stored whole but could not be indexed ({cause}), so "
        "query cannot search it now; grep and read do not need the index (they read the "
        "stored output itself), and the index is built again on the next query",
        namespace=namespace,
    )


def _tally(failed: int, failure: str | None, new: str | None) -> tuple[int, str | None]:
    return (failed + 1, new) if new else (failed, failure)


def _holds(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> bool:
    if memory._catalog.shared:
        return fully_held(memory, namespace, meta)
    return meta.storage != "text" or meta.fully_indexed


def _index_now(memory: TaskMemory, namespace: str) -> str | None:
    """Index ``namespace`` (or wait for its running job); the job's failure, if any."""
    indexer = memory._indexer
    try:
        if indexer is None or not indexer.pending(namespace):
            schedule(memory, namespace)  # sync: the job runs here, and raises here
    except (OffpromptError, OSError) as exc:
        index_failed(memory, namespace, exc)
        return f"{type(exc).__name__}: {exc}"
    indexer = memory._indexer
    if indexer is None:
        return None
    indexer.wait(namespace)
    return indexer.failures.get(namespace)


def fully_held(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> bool:
    """Whether this process's index holds every artifact of ``meta`` (blobs: always)."""
    if meta.storage != "text":
        return True
    held = memory._catalog.held(namespace, meta)
    return all(g in held for g in meta.generations())


def index_job(memory: TaskMemory, namespace: str, should_stop: Callable[[], bool]) -> None:
    """Index the artifacts of ``namespace`` this process's index lacks, oldest first,
    recording each (and its exact counts in the metadata, if not there yet)."""
    storage = memory._text_storage()
    while not should_stop():
        meta = memory._meta(namespace)
        if meta is None:
            forget_index(memory, namespace)
            return
        entries = meta.artifacts
        held = memory._catalog.held(namespace, meta)
        live = set(meta.generations())
        stale = [g for g in held if g not in live]
        if stale:  # generations deleted or replaced by another process
            storage.drop_chunks(namespace, stale, tenant=memory.tenant)
            held = {g: v for g, v in held.items() if g in live}
            memory._catalog.mark_held(namespace, held)
        at = next((i for i, e in enumerate(entries) if e.generation not in held), None)
        if at is None:
            return
        todo = entries[at]
        first_seq = sum(e.chunks for e in entries[:at])
        generation = todo.generation
        # A crash mid-index left some of this generation's chunks: start clean.
        storage.drop_chunks(namespace, [generation], tenant=memory.tenant)
        text = memory._pending.take(generation)
        if text is None:  # written by another process, or before a restart
            try:
                entry = todo.as_storage_entry()
                text = storage.raw_bytes(namespace, entry, tenant=memory.tenant).decode("utf-8")
            except NotFoundError:
                continue  # deleted meanwhile: the next round sees it gone
        try:
            counts = storage.index_text(
                namespace,
                text,
                generation=generation,
                first_seq=first_seq,
                tenant=memory.tenant,
                should_stop=should_stop,
            )
        except IndexCancelled:
            return
        del text

        def record(
            meta: NamespaceMeta,
            generation: str = generation,
            first_seq: int = first_seq,
            counts: dict[str, int] = counts,
        ) -> bool:
            current = meta.entry(generation)
            if current is None or (memory._catalog.shared and current.indexed):
                return False  # gone, or another process recorded the counts first
            current.indexed, current.first_seq = True, first_seq
            current.chunks, current.tokens = counts["chunks"], counts["tokens"]
            meta.totals()
            if meta.fully_indexed:
                stats = dict(meta.stats or {})
                if not stats.get("pages"):
                    # Until pages_job cuts the real pages (on first need); the card's
                    # estimate (TextView.estimated_pages) stays the one stated till then.
                    stats["pages"] = max(1, math.ceil(meta.tokens / memory.page_tokens))
                stats.update(indexed=True, tokens=meta.tokens, tokens_estimated=False)
                meta.stats = stats
            return True

        with memory._lock:
            after = _commit.update_meta(memory, namespace, record)
            if after is None or after.entry(generation) is None:
                # Deleted (or pruned) while indexing: its chunks must not linger.
                storage.drop_chunks(namespace, [generation], tenant=memory.tenant)
                return
            memory._catalog.mark_held(namespace, {**held, generation: first_seq})


def pages_job(memory: TaskMemory, namespace: str) -> None:
    """After indexing: exact page count, and the JSON kind/outline of large outputs."""
    with memory._lock:
        meta = memory._meta(namespace)
        if meta is None or meta.storage != "text" or not meta.fully_indexed:
            return
    view = _reads.namespace_view(memory, namespace, meta)
    pages = len(view.page_bounds(memory.tokenizer.encoding, memory.page_tokens)) - 1
    update: dict[str, Any] = {"pages": pages}
    # A record older than the card has no stats: its whole card is computed here once
    # (recording the page count alone made its card blank).
    card = (
        meta.stats
        if meta.stats is not None
        else _card_stats.fresh_stats(memory, namespace, meta, [])
    )
    if card.get("kind") == "json" and card.get("json_outline") is None and not meta.sensitive:
        update.update(_card_stats.json_stats(memory, view, namespace, meta))
    before = meta.generations()

    def exact(meta: NamespaceMeta) -> bool:
        if meta.generations() != before or meta.pages_exact:
            return False  # appended to meanwhile (the next job recounts), or done
        meta.stats = {**(meta.stats if meta.stats is not None else card), **update}
        meta.pages_exact = True
        return True

    _commit.update_meta(memory, namespace, exact)


def ensure_exact_pages(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> NamespaceMeta:
    """``meta`` with the exact page count (and a large JSON output's outline), computed
    once, on first need, after the namespace is fully indexed."""
    if meta.storage != "text" or meta.pages_exact or not meta.fully_indexed:
        return meta
    pages_job(memory, namespace)
    return memory._meta(namespace) or meta


def all_indexed(memory: TaskMemory, namespace: str | None) -> bool:
    """Whether ``namespace`` (every namespace when None) has nothing left to index here."""
    names = [namespace] if namespace is not None else memory.namespaces()
    for ns in names:
        meta = memory._meta(ns)
        if meta is None:
            continue
        if memory._catalog.shared and not fully_held(memory, ns, meta):
            return False
        if not meta.fully_indexed:
            return False
    return True


def maybe_sweep(memory: TaskMemory) -> None:
    """Every few seconds of use: drop the chunks of namespaces others deleted."""
    if not memory._catalog.shared or time.monotonic() - memory._swept_at < _SWEEP_EVERY_S:
        return
    memory._swept_at = time.monotonic()
    with contextlib.suppress(OffpromptError):
        sweep_index(memory, memory._catalog.list_all())


def wait_indexed(
    memory: TaskMemory, namespace: str | None = None, timeout: float | None = None
) -> bool:
    """The body of :meth:`TaskMemory.wait_indexed` (its docstring says what it does)."""
    if namespace is not None:
        validate_namespace(namespace)
    if memory._closed:
        return False
    if memory._catalog.shared:  # catch up what other processes stored
        names = [namespace] if namespace is not None else memory.namespaces()
        for ns in names:
            meta = memory._meta(ns)
            if meta is not None and not fully_held(memory, ns, meta):
                schedule(memory, ns)
    indexer = memory._indexer
    if indexer is None:
        return all_indexed(memory, namespace)
    done = indexer.wait(namespace, timeout)
    return done and all_indexed(memory, namespace)
