"""The write path of ``TaskMemory``: store an output and commit its namespace metadata.

Commit protocol (why nothing is ever half-visible): every write gets a fresh
*generation* id; the storage writes its data (chunks or blob files) tagged with it,
and only then is the namespace's metadata committed, a single atomic write that lists
the committed generations. Every read goes through that metadata and filters on those
generations. A crash between the two leaves only orphaned, invisible data, which
``delete(namespace)`` removes. A commit names the version it read
(:mod:`~offprompt.task_memory.catalog`): when another process committed the namespace
meanwhile, the new artifacts are appended to what it committed and the commit retried.

A *replacing* write (``store_artifact(..., replace=True)``) commits metadata that lists
only its own artifacts, over whatever version is committed when it lands (on a conflict
the last commit wins, whole): a reader sees the old artifacts or the new ones, never
both. The replaced generations' data is discarded after the commit
(:meth:`~offprompt.task_memory._lifecycle.Lifecycle.discard_deleted`), and a reader that
had the old metadata in hand reads again (:meth:`~offprompt.task_memory._views.Views.consistent`).
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
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
    NotFoundError,
    OffpromptError,
    StorageError,
    StorageMismatchError,
    ValidationError,
)
from offprompt.names import validate_namespace
from offprompt.task_memory._card_stats import CardStats
from offprompt.task_memory._index_jobs import Indexer
from offprompt.task_memory._lifecycle import Lifecycle
from offprompt.task_memory._namespace_meta import ArtifactEntry, NamespaceMeta
from offprompt.task_memory._parts import COMMIT_RETRIES, Parts
from offprompt.task_memory.card import (
    OutputStats,
    render_card,
    shape_only,
)
from offprompt.task_memory.decision import decide_text, is_blank
from offprompt.task_memory.meta import ActionSubtaskMetaEntry, MetaMemory
from offprompt.task_memory.pipeline import Pending, run_beside
from offprompt.task_memory.results import NamespaceMetadata, Stored, store_failure
from offprompt.task_memory.storage import (
    ArtifactStorage,
    BlobArtifactStorage,
    TextArtifactStorage,
)

__all__ = [
    "BESIDE_BYTES",
    "EMPTY_OUTPUT",
    "REFERENCE_TEMPLATE",
    "Writer",
    "beside",
    "check_storages",
    "is_empty",
]

REFERENCE_TEMPLATE = (
    'Output of "{tool}.{activity}" was stored in memory with memory_name "{memory}" '
    'and artifact_namespace "{namespace}".'
)
EMPTY_OUTPUT = "tool output is empty"
# Raw outputs from this size on are hashed and stored in a worker thread beside the
# card's stats, unless the raw store opts out (see _beside).
BESIDE_BYTES = 1 << 20


@dataclass(frozen=True)
class WriteStamp:
    """When and by what a write was made: what its metadata records."""

    now: str
    tool: str | None
    activity: str | None


@dataclass(frozen=True)
class Write:
    """One write in flight, from its first byte to its commit: what a retried commit,
    a rebase and a re-put need of it.

    Attributes:
        namespace: Where it goes.
        storage: The one storage of its artifacts.
        entries: Its artifacts' entries (a rebase resets their chunk fields).
        items: Its artifacts, one per entry.
        fresh: The raw bytes written, by generation.
        stamp: When and by what.
        replaced: A replacing write's list of the metadata it replaced, else ``None``.
    """

    namespace: str
    storage: ArtifactStorage
    entries: list[ArtifactEntry]
    items: Sequence[BaseArtifact]
    fresh: Mapping[str, bytes]
    stamp: WriteStamp
    replaced: list[NamespaceMeta] | None


def beside(storage: TextArtifactStorage, size: int) -> bool:
    """Whether to hash and store ``size`` raw bytes in a worker thread: large outputs,
    unless the raw store says otherwise (``put_beside``, see ``FileBlobStore``)."""
    return size >= BESIDE_BYTES and bool(getattr(storage.raw_store, "put_beside", True))


class Writer:
    """The write path of one memory: store, commit (retried on a conflict), re-put what
    a racing delete removed, and what follows a commit (indexing, retention).

    Args:
        parts: The memory's shared parts.
        stats: The card's statistics, computed from what is written.
        indexer: Schedules the indexing of what is committed.
        lifecycle: Applies retention after a write.
        min_tokens, preview, preview_tokens: The memory's settings for
            :meth:`offload` (see :class:`~offprompt.task_memory.TaskMemory`).
    """

    def __init__(
        self,
        parts: Parts,
        stats: CardStats,
        indexer: Indexer,
        lifecycle: Lifecycle,
        *,
        min_tokens: int,
        preview: bool,
        preview_tokens: int,
    ) -> None:
        self.parts = parts
        self.stats = stats
        self.indexer = indexer
        self.lifecycle = lifecycle
        self.min_tokens = min_tokens
        self.preview = preview
        self.preview_tokens = preview_tokens
        self.meta_memory = MetaMemory()

    def reference_text(self, tool: str, activity: str, namespace: str) -> str:
        """The sentence the model sees instead of the output (DESIGN.md's exact wording)."""
        return REFERENCE_TEMPLATE.format(
            tool=tool, activity=activity, memory=self.parts.name, namespace=namespace
        )

    def store(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        tool: str | None,
        activity: str | None,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
        replaced: list[NamespaceMeta] | None = None,
    ) -> tuple[NamespaceMeta, list[ArtifactEntry]]:
        """The committed write of :meth:`store_artifact`: its metadata and the entries
        left to index (the caller schedules them, see :func:`after_store`).

        ``replaced``: a replacing write (the namespace then holds only these artifacts);
        the metadata it replaced (this memory's, if any) is appended to the list, for the
        caller to discard its data once the write is committed.
        """
        parts = self.parts
        validate_namespace(namespace)
        if not isinstance(artifact, BaseArtifact):
            raise ValidationError(
                f"store_artifact needs an artifact, got {type(artifact).__name__}"
            )
        storage = self.storage_for(artifact)
        items = list(artifact.value) if isinstance(artifact, ListArtifact) else [artifact]
        with parts.lock:
            stamp = WriteStamp(datetime.now(timezone.utc).isoformat(), tool, activity)
            meta = self.base_meta(namespace, storage.kind, stamp, replaced)
            # Background: raw text now, chunks later. Sync (and storages without a raw
            # store): the whole write before the commit, all or nothing, as before.
            raw = (
                parts.index_mode == "background"
                and isinstance(storage, TextArtifactStorage)
                and storage.raw_store is not None
            )
            generations: list[str] = []
            fresh: dict[str, bytes] = {}
            texts: dict[str, str] = {}
            puts: list[tuple[ArtifactEntry, Pending[str]]] = []
            seq = sum(e.chunks for e in meta.artifacts)
            committed = meta.artifacts
            entries: list[ArtifactEntry] = []
            try:
                for item in items:
                    # One generation per artifact: each is indexed (or re-indexed) alone.
                    generation = uuid.uuid4().hex
                    generations.append(generation)
                    if raw:
                        assert isinstance(storage, TextArtifactStorage)
                        text, data = storage.encode_raw(item)
                        entry = ArtifactEntry.of(storage.raw_entry(item, generation, text, data))
                        # Hashing and storing need no GIL: beside the card's stats below
                        # (joined before the commit), or here (see _beside).
                        put = functools.partial(
                            storage.put_raw, namespace, data, tenant=parts.tenant
                        )
                        puts.append((entry, run_beside(put, inline=not beside(storage, len(data)))))
                        fresh[generation], texts[generation] = data, text
                    else:
                        written = storage.write(
                            namespace,
                            item,
                            generation=generation,
                            first_seq=seq,
                            tenant=parts.tenant,
                        )
                        entry = ArtifactEntry.of({"indexed": True, **written})
                        if isinstance(storage, TextArtifactStorage) and entry.raw:
                            fresh[generation] = storage.encode_raw(item)[1]
                    entries.append(entry)
                    seq += entry.chunks
                meta.artifacts = [*committed, *entries]
                meta.totals()
                try:
                    stats: dict[str, Any] | None = self.stats.fresh(namespace, meta, items, fresh)
                except NotFoundError:
                    # What this write appends to was deleted meanwhile (a delete racing it in
                    # another process): commit() rebuilds it on what is committed now.
                    stats = None
                for entry, pending in puts:
                    entry.raw = pending.result()  # raises a write's failure

                def finish(m: NamespaceMeta) -> None:
                    card = self.stats.fresh(namespace, m, items, fresh)
                    self.finish_meta(m, card, stamp, sensitive=sensitive, context=context)

                if stats is not None:
                    self.finish_meta(meta, stats, stamp, sensitive=sensitive, context=context)
                # The commit point: one atomic metadata write makes the generation visible.
                write = Write(namespace, storage, entries, items, fresh, stamp, replaced)
                meta = self.commit(write, meta, finish, stale=stats is None)
            except BaseException:
                for _, pending in puts:
                    pending.wait()  # no write may still be running when we clean up
                # The write already failed; whatever it left stays invisible anyway.
                with contextlib.suppress(Exception), parts.catalog.guard(namespace):
                    current = parts.meta(namespace)
                    storage.discard(
                        namespace,
                        current.entries() if current else [],
                        tenant=parts.tenant,
                        generations=generations,
                    )
                raise
            if parts.index_mode == "background":
                self.indexer.pending.keep(texts, fresh)  # the indexer starts from the str
            parts.trace(
                "offload",
                tokens=int((meta.stats or {})["tokens"]),
                included=[{"artifact_id": e.id, "chunks": e.chunks} for e in entries],
                detail={"namespace": namespace, "tool": tool, "activity": activity},
            )
        return meta, [e for e in entries if not e.indexed]

    def base_meta(
        self,
        namespace: str,
        kind: str,
        stamp: WriteStamp,
        replaced: list[NamespaceMeta] | None = None,
    ) -> NamespaceMeta:
        """The committed metadata a write appends to (a fresh document if none is ours:
        absent, expired, or another memory's, whose version the commit then replaces).

        ``replaced`` (a replacing write): always a fresh document over the committed
        version, keeping only its ``created_at``; the list then holds the document it
        replaces when that is this memory's (and nothing otherwise).
        """
        parts = self.parts
        found = parts.catalog.get(namespace)
        ours = found is not None and found.memory == parts.name and not parts.expired(found)
        if replaced is not None:
            replaced.clear()
            if found is not None and ours:
                replaced.append(found)
        elif found is not None and ours:
            if found.storage != kind:
                raise StorageMismatchError(
                    f"namespace {namespace!r} holds {found.storage} artifacts; cannot add {kind}",
                    namespace=namespace,
                )
            return found
        return NamespaceMeta(
            memory=parts.name,
            storage=kind,
            tool=stamp.tool,
            activity=stamp.activity,
            created_at=found.created_at if replaced and found is not None else stamp.now,
            artifacts=[],
            subtasks=[],
            sensitive=False,
            version=None if found is None else found.version,
        )

    def finish_meta(
        self,
        meta: NamespaceMeta,
        stats: dict[str, Any],
        stamp: WriteStamp,
        *,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
    ) -> None:
        """Record the write in ``meta``: when, by what, whether sensitive, the card's stats."""
        meta.updated_at = stamp.now
        meta.tool = meta.tool or stamp.tool
        meta.activity = meta.activity or stamp.activity
        meta.sensitive = meta.sensitive or sensitive
        if context is not None:
            meta.subtasks = [*meta.subtasks, context.to_dict()]
        if meta.sensitive:
            # The card never shows a sensitive output's content, only its shape.
            stats = shape_only(stats)
        meta.stats = stats

    def commit(
        self,
        write: Write,
        meta: NamespaceMeta,
        finish: Callable[[NamespaceMeta], None],
        *,
        stale: bool = False,
    ) -> NamespaceMeta:
        """Commit ``meta`` (the write's entries appended to the committed artifacts; for a
        replacing write, its entries alone over whatever is committed, see :func:`base_meta`).

        When another process committed the namespace meanwhile (a version conflict),
        the entries are appended to what it committed and the card recomputed, so two
        writers of one namespace both land, in commit order; chunks written at the old
        positions (``sync``) are dropped and indexed again from the raw text. When a
        blob the entries refer to was deleted meanwhile (a delete racing this write),
        it is written again before the next try. When what ``meta`` appends to was
        deleted before its card could be computed (``stale``, or the recomputed card
        finds it gone), the entries are appended to what is committed now.
        """
        namespace = write.namespace
        keys = [str(e.blob_key) for e in write.entries if e.blob_key]
        catalog = self.parts.catalog
        for _ in range(COMMIT_RETRIES):
            if stale:
                meta = self.rebase(write)
                try:
                    finish(meta)
                except NotFoundError:
                    continue  # deleted again meanwhile: rebase on what is there now
                stale = False
            try:
                # Files beside the store (path=): the commit and the check that its files are
                # there are one step for every other process's sweep (catalog.guard).
                with catalog.guard(namespace):
                    if catalog.commit(namespace, meta, blobs=keys):
                        if catalog.shared and not catalog.checks_blobs:
                            self.reput(write, missing_only=True)
                        return meta
                stale = True  # a version conflict
            except NotFoundError:
                self.reput(write, missing_only=False)
        raise StorageError(
            f"namespace {namespace!r}: {COMMIT_RETRIES} commits in a row lost to other "
            "writers of the same namespace",
            namespace=namespace,
        )

    def rebase(self, write: Write) -> NamespaceMeta:
        """The write's entries appended to what is committed now (another writer committed, or a
        delete removed what they were appended to); chunks written (``sync``) at positions
        after the old artifacts are dropped, to be indexed again from the raw text.
        A replacing write keeps its entries as they are, over the version committed now."""
        parts = self.parts
        namespace, storage, entries = write.namespace, write.storage, write.entries
        meta = self.base_meta(namespace, storage.kind, write.stamp, write.replaced)
        if write.replaced is not None:
            meta.artifacts = list(entries)
            meta.totals()
            return meta
        if isinstance(storage, TextArtifactStorage):
            for entry in entries:
                if entry.indexed and entry.chunks:
                    if not entry.raw:
                        raise StorageError(
                            f"namespace {namespace!r} was written by another process "
                            "meanwhile and this storage keeps no raw text to re-index",
                            namespace=namespace,
                        )
                    storage.drop_chunks(namespace, [entry.generation], tenant=parts.tenant)
                    entry.indexed, entry.chunks, entry.tokens, entry.first_seq = False, 0, 0, 0
        meta.artifacts = [*meta.artifacts, *entries]
        meta.totals()
        return meta

    def reput(self, write: Write, *, missing_only: bool) -> None:
        """Write the bytes of the write's entries again (those gone from the blob store
        only)."""
        parts = self.parts
        namespace, storage, fresh = write.namespace, write.storage, write.fresh
        if isinstance(storage, TextArtifactStorage) and storage.raw_store is not None:
            store: Any = storage.raw_store
            kw: dict[str, Any] = storage.raw_options
        elif isinstance(storage, BlobArtifactStorage):
            store, kw = storage.blob_store, storage.blob_options
        else:
            return
        have = set(store.keys(namespace, tenant=parts.tenant, **kw)) if missing_only else set()
        for entry, item in zip(write.entries, write.items, strict=True):
            key = entry.blob_key
            if not key or key in have:
                continue
            data = fresh.get(entry.generation)
            if data is None and isinstance(item, BlobArtifact):
                data = item.value
            if data is not None:
                store.put(namespace, data, tenant=parts.tenant, **kw)

    def after_store(
        self, namespace: str, meta: NamespaceMeta, unindexed: Sequence[ArtifactEntry]
    ) -> NamespaceMetadata:
        """What follows a committed write: indexing (or its queueing), the exact page
        count in ``sync`` mode, retention. Returns the public metadata."""
        parts = self.parts
        if unindexed:
            self.indexer.schedule(namespace)
        elif parts.index_mode == "sync" and meta.storage == "text":
            # The exact page count (and JSON check) before returning.
            self.indexer.pages_job(namespace)
            meta = parts.meta(namespace) or meta
        if parts.retention is not None and parts.retention.on_write:
            self.lifecycle.prune(keep=namespace)
        return self.stats.public(namespace, meta)

    def store_output(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
        min_tokens: int | None,
        preview: bool | None,
    ) -> Stored:
        """What :meth:`TaskMemory.store_output` does (its docstring says what)."""
        parts = self.parts
        if not isinstance(artifact, BaseArtifact):
            raise ValidationError(f"tool output must be an artifact, got {type(artifact).__name__}")
        if is_empty(artifact):
            return Stored("empty", parts.name, None, EMPTY_OUTPUT)
        threshold = self.min_tokens if min_tokens is None else min_tokens
        namespace = artifact.name
        sentence = self.reference_text(tool_name, activity_name, namespace)
        count = parts.tokenizer.count
        # The most tokens the reference may have. Under the size rule (a text output, not
        # sensitive, min_tokens > 0) that is fewer than the output's own: a stored output
        # never reaches the model as something larger than itself. min_tokens=0 asks for a
        # reference to every output, and a sensitive output must never reach the model.
        limit = self.preview_tokens
        if isinstance(artifact, TextArtifact):
            decision = decide_text(
                artifact.value,
                min_tokens=threshold,
                sensitive=sensitive,
                count=count,
                reference_tokens=count(sentence),
                preview_tokens=limit,
            )
            if not decision.stores:
                # Small, or not even the bare sentence is smaller: the output passes
                # unchanged, decided before storing, so no stored copy is unreferenced.
                return Stored("small", parts.name, None, artifact.value)
            if decision.tokens is not None and decision.verdict == "large":
                limit = min(limit, decision.tokens - 1)  # the card shrinks (or goes) to fit
        if context is not None and not context.answer:
            # Later steps read where the output went (Griptape fills it in the same way).
            context.answer = sentence
        meta, unindexed = self.store(
            namespace,
            artifact,
            tool=tool_name,
            activity=activity_name,
            sensitive=sensitive,
            context=context,
        )
        if context is not None:
            self.meta_memory.add_entry(context)
        stats = OutputStats.model_validate(meta.stats)
        value = sentence
        if self.preview if preview is None else preview:
            value = self._with_card(sentence, stats, limit)
        # Indexing starts once the reference is ready: the worker's first steps would
        # otherwise hold the GIL while the card is rendered.
        self.after_store(namespace, meta, unindexed)
        return Stored("stored", parts.name, namespace, value, stats)

    def _with_card(self, sentence: str, stats: OutputStats, limit: int) -> str:
        """The reference sentence and as much of the card as fits in ``limit`` tokens."""
        count = self.parts.tokenizer.count
        budget = limit - count(sentence + "\n")
        card = render_card(stats, max_tokens=budget, count=count)
        if not card:
            return sentence
        value = f"{sentence}\n{card}"
        if limit < self.preview_tokens and count(value) > limit:
            # The parts fit but their join counts more (a token across the newline):
            # the bare sentence, which was checked to be smaller than the output.
            return sentence
        return value

    def offload(
        self,
        tool_name: str,
        activity_name: str,
        artifact: BaseArtifact,
        *,
        sensitive: bool,
        context: ActionSubtaskMetaEntry | None,
        min_tokens: int | None,
        preview: bool | None,
    ) -> BaseArtifact:
        """What :meth:`TaskMemory.process_output` returns: :meth:`store_output`'s answer
        as the Griptape-compatible artifact (its docstring says which)."""
        if not isinstance(artifact, BaseArtifact):
            return ErrorArtifact(
                value=f"tool output must be an artifact, got {type(artifact).__name__}"
            )
        try:
            stored = self.store_output(
                tool_name,
                activity_name,
                artifact,
                sensitive=sensitive,
                context=context,
                min_tokens=min_tokens,
                preview=preview,
            )
        except OffpromptError as exc:
            return ErrorArtifact.from_exception(exc, store_failure(tool_name, activity_name, exc))
        if stored.verdict == "small":
            return artifact
        if stored.verdict == "empty":
            return InfoArtifact(value=stored.text)
        assert stored.stats is not None
        return InfoArtifact(
            value=stored.text,
            meta={
                "memory_name": stored.memory_name,
                "artifact_namespace": stored.namespace,
                "stats": stored.stats.model_dump(),
            },
        )

    def storage_for(self, artifact: BaseArtifact) -> ArtifactStorage:
        """The one storage of ``artifact`` (every item of a list), or ``ValidationError``."""
        storages = self.parts.storages
        items = artifact.value if isinstance(artifact, ListArtifact) else [artifact]
        if isinstance(artifact, ListArtifact) and not items:
            raise ValidationError("cannot store an empty ListArtifact")
        found: ArtifactStorage | None = None
        for item in items:
            storage = next((s for cls, s in storages.items() if isinstance(item, cls)), None)
            if storage is None:
                raise ValidationError(
                    f"no storage for {item.type}; TaskMemory stores {sorted(c.__name__ for c in storages)}"
                )
            if found is not None and storage is not found:
                raise ValidationError(
                    "a ListArtifact mixing text and blob items cannot share one namespace; store them separately"
                )
            found = storage
        assert found is not None
        return found


def is_empty(artifact: BaseArtifact) -> bool:
    """Empty or whitespace-only output (``isspace`` stops at the first other character,
    where ``bool(TextArtifact)`` would copy a 50 MB value to strip it)."""
    if isinstance(artifact, TextArtifact):
        return is_blank(artifact.value)
    if isinstance(artifact, ListArtifact):
        return not artifact.value or all(is_empty(item) for item in artifact.value)
    return not artifact


def check_storages(storages: Mapping[type[BaseArtifact], ArtifactStorage]) -> None:
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
