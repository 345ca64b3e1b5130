"""Artifact storages: text chunks on Qdrant, blobs in a content-addressed blob store.

A storage writes one artifact under a *generation* (a fresh id per write) and returns
an entry describing it. ``TaskMemory`` commits entries by writing the namespace's
metadata last; readers only look at committed generations, so data written by a write
that never committed stays invisible.
"""

from __future__ import annotations

import functools
import json
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from offprompt.artifacts import BaseArtifact, BlobArtifact, JsonArtifact, TextArtifact
from offprompt.errors import StorageError, ValidationError
from offprompt.task_memory._points import (
    CANDIDATES,
    CHUNKS_PER_POINT,
    narrow_hits,
    point_payload,
)
from offprompt.task_memory.blobs import BlobStore
from offprompt.task_memory.chunking import (
    Chunk,
    Segment,
    chunks_from_segments,
    tokenize_segments,
)
from offprompt.task_memory.pipeline import consume_behind
from offprompt.tokens import TiktokenTokenizer
from offprompt.vectors import BM25SparseEncoder, Hit, QdrantVectorStore, Range, VectorRecord

if TYPE_CHECKING:
    from offprompt.scope import Scope

__all__ = ["ArtifactStorage", "BlobArtifactStorage", "TextArtifactStorage"]

Entry = dict[str, Any]


@runtime_checkable
class ArtifactStorage(Protocol):
    """What ``TaskMemory`` needs of a storage.

    A storage may also declare ``artifact_types`` (a tuple of artifact classes it can
    store); ``TaskMemory`` then refuses a ``storages`` mapping whose key is not one of
    them, at construction.
    """

    kind: ClassVar[str]

    def write(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
    ) -> Entry:
        """Store ``artifact`` under ``namespace`` as generation ``generation``; the entry describing
        it (committed by ``TaskMemory``).
        """
        ...

    def load(self, namespace: str, entries: Sequence[Entry], *, tenant: str) -> list[BaseArtifact]:
        """The artifacts that ``entries`` describe, in order, as they were written."""
        ...

    def discard(
        self,
        namespace: str,
        entries: Sequence[Entry] | None,
        *,
        tenant: str,
        generations: Sequence[str] | None = None,
    ) -> None:
        """Delete what ``entries`` (or, with ``generations``, those generations; or, both None, the
        namespace) stored.
        """
        ...


#: Bytes of chunks (the engine's estimate) upserted into a durable index before
#: :meth:`TextArtifactStorage.index_text` compacts it: about 29k chunks of 512 tokens
#: (34 MB of logs), so one output of 10 MB is queried before any compaction.
COMPACT_BYTES = 64 * 2**20


def _describe(artifact: BaseArtifact, generation: str, first_seq: int) -> Entry:
    return {
        "id": artifact.id,
        "name": artifact.name,
        "type": artifact.type,
        "generation": generation,
        "first_seq": first_seq,
        "meta": artifact.meta,
        "reference": artifact.reference,
    }


#: BM25 over token ids weighs a chunk's terms as if documents were this many chunks
#: long: a term's weight then saturates after one or two occurrences, so a chunk full of
#: a frequent log template's words does not outrank the chunk holding the rare line the
#: query names. Chosen leave-one-log-out on the Loghub dev logs' rare events among 0.5,
#: 1, 2, 4 and 8 (8 on six of the seven folds, 0.995 on the logs left out; top 5 on the
#: whole dev split: 0.986 at 0.5, the encoder's own 256 tokens, 0.998 at 8;
#: ``benchmarks/RESULTS_query_memory_loghub.md``).
CHUNK_BM25_LENGTH = 8
# Above this many characters, tokenising and embedding + upserting run in two threads.
_PIPELINE_MIN_CHARS = 1_000_000
#: Points per engine upsert call of :meth:`TextArtifactStorage.index_text`: one call keeps
#: the GIL for all its points, so a read waits at most one step of them, and steps of
#: this size index no slower than larger ones (benchmarks/bench_task_memory.py).
_UPSERT_STEP = 64


class IndexCancelled(Exception):
    """Raised inside :meth:`TextArtifactStorage.index` when ``should_stop()`` turned true."""


def text_of(artifact: BaseArtifact) -> str:
    """The text a text storage keeps for ``artifact`` (JSON as ``json.dumps`` text)."""
    if isinstance(artifact, JsonArtifact):
        return json.dumps(artifact.value, ensure_ascii=False)
    if isinstance(artifact, TextArtifact):
        return artifact.value
    raise ValidationError(
        f"TextArtifactStorage stores TextArtifact or JsonArtifact, got {artifact.type}"
    )


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8.

    Raises:
        ValidationError: The text is not valid Unicode (a lone surrogate), with where.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"text is not valid Unicode at character {exc.start}: {exc.reason}"
        ) from None


def _stop_if_asked(should_stop: Callable[[], bool] | None, namespace: str) -> None:
    """Raise ``IndexCancelled`` once ``should_stop()`` turns true (see ``index_text``)."""
    if should_stop is not None and should_stop():
        raise IndexCancelled(namespace)


def _point(chunks: list[Chunk], *, first_seq: int, generation: str, located: bool) -> VectorRecord:
    """The engine point of ``chunks`` (one or several consecutive chunks)."""
    payload = point_payload(chunks, first_seq=first_seq, generation=generation, located=located)
    return VectorRecord(
        id=f"{generation}:{payload['seq']}",
        # With a raw store the text is read from there (see passage()); without
        # one a point is one chunk.
        text="" if located else chunks[0].text,
        embed_text=chunks[0].embed_text + "".join(c.text for c in chunks[1:]),
        payload=payload,
    )


def _encode_token_ids(
    encoder: BM25SparseEncoder,
    groups: list[list[Chunk]],
    batch: list[VectorRecord],
    *,
    avg_len: float | None,
) -> None:
    """Give each point of ``batch`` its BM25 vector over token ids: the chunks' ids,
    reused, in one pass over the batch (see ``encode_spans``); the word analyzer reads
    ``embed_text`` in upsert instead."""
    ids = np.concatenate([c.token_ids for group in groups for c in group])
    stops = list(accumulate(sum(c.tokens for c in group) for group in groups))
    vectors = encoder.encode_spans(ids, stops, avg_len=avg_len)
    for record, vector in zip(batch, vectors, strict=True):
        record.sparse = vector


class TextArtifactStorage:
    """Stores ``TextArtifact`` (and ``JsonArtifact``) values: the raw text, then chunks.

    With a ``raw_store`` (``TaskMemory`` passes its blob store), the raw UTF-8 text is
    stored first (:meth:`put_raw`, durable before the reference is returned) and the
    chunks are built from it later (:meth:`index_text`, in the background by default); loads
    read the raw text back, so it is byte-identical whatever happened to the index.
    Without one, the text lives only in the chunks (the layout of earlier versions,
    still read).

    Each chunk (or, in a lexical-only index, each run of ``chunks_per_point`` chunks: see
    :mod:`offprompt.task_memory._points`) is a point with payload ``seq`` (order within the namespace),
    ``generation``, ``start``/``end`` (character offsets) and ``tokens``. With a
    ``raw_store`` the chunk's text is not stored a second time: the payload holds its
    location in the raw text, ``byte_start``/``byte_end`` (UTF-8 offsets within its
    artifact), and a search hit's text is read from there (:meth:`read_span`;
    ``TaskMemory.query`` fills it in). Without one (and in chunks written before this
    layout) the point's ``text`` is the exact, non-overlapping span, so loading joins
    the chunks back into the original byte for byte. The embedded text adds
    ``overlap_tokens`` of the previous chunk for context. Which artifact a chunk belongs to, and its index there,
    follow from ``seq`` and the committed entries (each knows its ``first_seq`` and
    ``chunks``), so they are not stored on every point: the embedded engine's payload
    conversion costs microseconds per field, which adds up over millions of chunks.

    Args:
        vector_store: Where chunks go.
        chunk_tokens: Maximum tokens per chunk.
        overlap_tokens: Context tokens from the previous chunk (embedding only).
        tokenizer: A ``TiktokenTokenizer`` (its ``encoding`` chunks and feeds BM25);
            offprompt's default when omitted.
        batch_size: Chunks per upsert.
        raw_store: Where the raw text goes (a :class:`BlobStore`); chunks only if None.
        scope: The scope of ``raw_store`` calls (as for :class:`BlobArtifactStorage`).
        align_lines: End a chunk at a line end in its second half, if it has one (a log
            line is then whole in one chunk; ``False``: every ``chunk_tokens`` tokens).
        bm25_avg_len: The document length of the chunks' BM25 over token ids (a store
            with ``lexical="tokens"``); default ``CHUNK_BM25_LENGTH * chunk_tokens``.
        chunks_per_point: Consecutive chunks indexed as one point (see
            :mod:`offprompt.task_memory._points`); default
            :data:`~offprompt.task_memory._points.CHUNKS_PER_POINT` when the store has no
            dense vectors and there is a ``raw_store``, else 1. Hits are narrowed back to
            single chunks either way.

    Example:
        >>> from offprompt.vectors import QdrantVectorStore
        >>> storage = TextArtifactStorage(QdrantVectorStore(), chunk_tokens=128)
        >>> storage.chunk_tokens
        128
    """

    kind: ClassVar[str] = "text"
    artifact_types: ClassVar[tuple[type[BaseArtifact], ...]] = (TextArtifact, JsonArtifact)

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        vector_store: QdrantVectorStore,
        *,
        chunk_tokens: int = 512,
        overlap_tokens: int = 64,
        tokenizer: TiktokenTokenizer | None = None,
        batch_size: int = 512,
        raw_store: BlobStore | None = None,
        scope: Scope | None = None,
        align_lines: bool = True,
        bm25_avg_len: float | None = None,
        chunks_per_point: int | None = None,
    ) -> None:
        if chunk_tokens < 1 or overlap_tokens < 0 or overlap_tokens >= chunk_tokens:
            raise ValidationError(
                f"need chunk_tokens >= 1 and 0 <= overlap_tokens < chunk_tokens (got {chunk_tokens}, {overlap_tokens})"
            )
        if tokenizer is None:
            from offprompt.tokens import default_tokenizer

            tokenizer = default_tokenizer()
        if not hasattr(tokenizer, "encoding"):
            raise ValidationError(
                "TextArtifactStorage needs a tiktoken-based tokenizer (with .encoding)"
            )
        self.vector_store = vector_store
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.align_lines = align_lines
        if bm25_avg_len is None:
            bm25_avg_len = float(CHUNK_BM25_LENGTH * chunk_tokens)
        if not bm25_avg_len > 0:
            raise ValidationError(f"bm25_avg_len must be > 0, got {bm25_avg_len!r}")
        self.bm25_avg_len = float(bm25_avg_len)
        self.raw_store = raw_store
        if chunks_per_point is None:
            chunks_per_point = (
                CHUNKS_PER_POINT if raw_store is not None and not vector_store.dense else 1
            )
        if not isinstance(chunks_per_point, int) or chunks_per_point < 1:
            raise ValidationError(f"chunks_per_point must be an int >= 1, got {chunks_per_point!r}")
        if chunks_per_point > 1 and raw_store is None:
            raise ValidationError(
                "chunks_per_point > 1 needs a raw_store (a point's chunks are read from the raw text)"
            )
        self.chunks_per_point = chunks_per_point
        self._raw_kw: dict[str, Any] = {} if scope is None else {"scope": scope}
        # Searches filter on generation. ``seq`` is only ordered by when chunks of the
        # layout without a raw store are joined back (``_load_chunks``, which indexes it on
        # first use): an integer index costs the embedded engine about 0.5 KB of memory
        # per chunk (the largest of its payload indexes), so it is not made up front.
        vector_store.create_payload_index("generation", "keyword")

    @property
    def raw_options(self) -> dict[str, Any]:
        """The keyword arguments every call to the raw store carries (its scope, if any)."""
        return dict(self._raw_kw)

    def _store(self, tenant: str) -> QdrantVectorStore:
        return (
            self.vector_store
            if tenant == self.vector_store.tenant
            else self.vector_store.with_tenant(tenant)
        )

    def write(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
    ) -> Entry:
        """Store ``artifact`` whole: the raw text (with a ``raw_store``), then its chunks."""
        if self.raw_store is None:
            text = text_of(artifact)
            entry = _describe(artifact, generation, first_seq)
            entry.update(
                self.index_text(
                    namespace, text, generation=generation, first_seq=first_seq, tenant=tenant
                )
            )
            entry.update(indexed=True)
            return entry
        text, data = self.encode_raw(artifact)
        entry = self.raw_entry(artifact, generation, text, data)
        entry["raw"] = self.put_raw(namespace, data, tenant=tenant)
        entry.update(
            self.index_text(
                namespace, text, generation=generation, first_seq=first_seq, tenant=tenant
            ),
            indexed=True,
            first_seq=first_seq,
        )
        return entry

    @staticmethod
    def encode_raw(artifact: BaseArtifact) -> tuple[str, bytes]:
        """The text kept for ``artifact`` and its UTF-8 bytes (encoded once).

        Raises:
            ValidationError: Not a text/JSON artifact, or text that is not valid Unicode.
        """
        text = text_of(artifact)
        return text, encode_utf8(text)

    @staticmethod
    def raw_entry(artifact: BaseArtifact, generation: str, text: str, data: bytes) -> Entry:
        """The entry of a raw write, not yet indexed; ``raw`` (the blob key) is filled in
        by the caller once :meth:`put_raw` returned."""
        entry = _describe(artifact, generation, 0)
        entry.update(raw=None, bytes=len(data), chars=len(text), chunks=0, tokens=0, indexed=False)
        return entry

    def put_raw(self, namespace: str, data: bytes, *, tenant: str) -> str:
        """Store ``data`` (durably under ``path=``) in the raw store; returns its key.

        Safe to run in another thread: the blob stores hash and write without the GIL.
        """
        if self.raw_store is None:
            raise ValidationError("this TextArtifactStorage has no raw_store")
        return self.raw_store.put(namespace, data, tenant=tenant, **self._raw_kw)

    def raw_bytes(self, namespace: str, entry: Entry, *, tenant: str) -> bytes:
        """The stored UTF-8 text of one committed ``entry`` (raw, or joined chunks)."""
        if entry.get("raw") and self.raw_store is not None:
            return self.raw_store.get(namespace, entry["raw"], tenant=tenant, **self._raw_kw)
        return self._load_chunks(namespace, entry, tenant=tenant).encode("utf-8")

    def read_span(
        self, namespace: str, entry: Entry, start: int, stop: int, *, tenant: str
    ) -> bytes | None:
        """Bytes ``start:stop`` of one committed ``entry``'s raw text, read alone, or None
        when the raw store cannot read a range (it has no ``get_range``): the caller then
        slices the whole text (``TaskMemory`` keeps it in its view cache)."""
        getter = getattr(self.raw_store, "get_range", None)
        if getter is None or not entry.get("raw"):
            return None
        data: bytes = getter(namespace, entry["raw"], start, stop, tenant=tenant, **self._raw_kw)
        return data

    def index_text(
        self,
        namespace: str,
        text: str,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
        should_stop: Callable[[], bool] | None = None,
    ) -> Entry:
        """Chunk, embed and upsert ``text`` under ``generation`` from ``first_seq`` on.

        ``should_stop()`` is called between steps of a few milliseconds each: before
        every chunk is cut, before every ``_UPSERT_STEP`` points are upserted and before
        every segment is tokenised. ``TaskMemory``'s background indexer waits there while
        a read of its process runs, so a read starting in the middle of a batch holds
        the indexer off within a step, not after the batch (a whole batch keeps the GIL
        for most of its time, and a grep beside it would wait that long).

        Returns ``{"chunks", "tokens", "bytes", "chars"}``.

        Raises:
            IndexCancelled: ``should_stop()`` turned true.
        """
        store = self._store(tenant)
        encoder = store.sparse_encoder
        counted = {"chunks": 0, "tokens": 0}
        located = self.raw_store is not None

        check = functools.partial(_stop_if_asked, should_stop, namespace)

        per_point = self.chunks_per_point
        ids_encoder = encoder if isinstance(encoder, BM25SparseEncoder) else None

        def point(chunks: list[Chunk]) -> VectorRecord:
            return _point(chunks, first_seq=first_seq, generation=generation, located=located)

        def encode(groups: list[list[Chunk]], batch: list[VectorRecord]) -> None:
            if ids_encoder is not None:
                _encode_token_ids(ids_encoder, groups, batch, avg_len=self.bm25_avg_len)

        def store_chunks(segments: Iterable[Segment]) -> None:
            batch: list[VectorRecord] = []
            groups: list[list[Chunk]] = []
            group: list[Chunk] = []
            # The first batches are small so embedding and upserting start at once.
            limit = min(32, self.batch_size)

            def flush() -> None:
                encode(groups, batch)
                # The engine's upsert keeps the GIL throughout: in steps (_UPSERT_STEP).
                for start in range(0, len(batch), _UPSERT_STEP):
                    check()
                    store.upsert(namespace, batch[start : start + _UPSERT_STEP])
                batch.clear()
                groups.clear()

            for chunk in chunks_from_segments(
                segments,
                self.tokenizer.encoding,
                chunk_tokens=self.chunk_tokens,
                overlap_tokens=self.overlap_tokens,
                align_lines=self.align_lines,
            ):
                check()
                counted["chunks"] += 1
                counted["tokens"] += chunk.tokens
                group.append(chunk)
                if len(group) < per_point:
                    continue
                groups.append(group)
                batch.append(point(group))
                group = []
                if len(batch) >= limit:
                    flush()
                    limit = min(limit * 2, self.batch_size)
            if group:
                groups.append(group)
                batch.append(point(group))
            if batch:
                flush()

        size = {"bytes": 0}

        def segments() -> Iterator[Segment]:
            for segment in tokenize_segments(
                text, self.tokenizer.encoding, chunk_tokens=self.chunk_tokens
            ):
                size["bytes"] += len(segment.data)
                yield segment
                check()

        if len(text) > _PIPELINE_MIN_CHARS:
            # Large outputs: this thread tokenises (GIL-free) while a worker cuts,
            # embeds and upserts the chunks of the segments before.
            consume_behind(store_chunks, segments())
        else:
            store_chunks(segments())
        # Seal every ~64 MiB of chunks into a read-only segment (see QdrantVectorStore.
        # compact): sealed chunks take a fraction of the engine's RAM of live ones.
        store.compact(min_bytes=COMPACT_BYTES)
        return {
            "chunks": counted["chunks"],
            "tokens": counted["tokens"],
            "bytes": size["bytes"],
            "chars": len(text),
        }

    def _load_chunks(self, namespace: str, entry: Entry, *, tenant: str) -> str:
        first = int(entry["first_seq"])
        records = self._store(tenant).scroll(
            namespace,
            filter={
                "generation": entry["generation"],
                "seq": Range(gte=first, lt=first + int(entry["chunks"])),
            },
            order_by="seq",
        )
        if len(records) != entry["chunks"]:
            raise StorageError(
                f"namespace {namespace!r}: artifact {entry['id']} has {len(records)} of {entry['chunks']} chunks",
                namespace=namespace,
            )
        return "".join(r.text for r in records)

    def load(self, namespace: str, entries: Sequence[Entry], *, tenant: str) -> list[BaseArtifact]:
        """The texts that ``entries`` describe, byte-identical: from the raw store, or joined from
        the chunks.
        """
        out: list[BaseArtifact] = []
        for entry in entries:
            if entry.get("raw") and self.raw_store is not None:
                text = self.raw_bytes(namespace, entry, tenant=tenant).decode("utf-8")
            else:
                text = self._load_chunks(namespace, entry, tenant=tenant)
            fields: dict[str, Any] = {
                "id": entry["id"],
                "name": entry["name"],
                "meta": entry.get("meta") or {},
                "reference": entry.get("reference"),
            }
            if entry.get("type") == "JsonArtifact":
                out.append(JsonArtifact(value=json.loads(text), **fields))
            else:
                out.append(TextArtifact(value=text, **fields))
        return out

    def query(
        self,
        namespace: str,
        entries: Sequence[Entry],
        query: str,
        top_n: int,
        *,
        tenant: str,
        mode: Any = "hybrid",
    ) -> list[Hit]:
        """The ``top_n`` chunks of the committed ``entries`` that best match ``query`` (``mode``
        hybrid, dense or sparse).
        """
        gens = [e["generation"] for e in entries]
        if not gens:
            return []
        if self.chunks_per_point > 1:
            top_n *= CANDIDATES  # narrowed and reranked by narrow()
        hits = self._store(tenant).search(
            namespace, query, top_n=top_n, filter={"generation": gens}, mode=mode
        )
        # Name each hit's artifact and its index there, from the entries' seq ranges.
        ordered = sorted(entries, key=lambda e: int(e["first_seq"]))
        firsts = [int(e["first_seq"]) for e in ordered]
        for hit in hits:
            seq = int(hit.payload.get("seq", 0))
            entry = ordered[max(bisect_right(firsts, seq) - 1, 0)]
            hit.payload["artifact_id"] = entry["id"]
            hit.payload["chunk_index"] = seq - int(entry["first_seq"])
        return hits

    def narrow(self, hits: list[Hit], query: str, top_n: int, *, tenant: str) -> list[Hit]:
        """The ``top_n`` chunks of :meth:`query`'s hits, their text filled in: with points of
        several chunks, each narrowed to its chunk that best matches ``query`` and the
        candidates reranked (:mod:`~offprompt.task_memory._points`); else ``hits`` as
        they are."""
        encoder = self._store(tenant).sparse_encoder
        if self.chunks_per_point == 1 or encoder is None:
            return hits[:top_n]
        return narrow_hits(hits, query, encoder, top_n, self.tokenizer.count)

    def drop_chunks(self, namespace: str, generations: Sequence[str], *, tenant: str) -> None:
        """Delete the chunks of ``generations`` (the raw text stays)."""
        if generations:
            self._store(tenant).delete(namespace, filter={"generation": list(generations)})

    def discard(
        self,
        namespace: str,
        entries: Sequence[Entry] | None,
        *,
        tenant: str,
        generations: Sequence[str] | None = None,
    ) -> None:
        """Delete the chunks and raw text that ``entries`` (or ``generations``; both None: the
        namespace) stored.
        """
        store = self._store(tenant)
        if generations is not None:
            if generations:
                store.delete(namespace, filter={"generation": list(generations)})
            if self.raw_store is not None:
                # Content-addressed: keep every blob a committed entry still refers to (its
                # raw text, or its bytes when a replacing write stored a blob instead).
                keep = {e.get("raw") or e.get("key") for e in entries or ()}
                for key in self.raw_store.keys(namespace, tenant=tenant, **self._raw_kw):
                    if key not in keep:
                        self.raw_store.delete(namespace, key, tenant=tenant, **self._raw_kw)
            return
        store.delete(namespace)
        if self.raw_store is not None:
            self.raw_store.delete(namespace, tenant=tenant, **self._raw_kw)


class BlobArtifactStorage:
    """Stores ``BlobArtifact`` (and ``ImageArtifact``) bytes in a :class:`BlobStore`.

    The artifact's fields other than the bytes live in the namespace metadata, so a
    loaded artifact is equal to the stored one (same id, type, MIME type, meta).

    Example:
        >>> from offprompt.task_memory.blobs import InMemoryBlobStore
        >>> BlobArtifactStorage(InMemoryBlobStore()).kind
        'blob'
    """

    kind: ClassVar[str] = "blob"
    artifact_types: ClassVar[tuple[type[BaseArtifact], ...]] = (BlobArtifact,)

    def __init__(self, blob_store: BlobStore, *, scope: Scope | None = None) -> None:
        self.blob_store = blob_store
        self.scope = scope
        # Only scoped calls pass ``scope``: third-party blob stores keep working.
        self._kw: dict[str, Any] = {} if scope is None else {"scope": scope}

    @property
    def blob_options(self) -> dict[str, Any]:
        """The keyword arguments every call to the blob store carries (its scope, if any)."""
        return dict(self._kw)

    def write(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
    ) -> Entry:
        """Store the blob's bytes in the blob store; the entry (its content key, size and fields)."""
        if not isinstance(artifact, BlobArtifact):
            raise ValidationError(f"BlobArtifactStorage stores BlobArtifact, got {artifact.type}")
        key = self.blob_store.put(namespace, artifact.value, tenant=tenant, **self._kw)
        fields = artifact.to_dict()
        fields.pop("value", None)
        entry = _describe(artifact, generation, first_seq)
        entry.update(key=key, bytes=len(artifact.value), tokens=0, chunks=1, artifact=fields)
        return entry

    def load(self, namespace: str, entries: Sequence[Entry], *, tenant: str) -> list[BaseArtifact]:
        """The blobs that ``entries`` describe, rebuilt as the artifacts that were written."""
        out = []
        for entry in entries:
            data = self.blob_store.get(namespace, entry["key"], tenant=tenant, **self._kw)
            out.append(BaseArtifact.from_dict({**entry["artifact"], "value": data}))
        return out

    def discard(
        self,
        namespace: str,
        entries: Sequence[Entry] | None,
        *,
        tenant: str,
        generations: Sequence[str] | None = None,
    ) -> None:
        """Delete the blobs of ``entries`` (``None``: the whole namespace)."""
        if entries is None:
            self.blob_store.delete(namespace, tenant=tenant, **self._kw)
            return
        # A text a replacing write stored instead keeps its raw bytes in the same store.
        keep = {e.get("key") or e.get("raw") for e in entries}
        for key in self.blob_store.keys(namespace, tenant=tenant, **self._kw):
            if key not in keep:
                self.blob_store.delete(namespace, key, tenant=tenant, **self._kw)
