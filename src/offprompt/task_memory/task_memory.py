"""``TaskMemory``: large tool outputs stay off the prompt; the model gets a reference.

Commit protocol (why nothing is ever half-visible): every write gets a fresh
*generation* id; the storage writes its data (chunks or blob files) tagged with it,
and only then does ``TaskMemory`` write the namespace's metadata point, a single
atomic upsert that lists the committed generations. Every read goes through that
metadata and filters on those generations. A crash between the two leaves only
orphaned, invisible data, which ``delete(namespace)`` removes.

Empty outputs (``""`` or whitespace only) store nothing and return
``InfoArtifact("tool output is empty")``. Outputs of any size are chunked and
upserted in streamed batches (a 100 MB output holds one 1 MB tokenisation segment
and one batch of chunks beyond the text itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ErrorArtifact,
    InfoArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import (
    NamespaceError,
    NotFoundError,
    OffpromptError,
    StorageMismatchError,
    ValidationError,
)
from offprompt.retention import PruneReport, RetentionPolicy
from offprompt.scope import Scope, as_scope
from offprompt.summarizers import ExtractiveSummarizer, TextSummarizer
from offprompt.task_memory.blobs import BlobStore, FileBlobStore, InMemoryBlobStore
from offprompt.task_memory.meta import ActionSubtaskMetaEntry, MetaMemory
from offprompt.task_memory.storage import ArtifactStorage, BlobArtifactStorage, TextArtifactStorage
from offprompt.trace import InMemoryTracer, TraceEvent, Tracer, emit_safely
from offprompt.vectors import QdrantVectorStore, validate_namespace

__all__ = ["REFERENCE_TEMPLATE", "StorageMismatchError", "TaskMemory"]

REFERENCE_TEMPLATE = (
    'Output of "{tool}.{activity}" was stored in memory with memory_name "{memory}" '
    'and artifact_namespace "{namespace}".'
)
EMPTY_OUTPUT = "tool output is empty"
_META_KEY = "task_memory"


class TaskMemory:
    """Off-prompt memory for tool outputs, dispatching artifacts to storages by type.

    Args:
        name: The memory's name, quoted in references as ``memory_name``.
        storages: ``{artifact class: storage}``; by default text goes to a
            :class:`TextArtifactStorage` on ``vector_store`` and blobs (images too) to a
            :class:`BlobArtifactStorage` on ``blob_store``.
        vector_store: Where chunks and namespace metadata live; an embedded
            ``QdrantVectorStore`` (under ``path`` if given) when omitted.
        path: Directory for a durable memory (``vectors/`` and ``blobs/`` inside).
        blob_store: Blob store; ``FileBlobStore(path / "blobs")`` or in memory.
        min_tokens: Outputs with fewer tokens pass through unchanged (unless
            ``sensitive``); 0 stores everything.
        tokenizer: tiktoken-based tokenizer for chunking and counting.
        tenant: Scope of every namespace; two tenants never see each other's data.
        chunk_tokens: Tokens per chunk (default storages only).
        overlap_tokens: Overlap tokens used when embedding a chunk.
        page_tokens: Default page size of :meth:`read`.
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

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> info = memory.process_output("logs", "fetch", TextArtifact("disk full on node 7", name="logs-1"))
        >>> info.value
        'Output of "logs.fetch" was stored in memory with memory_name "TaskMemory" and artifact_namespace "logs-1".'
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
        blob_store: BlobStore | None = None,
        min_tokens: int = 0,
        tokenizer: Any = None,
        tenant: str = "default",
        chunk_tokens: int = 512,
        overlap_tokens: int = 64,
        page_tokens: int = 2048,
        scope: Scope | None = None,
        retention: RetentionPolicy | None = None,
        tracer: Tracer | None = None,
    ) -> None:
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
        root = Path(path) if path is not None else None
        # close() releases only what this memory opened; a store passed in is the caller's
        self._owns_vector_store = vector_store is None
        if vector_store is None:
            vector_store = QdrantVectorStore(path=str(root / "vectors") if root else None)
        self.vector_store = (
            vector_store.with_scope(scope)
            if scope is not None
            else vector_store.with_tenant(self.tenant)
        )
        if storages is None:
            if blob_store is None:
                blob_store = FileBlobStore(root / "blobs") if root else InMemoryBlobStore()
            storages = {
                TextArtifact: TextArtifactStorage(
                    self.vector_store,
                    chunk_tokens=chunk_tokens,
                    overlap_tokens=overlap_tokens,
                    tokenizer=tokenizer,
                ),
                BlobArtifact: BlobArtifactStorage(blob_store, scope=scope),
            }
        self.storages: dict[type[BaseArtifact], ArtifactStorage] = dict(storages)
        self.meta_memory = MetaMemory()
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"TaskMemory(name={self.name!r}, tenant={self.tenant!r})"

    def close(self) -> None:
        """Release the embedded Qdrant engine this memory opened (its files stay).

        An embedded store on ``path=`` is locked while open, so close a memory before
        opening another one on the same path. A ``vector_store`` passed in is left open:
        it belongs to the caller.
        """
        if self._owns_vector_store:
            self.vector_store.close()

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
        meta = self.vector_store.get_metadata(namespace, _META_KEY)
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
        validate_namespace(namespace)
        if not isinstance(artifact, BaseArtifact):
            raise ValidationError(
                f"store_artifact needs an artifact, got {type(artifact).__name__}"
            )
        storage = self._storage_for(artifact)
        items = list(artifact.value) if isinstance(artifact, ListArtifact) else [artifact]
        with self._lock:
            meta = self._meta(namespace)
            if meta is not None and meta["storage"] != storage.kind:
                raise StorageMismatchError(
                    f"namespace {namespace!r} holds {meta['storage']} artifacts; cannot add {storage.kind}",
                    namespace=namespace,
                )
            now = datetime.now(timezone.utc).isoformat()
            meta = meta or {
                "memory": self.name,
                "storage": storage.kind,
                "tool": tool,
                "activity": activity,
                "created_at": now,
                "artifacts": [],
                "subtasks": [],
                "sensitive": False,
            }
            generation = uuid.uuid4().hex
            seq = sum(int(e["chunks"]) for e in meta["artifacts"])
            entries = []
            try:
                for item in items:
                    entry = storage.write(
                        namespace, item, generation=generation, first_seq=seq, tenant=self.tenant
                    )
                    entries.append(entry)
                    seq += int(entry["chunks"])
            except BaseException:
                # The write already failed; whatever it left stays invisible anyway.
                with contextlib.suppress(Exception):
                    storage.discard(
                        namespace, meta["artifacts"], tenant=self.tenant, generations=[generation]
                    )
                raise
            meta["artifacts"] = [*meta["artifacts"], *entries]
            meta["updated_at"] = now
            meta["tool"] = meta.get("tool") or tool
            meta["activity"] = meta.get("activity") or activity
            meta["sensitive"] = bool(meta.get("sensitive")) or sensitive
            if context is not None:
                meta["subtasks"] = [*meta.get("subtasks", []), context.to_dict()]
            meta["bytes"] = sum(int(e["bytes"]) for e in meta["artifacts"])
            meta["tokens"] = sum(int(e["tokens"]) for e in meta["artifacts"])
            meta["chunks"] = seq
            # The commit point: one atomic metadata write makes the generation visible.
            self.vector_store.put_metadata(namespace, _META_KEY, meta)
            emit_safely(
                self.tracer,
                TraceEvent(
                    "offload",
                    scope=self._scope_fields(),
                    tokens=sum(int(e["tokens"]) for e in entries),
                    included=[{"artifact_id": e["id"], "chunks": e["chunks"]} for e in entries],
                    detail={"namespace": namespace, "tool": tool, "activity": activity},
                ),
            )
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
    ) -> BaseArtifact:
        """Store a tool's output and return what the model should see instead.

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
        if not artifact or (isinstance(artifact, ListArtifact) and not any(artifact.value)):
            return InfoArtifact(value=EMPTY_OUTPUT)
        threshold = self.min_tokens if min_tokens is None else min_tokens
        if not sensitive and threshold > 0 and isinstance(artifact, TextArtifact):
            text = artifact.value
            # A token is at most ~a few dozen characters in practice; skip counting huge text.
            if len(text) < threshold * 32 and self.tokenizer.count(text) < threshold:
                return artifact
        namespace = artifact.name
        try:
            self.store_artifact(
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
        return InfoArtifact(
            value=self.reference_text(tool_name, activity_name, namespace),
            meta={"memory_name": self.name, "artifact_namespace": namespace},
        )

    # ------------------------------------------------------------------ reading

    def namespaces(self) -> list[str]:
        """Committed namespaces of this memory and tenant, sorted."""
        docs = self.vector_store.list_metadata(_META_KEY)
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
        cutoff = policy.cutoff(now)
        with self._lock:
            docs = {
                ns: meta
                for ns, meta in self.vector_store.list_metadata(_META_KEY).items()
                if meta.get("memory") == self.name
            }
            doomed = [
                ns for ns, meta in docs.items() if cutoff is not None and _written_at(meta) < cutoff
            ]
            live = sorted(
                (ns for ns in docs if ns not in doomed), key=lambda ns: _written_at(docs[ns])
            )
            tokens = sum(int(docs[ns].get("tokens", 0)) for ns in live)
            while live and (
                (policy.max_count is not None and len(live) > policy.max_count)
                or (policy.max_tokens is not None and tokens > policy.max_tokens)
            ):
                victim = next((ns for ns in live if ns != keep), None)
                if victim is None:
                    break
                live.remove(victim)
                tokens -= int(docs[victim].get("tokens", 0))
                doomed.append(victim)
            for ns in doomed:
                self.vector_store.delete_metadata(ns, _META_KEY)
                self._kind_storage(docs[ns]["storage"]).discard(ns, None, tenant=self.tenant)
        if doomed:
            emit_safely(
                self.tracer,
                TraceEvent(
                    "evict",
                    scope=self._scope_fields(),
                    dropped=[{"namespace": ns, "reason": "retention"} for ns in doomed],
                ),
            )
        return PruneReport(namespaces=len(doomed))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> dict[str, int]:
        """Delete chunks, namespace metadata and blobs of every partition ``scope`` selects.

        Reaches the whole collection and blob stores of this memory, not only its own
        scope (it is an administrative call; :func:`offprompt.forget.forget` uses it).
        Returns ``{"points": n, "blobs": m}``.
        """
        points = self.vector_store.forget_scope(scope, all=all)
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
        return {"points": points, "blobs": blobs}

    def _public_meta(self, namespace: str, meta: Mapping[str, Any]) -> dict[str, Any]:
        pages = 0
        if meta["storage"] == "text":
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
        }

    def namespace_metadata(self, namespace: str) -> dict[str, Any]:
        """Where ``namespace`` came from and how big it is.

        Keys: ``tool``, ``activity``, ``created_at``, ``bytes``, ``tokens``, ``storage``
        (``"text"`` / ``"blob"``), ``chunks``, ``pages``, ``artifacts``, ``sensitive``,
        ``subtasks`` (recorded :class:`ActionSubtaskMetaEntry` dicts).

        Raises:
            NotFoundError: The namespace is unknown.
        """
        return self._public_meta(namespace, self._require(namespace))

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
        """The ``top_n`` chunks of ``namespace`` that best answer ``query`` (hybrid retrieval).

        Each item is a ``TextArtifact`` whose ``meta`` holds ``score``,
        ``artifact_id``, ``chunk_index`` and ``page``. An unknown or blob namespace
        gives an empty list.
        """
        if not isinstance(top_n, int) or top_n < 1:
            raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
        meta = self._meta(namespace)
        if meta is None or meta["storage"] != "text":
            return ListArtifact(value=[], name=namespace)
        storage = self._kind_storage("text")
        assert isinstance(storage, TextArtifactStorage)
        per_page = self._chunks_per_page(storage, self.page_tokens)
        hits = storage.query(
            namespace, meta["artifacts"], query, top_n, tenant=self.tenant, mode=mode
        )
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
                        "page": int(h.payload.get("seq", 0)) // per_page + 1,
                    },
                )
                for h in hits
            ],
            name=namespace,
        )

    @staticmethod
    def _chunks_per_page(storage: ArtifactStorage, page_tokens: int) -> int:
        chunk_tokens = getattr(storage, "chunk_tokens", page_tokens)
        return max(1, page_tokens // chunk_tokens)

    def read(self, namespace: str, page: int = 1, page_tokens: int | None = None) -> TextArtifact:
        """Page ``page`` (1-based) of ``namespace``'s text, in original order.

        A page is ``page_tokens // chunk_tokens`` whole chunks (at least one), so pages
        join back into the original. ``meta`` holds ``page`` and ``pages``.

        Raises:
            NotFoundError: Unknown namespace.
            ValidationError: ``page`` out of range.
        """
        meta = self._require(namespace)
        size = self.page_tokens if page_tokens is None else page_tokens
        if not isinstance(size, int) or size < 1:
            raise ValidationError(f"page_tokens must be an int >= 1, got {size!r}")
        if meta["storage"] != "text":
            artifacts = self.load_artifacts(namespace)
            return TextArtifact(
                value=artifacts.to_text(), name=namespace, meta={"page": 1, "pages": 1}
            )
        storage = self._kind_storage("text")
        assert isinstance(storage, TextArtifactStorage)
        per_page = self._chunks_per_page(storage, size)
        pages = max(1, math.ceil(int(meta["chunks"]) / per_page))
        if not isinstance(page, int) or not 1 <= page <= pages:
            raise ValidationError(
                f"page must be between 1 and {pages} for namespace {namespace!r}, got {page!r}"
            )
        records = storage.read_range(
            namespace, meta["artifacts"], (page - 1) * per_page, page * per_page, tenant=self.tenant
        )
        return TextArtifact(
            value="".join(r.text for r in records),
            name=namespace,
            meta={"page": page, "pages": pages, "namespace": namespace},
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
            self.vector_store.delete_metadata(namespace, _META_KEY)
            self._kind_storage(meta["storage"]).discard(namespace, None, tenant=self.tenant)
            return True

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
        )

    async def astore_artifact(
        self, namespace: str, artifact: BaseArtifact, **kwargs: Any
    ) -> dict[str, Any]:
        return await asyncio.to_thread(self.store_artifact, namespace, artifact, **kwargs)

    async def aquery(
        self, namespace: str, query: str, top_n: int = 5, *, mode: str = "hybrid"
    ) -> ListArtifact:
        return await asyncio.to_thread(self.query, namespace, query, top_n, mode=mode)

    async def aread(
        self, namespace: str, page: int = 1, page_tokens: int | None = None
    ) -> TextArtifact:
        return await asyncio.to_thread(self.read, namespace, page, page_tokens)

    async def asummarize(
        self,
        namespace: str,
        summarizer: TextSummarizer | None = None,
        *,
        max_tokens: int | None = None,
    ) -> TextArtifact:
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
        return await asyncio.to_thread(self.load_artifacts, namespace)

    async def adelete(self, namespace: str) -> bool:
        return await asyncio.to_thread(self.delete, namespace)

    async def anamespaces(self) -> list[str]:
        return await asyncio.to_thread(self.namespaces)

    async def anamespace_metadata(self, namespace: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.namespace_metadata, namespace)


def _written_at(meta: Mapping[str, Any]) -> float:
    """POSIX time of a namespace's last write (its ``updated_at`` / ``created_at``)."""
    stamp = meta.get("updated_at") or meta.get("created_at")
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return 0.0
