"""The indexing jobs of ``TaskMemory``: chunk, embed and index stored text, and catch up.

A committed text artifact marked ``indexed: false`` is indexed by :meth:`Indexer.index`,
now (``index="sync"``) or in the :class:`~offprompt.task_memory.indexing.BackgroundIndexer`
thread, which yields to reads of its process between batches. With a shared store
(``path=``, ``store=``) each process's chunk index records which generations it holds
(:mod:`~offprompt.task_memory.catalog`): a process catches up what others stored when
it opens (its index is durable) or when a namespace is first queried, and drops what
they deleted. The exact page count is cut once, on first need (:meth:`Indexer.count_pages`).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from offprompt.errors import (
    NotFoundError,
    OffpromptError,
    StorageError,
)
from offprompt.names import validate_namespace
from offprompt.task_memory._card_stats import CardStats
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.task_memory._view_cache import PendingTexts
from offprompt.task_memory._views import Views
from offprompt.task_memory.catalog import StoreCatalog
from offprompt.task_memory.indexing import BackgroundIndexer
from offprompt.task_memory.storage import (
    IndexCancelled,
)

__all__ = ["YIELD_SECONDS", "Indexer"]

_HOLD_ATTEMPTS = 3
#: Failed indexing jobs a query runs before it says the output cannot be searched.
_FAILED_TRIES = 2
#: Longest a background indexing batch waits for reads of this process to finish
#: (:meth:`Indexer.yield_to_reads`): indexing still moves on under steady reads.
YIELD_SECONDS = 1.0
#: How often a process drops the chunks of namespaces other processes deleted.
_SWEEP_EVERY_S = 5.0


class Indexer:
    """Every piece of one memory's indexing state: the worker and its jobs, the reads
    it yields to, the texts waiting for it, the namespaces being deleted, catch-up.

    Args:
        parts: The memory's shared parts.
        views: Where the indexer reads a namespace's text (for the exact page count).
        stats: The card's statistics (recomputed once the exact counts are known).
        cache_bytes: The bound of :class:`PendingTexts`.
        index_location: ``"path"`` when this process's index is the durable one of a
            ``path=`` directory: it then catches up what others stored when it opens.
    """

    def __init__(
        self, parts: Parts, views: Views, stats: CardStats, cache_bytes: int, index_location: str
    ) -> None:
        self.parts = parts
        self.views = views
        self.stats = stats
        self.index_location = index_location
        #: The text of raw writes not yet indexed (the indexer starts from it), bounded
        #: in bytes like the read cache.
        self.pending = PendingTexts(cache_bytes)
        self._worker: BackgroundIndexer | None = None
        # Reads running (grep, read, read_lines, json): background indexing waits for
        # them before its next batch, see yield_to_reads.
        self._reads = 0
        #: Notified when the last running read ends (and on close).
        self.reads_done = threading.Condition()
        self._yield_after = 0.0  # monotonic time before which indexing does not yield
        self._cancelled: set[str] = set()  # namespaces being deleted: their job stops
        self._swept_at = time.monotonic()
        self._closed = False

    @property
    def reads_running(self) -> int:
        """How many reads of this process run now (see :meth:`reading`)."""
        return self._reads

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (no job is started after it)."""
        return self._closed

    def close(self) -> None:
        """Stop: a batch waiting for reads stops now, the running job at its next batch,
        queued jobs are dropped (their artifacts stay marked unindexed)."""
        self._closed = True
        with self.reads_done:
            self.reads_done.notify_all()
        if self._worker is not None:
            self._worker.stop()
        self.pending.clear()

    def stop_job(self, namespace: str) -> None:
        """Stop ``namespace``'s pending job (it is being deleted) and wait for it, so no
        chunk of it is written after its data is discarded."""
        if self._worker is not None and self._worker.pending(namespace):
            self._cancelled.add(namespace)
            try:
                self._worker.wait(namespace)
            finally:
                self._cancelled.discard(namespace)

    def drain(self) -> None:
        """Wait for every queued job (a forget must not race a chunk write)."""
        if self._worker is not None:
            self._worker.wait()

    def schedule(self, namespace: str) -> None:
        """Index ``namespace``'s unindexed artifacts, now (``sync``) or in the worker."""
        # The exact page count (a second tokenisation of the whole output) is not part of
        # indexing: it doubled the indexing time. It is computed on first need instead
        # (stats, describe, namespace_metadata; read() cuts its pages itself), see
        # ensure_exact_pages.
        if self.parts.index_mode == "sync":
            self.index_job(namespace, lambda: False)
            return
        with self.parts.lock:
            if self._closed:
                return
            if self._worker is None:
                self._worker = BackgroundIndexer(self.run_job, on_error=self.index_failed)
        self._worker.submit(namespace)

    def run_job(self, namespace: str, should_stop: Callable[[], bool]) -> None:
        """The background indexer's job: :func:`index_job`, stopping when told to, when the
        namespace is being deleted, and yielding to reads between batches."""

        def stop() -> bool:
            self.yield_to_reads(should_stop)
            return should_stop() or namespace in self._cancelled

        try:
            self.index_job(namespace, stop)
        except OffpromptError:
            if self.parts.meta(namespace) is None:
                return  # deleted (or pruned) meanwhile: nothing left to index
            raise

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Mark a read of this process as running (see :func:`yield_to_reads`)."""
        with self.reads_done:
            self._reads += 1
        try:
            yield
        finally:
            with self.reads_done:
                self._reads -= 1
                if not self._reads:
                    self.reads_done.notify_all()

    def yield_to_reads(self, should_stop: Callable[[], bool]) -> None:
        """Between background indexing steps: wait while reads of this process run (at
        most ``YIELD_SECONDS``, then index on as long before yielding again).

        A read is a few C calls over the raw text, an indexing batch mostly Python and
        Rust calls that keep the GIL for tens of ms (the embedded engine's upsert): beside
        a running indexer, a grep of 50 MB that takes 0.1 s alone took 0.5 to 1 s.
        Queries are not reads here: they may wait for this very indexer.
        """
        with self.reads_done:
            if not self._reads or time.monotonic() < self._yield_after:
                return
            if not self.reads_done.wait_for(
                lambda: not self._reads or self._closed or should_stop(),
                timeout=YIELD_SECONDS,
            ):  # reads kept running: index on as long before yielding again
                self._yield_after = time.monotonic() + YIELD_SECONDS

    def index_failed(self, key: str, exc: BaseException) -> None:
        """Trace an indexing job's failure (an ``offload`` event with stage ``index``)."""
        self.parts.trace(
            "offload",
            detail={"namespace": key.split("\x00")[0], "stage": "index", "error": str(exc)[:500]},
        )

    def resume_unindexed(self) -> None:
        """Schedule every namespace whose metadata lists an artifact not yet indexed.

        With a shared store, a process whose index is durable (``path=``'s first
        process) also catches up what others stored and drops what they deleted; the
        others index a namespace when it is first queried (:func:`hold_whole`).
        """
        try:
            docs = self.parts.catalog.list_all()
            if isinstance(self.parts.catalog, StoreCatalog):
                if self.index_location != "path":
                    return
                self.sweep_index(docs)
        except OffpromptError:
            return
        for namespace, meta in sorted(docs.items()):
            if meta.memory == self.parts.name and not self.fully_held(namespace, meta):
                self.schedule(namespace)

    def sweep_index(self, docs: Mapping[str, NamespaceMeta]) -> None:
        """Drop the chunks of namespaces another process deleted (shared store only)."""
        for namespace in self.parts.catalog.indexed_namespaces():
            if namespace not in docs:
                self.forget_index(namespace)

    def forget_index(self, namespace: str) -> None:
        """Remove ``namespace``'s chunks and holdings record from this process's index."""
        if isinstance(self.parts.catalog, StoreCatalog):
            self.parts.vector_store.delete(namespace)
            self.parts.catalog.mark_held(namespace, {})

    def hold_whole(self, namespace: str, meta: NamespaceMeta) -> NamespaceMeta:
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
            if self._holds(namespace, meta) or failed == _FAILED_TRIES:
                break
            failed, failure = self._tally(failed, failure, self._index_now(namespace))
            found = self.parts.meta(namespace)
            if found is None:
                return meta  # deleted meanwhile: the query finds nothing of it
            meta = found
        if self._holds(namespace, meta):
            return meta
        cause = failure or "its indexing did not finish"
        raise StorageError(
            f"namespace {namespace!r} is stored whole but could not be indexed ({cause}), so "
            "query cannot search it now; grep and read do not need the index (they read the "
            "stored output itself), and the index is built again on the next query",
            namespace=namespace,
        )

    @staticmethod
    def _tally(failed: int, failure: str | None, new: str | None) -> tuple[int, str | None]:
        return (failed + 1, new) if new else (failed, failure)

    def _holds(self, namespace: str, meta: NamespaceMeta) -> bool:
        if self.parts.catalog.shared:
            return self.fully_held(namespace, meta)
        return meta.storage != "text" or meta.fully_indexed

    def _index_now(self, namespace: str) -> str | None:
        """Index ``namespace`` (or wait for its running job); the job's failure, if any."""
        indexer = self._worker
        try:
            if indexer is None or not indexer.pending(namespace):
                self.schedule(namespace)  # sync: the job runs here, and raises here
        except (OffpromptError, OSError) as exc:
            self.index_failed(namespace, exc)
            return f"{type(exc).__name__}: {exc}"
        indexer = self._worker
        if indexer is None:
            return None
        indexer.wait(namespace)
        return indexer.failures.get(namespace)

    def fully_held(self, namespace: str, meta: NamespaceMeta) -> bool:
        """Whether this process's index holds every artifact of ``meta`` (blobs: always)."""
        if meta.storage != "text":
            return True
        held = self.parts.catalog.held(namespace, meta)
        return all(g in held for g in meta.generations())

    def index_job(self, namespace: str, should_stop: Callable[[], bool]) -> None:
        """Index the artifacts of ``namespace`` this process's index lacks, oldest first,
        recording each (and its exact counts in the metadata, if not there yet)."""
        storage = self.parts.text_storage()
        while not should_stop():
            meta = self.parts.meta(namespace)
            if meta is None:
                self.forget_index(namespace)
                return
            entries = meta.artifacts
            held = self.parts.catalog.held(namespace, meta)
            live = set(meta.generations())
            stale = [g for g in held if g not in live]
            if stale:  # generations deleted or replaced by another process
                storage.drop_chunks(namespace, stale, tenant=self.parts.tenant)
                held = {g: v for g, v in held.items() if g in live}
                self.parts.catalog.mark_held(namespace, held)
            at = next((i for i, e in enumerate(entries) if e.generation not in held), None)
            if at is None:
                return
            todo = entries[at]
            first_seq = sum(e.chunks for e in entries[:at])
            generation = todo.generation
            # A crash mid-index left some of this generation's chunks: start clean.
            storage.drop_chunks(namespace, [generation], tenant=self.parts.tenant)
            text = self.pending.take(generation)
            if text is None:  # written by another process, or before a restart
                try:
                    entry = todo.as_storage_entry()
                    text = storage.raw_bytes(namespace, entry, tenant=self.parts.tenant).decode(
                        "utf-8"
                    )
                except NotFoundError:
                    continue  # deleted meanwhile: the next round sees it gone
            try:
                counts = storage.index_text(
                    namespace,
                    text,
                    generation=generation,
                    first_seq=first_seq,
                    tenant=self.parts.tenant,
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
                if current is None or (self.parts.catalog.shared and current.indexed):
                    return False  # gone, or another process recorded the counts first
                current.indexed, current.first_seq = True, first_seq
                current.chunks, current.tokens = counts["chunks"], counts["tokens"]
                meta.totals()
                if meta.fully_indexed:
                    stats = dict(meta.stats or {})
                    if not stats.get("pages"):
                        # Until pages_job cuts the real pages (on first need); the card's
                        # estimate (TextView.estimated_pages) stays the one stated till then.
                        stats["pages"] = max(1, math.ceil(meta.tokens / self.parts.page_tokens))
                    stats.update(indexed=True, tokens=meta.tokens, tokens_estimated=False)
                    meta.stats = stats
                return True

            with self.parts.lock:
                after = self.parts.update(namespace, record)
                if after is None or after.entry(generation) is None:
                    # Deleted (or pruned) while indexing: its chunks must not linger.
                    storage.drop_chunks(namespace, [generation], tenant=self.parts.tenant)
                    return
                self.parts.catalog.mark_held(namespace, {**held, generation: first_seq})

    def pages_job(self, namespace: str) -> None:
        """After indexing: exact page count, and the JSON kind/outline of large outputs."""
        with self.parts.lock:
            meta = self.parts.meta(namespace)
            if meta is None or meta.storage != "text" or not meta.fully_indexed:
                return
        view = self.views.of(namespace, meta)
        pages = len(view.page_bounds(self.parts.tokenizer.encoding, self.parts.page_tokens)) - 1
        update: dict[str, Any] = {"pages": pages}
        # A record older than the card has no stats: its whole card is computed here once
        # (recording the page count alone made its card blank).
        card = meta.stats if meta.stats is not None else self.stats.fresh(namespace, meta, [])
        if card.get("kind") == "json" and card.get("json_outline") is None and not meta.sensitive:
            update.update(self.stats.json(view, namespace, meta))
        before = meta.generations()

        def exact(meta: NamespaceMeta) -> bool:
            if meta.generations() != before or meta.pages_exact:
                return False  # appended to meanwhile (the next job recounts), or done
            meta.stats = {**(meta.stats if meta.stats is not None else card), **update}
            meta.pages_exact = True
            return True

        self.parts.update(namespace, exact)

    def ensure_exact_pages(self, namespace: str, meta: NamespaceMeta) -> NamespaceMeta:
        """``meta`` with the exact page count (and a large JSON output's outline), computed
        once, on first need, after the namespace is fully indexed."""
        if meta.storage != "text" or meta.pages_exact or not meta.fully_indexed:
            return meta
        self.pages_job(namespace)
        return self.parts.meta(namespace) or meta

    def all_indexed(self, namespace: str | None) -> bool:
        """Whether ``namespace`` (every namespace when None) has nothing left to index here."""
        names = [namespace] if namespace is not None else self.parts.names()
        for ns in names:
            meta = self.parts.meta(ns)
            if meta is None:
                continue
            if self.parts.catalog.shared and not self.fully_held(ns, meta):
                return False
            if not meta.fully_indexed:
                return False
        return True

    def maybe_sweep(self) -> None:
        """Every few seconds of use: drop the chunks of namespaces others deleted."""
        if not self.parts.catalog.shared or time.monotonic() - self._swept_at < _SWEEP_EVERY_S:
            return
        self._swept_at = time.monotonic()
        with contextlib.suppress(OffpromptError):
            self.sweep_index(self.parts.catalog.list_all())

    def wait_indexed(self, namespace: str | None = None, timeout: float | None = None) -> bool:
        """The body of :meth:`TaskMemory.wait_indexed` (its docstring says what it does)."""
        if namespace is not None:
            validate_namespace(namespace)
        if self._closed:
            return False
        if self.parts.catalog.shared:  # catch up what other processes stored
            names = [namespace] if namespace is not None else self.parts.names()
            for ns in names:
                meta = self.parts.meta(ns)
                if meta is not None and not self.fully_held(ns, meta):
                    self.schedule(ns)
        indexer = self._worker
        if indexer is None:
            return self.all_indexed(namespace)
        done = indexer.wait(namespace, timeout)
        return done and self.all_indexed(namespace)
