"""``TaskMemory``: large tool outputs stay off the prompt; the model gets a reference.

Commit protocol (why nothing is ever half-visible): every write gets a fresh
*generation* id; the storage writes its data (chunks or blob files) tagged with it,
and only then does ``TaskMemory`` write the namespace's metadata point, a single
atomic upsert that lists the committed generations. Every read goes through that
metadata and filters on those generations. A crash between the two leaves only
orphaned, invisible data, which ``delete(namespace)`` removes.

Text outputs (``TextArtifact``, ``JsonArtifact``) with the default storages are written
in two steps. First the raw UTF-8 text goes to the blob store (in memory, or a file
written through a temporary file, fsync and rename under ``path=``) and the metadata is
committed with the new artifacts marked ``indexed: false``: the reference (sentence and
card) comes back now, and ``load_artifacts``, ``grep``, ``read_lines``, ``read``,
``json_*``, ``stats`` and ``describe`` already work on the raw text. Then chunking,
embedding and indexing run in a background thread (``index="background"``, the
default) or before returning (``index="sync"``); each artifact's entry is marked
indexed by a second metadata write once all its chunks are in. Opening a memory whose
metadata still lists unindexed artifacts (the process died mid-index) drops their
partial chunks and indexes them again, so a namespace is never half-indexed for good.

``query`` on a namespace still being indexed waits until its indexing has finished
(``wait_indexed(namespace)``), so it never answers from part of an output; after
``close()`` it answers from what was indexed.

Empty outputs (``""`` or whitespace only) store nothing and return
``InfoArtifact("tool output is empty")``. Outputs of any size are chunked and
upserted in streamed batches (a 100 MB output holds one 1 MB tokenisation segment
and one batch of chunks beyond the text itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import socket
import threading
import time
import uuid
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ErrorArtifact,
    InfoArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import (
    NamespaceError,
    NotFoundError,
    NotJsonError,
    OffpromptError,
    RangeError,
    StorageError,
    StorageMismatchError,
    ValidationError,
)
from offprompt.names import validate_namespace
from offprompt.retention import PruneReport, Retained, RetentionPolicy, evict
from offprompt.scope import Scope, as_scope
from offprompt.stores.base import BaseStore
from offprompt.summarizers import ExtractiveSummarizer, TextSummarizer
from offprompt.task_memory import json_view
from offprompt.task_memory.blobs import BlobStore, FileBlobStore, InMemoryBlobStore
from offprompt.task_memory.card import (
    OutputStats,
    csv_fields,
    render_card,
    shape_only,
    sniff_kind,
    tools_for,
)
from offprompt.task_memory.catalog import (
    META_KEY,
    StoreBlobStore,
    StoreCatalog,
    VectorCatalog,
    missing_blob,
)
from offprompt.task_memory.indexing import BackgroundIndexer
from offprompt.task_memory.meta import ActionSubtaskMetaEntry, MetaMemory
from offprompt.task_memory.offload import DEFAULT_PAGE_TOKENS
from offprompt.task_memory.pipeline import Pending, run_beside
from offprompt.task_memory.storage import (
    ArtifactStorage,
    BlobArtifactStorage,
    IndexCancelled,
    TextArtifactStorage,
)
from offprompt.task_memory.text_view import GrepResult, TextView
from offprompt.tokens import TiktokenTokenizer
from offprompt.trace import InMemoryTracer, TraceEvent, Tracer, emit_safely
from offprompt.vectors import Hit, QdrantVectorStore
from offprompt.vectors._scratch import sweep_stale

__all__ = ["REFERENCE_TEMPLATE", "StorageMismatchError", "TaskMemory"]

REFERENCE_TEMPLATE = (
    'Output of "{tool}.{activity}" was stored in memory with memory_name "{memory}" '
    'and artifact_namespace "{namespace}".'
)
EMPTY_OUTPUT = "tool output is empty"
_META_KEY = META_KEY
# Outputs up to this size get exact token counts and a parsed JSON outline at once;
# larger ones get estimates (marked) until the background job has run.
_EXACT_AT_ONCE_BYTES = 256 * 1024
_PARSE_AT_ONCE_BYTES = 4 * 1024 * 1024
_SAMPLE_BYTES = 16 * 1024
# Raw outputs from this size on are hashed and written in a worker thread.
_BESIDE_BYTES = 1 << 20
#: Bytes of namespace text a memory keeps decoded and cut (LRU by bytes; the view last
#: read stays even when it alone is larger). Every stored output passes through it (its
#: card is computed from it), so this is what a process keeps of what it stored: 64 MiB
#: holds a 50 MB output whole, and is a third of ten 20 MB ones.
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
#: Commits retried when other processes keep committing the same namespace.
_COMMIT_RETRIES = 50
_HOLD_ATTEMPTS = 3
#: Longest a background indexing batch waits for reads of this process to finish
#: (:meth:`TaskMemory._yield_to_reads`): indexing still moves on under steady reads.
_YIELD_SECONDS = 1.0
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


class TaskMemory:
    """Off-prompt memory for tool outputs, dispatching artifacts to storages by type.

    Args:
        name: The memory's name, quoted in references as ``memory_name``.
        storages: ``{artifact class: storage}``; by default text goes to a
            :class:`TextArtifactStorage` on ``vector_store`` and blobs (images too) to a
            :class:`BlobArtifactStorage` on ``blob_store``.
        vector_store: Where chunks and namespace metadata live; an embedded
            ``QdrantVectorStore`` (under ``path`` if given) when omitted.
        path: Directory for a durable memory that any number of processes on this
            host may open at once: namespace metadata in ``task.db`` (SQLite, WAL),
            raw outputs as content-addressed fsync'd files in ``blobs/``; the first
            process to open it keeps its chunk index in ``vectors/``, the others in a
            temporary embedded index of their own (see README, "Several machines").
        store: A conversation store that keeps the namespaces and raw outputs instead
            (``PostgresStore`` for several hosts, ``SQLiteStore``, ``InMemoryStore``);
            the caller closes it. Every process builds its chunk index from it (or
            shares one Qdrant server through ``vector_store``).
        blob_store: Blob store; ``FileBlobStore(path / "blobs")`` or in memory.
        cache_bytes: Bytes of namespace text kept in memory after a read (LRU by
            bytes), so a large output is not fetched from the store twice.
        min_tokens: Outputs with fewer tokens pass through unchanged (unless
            ``sensitive``); 0 stores everything.
        tokenizer: A :class:`~offprompt.tokens.TiktokenTokenizer` (pages, chunks and BM25 are
            cut on its tiktoken ``encoding``); offprompt's default when omitted.
        tenant: Scope of every namespace; two tenants never see each other's data.
        chunk_tokens: Tokens per chunk (default storages only).
        overlap_tokens: Overlap tokens used when embedding a chunk.
        page_tokens: The page unit: :meth:`read`'s default page size, the pages the
            card counts, and the pages ``read_memory`` serves (so a page number from the
            card reads that page). The default fits one page and its header in the
            memory tools' default ``max_output_tokens``.
        scope: A :class:`~offprompt.scope.Scope` partition (tenant, user, agent,
            session, run): chunks, blobs and namespace metadata are written with it and
            every read, query, page and listing is filtered by it in the store.
            ``scope.tenant`` replaces ``tenant``.
        retention: A :class:`~offprompt.retention.RetentionPolicy`: namespaces not
            written for ``max_age`` expire (hidden at once, deleted by :meth:`prune`),
            at most ``max_count`` namespaces / ``max_tokens`` tokens are kept (oldest
            deleted first). Applied on every store when ``on_write``.
        tracer: Receives ``offload`` and ``query`` trace events
            (:class:`~offprompt.trace.InMemoryTracer` by default).
        index: ``"background"`` (default): :meth:`process_output` returns once the raw
            output is durable and indexing continues in a worker thread;
            ``"sync"``: it returns once the output is indexed too.
        preview: Follow the reference sentence with the card (:meth:`describe`);
            False gives the bare sentence.
        preview_tokens: The whole reference (sentence, newline, card) is at most this
            many tokens (with the tokenizer); the card shrinks to fit.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> info = memory.process_output("logs", "fetch", TextArtifact("disk full on node 7", name="logs-1"))
        >>> info.value.splitlines()[0]
        'Output of "logs.fetch" was stored in memory with memory_name "TaskMemory" and artifact_namespace "logs-1".'
        >>> memory.grep("logs-1", "node [0-9]+").matches[0].line_number
        1
        >>> memory.query("logs-1", "which node?", top_n=1)[0].value
        'disk full on node 7'
    """

    def __init__(
        self,
        name: str = "TaskMemory",
        *,
        storages: Mapping[type[BaseArtifact], ArtifactStorage] | None = None,
        vector_store: QdrantVectorStore | None = None,
        path: str | Path | None = None,
        store: BaseStore | None = None,
        blob_store: BlobStore | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        min_tokens: int = 0,
        tokenizer: TiktokenTokenizer | None = None,
        tenant: str = "default",
        chunk_tokens: int = 512,
        overlap_tokens: int = 64,
        page_tokens: int = DEFAULT_PAGE_TOKENS,
        scope: Scope | None = None,
        retention: RetentionPolicy | None = None,
        tracer: Tracer | None = None,
        index: Literal["background", "sync"] = "background",
        preview: bool = True,
        preview_tokens: int = 300,
    ) -> None:
        if index not in ("background", "sync"):
            raise ValidationError(f"index must be 'background' or 'sync', got {index!r}")
        if not isinstance(preview_tokens, int) or preview_tokens < 1:
            raise ValidationError(f"preview_tokens must be an int >= 1, got {preview_tokens!r}")
        if not isinstance(name, str) or not name:
            raise ValidationError(f"TaskMemory name must be a non-empty str, got {name!r}")
        if min_tokens < 0 or page_tokens < 1:
            raise ValidationError(
                f"need min_tokens >= 0 and page_tokens >= 1 (got {min_tokens}, {page_tokens})"
            )
        if tokenizer is None:
            from offprompt.tokens import default_tokenizer

            tokenizer = default_tokenizer()
        self.name = name
        if scope is not None:
            resolved = as_scope(scope)
            if resolved.tenant is not None and tenant not in ("default", resolved.tenant):
                raise NamespaceError(
                    f"tenant {tenant!r} contradicts scope.tenant {resolved.tenant!r}"
                )
            tenant = resolved.tenant or tenant
            scope = resolved.model_copy(update={"tenant": tenant})
        if retention is not None and not isinstance(retention, RetentionPolicy):
            raise ValidationError(
                f"retention must be a RetentionPolicy, got {type(retention).__name__}"
            )
        self.scope: Scope | None = scope
        self.retention = retention
        self.tracer: Tracer = tracer if tracer is not None else InMemoryTracer(256)
        self.tenant = validate_namespace(tenant, what="tenant")
        self.min_tokens = min_tokens
        self.page_tokens = page_tokens
        self.tokenizer = tokenizer
        if path is not None and store is not None:
            raise ValidationError("give path= or store=, not both")
        if not isinstance(cache_bytes, int) or cache_bytes < 0:
            raise ValidationError(f"cache_bytes must be an int >= 0, got {cache_bytes!r}")
        root = Path(path) if path is not None else None
        self.path = root
        # close() releases only what this memory opened; a store passed in is the caller's
        self._owns_vector_store = vector_store is None
        self.index_location = "given" if vector_store is not None else "memory"
        if vector_store is None and root is not None:
            vector_store, self.index_location = _open_index(root)
        elif vector_store is None:
            vector_store = QdrantVectorStore(lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE)
        self.vector_store = (
            vector_store.with_scope(scope)
            if scope is not None
            else vector_store.with_tenant(self.tenant)
        )
        self._row_scope = scope if scope is not None else Scope(tenant=self.tenant)
        self._catalog: VectorCatalog | StoreCatalog
        if root is not None:
            from offprompt.stores.sqlite import SQLiteStore

            sqlite = _open_sqlite(root)
            self._catalog = StoreCatalog(
                sqlite, self._row_scope, self.vector_store, blobs_in_store=False, owned=True
            )
            if blob_store is None:
                blob_store = FileBlobStore(root / "blobs")
            try:
                _import_legacy(root, sqlite, vector_store, self.index_location)
            except BaseException:
                sqlite.close()
                raise
            assert isinstance(sqlite, SQLiteStore)
        elif store is not None:
            self._catalog = StoreCatalog(
                store,
                self._row_scope,
                self.vector_store,
                blobs_in_store=blob_store is None,
                owned=False,
            )
            if blob_store is None:
                blob_store = StoreBlobStore(store, self._row_scope)
        else:
            self._catalog = VectorCatalog(self.vector_store)
        #: The store that holds the truth (``task.db`` for ``path=``, ``store=``), or None
        #: when the metadata lives in the vector store (in memory, ``vector_store=``).
        self.store: BaseStore | None = (
            self._catalog.store if isinstance(self._catalog, StoreCatalog) else None
        )
        self._registration = self._register()
        self._swept_at = time.monotonic()
        if storages is None:
            if blob_store is None:
                blob_store = InMemoryBlobStore()
            text_storage = TextArtifactStorage(
                self.vector_store,
                chunk_tokens=chunk_tokens,
                overlap_tokens=overlap_tokens,
                tokenizer=tokenizer,
                raw_store=blob_store,
                scope=scope,
            )
            storages = {
                TextArtifact: text_storage,
                JsonArtifact: text_storage,
                BlobArtifact: BlobArtifactStorage(blob_store, scope=scope),
            }
        _check_storages(storages)
        self.storages: dict[type[BaseArtifact], ArtifactStorage] = dict(storages)
        self.meta_memory = MetaMemory()
        self.index_mode = index
        self.preview = preview
        self.preview_tokens = preview_tokens
        self._lock = threading.RLock()
        self._views: OrderedDict[tuple[Any, ...], TextView] = OrderedDict()
        self._views_lock = threading.Lock()
        self.cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._indexer: BackgroundIndexer | None = None
        # Reads running (grep, read, read_lines, json): background indexing waits for
        # them before its next batch, see _yield_to_reads.
        self._reads = 0
        self._reads_done = threading.Condition()
        self._yield_after = 0.0  # monotonic time before which indexing does not yield
        self._cancelled: set[str] = set()  # namespaces being deleted: their job stops
        # The text of raw writes not yet indexed, by generation: the indexer starts from
        # the str it was given instead of decoding the stored bytes again. Bounded in
        # bytes like the read cache (cache_bytes): when the indexer falls behind a stream
        # of large outputs, the later ones are read back from the raw store instead of all
        # being held here (ten 20 MB logs stored at once held 200 MB until indexed).
        self._texts: dict[str, tuple[str, int]] = {}
        self._texts_bytes = 0
        self._texts_lock = threading.Lock()
        self._closed = False
        self._resume_unindexed()

    def __repr__(self) -> str:
        return f"TaskMemory(name={self.name!r}, tenant={self.tenant!r})"

    def close(self) -> None:
        """Stop background indexing, then release the embedded engine this memory opened.

        The indexing job running stops at its next batch (its artifact stays marked
        unindexed and is indexed again when the memory is next opened on the same
        store); queued jobs are dropped the same way. An embedded store on ``path=`` is
        locked while open, so close a memory before opening another one on the same
        path. A ``vector_store`` passed in is left open: it belongs to the caller.
        Calling it twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        with self._reads_done:
            self._reads_done.notify_all()  # an indexing batch waiting for reads stops now
        if self._indexer is not None:
            self._indexer.stop()
        with self._texts_lock:
            self._texts.clear()
            self._texts_bytes = 0
        if self._owns_vector_store:
            try:
                self.vector_store.close()
            except Exception as exc:
                if not self._catalog.shared:
                    self._catalog.close()
                    raise
                emit_safely(
                    self.tracer,
                    TraceEvent("offload", detail={"stage": "close", "error": str(exc)[:500]}),
                )
        self._unregister()
        self._catalog.close()

    def __enter__(self) -> TaskMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- helpers

    def reference_text(self, tool: str, activity: str, namespace: str) -> str:
        """The sentence the model sees instead of the output (DESIGN.md's exact wording)."""
        return REFERENCE_TEMPLATE.format(
            tool=tool, activity=activity, memory=self.name, namespace=namespace
        )

    def _storage_for(self, artifact: BaseArtifact) -> ArtifactStorage:
        items = artifact.value if isinstance(artifact, ListArtifact) else [artifact]
        if isinstance(artifact, ListArtifact) and not items:
            raise ValidationError("cannot store an empty ListArtifact")
        found: ArtifactStorage | None = None
        for item in items:
            storage = next((s for cls, s in self.storages.items() if isinstance(item, cls)), None)
            if storage is None:
                raise ValidationError(
                    f"no storage for {item.type}; TaskMemory stores {sorted(c.__name__ for c in self.storages)}"
                )
            if found is not None and storage is not found:
                raise ValidationError(
                    "a ListArtifact mixing text and blob items cannot share one namespace; store them separately"
                )
            found = storage
        assert found is not None
        return found

    def _kind_storage(self, kind: str) -> ArtifactStorage:
        for storage in self.storages.values():
            if storage.kind == kind:
                return storage
        raise NotFoundError(f"this TaskMemory has no {kind!r} storage")

    def _meta(self, namespace: str) -> dict[str, Any] | None:
        validate_namespace(namespace)
        meta = self._catalog.get(namespace)
        if meta is None or meta.get("memory") != self.name or self._expired(meta):
            return None
        return meta

    def _expired(self, meta: Mapping[str, Any], now: float | None = None) -> bool:
        if self.retention is None:
            return False
        cutoff = self.retention.cutoff(now)
        return cutoff is not None and _written_at(meta) < cutoff

    def _require(self, namespace: str) -> dict[str, Any]:
        meta = self._meta(namespace)
        if meta is None:
            raise NotFoundError(
                f"namespace {namespace!r} is not in {self.name}", namespace=namespace
            )
        return meta

    # ------------------------------------------------------------------ writing

    def store_artifact(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        tool: str | None = None,
        activity: str | None = None,
        sensitive: bool = False,
        context: ActionSubtaskMetaEntry | None = None,
    ) -> dict[str, Any]:
        """Store ``artifact`` (a ``ListArtifact`` item by item) in ``namespace``; returns its metadata.

        Storing into an existing namespace appends. The write is all-or-nothing.

        Raises:
            NamespaceError: ``namespace`` is not a valid name.
            StorageMismatchError: The namespace holds another storage's artifacts.
            ValidationError: No storage for the type, or a mixed / empty list.
        """
        meta, unindexed = self._store(
            namespace, artifact, tool=tool, activity=activity, sensitive=sensitive, context=context
        )
        return self._after_store(namespace, meta, unindexed)

    def _store(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        tool: str | None,
        activity: str | None,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The committed write of :meth:`store_artifact`: its metadata and the entries
        left to index (the caller schedules them, see :meth:`_after_store`)."""
        validate_namespace(namespace)
        if not isinstance(artifact, BaseArtifact):
            raise ValidationError(
                f"store_artifact needs an artifact, got {type(artifact).__name__}"
            )
        storage = self._storage_for(artifact)
        items = list(artifact.value) if isinstance(artifact, ListArtifact) else [artifact]
        with self._lock:
            now = datetime.now(timezone.utc).isoformat()
            meta = self._base_meta(namespace, storage.kind, tool, activity, now)
            # Background: raw text now, chunks later. Sync (and storages without a raw
            # store): the whole write before the commit, all or nothing, as before.
            raw = (
                self.index_mode == "background"
                and isinstance(storage, TextArtifactStorage)
                and storage.raw_store is not None
            )
            generations: list[str] = []
            fresh: dict[str, bytes] = {}
            texts: dict[str, str] = {}
            puts: list[tuple[dict[str, Any], Pending[str]]] = []
            seq = sum(int(e["chunks"]) for e in meta["artifacts"])
            committed = meta["artifacts"]
            entries = []
            try:
                for item in items:
                    # One generation per artifact: each is indexed (or re-indexed) alone.
                    generation = uuid.uuid4().hex
                    generations.append(generation)
                    if raw:
                        assert isinstance(storage, TextArtifactStorage)
                        text, data = storage.encode_raw(item)
                        entry = storage.raw_entry(item, generation, text, data)
                        # Hashing and the durable write need no GIL: they run beside the
                        # card's stats below and are joined before the commit.
                        put = functools.partial(
                            storage.put_raw, namespace, data, tenant=self.tenant
                        )
                        puts.append((entry, run_beside(put, inline=len(data) < _BESIDE_BYTES)))
                        fresh[generation], texts[generation] = data, text
                    else:
                        entry = storage.write(
                            namespace,
                            item,
                            generation=generation,
                            first_seq=seq,
                            tenant=self.tenant,
                        )
                        entry.setdefault("indexed", True)
                        if isinstance(storage, TextArtifactStorage) and entry.get("raw"):
                            fresh[generation] = storage.encode_raw(item)[1]
                    entries.append(entry)
                    seq += int(entry["chunks"])
                meta["artifacts"] = [*committed, *entries]
                self._totals(meta)
                stats = self._fresh_stats(namespace, meta, items, fresh)
                for entry, pending in puts:
                    entry["raw"] = pending.result()  # raises a write's failure
                self._finish_meta(meta, stats, now, tool, activity, sensitive, context)
                # The commit point: one atomic metadata write makes the generation visible.
                meta = self._commit(
                    namespace,
                    meta,
                    storage,
                    entries,
                    items,
                    fresh,
                    lambda m: self._finish_meta(
                        m,
                        self._fresh_stats(namespace, m, items, fresh),
                        now,
                        tool,
                        activity,
                        sensitive,
                        context,
                    ),
                    now,
                    tool,
                    activity,
                )
            except BaseException:
                for _, pending in puts:
                    pending.wait()  # no write may still be running when we clean up
                # The write already failed; whatever it left stays invisible anyway.
                with contextlib.suppress(Exception):
                    current = self._meta(namespace)
                    storage.discard(
                        namespace,
                        current["artifacts"] if current else [],
                        tenant=self.tenant,
                        generations=generations,
                    )
                raise
            if self.index_mode == "background":
                self._keep_texts(texts, fresh)  # the indexer starts from the str
            emit_safely(
                self.tracer,
                TraceEvent(
                    "offload",
                    scope=self._scope_fields(),
                    tokens=int(meta["stats"]["tokens"]),
                    included=[{"artifact_id": e["id"], "chunks": e["chunks"]} for e in entries],
                    detail={"namespace": namespace, "tool": tool, "activity": activity},
                ),
            )
        return meta, [e for e in entries if not e.get("indexed", True)]

    def _base_meta(
        self, namespace: str, kind: str, tool: str | None, activity: str | None, now: str
    ) -> dict[str, Any]:
        """The committed metadata a write appends to (a fresh document if none is ours:
        absent, expired, or another memory's, whose version the commit then replaces)."""
        found = self._catalog.get(namespace)
        if found is not None and found.get("memory") == self.name and not self._expired(found):
            if found["storage"] != kind:
                raise StorageMismatchError(
                    f"namespace {namespace!r} holds {found['storage']} artifacts; cannot add {kind}",
                    namespace=namespace,
                )
            return found
        return {
            "memory": self.name,
            "storage": kind,
            "tool": tool,
            "activity": activity,
            "created_at": now,
            "artifacts": [],
            "subtasks": [],
            "sensitive": False,
            "_version": None if found is None else found["_version"],
        }

    def _finish_meta(
        self,
        meta: dict[str, Any],
        stats: dict[str, Any],
        now: str,
        tool: str | None,
        activity: str | None,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
    ) -> None:
        meta["updated_at"] = now
        meta["tool"] = meta.get("tool") or tool
        meta["activity"] = meta.get("activity") or activity
        meta["sensitive"] = bool(meta.get("sensitive")) or sensitive
        if context is not None:
            meta["subtasks"] = [*meta.get("subtasks", []), context.to_dict()]
        if meta["sensitive"]:
            # The card never shows a sensitive output's content, only its shape.
            stats = shape_only(stats)
        meta["stats"] = stats

    def _commit(
        self,
        namespace: str,
        meta: dict[str, Any],
        storage: ArtifactStorage,
        entries: list[dict[str, Any]],
        items: Sequence[BaseArtifact],
        fresh: Mapping[str, bytes],
        finish: Callable[[dict[str, Any]], None],
        now: str,
        tool: str | None,
        activity: str | None,
    ) -> dict[str, Any]:
        """Commit ``meta`` (``entries`` appended to ``seen`` committed artifacts).

        When another process committed the namespace meanwhile (a version conflict),
        the entries are appended to what it committed and the card recomputed, so two
        writers of one namespace both land, in commit order; chunks written at the old
        positions (``sync``) are dropped and indexed again from the raw text. When a
        blob the entries refer to was deleted meanwhile (a delete racing this write),
        it is written again before the next try.
        """
        keys = [str(e.get("raw") or e.get("key")) for e in entries if e.get("raw") or e.get("key")]
        for _ in range(_COMMIT_RETRIES):
            try:
                if self._catalog.commit(namespace, meta, blobs=keys):
                    if self._catalog.shared and not self._catalog.checks_blobs:
                        self._reput(namespace, storage, entries, items, fresh, missing_only=True)
                    return meta
            except NotFoundError:
                self._reput(namespace, storage, entries, items, fresh, missing_only=False)
                continue
            meta = self._base_meta(namespace, storage.kind, tool, activity, now)
            if isinstance(storage, TextArtifactStorage):
                # Chunks written (sync) at positions after the old artifacts: redo them.
                for entry in entries:
                    if entry.get("indexed") and int(entry.get("chunks", 0)):
                        if not entry.get("raw"):
                            raise StorageError(
                                f"namespace {namespace!r} was written by another process "
                                "meanwhile and this storage keeps no raw text to re-index",
                                namespace=namespace,
                            )
                        storage.drop_chunks(namespace, [entry["generation"]], tenant=self.tenant)
                        entry.update(indexed=False, chunks=0, tokens=0, first_seq=0)
            meta["artifacts"] = [*meta["artifacts"], *entries]
            self._totals(meta)
            finish(meta)
        raise StorageError(
            f"namespace {namespace!r}: {_COMMIT_RETRIES} commits in a row lost to other "
            "writers of the same namespace",
            namespace=namespace,
        )

    def _reput(
        self,
        namespace: str,
        storage: ArtifactStorage,
        entries: Sequence[Mapping[str, Any]],
        items: Sequence[BaseArtifact],
        fresh: Mapping[str, bytes],
        *,
        missing_only: bool,
    ) -> None:
        """Write the bytes of ``entries`` again (those gone from the blob store only)."""
        if isinstance(storage, TextArtifactStorage) and storage.raw_store is not None:
            store: Any = storage.raw_store
            kw: dict[str, Any] = storage._raw_kw
        elif isinstance(storage, BlobArtifactStorage):
            store, kw = storage.blob_store, storage._kw
        else:
            return
        have = set(store.keys(namespace, tenant=self.tenant, **kw)) if missing_only else set()
        for entry, item in zip(entries, items, strict=True):
            key = entry.get("raw") or entry.get("key")
            if not key or key in have:
                continue
            data = fresh.get(entry["generation"])
            if data is None and isinstance(item, BlobArtifact):
                data = item.value
            if data is not None:
                store.put(namespace, data, tenant=self.tenant, **kw)

    def _after_store(
        self, namespace: str, meta: dict[str, Any], unindexed: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """What follows a committed write: indexing (or its queueing), the exact page
        count in ``sync`` mode, retention. Returns the public metadata."""
        if unindexed:
            self._schedule(namespace)
        elif self.index_mode == "sync" and meta["storage"] == "text":
            self._pages_job(namespace)  # exact page count (and JSON check) before returning
            meta = self._meta(namespace) or meta
        if self.retention is not None and self.retention.on_write:
            self.prune(keep=namespace)
        return self._public_meta(namespace, meta)

    def process_output(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool = False,
        context: ActionSubtaskMetaEntry | None = None,
        min_tokens: int | None = None,
        preview: bool | None = None,
    ) -> BaseArtifact:
        """Store a tool's output and return what the model should see instead.

        ``preview`` overrides the memory's ``preview`` for this call (False: the bare
        sentence, e.g. for an error whose first line the caller shows itself).

        Returns:
            ``InfoArtifact`` with :meth:`reference_text` when stored;
            ``InfoArtifact("tool output is empty")`` for empty output; the artifact
            itself when it is text below ``min_tokens`` and not ``sensitive``;
            ``ErrorArtifact`` when it cannot be stored (bad namespace, mixed list,
            a namespace already used by another storage).
        """
        if not isinstance(artifact, BaseArtifact):
            return ErrorArtifact(
                value=f"tool output must be an artifact, got {type(artifact).__name__}"
            )
        if _is_empty(artifact):
            return InfoArtifact(value=EMPTY_OUTPUT)
        threshold = self.min_tokens if min_tokens is None else min_tokens
        if not sensitive and threshold > 0 and isinstance(artifact, TextArtifact):
            text = artifact.value
            # A token is at most ~a few dozen characters in practice; skip counting huge text.
            if len(text) < threshold * 32 and self.tokenizer.count(text) < threshold:
                return artifact
        namespace = artifact.name
        sentence = self.reference_text(tool_name, activity_name, namespace)
        if context is not None and not context.answer:
            # Later steps read where the output went (Griptape fills it in the same way).
            context.answer = sentence
        try:
            meta, unindexed = self._store(
                namespace,
                artifact,
                tool=tool_name,
                activity=activity_name,
                sensitive=sensitive,
                context=context,
            )
        except OffpromptError as exc:
            return ErrorArtifact.from_exception(
                exc, f"could not store output of {tool_name}.{activity_name}: {exc}"
            )
        if context is not None:
            self.meta_memory.add_entry(context)
        stats = OutputStats.model_validate(meta["stats"])
        value = sentence
        if self.preview if preview is None else preview:
            budget = self.preview_tokens - self.tokenizer.count(sentence + "\n")
            card = render_card(stats, max_tokens=budget, count=self.tokenizer.count)
            if card:
                value = f"{sentence}\n{card}"
        # Indexing starts once the reference is ready: the worker's first steps would
        # otherwise hold the GIL while the card is rendered.
        self._after_store(namespace, meta, unindexed)
        return InfoArtifact(
            value=value,
            meta={
                "memory_name": self.name,
                "artifact_namespace": namespace,
                "stats": stats.model_dump(),
            },
        )

    # ----------------------------------------------------------------- indexing

    @staticmethod
    def _totals(meta: dict[str, Any]) -> None:
        meta["bytes"] = sum(int(e["bytes"]) for e in meta["artifacts"])
        meta["tokens"] = sum(int(e["tokens"]) for e in meta["artifacts"])
        meta["chunks"] = sum(int(e["chunks"]) for e in meta["artifacts"])

    def _text_storage(self) -> TextArtifactStorage:
        storage = self._kind_storage("text")
        if not isinstance(storage, TextArtifactStorage):
            raise ValidationError("this TaskMemory's text storage is not a TextArtifactStorage")
        return storage

    def _keep_texts(self, texts: Mapping[str, str], sizes: Mapping[str, bytes]) -> None:
        """Keep the texts of new raw writes for the indexer while they fit in
        ``cache_bytes`` (with those kept before); the others are read back when indexed."""
        with self._texts_lock:
            for generation, text in texts.items():
                size = len(sizes[generation])
                if self._texts_bytes + size <= self.cache_bytes:
                    self._texts[generation] = (text, size)
                    self._texts_bytes += size

    def _take_text(self, generation: str) -> str | None:
        with self._texts_lock:
            kept = self._texts.pop(generation, None)
            if kept is None:
                return None
            self._texts_bytes -= kept[1]
            return kept[0]

    def _schedule(self, namespace: str) -> None:
        """Index ``namespace``'s unindexed artifacts, now (``sync``) or in the worker."""
        # The exact page count (a second tokenisation of the whole output) is not part of
        # indexing: it doubled the indexing time. It is computed on first need instead
        # (stats, describe, namespace_metadata; read() cuts its pages itself), see
        # _ensure_exact_pages.
        if self.index_mode == "sync":
            self._index_job(namespace, lambda: False)
            return
        with self._lock:
            if self._closed:
                return
            if self._indexer is None:
                self._indexer = BackgroundIndexer(self._run_job, on_error=self._index_failed)
        self._indexer.submit(namespace)

    def _run_job(self, namespace: str, should_stop: Callable[[], bool]) -> None:
        def stop() -> bool:
            self._yield_to_reads(should_stop)
            return should_stop() or namespace in self._cancelled

        try:
            self._index_job(namespace, stop)
        except OffpromptError:
            if self._meta(namespace) is None:
                return  # deleted (or pruned) meanwhile: nothing left to index
            raise

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Mark a read of this process as running (see :meth:`_yield_to_reads`)."""
        with self._reads_done:
            self._reads += 1
        try:
            yield
        finally:
            with self._reads_done:
                self._reads -= 1
                if not self._reads:
                    self._reads_done.notify_all()

    def _yield_to_reads(self, should_stop: Callable[[], bool]) -> None:
        """Between background indexing steps: wait while reads of this process run (at
        most ``_YIELD_SECONDS``, then index on as long before yielding again).

        A read is a few C calls over the raw text, an indexing batch mostly Python and
        Rust calls that keep the GIL for tens of ms (the embedded engine's upsert): beside
        a running indexer, a grep of 50 MB that takes 0.1 s alone took 0.5 to 1 s.
        Queries are not reads here: they may wait for this very indexer.
        """
        with self._reads_done:
            if not self._reads or time.monotonic() < self._yield_after:
                return
            if not self._reads_done.wait_for(
                lambda: not self._reads or self._closed or should_stop(),
                timeout=_YIELD_SECONDS,
            ):  # reads kept running: index on as long before yielding again
                self._yield_after = time.monotonic() + _YIELD_SECONDS

    def _index_failed(self, key: str, exc: BaseException) -> None:
        emit_safely(
            self.tracer,
            TraceEvent(
                "offload",
                scope=self._scope_fields(),
                detail={
                    "namespace": key.split("\x00")[0],
                    "stage": "index",
                    "error": str(exc)[:500],
                },
            ),
        )

    def _resume_unindexed(self) -> None:
        """Schedule every namespace whose metadata lists an artifact not yet indexed.

        With a shared store, a process whose index is durable (``path=``'s first
        process) also catches up what others stored and drops what they deleted; the
        others index a namespace when it is first queried (:meth:`_ensure_held`).
        """
        try:
            docs = self._catalog.list_all()
            if isinstance(self._catalog, StoreCatalog):
                if self.index_location != "path":
                    return
                self._sweep_index(docs)
        except OffpromptError:
            return
        for namespace, meta in sorted(docs.items()):
            if meta.get("memory") == self.name and not self._fully_held(namespace, meta):
                self._schedule(namespace)

    def _sweep_index(self, docs: Mapping[str, Mapping[str, Any]]) -> None:
        """Drop the chunks of namespaces another process deleted (shared store only)."""
        for namespace in self._catalog.indexed_namespaces():
            if namespace not in docs:
                self._forget_index(namespace)

    def _forget_index(self, namespace: str) -> None:
        """Remove ``namespace``'s chunks and holdings record from this process's index."""
        if isinstance(self._catalog, StoreCatalog):
            self.vector_store.delete(namespace)
            self._catalog.mark_held(namespace, {})

    def _hold_whole(self, namespace: str, meta: dict[str, Any]) -> dict[str, Any]:
        """Index ``namespace`` here until this process's index holds all of it.

        Stored by another process (or this index is behind): index it here first. A job
        can lose a race with another process indexing or updating the same namespace, so
        it runs again, a few times. A job that keeps failing is in the trace (offload
        events with stage ``index``), and the query answers from what this index holds.
        """
        for _ in range(_HOLD_ATTEMPTS):
            self._schedule(namespace)
            if self._indexer is not None:
                self._indexer.wait(namespace)
            meta = self._meta(namespace) or meta
            if self._fully_held(namespace, meta):
                break
        return meta

    def _fully_held(self, namespace: str, meta: Mapping[str, Any]) -> bool:
        if meta.get("storage") != "text":
            return True
        held = self._catalog.held(namespace, dict(meta))
        return all(e["generation"] in held for e in meta.get("artifacts", []))

    def _update_meta(
        self, namespace: str, change: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """Apply ``change`` to the committed metadata and commit it, again on a conflict
        (another process committed meanwhile); ``change`` returns False for no write.
        Returns the metadata after, or None when the namespace is gone."""
        with self._lock:
            for _ in range(_COMMIT_RETRIES):
                meta = self._meta(namespace)
                if meta is None:
                    return None
                if not change(meta) or self._catalog.commit(namespace, meta):
                    return meta
        raise StorageError(
            f"namespace {namespace!r}: {_COMMIT_RETRIES} metadata updates in a row lost to "
            "other writers",
            namespace=namespace,
        )

    def _index_job(self, namespace: str, should_stop: Callable[[], bool]) -> None:
        """Index the artifacts of ``namespace`` this process's index lacks, oldest first,
        recording each (and its exact counts in the metadata, if not there yet)."""
        storage = self._text_storage()
        while not should_stop():
            meta = self._meta(namespace)
            if meta is None:
                self._forget_index(namespace)
                return
            entries = meta["artifacts"]
            held = self._catalog.held(namespace, meta)
            live = {e["generation"] for e in entries}
            stale = [g for g in held if g not in live]
            if stale:  # generations deleted or replaced by another process
                storage.drop_chunks(namespace, stale, tenant=self.tenant)
                held = {g: v for g, v in held.items() if g in live}
                self._catalog.mark_held(namespace, held)
            at = next((i for i, e in enumerate(entries) if e["generation"] not in held), None)
            if at is None:
                return
            todo = entries[at]
            first_seq = sum(int(e["chunks"]) for e in entries[:at])
            generation = todo["generation"]
            # A crash mid-index left some of this generation's chunks: start clean.
            storage.drop_chunks(namespace, [generation], tenant=self.tenant)
            text = self._take_text(generation)
            if text is None:  # written by another process, or before a restart
                try:
                    text = storage.raw_bytes(namespace, todo, tenant=self.tenant).decode("utf-8")
                except NotFoundError:
                    continue  # deleted meanwhile: the next round sees it gone
            try:
                counts = storage.index_text(
                    namespace,
                    text,
                    generation=generation,
                    first_seq=first_seq,
                    tenant=self.tenant,
                    should_stop=should_stop,
                )
            except IndexCancelled:
                return
            del text

            def record(
                meta: dict[str, Any],
                generation: str = generation,
                first_seq: int = first_seq,
                counts: dict[str, int] = counts,
            ) -> bool:
                current = next(
                    (e for e in meta["artifacts"] if e["generation"] == generation), None
                )
                if current is None or (self._catalog.shared and current.get("indexed", True)):
                    return False  # gone, or another process recorded the counts first
                current.update(
                    indexed=True,
                    first_seq=first_seq,
                    chunks=counts["chunks"],
                    tokens=counts["tokens"],
                )
                self._totals(meta)
                if all(e.get("indexed", True) for e in meta["artifacts"]):
                    stats = dict(meta.get("stats") or {})
                    if stats.get("tokens_estimated") or not stats.get("pages"):
                        # Until _pages_job cuts the real pages (on first need).
                        stats["pages"] = max(1, math.ceil(int(meta["tokens"]) / self.page_tokens))
                    stats.update(indexed=True, tokens=int(meta["tokens"]), tokens_estimated=False)
                    meta["stats"] = stats
                return True

            with self._lock:
                after = self._update_meta(namespace, record)
                if after is None or generation not in {e["generation"] for e in after["artifacts"]}:
                    # Deleted (or pruned) while indexing: its chunks must not linger.
                    storage.drop_chunks(namespace, [generation], tenant=self.tenant)
                    return
                self._catalog.mark_held(namespace, {**held, generation: first_seq})

    def _pages_job(self, namespace: str) -> None:
        """After indexing: exact page count, and the JSON kind/outline of large outputs."""
        with self._lock:
            meta = self._meta(namespace)
            if meta is None or meta["storage"] != "text":
                return
            if any(not e.get("indexed", True) for e in meta["artifacts"]):
                return
        view = self._view(namespace, meta)
        pages = len(view.page_bounds(self.tokenizer.encoding, self.page_tokens)) - 1
        update: dict[str, Any] = {"pages": pages}
        stats = meta.get("stats") or {}
        if (
            stats.get("kind") == "json"
            and stats.get("json_outline") is None
            and not meta.get("sensitive")
        ):
            update.update(self._json_stats(view, namespace, meta))
        before = [e["generation"] for e in meta["artifacts"]]

        def exact(meta: dict[str, Any]) -> bool:
            if [e["generation"] for e in meta["artifacts"]] != before or meta.get("pages_exact"):
                return False  # appended to meanwhile (the next job recounts), or done
            meta["stats"] = {**(meta.get("stats") or {}), **update}
            meta["pages_exact"] = True
            return True

        self._update_meta(namespace, exact)

    def _ensure_exact_pages(self, namespace: str, meta: dict[str, Any]) -> dict[str, Any]:
        """``meta`` with the exact page count (and a large JSON output's outline), computed
        once, on first need, after the namespace is fully indexed."""
        if (
            meta["storage"] != "text"
            or meta.get("pages_exact")
            or any(not e.get("indexed", True) for e in meta["artifacts"])
        ):
            return meta
        self._pages_job(namespace)
        return self._meta(namespace) or meta

    def wait_indexed(self, namespace: str | None = None, timeout: float | None = None) -> bool:
        """Block until ``namespace`` (every namespace when None) is fully indexed.

        Returns True once nothing is left to index for it, False on ``timeout`` (seconds),
        when an indexing job failed (the error is traced; the raw output is intact and
        indexing is retried when the memory is reopened), or after :meth:`close`.
        """
        if namespace is not None:
            validate_namespace(namespace)
        if self._closed:
            return False
        if self._catalog.shared:  # catch up what other processes stored
            names = [namespace] if namespace is not None else self.namespaces()
            for ns in names:
                meta = self._meta(ns)
                if meta is not None and not self._fully_held(ns, meta):
                    self._schedule(ns)
        indexer = self._indexer
        if indexer is None:
            return self._all_indexed(namespace)
        if namespace is None:
            done = indexer.wait(None, timeout)
        else:
            done = indexer.wait(namespace, timeout)
        return done and self._all_indexed(namespace)

    def _all_indexed(self, namespace: str | None) -> bool:
        names = [namespace] if namespace is not None else self.namespaces()
        for ns in names:
            meta = self._meta(ns)
            if meta is None:
                continue
            if self._catalog.shared and not self._fully_held(ns, meta):
                return False
            if any(not e.get("indexed", True) for e in meta["artifacts"]):
                return False
        return True

    # ------------------------------------------------------------ stats, views

    def _entry_bytes(
        self,
        namespace: str,
        entries: Sequence[Mapping[str, Any]],
        fresh: Mapping[str, bytes] | None = None,
    ) -> bytes:
        storage = self._text_storage()
        parts: list[bytes] = []
        for entry in entries:
            data = (fresh or {}).get(entry["generation"])
            if data is None:
                try:
                    data = storage.raw_bytes(namespace, dict(entry), tenant=self.tenant)
                except NotFoundError as exc:
                    if self._catalog.shared and self._meta(namespace) is None:
                        raise missing_blob(namespace, exc) from None
                    raise
            parts.append(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _view(
        self,
        namespace: str,
        meta: Mapping[str, Any],
        fresh: Mapping[str, bytes] | None = None,
    ) -> TextView:
        """The namespace's text (its artifacts' texts concatenated, as :meth:`read` pages
        join back), cached for the last few namespaces read. ``fresh``: bytes just
        written, by generation (not read back from the blob store)."""
        entries = meta["artifacts"]
        key = (namespace, tuple((e["generation"], e["id"], e.get("first_seq")) for e in entries))
        with self._views_lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return view
        view = TextView(self._entry_bytes(namespace, entries, fresh))
        with self._views_lock:
            if key not in self._views:
                self._views[key] = view
                self._cached_bytes += len(view.data)
            # LRU by bytes: a 50 MB output read twice is fetched once, and the cache never
            # holds more than cache_bytes (but the view just read, whatever its size).
            while self._cached_bytes > self.cache_bytes and len(self._views) > 1:
                _, dropped = self._views.popitem(last=False)
                self._cached_bytes -= len(dropped.data)
        return view

    def _cached_view(self, namespace: str, meta: Mapping[str, Any]) -> TextView | None:
        """The namespace's view if it is in the cache (never reads the text)."""
        entries = meta["artifacts"]
        key = (namespace, tuple((e["generation"], e["id"], e.get("first_seq")) for e in entries))
        with self._views_lock:
            return self._views.get(key)

    def _text_view(self, namespace: str) -> TextView:
        meta = self._require(namespace)
        if meta["storage"] != "text":
            raise ValidationError(
                f"namespace {namespace!r} holds binary data, not text", namespace=namespace
            )
        return self._view(namespace, meta)

    def _json_stats(
        self, view: TextView, namespace: str, meta: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``kind`` and ``json_outline`` from parsing the whole text (kind text if it fails)."""
        parsed = self._parsed(view, namespace, meta)
        if parsed is None:
            return {"kind": "text", "json_outline": None, "tools": tools_for("text")}
        kind, value = parsed
        return {"kind": kind, **json_view.shape(kind, value), "tools": tools_for(kind)}

    def _parsed(
        self, view: TextView, namespace: str, meta: Mapping[str, Any]
    ) -> tuple[str, Any] | None:
        """``(kind, value)`` of a JSON namespace (parsed once per cached view), or None."""
        if view.parsed is None:
            entries = meta["artifacts"]
            if entries and all(e.get("type") == "JsonArtifact" for e in entries):
                loaded = self._text_storage().load(namespace, entries, tenant=self.tenant)
                values = [a.value for a in loaded if isinstance(a, JsonArtifact)]
                view.parsed = ("json", values[0]) if len(values) == 1 else ("ndjson", values)
            else:
                found = json_view.parse_json(view.data.decode("utf-8"))
                view.parsed = found if found is not None else ("", None)
        return None if view.parsed[0] == "" else view.parsed

    def _fresh_stats(
        self,
        namespace: str,
        meta: dict[str, Any],
        items: Sequence[BaseArtifact],
        fresh: Mapping[str, bytes] | None = None,
    ) -> dict[str, Any]:
        """The card's stats right after a write: exact for small outputs, estimated
        (tokens, pages; JSON unconfirmed) for large ones until the background job ran."""
        entries = meta["artifacts"]
        indexed = all(e.get("indexed", True) for e in entries)
        if meta["storage"] != "text":
            kind = "image" if all(e.get("type") == "ImageArtifact" for e in entries) else "binary"
            return OutputStats(
                kind=kind,
                bytes=int(meta["bytes"]),
                page_tokens=self.page_tokens,
                pages=1,
                tools=tools_for(kind),
                artifacts=len(entries),
            ).model_dump()
        view = self._view(namespace, meta, fresh)
        data = view.data
        sample = data[:_SAMPLE_BYTES].decode("utf-8", errors="ignore")
        pages = 0
        if indexed:
            tokens, estimated = int(meta["tokens"]), False
        elif len(data) <= _EXACT_AT_ONCE_BYTES:
            tokens, estimated = self.tokenizer.count(data.decode("utf-8")), False
            # read()'s own page cuts (pages are recounted, so not always tokens/page_tokens)
            pages = len(view.page_bounds(self.tokenizer.encoding, self.page_tokens)) - 1
        else:
            per_byte = self.tokenizer.count(sample) / max(1, len(sample.encode("utf-8")))
            tokens, estimated = round(per_byte * len(data)), True
        stats = OutputStats(
            bytes=len(data),
            lines=view.lines,
            tokens=tokens,
            tokens_estimated=estimated,
            pages=max(1, pages or math.ceil(tokens / self.page_tokens)),
            page_tokens=self.page_tokens,
            head=view.head(3),
            tail=view.tail(3) if view.lines > 3 else [],
            indexed=indexed,
            artifacts=len(entries),
        )
        all_json = all(e.get("type") == "JsonArtifact" for e in entries)
        kind = "json" if all_json else sniff_kind(sample)
        stats.kind = kind
        if kind == "json" and (all_json or len(data) <= _PARSE_AT_ONCE_BYTES):
            values = [i.value for i in items if isinstance(i, JsonArtifact)]
            if all_json and len(entries) == len(values):  # no need to parse what we hold
                view.parsed = ("json", values[0]) if len(values) == 1 else ("ndjson", values)
            stats = stats.model_copy(update=self._json_stats(view, namespace, meta))
        elif kind == "csv":
            stats = stats.model_copy(update=csv_fields(sample))
        stats.tools = tools_for(stats.kind)
        if meta.get("sensitive"):
            # The card never shows a sensitive output's content, only its shape.
            return shape_only(stats.model_dump())
        return stats.model_dump()

    def stats(self, namespace: str) -> OutputStats:
        """What ``namespace`` holds (the card's data): kind, size, lines, tokens, pages,
        first/last lines, JSON outline, whether it is indexed, which tools fit.

        Raises:
            NotFoundError: Unknown namespace (or another tenant's / scope's).
        """
        meta = self._ensure_exact_pages(namespace, self._require(namespace))
        if "stats" not in meta:  # written by an earlier version
            meta["stats"] = self._fresh_stats(namespace, meta, [])
        return OutputStats.model_validate(meta["stats"])

    def describe(self, namespace: str, *, max_tokens: int | None = None) -> str:
        """The card for ``namespace`` alone (no reference sentence), at most ``max_tokens``
        tokens (``preview_tokens`` by default). Counts are exact once it is indexed.

        Raises:
            NotFoundError: Unknown namespace.
        """
        budget = self.preview_tokens if max_tokens is None else max_tokens
        return render_card(self.stats(namespace), max_tokens=budget, count=self.tokenizer.count)

    def grep(
        self,
        namespace: str,
        pattern: str,
        *,
        regex: bool = True,
        ignore_case: bool = False,
        context: int = 0,
        max_matches: int = 50,
    ) -> GrepResult:
        """Lines of ``namespace`` matching ``pattern``, with their 1-based line numbers.

        Args:
            pattern: An RE2 regex (``regex=True``; ``^``/``$`` match at line ends, a
                match never spans lines) or a literal string (``regex=False``).
            ignore_case: Case-insensitive matching (Unicode-aware).
            context: Lines of context before and after each match (0..20).
            max_matches: Matching lines returned (1..10000); ``total_matches`` counts
                all and ``truncated`` says when some were left out.

        Works at once (on the raw text), indexed or not. Long lines are cut to a window
        around the match.

        Raises:
            NotFoundError: Unknown namespace.
            PatternError: Empty pattern, or a regex RE2 rejects (syntax; backreferences
                and look-around, which RE2 cannot run in linear time).
            ValidationError: A blob namespace, or ``context`` / ``max_matches`` out of range.
        """
        with self._reading():
            return self._text_view(namespace).grep(
                pattern,
                regex=regex,
                ignore_case=ignore_case,
                context=context,
                max_matches=max_matches,
            )

    def read_lines(self, namespace: str, start: int, stop: int | None = None) -> TextArtifact:
        """Lines ``start`` (1-based, inclusive) to ``stop`` (exclusive; None = to the end).

        The text keeps its newlines, so consecutive ranges join back into the output.
        A ``stop`` past the end is clamped. ``meta``: ``start``, ``stop`` (as served),
        ``total_lines``.

        Raises:
            NotFoundError: Unknown namespace.
            RangeError: ``start`` is not a line of the output, or ``stop <= start``.
        """
        with self._reading():
            view = self._text_view(namespace)
            text, first, stop_at = view.read_lines(start, stop)
        return TextArtifact(
            value=text,
            name=namespace,
            meta={"start": first, "stop": stop_at, "total_lines": view.lines},
        )

    def json_outline(self, namespace: str, *, depth: int = 3) -> str:
        """The shape of a JSON (or JSON lines) namespace: types, keys, array lengths.

        Raises:
            NotFoundError: Unknown namespace.
            NotJsonError: The namespace does not hold JSON.
        """
        if not isinstance(depth, int) or not 1 <= depth <= 10:
            raise ValidationError(f"depth must be an int in 1..10, got {depth!r}")
        with self._reading():  # the walk over the value is the read's cost, not the parse
            kind, value = self._read_json(namespace)
            return json_view.outline(value, depth=depth, kind=kind)

    def json_query(self, namespace: str, expression: str) -> Any:
        """The JSON value of the JMESPath ``expression`` over ``namespace``.

        A JSON lines namespace is queried as the list of its values.
        ``length(items[?status=='failed'])`` counts without returning the items.

        Raises:
            NotFoundError: Unknown namespace.
            NotJsonError: The namespace does not hold JSON.
            JsonQueryError: The expression does not parse or fails on the value.
        """
        with self._reading():  # JMESPath over 100k items is seconds of Python: indexing waits
            _, value = self._read_json(namespace)
            return json_view.query(value, expression)

    def _read_json(self, namespace: str) -> tuple[str, Any]:
        meta = self._require(namespace)
        kind = str((meta.get("stats") or {}).get("kind", "text"))
        if meta["storage"] != "text":
            json_view.require_json("binary data", namespace)
        json_view.require_json(kind if kind in ("json", "ndjson") else "text", namespace)
        parsed = self._parsed(self._view(namespace, meta), namespace, meta)
        if parsed is None:
            raise NotJsonError(
                f"namespace {namespace!r} does not parse as JSON", namespace=namespace
            )
        return parsed

    # ------------------------------------------------------------------ reading

    def has_namespace(self, namespace: str) -> bool:
        """Whether ``namespace`` is stored in this memory (and scope), without waiting for
        its indexing: the memory tools check this first, so grep and read answer at once.

        Raises:
            NamespaceError: ``namespace`` is not a valid namespace name.
        """
        return self._meta(namespace) is not None

    def namespaces(self) -> list[str]:
        """Committed namespaces of this memory and tenant, sorted."""
        docs = self._catalog.list_all()
        return sorted(
            ns
            for ns, meta in docs.items()
            if meta.get("memory") == self.name and not self._expired(meta)
        )

    def _scope_fields(self) -> dict[str, str]:
        return self.scope.fields() if self.scope is not None else {"tenant": self.tenant}

    def prune(
        self,
        policy: RetentionPolicy | None = None,
        *,
        now: float | None = None,
        keep: str | None = None,
    ) -> PruneReport:
        """Delete expired namespaces, then the oldest beyond ``max_count`` / ``max_tokens``.

        Args:
            policy: The bounds; this memory's ``retention`` by default.
            now: The current POSIX time (tests pin it).
            keep: A namespace never evicted for count/tokens (the one just written).

        Raises:
            ValidationError: No policy given and the memory has none.
        """
        policy = policy or self.retention
        if policy is None:
            raise ValidationError("prune needs a RetentionPolicy (none given, none configured)")
        with self._lock:
            docs = {
                ns: meta
                for ns, meta in self._catalog.list_all().items()
                if meta.get("memory") == self.name
            }
            order = sorted(docs, key=lambda ns: (_written_at(docs[ns]), ns))
            items = [
                Retained(ns, int(docs[ns].get("tokens", 0)), _written_at(docs[ns])) for ns in order
            ]
            evicted = evict(items, policy, now=now, protect=() if keep is None else (keep,))
            doomed = [e.id for e in evicted]
            for ns in doomed:
                self._catalog.delete(ns)
        for ns in doomed:
            self._discard_deleted(ns, docs[ns])
        if doomed:
            emit_safely(
                self.tracer,
                TraceEvent(
                    "evict",
                    scope=self._scope_fields(),
                    dropped=[{"namespace": e.id, "reason": e.reason} for e in evicted],
                ),
            )
        return PruneReport(namespaces=len(doomed))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> dict[str, int]:
        """Delete chunks, namespace metadata and blobs of every partition ``scope`` selects.

        Reaches the whole collection and blob stores of this memory, not only its own
        scope (it is an administrative call; :func:`offprompt.forget.forget` uses it).
        Returns ``{"points": n, "blobs": m}`` (a text output's raw text is a blob too).
        Pending indexing finishes first, so no chunk is written after the deletion. The
        private indexes that killed processes left in the temp directory (they may hold
        the text too) are removed; live processes' are named by :meth:`forget_unreached`.
        """
        if self._indexer is not None:
            self._indexer.wait()
        sweep_stale()
        points = self.vector_store.forget_scope(scope, all=all)
        outputs = self._catalog.forget_scope(scope, all=all)
        blobs = 0
        seen: set[int] = set()
        for storage in self.storages.values():
            store = getattr(storage, "blob_store", None)
            if store is None or id(store) in seen:
                continue
            seen.add(id(store))
            forget = getattr(store, "forget_scope", None)
            if callable(forget):
                blobs += int(forget(scope, all=all))
        return {"points": points, "blobs": blobs, "outputs": outputs}

    def _register(self) -> str | None:
        """Record this process's embedded index in the shared store (so a forget can say
        which indexes it could not reach); removed on close."""
        if self.store is None or self.index_location == "given":
            return None
        key = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        try:
            index = (
                str(self.path / "vectors")
                if self.path is not None and self.index_location == "path"
                else "private"
            )
            self.store.set_state(
                _INDEXES[0],
                key,
                {"host": socket.gethostname(), "pid": os.getpid(), "index": index},
            )
        except OffpromptError:
            return None
        return key

    def _unregister(self) -> None:
        if self._registration is not None and self.store is not None:
            with contextlib.suppress(OffpromptError):
                self.store.delete_state(_INDEXES[0], self._registration)

    def forget_unreached(self) -> list[str]:
        """What :meth:`forget_scope` cannot reach from this process (for the report):
        the embedded chunk indexes other open processes keep of this memory's store.
        They never answer from forgotten data (every query is filtered by the committed
        metadata) and drop its chunks within seconds of their next use."""
        if self.store is None:
            return []
        others: list[str] = []
        durable: list[str] = []
        with contextlib.suppress(OffpromptError):
            for key in self.store.state_keys(_INDEXES[0]):
                if key == self._registration:
                    continue
                host, pid = key.split(":")[:2]
                if host == socket.gethostname() and not _alive(int(pid)):
                    self.store.delete_state(_INDEXES[0], key)  # a process that died
                    continue
                others.append(f"{host}:{pid}")
                record = self.store.get_state(_INDEXES[0], key)
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

    def _maybe_sweep(self) -> None:
        """Every few seconds of use: drop the chunks of namespaces others deleted."""
        if not self._catalog.shared or time.monotonic() - self._swept_at < _SWEEP_EVERY_S:
            return
        self._swept_at = time.monotonic()
        with contextlib.suppress(OffpromptError):
            self._sweep_index(self._catalog.list_all())

    def _public_meta(self, namespace: str, meta: Mapping[str, Any]) -> dict[str, Any]:
        pages = 0
        if meta["storage"] == "text":
            stats = meta.get("stats")
            if stats:  # read()'s page count (exact once the namespace is indexed)
                pages = int(stats["pages"])
            else:
                storage = self._kind_storage("text")
                per_page = self._chunks_per_page(storage, self.page_tokens)
                pages = math.ceil(int(meta.get("chunks", 0)) / per_page)
        return {
            "namespace": namespace,
            "memory": self.name,
            "tenant": self.tenant,
            "tool": meta.get("tool"),
            "activity": meta.get("activity"),
            "created_at": meta.get("created_at"),
            "updated_at": meta.get("updated_at"),
            "bytes": meta.get("bytes", 0),
            "tokens": meta.get("tokens", 0),
            "chunks": meta.get("chunks", 0),
            "pages": pages,
            "artifacts": len(meta.get("artifacts", [])),
            "storage": meta["storage"],
            "sensitive": bool(meta.get("sensitive")),
            "subtasks": list(meta.get("subtasks", [])),
            "stats": dict(meta.get("stats") or {}),
        }

    def namespace_metadata(self, namespace: str, *, wait: bool = True) -> dict[str, Any]:
        """Where ``namespace`` came from and how big it is.

        Keys: ``tool``, ``activity``, ``created_at``, ``bytes``, ``tokens``, ``storage``
        (``"text"`` / ``"blob"``), ``chunks``, ``pages``, ``artifacts``, ``sensitive``,
        ``subtasks`` (recorded :class:`ActionSubtaskMetaEntry` dicts).

        Waits for the namespace's pending indexing first, so ``tokens`` and ``chunks``
        are exact; ``wait=False`` answers at once, with the counts known so far (what
        :meth:`stats` estimates).

        Raises:
            NotFoundError: The namespace is unknown.
        """
        meta = self._require(namespace)
        if not wait:
            return self._public_meta(namespace, meta)
        self.wait_indexed(namespace)
        meta = self._ensure_exact_pages(namespace, self._require(namespace))
        return self._public_meta(namespace, meta)

    def load_artifacts(self, namespace: str) -> ListArtifact:
        """Every artifact stored in ``namespace``, byte-identical; empty if unknown."""
        meta = self._meta(namespace)
        if meta is None:
            return ListArtifact(value=[], name=namespace)
        storage = self._kind_storage(meta["storage"])
        return ListArtifact(
            value=storage.load(namespace, meta["artifacts"], tenant=self.tenant), name=namespace
        )

    def query(
        self, namespace: str, query: str, top_n: int = 5, *, mode: str = "hybrid"
    ) -> ListArtifact:
        """The ``top_n`` chunks of ``namespace`` that best answer ``query``.

        BM25 over the chunks' tokens by default (only chunks sharing a term with the
        query, so possibly fewer than ``top_n``); hybrid (dense and BM25, fused) when the
        vector store has dense vectors (an embedding model given through
        ``vector_store=``, or an index written with them). Each item is a
        ``TextArtifact`` whose ``meta`` holds ``score``,
        ``artifact_id``, ``chunk_index`` and ``page``. An unknown or blob namespace
        gives an empty list.
        """
        if not isinstance(top_n, int) or top_n < 1:
            raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
        meta = self._meta(namespace)
        if meta is None or meta["storage"] != "text":
            return ListArtifact(value=[], name=namespace)
        self._maybe_sweep()
        if self._catalog.shared and not self._fully_held(namespace, meta):
            meta = self._hold_whole(namespace, meta)
        elif any(not e.get("indexed", True) for e in meta["artifacts"]) and self._indexer:
            # Never answer from part of an output: wait for its index (see module docs).
            self._indexer.wait(namespace)
            meta = self._meta(namespace) or meta
        storage = self._kind_storage("text")
        assert isinstance(storage, TextArtifactStorage)
        page_of = self._page_finder(namespace, meta, storage)
        if self._catalog.shared:
            # What this index holds, at the positions it holds them.
            held = self._catalog.held(namespace, meta)
            indexed = [
                {**e, "first_seq": held[e["generation"]]}
                for e in meta["artifacts"]
                if e["generation"] in held
            ]
        else:
            indexed = [e for e in meta["artifacts"] if e.get("indexed", True)]
        hits = storage.query(namespace, indexed, query, top_n, tenant=self.tenant, mode=mode)
        self._fill_passages(namespace, meta, hits, storage)
        emit_safely(
            self.tracer,
            TraceEvent(
                "query",
                scope=self._scope_fields(),
                tokens=sum(self.tokenizer.count(h.text) for h in hits),
                scores={str(h.id): float(h.score) for h in hits},
                included=[{"id": h.id, "chunk_index": h.payload.get("chunk_index")} for h in hits],
                detail={"namespace": namespace, "query": query[:200], "top_n": top_n},
            ),
        )
        return ListArtifact(
            value=[
                TextArtifact(
                    value=h.text,
                    name=namespace,
                    meta={
                        "score": h.score,
                        "artifact_id": h.payload.get("artifact_id"),
                        "chunk_index": h.payload.get("chunk_index"),
                        "page": page_of(h.payload),
                    },
                )
                for h in hits
            ],
            name=namespace,
        )

    def _fill_passages(
        self,
        namespace: str,
        meta: Mapping[str, Any],
        hits: Sequence[Hit],
        storage: TextArtifactStorage,
    ) -> None:
        """Read the text of every hit whose chunk holds only its location in the raw text
        (``byte_start``/``byte_end`` of its artifact, see :class:`TextArtifactStorage`).

        From the view cache when the namespace's text is there; else one ranged read per
        hit when the raw store can (files: a few KB each); else the whole text once,
        through the view cache (bounded by ``cache_bytes``).
        """
        located = [h for h in hits if not h.text and "byte_start" in h.payload]
        if not located:
            return
        where: dict[str, tuple[int, Mapping[str, Any]]] = {}
        offset = 0  # of each artifact in the view's text, as _view joins them
        for entry in meta["artifacts"]:
            where[entry["generation"]] = (offset, entry)
            offset += int(entry.get("bytes", 0))
        view = self._cached_view(namespace, meta)
        for hit in located:
            found = where.get(str(hit.payload.get("generation")))
            if found is None:  # not in this metadata: cannot happen for a filtered search
                raise StorageError(
                    f"namespace {namespace!r}: a chunk of generation "
                    f"{hit.payload.get('generation')!r} is not in its metadata",
                    namespace=namespace,
                )
            at, entry = found
            start, stop = int(hit.payload["byte_start"]), int(hit.payload["byte_end"])
            data = None
            if view is None:
                try:
                    data = storage.read_span(
                        namespace, dict(entry), start, stop, tenant=self.tenant
                    )
                except NotFoundError as exc:
                    if self._catalog.shared and self._meta(namespace) is None:
                        raise missing_blob(namespace, exc) from None
                    raise
                if data is None:
                    view = self._view(namespace, meta)
            if data is None:
                assert view is not None
                data = view.data[at + start : at + stop]
            hit.text = data.decode("utf-8")

    def _page_finder(
        self, namespace: str, meta: Mapping[str, Any], storage: TextArtifactStorage
    ) -> Callable[[Mapping[str, Any]], int]:
        """``page_of(chunk payload)``: the :meth:`read` page holding the chunk's start.

        Exact when the namespace's pages are already cut (the memory tools cut them
        before they query) and its text is ASCII (character offsets are byte offsets);
        otherwise estimated from the chunk's token position.
        """
        pages = max(1, int((meta.get("stats") or {}).get("pages") or 1))
        starts, offset = [], 0  # (first seq, byte offset in the view's text) per artifact
        # (first seq, tokens before it, its tokens per character): the estimate's scale
        scales, tokens_before = [], 0
        for entry in meta["artifacts"]:
            starts.append((int(entry.get("first_seq", 0)), offset))
            offset += int(entry.get("bytes", 0))
            tokens, chars = int(entry.get("tokens", 0)), int(entry.get("chars", 0))
            scales.append((int(entry.get("first_seq", 0)), tokens_before, tokens / max(chars, 1)))
            tokens_before += tokens
        starts.sort()
        scales.sort()
        firsts = [first for first, _ in starts]
        ascii_only = all("chars" in e and e.get("bytes") == e["chars"] for e in meta["artifacts"])
        bounds = None
        if meta.get("pages_exact") and ascii_only:
            view = self._cached_view(namespace, meta)
            if view is not None:
                bounds = view.cached_page_bounds(self.tokenizer.encoding, self.page_tokens)

        def page_of(payload: Mapping[str, Any]) -> int:
            seq = int(payload.get("seq", 0))
            if bounds is not None and starts:
                at = starts[max(bisect_right(firsts, seq) - 1, 0)][1] + int(payload.get("start", 0))
                return min(len(bounds) - 1, max(1, bisect_right(bounds, at)))
            if tokens_before > 0 and "start" in payload:
                # Chunks end at line ends (fewer than chunk_tokens tokens) and so do pages
                # (fewer than page_tokens): the chunk's share of the namespace's tokens,
                # from its character offset, times the pages.
                _, before, per_char = scales[max(bisect_right(firsts, seq) - 1, 0)]
                share = (before + int(payload["start"]) * per_char) / tokens_before
                return min(pages, max(1, int(share * pages) + 1))
            return min(pages, seq * storage.chunk_tokens // self.page_tokens + 1)

        return page_of

    @staticmethod
    def _chunks_per_page(storage: ArtifactStorage, page_tokens: int) -> int:
        chunk_tokens = getattr(storage, "chunk_tokens", page_tokens)
        return max(1, page_tokens // chunk_tokens)

    def read(self, namespace: str, page: int = 1, page_tokens: int | None = None) -> TextArtifact:
        """Page ``page`` (1-based) of ``namespace``'s text, in original order.

        Pages hold at most ``page_tokens`` tokens each (the memory's ``page_tokens`` by
        default), counted on the page's own text, and join back into the output byte
        for byte (see :meth:`TextView.page_bounds`). Works at once, indexed or not, and
        cuts the output only up to ``page``: until every page is cut, ``pages`` is an
        estimate and ``meta`` holds ``pages_estimated: True``. ``meta`` holds ``page`` and
        ``pages``.

        Raises:
            NotFoundError: Unknown namespace.
            RangeError: ``page`` out of range.
        """
        with self._reading():
            return self._read_page(namespace, page, page_tokens)

    def _read_page(self, namespace: str, page: int, page_tokens: int | None) -> TextArtifact:
        meta = self._require(namespace)
        size = self.page_tokens if page_tokens is None else page_tokens
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValidationError(f"page_tokens must be an int >= 1, got {size!r}")
        if meta["storage"] != "text":
            artifacts = self.load_artifacts(namespace)
            return TextArtifact(
                value=artifacts.to_text(), name=namespace, meta={"page": 1, "pages": 1}
            )
        view = self._view(namespace, meta)
        valid = isinstance(page, int) and not isinstance(page, bool) and page >= 1
        # Cut only up to the page asked for: page 1 of a huge output answers at once.
        bounds, complete = view.page_bounds_until(
            self.tokenizer.encoding, size, page if valid else 1
        )
        cut = max(1, len(bounds) - 1)
        pages = cut
        if not complete:  # the rest is not cut yet: the card's estimate, at least one more
            tokens = int((meta.get("stats") or {}).get("tokens") or meta.get("tokens") or 0)
            pages = max(cut + 1, math.ceil(tokens / size))
        if not valid or page > cut:
            about = "" if complete else "about "
            raise RangeError(
                f"page must be between 1 and {about}{pages} for namespace {namespace!r}, "
                f"got {page!r}",
                namespace=namespace,
            )
        found: dict[str, Any] = {"page": page, "pages": pages, "namespace": namespace}
        if not complete:
            found["pages_estimated"] = True
        return TextArtifact(
            value=view.data[bounds[page - 1] : bounds[page]].decode("utf-8"),
            name=namespace,
            meta=found,
        )

    def summarize(
        self,
        namespace: str,
        summarizer: TextSummarizer | None = None,
        *,
        max_tokens: int | None = None,
    ) -> TextArtifact:
        """A summary of ``namespace``'s text, page by page then combined for long outputs.

        Raises:
            NotFoundError: Unknown namespace.
        """
        meta = self._require(namespace)
        summarizer = summarizer or ExtractiveSummarizer(tokenizer=self.tokenizer)
        first = self.read(namespace, 1, page_tokens=self.page_tokens * 8)
        pages = int(first.meta["pages"])
        if pages == 1:
            return TextArtifact(
                value=summarizer.summarize_text(first.value, max_tokens=max_tokens), name=namespace
            )
        partial = [summarizer.summarize_text(first.value, max_tokens=max_tokens)]
        for page in range(2, pages + 1):
            text = self.read(namespace, page, page_tokens=self.page_tokens * 8).value
            partial.append(summarizer.summarize_text(text, max_tokens=max_tokens))
        combined = summarizer.summarize_text("\n\n".join(partial), max_tokens=max_tokens)
        return TextArtifact(
            value=combined, name=namespace, meta={"pages": pages, "tool": meta.get("tool")}
        )

    def delete(self, namespace: str) -> bool:
        """Remove ``namespace`` (metadata first, so it disappears at once); False if unknown."""
        validate_namespace(namespace)
        with self._lock:
            meta = self._meta(namespace)
            if meta is None:
                return False
            self._catalog.delete(namespace)
        self._discard_deleted(namespace, meta)
        emit_safely(
            self.tracer,
            TraceEvent(
                "delete",
                scope=self._scope_fields(),
                dropped=[{"namespace": namespace, "reason": "delete"}],
                detail={"namespace": namespace, "memory": "task"},
            ),
        )
        return True

    def _discard_deleted(self, namespace: str, meta: Mapping[str, Any]) -> None:
        """Delete the data of a namespace whose metadata is gone, once its indexing job
        (told to stop) has finished, so no chunk is written after the deletion."""
        if self._indexer is not None and self._indexer.pending(namespace):
            self._cancelled.add(namespace)
            try:
                self._indexer.wait(namespace)
            finally:
                self._cancelled.discard(namespace)
        for entry in meta["artifacts"]:
            self._take_text(entry["generation"])
        storage = self._kind_storage(meta["storage"])
        with self._lock:
            current = self._meta(namespace)
            if current is None:
                storage.discard(namespace, None, tenant=self.tenant)
                self._forget_index(namespace)
            else:  # written again meanwhile: keep the new generations
                gone = [e["generation"] for e in meta["artifacts"]]
                storage.discard(
                    namespace, current["artifacts"], tenant=self.tenant, generations=gone
                )

    # ------------------------------------------------------------------ async

    async def aprocess_output(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool = False,
        context: ActionSubtaskMetaEntry | None = None,
        min_tokens: int | None = None,
        preview: bool | None = None,
    ) -> BaseArtifact:
        """Async twin of :meth:`process_output` (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.process_output,
            tool_name,
            activity_name,
            artifact,
            sensitive=sensitive,
            context=context,
            min_tokens=min_tokens,
            preview=preview,
        )

    async def astore_artifact(
        self, namespace: str, artifact: BaseArtifact, **kwargs: Any
    ) -> dict[str, Any]:
        """Async twin of :meth:`store_artifact`."""
        return await asyncio.to_thread(self.store_artifact, namespace, artifact, **kwargs)

    async def aquery(
        self, namespace: str, query: str, top_n: int = 5, *, mode: str = "hybrid"
    ) -> ListArtifact:
        """Async twin of :meth:`query`."""
        return await asyncio.to_thread(self.query, namespace, query, top_n, mode=mode)

    async def aread(
        self, namespace: str, page: int = 1, page_tokens: int | None = None
    ) -> TextArtifact:
        """Async twin of :meth:`read`."""
        return await asyncio.to_thread(self.read, namespace, page, page_tokens)

    async def asummarize(
        self,
        namespace: str,
        summarizer: TextSummarizer | None = None,
        *,
        max_tokens: int | None = None,
    ) -> TextArtifact:
        """Async twin of :meth:`summarize`."""
        if summarizer is None:
            return await asyncio.to_thread(self.summarize, namespace, None, max_tokens=max_tokens)
        # A caller's summarizer may be a real async LLM call: keep it on the loop.
        meta = await asyncio.to_thread(self._require, namespace)
        first = await self.aread(namespace, 1, self.page_tokens * 8)
        pages = int(first.meta["pages"])
        parts = [await summarizer.asummarize_text(first.value, max_tokens=max_tokens)]
        for page in range(2, pages + 1):
            text = (await self.aread(namespace, page, self.page_tokens * 8)).value
            parts.append(await summarizer.asummarize_text(text, max_tokens=max_tokens))
        value = (
            parts[0]
            if pages == 1
            else await summarizer.asummarize_text("\n\n".join(parts), max_tokens=max_tokens)
        )
        return TextArtifact(
            value=value, name=namespace, meta={"pages": pages, "tool": meta.get("tool")}
        )

    async def aload_artifacts(self, namespace: str) -> ListArtifact:
        """Async twin of :meth:`load_artifacts`."""
        return await asyncio.to_thread(self.load_artifacts, namespace)

    async def adelete(self, namespace: str) -> bool:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, namespace)

    async def anamespaces(self) -> list[str]:
        """Async twin of :meth:`namespaces`."""
        return await asyncio.to_thread(self.namespaces)

    async def anamespace_metadata(self, namespace: str) -> dict[str, Any]:
        """Async twin of :meth:`namespace_metadata`."""
        return await asyncio.to_thread(self.namespace_metadata, namespace)

    async def astats(self, namespace: str) -> OutputStats:
        """Async twin of :meth:`stats`."""
        return await asyncio.to_thread(self.stats, namespace)

    async def adescribe(self, namespace: str, *, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`describe`."""
        return await asyncio.to_thread(self.describe, namespace, max_tokens=max_tokens)

    async def agrep(
        self,
        namespace: str,
        pattern: str,
        *,
        regex: bool = True,
        ignore_case: bool = False,
        context: int = 0,
        max_matches: int = 50,
    ) -> GrepResult:
        """Async twin of :meth:`grep`."""
        return await asyncio.to_thread(
            self.grep,
            namespace,
            pattern,
            regex=regex,
            ignore_case=ignore_case,
            context=context,
            max_matches=max_matches,
        )

    async def aread_lines(
        self, namespace: str, start: int, stop: int | None = None
    ) -> TextArtifact:
        """Async twin of :meth:`read_lines`."""
        return await asyncio.to_thread(self.read_lines, namespace, start, stop)

    async def ajson_outline(self, namespace: str, *, depth: int = 3) -> str:
        """Async twin of :meth:`json_outline`."""
        return await asyncio.to_thread(self.json_outline, namespace, depth=depth)

    async def ajson_query(self, namespace: str, expression: str) -> Any:
        """Async twin of :meth:`json_query`."""
        return await asyncio.to_thread(self.json_query, namespace, expression)

    async def await_indexed(
        self, namespace: str | None = None, timeout: float | None = None
    ) -> bool:
        """Async twin of :meth:`wait_indexed` (waits in a worker thread)."""
        return await asyncio.to_thread(self.wait_indexed, namespace, timeout)


def _is_empty(artifact: BaseArtifact) -> bool:
    """Empty or whitespace-only output (``isspace`` stops at the first other character,
    where ``bool(TextArtifact)`` would copy a 50 MB value to strip it)."""
    if isinstance(artifact, TextArtifact):
        return not artifact.value or artifact.value.isspace()
    if isinstance(artifact, ListArtifact):
        return not artifact.value or all(_is_empty(item) for item in artifact.value)
    return not artifact


def _check_storages(storages: Mapping[type[BaseArtifact], ArtifactStorage]) -> None:
    """Refuse a mapping whose storage cannot store its key's artifact type."""
    for cls, storage in storages.items():
        if not (isinstance(cls, type) and issubclass(cls, BaseArtifact)):
            raise ValidationError(f"storages keys must be artifact classes, got {cls!r}")
        accepted = getattr(storage, "artifact_types", None)
        if accepted is not None and not issubclass(cls, tuple(accepted)):
            names = ", ".join(t.__name__ for t in accepted)
            raise ValidationError(
                f"storages[{cls.__name__}]: {type(storage).__name__} stores {names}, not {cls.__name__}"
            )


def _written_at(meta: Mapping[str, Any]) -> float:
    """POSIX time of a namespace's last write (its ``updated_at`` / ``created_at``)."""
    stamp = meta.get("updated_at") or meta.get("created_at")
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return 0.0


def _open_index(root: Path) -> tuple[QdrantVectorStore, str]:
    """This process's chunk index for ``path=``: ``root/vectors`` if no other process
    holds it (its lock), else an embedded index in a temporary directory of its own
    (removed on close), built from the stored text as namespaces are queried."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        # Processes opening a new directory at once would race to create the shard:
        # the first creates it while the others wait here, then find it locked.
        lock = open(root / ".open.lock", "a+b")  # noqa: SIM115 - held for the open only
    except OSError as exc:
        raise StorageError(f"cannot open task memory at {root}: {exc}", path=str(root)) from None
    try:
        with contextlib.suppress(ImportError):
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            return QdrantVectorStore(
                path=str(root / "vectors"), lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE
            ), "path"
        except StorageError as exc:
            if "WouldBlock" not in str(exc) and "lock" not in str(exc).lower():
                raise
            return QdrantVectorStore(lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE), "memory"
    finally:
        lock.close()  # closing the descriptor releases the flock


def _open_sqlite(root: Path) -> BaseStore:
    from offprompt.stores.sqlite import SQLiteStore

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create task memory at {root}: {exc}", path=str(root)) from None
    return SQLiteStore(root / "task.db")


_LEGACY = ("offprompt-task-memory", "legacy-vectors-imported")
#: State session listing the processes whose embedded index mirrors the store.
_INDEXES = ("offprompt-task-indexes",)  # a session id: one state key per process
_SWEEP_EVERY_S = 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _import_legacy(root: Path, store: BaseStore, vectors: QdrantVectorStore, location: str) -> None:
    """Move the namespace metadata a release before the shared layout kept as points in
    ``root/vectors`` into ``task.db``, once (every tenant and scope; the raw text is
    already in ``blobs/``), and record that this index holds their indexed chunks."""
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
