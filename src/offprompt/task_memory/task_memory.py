"""``TaskMemory``: large tool outputs stay off the prompt; the model gets a reference.

``TaskMemory`` is the facade; each of its jobs lives in a module of its own (see
CONTRIBUTING.md, "Module map"): the write path and the commit protocol in ``_commit``,
indexing jobs and catch-up in ``_index_jobs``, the card's statistics in
``_card_stats``, the text kept in memory in ``_view_cache``, reads in ``_reads``,
deletion and retention in ``_lifecycle``, the ``path=`` layout in ``_layout``, and the
typed namespace metadata in ``_namespace_meta``.

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import (
    NamespaceError,
    NotFoundError,
    StorageMismatchError,
    ValidationError,
)
from offprompt.names import validate_namespace
from offprompt.retention import PruneReport, RetentionPolicy
from offprompt.scope import Scope, as_scope
from offprompt.stores.base import BaseStore
from offprompt.summarizers import TextSummarizer
from offprompt.task_memory import excerpt
from offprompt.task_memory._card_stats import CardStats
from offprompt.task_memory._commit import EMPTY_OUTPUT, REFERENCE_TEMPLATE, Writer, check_storages
from offprompt.task_memory._index_jobs import Indexer
from offprompt.task_memory._layout import (
    TOOL_OUTPUT_DENSE,
    TOOL_OUTPUT_LEXICAL,
    IndexRegistration,
    PathLayout,
    open_catalog,
)
from offprompt.task_memory._lifecycle import Lifecycle
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.task_memory._reads import Reader, SummaryPlan
from offprompt.task_memory._view_cache import DEFAULT_CACHE_BYTES
from offprompt.task_memory._views import Views
from offprompt.task_memory.blobs import BlobStore, InMemoryBlobStore
from offprompt.task_memory.budgets import DEFAULT_PAGE_TOKENS
from offprompt.task_memory.card import OutputStats, render_card
from offprompt.task_memory.catalog import StoreCatalog
from offprompt.task_memory.meta import ActionSubtaskMetaEntry
from offprompt.task_memory.results import NamespaceMetadata, Stored
from offprompt.task_memory.sql import SqlLimits, SqlResult, run_sql
from offprompt.task_memory.storage import ArtifactStorage, BlobArtifactStorage, TextArtifactStorage
from offprompt.task_memory.text_view import GrepResult
from offprompt.tokens import TiktokenTokenizer
from offprompt.trace import InMemoryTracer, TraceEvent, Tracer, emit_safely
from offprompt.vectors import QdrantVectorStore

#: Stored outputs one SQL query may read.
MAX_SQL_TABLES = 8

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "EMPTY_OUTPUT",
    "REFERENCE_TEMPLATE",
    "TOOL_OUTPUT_DENSE",
    "TOOL_OUTPUT_LEXICAL",
    "StorageMismatchError",
    "TaskMemory",
]


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

    def __init__(  # noqa: PLR0913 keyword-only public options
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
        if path is not None and store is not None:
            raise ValidationError("give path= or store=, not both")
        if not isinstance(cache_bytes, int) or cache_bytes < 0:
            raise ValidationError(f"cache_bytes must be an int >= 0, got {cache_bytes!r}")
        if retention is not None and not isinstance(retention, RetentionPolicy):
            raise ValidationError(
                f"retention must be a RetentionPolicy, got {type(retention).__name__}"
            )
        if tokenizer is None:
            from offprompt.tokens import default_tokenizer

            tokenizer = default_tokenizer()
        scope, tenant = _resolve_scope(scope, tenant)
        self.name = name
        self.scope: Scope | None = scope
        self.retention = retention
        self.tracer: Tracer = tracer if tracer is not None else InMemoryTracer(256)
        self.tenant = validate_namespace(tenant, what="tenant")
        self.min_tokens = min_tokens
        self.page_tokens = page_tokens
        self.tokenizer = tokenizer
        self.path = Path(path) if path is not None else None
        self.cache_bytes = cache_bytes
        self.index_mode = index
        self.preview = preview
        self.preview_tokens = preview_tokens
        # close() releases only what this memory opened; a store passed in is the caller's
        self._owns_vector_store = vector_store is None
        self.index_location = "given" if vector_store is not None else "memory"
        layout = PathLayout(self.path) if self.path is not None else None
        if vector_store is None and layout is not None:
            vector_store, self.index_location = layout.open_index()
        elif vector_store is None:
            vector_store = QdrantVectorStore(lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE)
        self.vector_store = (
            vector_store.with_scope(scope)
            if scope is not None
            else vector_store.with_tenant(self.tenant)
        )
        row_scope = scope if scope is not None else Scope(tenant=self.tenant)
        catalog, blob_store = open_catalog(
            layout,
            store,
            blob_store,
            row_scope=row_scope,
            scoped_vectors=self.vector_store,
            vector_store=vector_store,
            index_location=self.index_location,
        )
        #: The store that holds the truth (``task.db`` for ``path=``, ``store=``), or None
        #: when the metadata lives in the vector store (in memory, ``vector_store=``).
        self.store: BaseStore | None = catalog.store if isinstance(catalog, StoreCatalog) else None
        self._registration = IndexRegistration(self.store, self.index_location, self.path)
        self._registration.register()
        if storages is None:
            storages = self._default_storages(
                blob_store or InMemoryBlobStore(), chunk_tokens, overlap_tokens
            )
        check_storages(storages)
        self.storages: dict[type[BaseArtifact], ArtifactStorage] = dict(storages)
        self._parts = Parts(
            name=name,
            tenant=self.tenant,
            scope=scope,
            catalog=catalog,
            storages=self.storages,
            vector_store=self.vector_store,
            tokenizer=tokenizer,
            tracer=self.tracer,
            retention=retention,
            page_tokens=page_tokens,
            index_mode=index,
        )
        views = Views(self._parts, cache_bytes)
        stats = CardStats(self._parts, views)
        self._stats = stats
        self._indexer = Indexer(self._parts, views, stats, cache_bytes, self.index_location)
        self._reader = Reader(self._parts, views, self._indexer)
        self._lifecycle = Lifecycle(self._parts, self._indexer)
        self._writer = Writer(
            self._parts,
            stats,
            self._indexer,
            self._lifecycle,
            min_tokens=min_tokens,
            preview=preview,
            preview_tokens=preview_tokens,
        )
        self.meta_memory = self._writer.meta_memory
        self._closed = False
        self._indexer.resume_unindexed()

    def _default_storages(
        self, blob_store: BlobStore, chunk_tokens: int, overlap_tokens: int
    ) -> dict[type[BaseArtifact], ArtifactStorage]:
        text_storage = TextArtifactStorage(
            self.vector_store,
            chunk_tokens=chunk_tokens,
            overlap_tokens=overlap_tokens,
            tokenizer=self.tokenizer,
            raw_store=blob_store,
            scope=self.scope,
        )
        return {
            TextArtifact: text_storage,
            JsonArtifact: text_storage,
            BlobArtifact: BlobArtifactStorage(blob_store, scope=self.scope),
        }

    @classmethod
    def in_memory(cls, name: str = "TaskMemory", **options: Any) -> TaskMemory:
        """A memory of this process alone (an embedded index in memory): ``TaskMemory()``."""
        return cls(name, **options)

    @classmethod
    def at_path(cls, path: str | Path, name: str = "TaskMemory", **options: Any) -> TaskMemory:
        """A durable memory in the directory ``path``, shared by the processes of this
        host: ``TaskMemory(path=path)``."""
        return cls(name, path=path, **options)

    @classmethod
    def on_store(cls, store: BaseStore, name: str = "TaskMemory", **options: Any) -> TaskMemory:
        """A memory whose records and raw outputs live in ``store`` (``PostgresStore`` for
        several hosts), the caller's to close: ``TaskMemory(store=store)``."""
        return cls(name, store=store, **options)

    @property
    def indexer(self) -> Indexer:
        """This memory's indexer: its jobs, the texts waiting for it, the reads it yields
        to (for diagnostics and tests; :meth:`wait_indexed` is the call to wait on)."""
        return self._indexer

    @property
    def cached_bytes(self) -> int:
        """Bytes of namespace text this memory holds decoded now (at most
        ``cache_bytes``, or the one view last read when that alone is larger)."""
        return self._reader.views.cache.bytes

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
        self._indexer.close()
        catalog = self._parts.catalog
        if self._owns_vector_store:
            try:
                self.vector_store.close()
            except Exception as exc:
                if not catalog.shared:
                    catalog.close()
                    raise
                emit_safely(
                    self.tracer,
                    TraceEvent("offload", detail={"stage": "close", "error": str(exc)[:500]}),
                )
        self._registration.unregister()
        catalog.close()

    def __enter__(self) -> TaskMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- helpers

    def reference_text(self, tool: str, activity: str, namespace: str) -> str:
        """The sentence the model sees instead of the output (DESIGN.md's exact wording)."""
        return self._writer.reference_text(tool, activity, namespace)

    def lookup_error(self, namespace: str) -> NotFoundError | None:
        """None when ``namespace`` can be read; otherwise the error a read would raise:
        :class:`~offprompt.errors.ExpiredError` for an output the retention's
        ``max_age`` has expired (stored, but gone), else ``NotFoundError`` (never stored,
        deleted, or another memory's, whose name is not given away).

        Raises:
            NamespaceError: ``namespace`` is not a valid namespace name.
        """
        if self._parts.meta(namespace) is not None:
            return None
        return self._parts.missing(namespace)

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
        replace: bool = False,
    ) -> NamespaceMetadata:
        """Store ``artifact`` (a ``ListArtifact`` item by item) in ``namespace``; returns its metadata.

        Storing into an existing namespace appends; with ``replace=True`` the namespace
        holds exactly ``artifact`` afterwards (of any storage), in one atomic commit: a
        reader, in this process or another, reads the old version or the new one, never
        both, and never "not found" for a namespace that existed throughout. Two
        replacing writes racing each other: the one committed last is what stays. The
        write is all-or-nothing.

        Raises:
            NamespaceError: ``namespace`` is not a valid name.
            StorageMismatchError: The namespace holds another storage's artifacts (and
                ``replace`` is False).
            ValidationError: No storage for the type, or a mixed / empty list.
        """
        replaced: list[NamespaceMeta] | None = [] if replace else None
        meta, unindexed = self._writer.store(
            namespace,
            artifact,
            tool=tool,
            activity=activity,
            sensitive=sensitive,
            context=context,
            replaced=replaced,
        )
        for old in replaced or ():
            self._lifecycle.discard_deleted(namespace, old)
        return self._writer.after_store(namespace, meta, unindexed)

    def store_output(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool = False,
        context: ActionSubtaskMetaEntry | None = None,
        min_tokens: int | None = None,
        preview: bool | None = None,
    ) -> Stored:
        """Store a tool's output if it should go off-prompt; say what the model sees.

        The typed core of :meth:`process_output` (same arguments, same decisions): every
        adapter's offload goes through it.

        Returns:
            A :class:`~offprompt.task_memory.results.Stored` whose ``verdict`` is
            ``"stored"`` (``text`` is the reference sentence and its card, cut to fit;
            under ``min_tokens`` > 0 it has fewer tokens than the output), ``"small"``
            (text below ``min_tokens`` and not ``sensitive``, or smaller than even the
            bare sentence: nothing is stored, ``text`` is the output) or ``"empty"``.

        Raises:
            ValidationError: ``artifact`` is not an artifact, or a mixed / empty list.
            NamespaceError: The artifact's name is not a valid namespace.
            StorageMismatchError: The namespace is already used by another storage.
            OffpromptError: Any other storage failure (nothing is half-stored).
        """
        return self._writer.store_output(
            tool_name,
            activity_name,
            artifact,
            sensitive=sensitive,
            context=context,
            min_tokens=min_tokens,
            preview=preview,
        )

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
        """Store a tool's output and return what the model should see instead: the
        Griptape-compatible form of :meth:`store_output`.

        ``preview`` overrides the memory's ``preview`` for this call (False: the bare
        sentence, e.g. for an error whose first line the caller shows itself).

        Returns:
            ``InfoArtifact`` with :meth:`reference_text` when stored;
            ``InfoArtifact("tool output is empty")`` for empty output; the artifact
            itself when it is text below ``min_tokens`` and not ``sensitive``, or
            (with ``min_tokens`` > 0, not ``sensitive``) smaller than even the bare
            sentence: then nothing is stored. Under ``min_tokens`` > 0 the reference
            (its card cut to fit) always has fewer tokens than the output;
            ``ErrorArtifact`` when it cannot be stored (bad namespace, mixed list,
            a namespace already used by another storage).
        """
        return self._writer.offload(
            tool_name,
            activity_name,
            artifact,
            sensitive=sensitive,
            context=context,
            min_tokens=min_tokens,
            preview=preview,
        )

    # ----------------------------------------------------------------- indexing

    def wait_indexed(self, namespace: str | None = None, timeout: float | None = None) -> bool:
        """Block until ``namespace`` (every namespace when None) is fully indexed.

        Returns True once nothing is left to index for it, False on ``timeout`` (seconds),
        when an indexing job failed (the error is traced; the raw output is intact and
        indexing is retried when the memory is reopened), or after :meth:`close`.
        """
        return self._indexer.wait_indexed(namespace, timeout)

    # ------------------------------------------------------------ stats, views

    def stats(self, namespace: str) -> OutputStats:
        """What ``namespace`` holds (the card's data): kind, size, lines, tokens, pages,
        first/last lines, JSON outline, whether it is indexed, which tools fit.

        Raises:
            NotFoundError: Unknown namespace (or another tenant's / scope's).
        """
        meta = self._indexer.ensure_exact_pages(namespace, self._parts.require(namespace))
        if meta.stats is None:  # written by an earlier version
            meta.stats = self._stats.fresh(namespace, meta, [])
        return OutputStats.model_validate(meta.stats)

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
        return self._reader.grep(
            namespace,
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
        return self._reader.read_lines(namespace, start, stop)

    def json_outline(self, namespace: str, *, depth: int = 3) -> str:
        """The shape of a JSON (or JSON lines) namespace: types, keys, array lengths.

        Raises:
            NotFoundError: Unknown namespace.
            NotJsonError: The namespace does not hold JSON.
        """
        return self._reader.json_outline(namespace, depth)

    def json_query(self, namespace: str, expression: str) -> Any:
        """The JSON value of the JMESPath ``expression`` over ``namespace``.

        A JSON lines namespace is queried as the list of its values; a JSON body after
        text lines as that body; YAML as its JSON data; a Markdown table or a CSV as the
        list of its rows (objects keyed by the header, plain numbers as numbers; see
        :mod:`offprompt.task_memory.structured`).
        ``length(items[?status=='failed'])`` counts without returning the items.

        Raises:
            NotFoundError: Unknown namespace.
            NotJsonError: The namespace does not hold JSON.
            JsonQueryError: The expression does not parse or fails on the value.
        """
        return self._reader.json_query(namespace, expression)

    def sql(
        self,
        references: str | Sequence[str],
        query: str,
        *,
        limits: SqlLimits | None = None,
    ) -> SqlResult:
        """Run the SQL ``query`` (one ``SELECT``) over stored outputs, on DuckDB, sandboxed.

        Each namespace in ``references`` is a table of that name (quote it in the query:
        ``SELECT count(*) FROM "logs-1"``): the rows of its JSON data (what
        :meth:`json_query` reads, so JSON lines, YAML and CSV too), or else its lines as
        ``(line_number, line)``. Several references join. See :mod:`offprompt.task_memory.sql`
        for the sandbox; it needs the ``offprompt[sql]`` extra.

        Raises:
            NotFoundError: An unknown namespace.
            SqlError: A refused query, or one that failed or ran out of time or memory.
            OffpromptError: DuckDB is not installed.
        """
        names = [references] if isinstance(references, str) else list(references)
        if not names or len(names) > MAX_SQL_TABLES:
            raise ValidationError(
                f"references must name 1 to {MAX_SQL_TABLES} stored outputs, got {len(names)}"
            )
        sources = [self._reader.sql_source(name) for name in names]
        return run_sql(sources, query, limits=limits)

    # ------------------------------------------------------------------ reading

    def has_namespace(self, namespace: str) -> bool:
        """Whether ``namespace`` is stored in this memory (and scope), without waiting for
        its indexing: the memory tools check this first, so grep and read answer at once.

        Raises:
            NamespaceError: ``namespace`` is not a valid namespace name.
        """
        return self._parts.meta(namespace) is not None

    def namespaces(self) -> list[str]:
        """Committed namespaces of this memory and tenant, sorted."""
        return self._parts.names()

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
        return self._lifecycle.prune(policy, now=now, keep=keep)

    def forget_scope(self, scope: Scope, *, all: bool = False) -> dict[str, int]:
        """Delete chunks, namespace metadata and blobs of every partition ``scope`` selects.

        Reaches the whole collection and blob stores of this memory, not only its own
        scope (it is an administrative call; :func:`offprompt.forget.forget` uses it).
        Returns ``{"points": n, "blobs": m}`` (a text output's raw text is a blob too).
        Pending indexing finishes first, so no chunk is written after the deletion. The
        private indexes that killed processes left in the temp directory (they may hold
        the text too) are removed; live processes' are named by :meth:`forget_unreached`.
        """
        return self._lifecycle.forget_scope(scope, all=all)

    def forget_unreached(self) -> list[str]:
        """What :meth:`forget_scope` cannot reach from this process (for the report):
        the embedded chunk indexes other open processes keep of this memory's store.
        They never answer from forgotten data (every query is filtered by the committed
        metadata) and drop its chunks within seconds of their next use."""
        return self._registration.unreached()

    def namespace_metadata(self, namespace: str, *, wait: bool = True) -> NamespaceMetadata:
        """Where ``namespace`` came from and how big it is (a frozen model that also reads
        like a dict).

        Fields: ``tool``, ``activity``, ``created_at``, ``bytes``, ``tokens``, ``storage``
        (``"text"`` / ``"blob"``), ``chunks``, ``pages``, ``artifacts``, ``sensitive``,
        ``subtasks`` (recorded :class:`ActionSubtaskMetaEntry` dicts).

        Waits for the namespace's pending indexing first, so ``tokens`` and ``chunks``
        are exact; ``wait=False`` answers at once, with the counts known so far (what
        :meth:`stats` estimates).

        Raises:
            NotFoundError: The namespace is unknown.
        """
        meta = self._parts.require(namespace)
        if not wait:
            return self._stats.public(namespace, meta)
        self.wait_indexed(namespace)
        meta = self._indexer.ensure_exact_pages(namespace, self._parts.require(namespace))
        return self._stats.public(namespace, meta)

    def load_artifacts(self, namespace: str) -> ListArtifact:
        """Every artifact stored in ``namespace``, byte-identical; empty if unknown."""
        return self._reader.load_artifacts(namespace)

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
        gives an empty list. The answer is drawn from the whole output: an output still
        being indexed is waited for, one stored by another process is indexed here first.

        Raises:
            StorageError: The output could not be indexed (a full disk, a store gone; its
                indexing is tried again, and by every later query). The message says
                why, and that :meth:`grep` and :meth:`read` still serve the whole output.
        """
        return self._reader.query(namespace, query, top_n, mode=mode)

    def read(self, namespace: str, page: int = 1, page_tokens: int | None = None) -> TextArtifact:
        """Page ``page`` (1-based) of ``namespace``'s text, in original order.

        Pages hold at most ``page_tokens`` tokens each (the memory's ``page_tokens`` by
        default), counted on the page's own text, and join back into the output byte
        for byte (see :meth:`TextView.page_bounds`). Works at once, indexed or not, and
        cuts the output only up to ``page``: until every page is cut, ``pages`` is an
        estimate (``pages_estimated``). Pages end at line ends; ``meta`` holds ``page``,
        ``pages``, ``first_line``, ``last_line``, ``lines`` and ``starts/ends_mid_line``.

        Raises:
            NotFoundError: Unknown namespace.
            RangeError: ``page`` out of range.
        """
        return self._reader.read_page(namespace, page, page_tokens)

    def summarize(
        self,
        namespace: str,
        summarizer: TextSummarizer | None = None,
        *,
        max_tokens: int | None = None,
    ) -> TextArtifact:
        """``summarizer``'s summary of ``namespace``, page by page then combined for long
        outputs (``meta``: ``pages``, ``tool``). Without one, not a summary but an excerpt
        that says so (:func:`offprompt.task_memory.excerpt.excerpt`; ``meta["excerpt"]``):
        the first, last, rare and error lines, numbered; for data, its fields and rows.

        Raises:
            NotFoundError: Unknown namespace.
        """
        if summarizer is None:
            info = self.namespace_metadata(namespace, wait=False)
            stats = info["stats"] or self.stats(namespace).model_dump()
            return excerpt.excerpt(
                self._reader,
                namespace,
                tool=info["tool"],
                stats=stats,
                tokenizer=self.tokenizer,
                max_tokens=max_tokens,
            )
        plan = self._summary_plan(namespace)
        parts = [summarizer.summarize_text(plan.first, max_tokens=max_tokens)]
        for page in plan.rest:
            text = self.read(namespace, page, plan.page_tokens).value
            parts.append(summarizer.summarize_text(text, max_tokens=max_tokens))
        if not plan.combine:
            return plan.result(parts[0])
        return plan.result(summarizer.summarize_text(plan.joined(parts), max_tokens=max_tokens))

    def _summary_plan(self, namespace: str) -> SummaryPlan:
        tool = self._parts.require(namespace).tool
        return SummaryPlan.start(namespace, tool, self.page_tokens, self.read)

    def delete(self, namespace: str) -> bool:
        """Remove ``namespace`` (metadata first, so it disappears at once); False if unknown."""
        return self._lifecycle.delete(namespace)

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

    async def astore_output(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool = False,
        context: ActionSubtaskMetaEntry | None = None,
        min_tokens: int | None = None,
        preview: bool | None = None,
    ) -> Stored:
        """Async twin of :meth:`store_output` (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.store_output,
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
    ) -> NamespaceMetadata:
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
        plan = await asyncio.to_thread(self._summary_plan, namespace)
        parts = [await summarizer.asummarize_text(plan.first, max_tokens=max_tokens)]
        for page in plan.rest:
            text = (await self.aread(namespace, page, plan.page_tokens)).value
            parts.append(await summarizer.asummarize_text(text, max_tokens=max_tokens))
        if not plan.combine:
            return plan.result(parts[0])
        joined = plan.joined(parts)
        return plan.result(await summarizer.asummarize_text(joined, max_tokens=max_tokens))

    async def aload_artifacts(self, namespace: str) -> ListArtifact:
        """Async twin of :meth:`load_artifacts`."""
        return await asyncio.to_thread(self.load_artifacts, namespace)

    async def adelete(self, namespace: str) -> bool:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, namespace)

    async def anamespaces(self) -> list[str]:
        """Async twin of :meth:`namespaces`."""
        return await asyncio.to_thread(self.namespaces)

    async def anamespace_metadata(self, namespace: str) -> NamespaceMetadata:
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


def _resolve_scope(scope: Scope | None, tenant: str) -> tuple[Scope | None, str]:
    """The memory's scope with its tenant filled in, and the tenant."""
    if scope is None:
        return None, tenant
    resolved = as_scope(scope)
    if resolved.tenant is not None and tenant not in ("default", resolved.tenant):
        raise NamespaceError(f"tenant {tenant!r} contradicts scope.tenant {resolved.tenant!r}")
    tenant = resolved.tenant or tenant
    return resolved.model_copy(update={"tenant": tenant}), tenant
