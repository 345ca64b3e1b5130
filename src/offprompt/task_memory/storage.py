"""Artifact storages: text chunks on Qdrant, blobs in a content-addressed blob store.

A storage writes one artifact under a *generation* (a fresh id per write) and returns
an entry describing it. ``TaskMemory`` commits entries by writing the namespace's
metadata last; readers only look at committed generations, so data written by a write
that never committed stays invisible.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from offprompt.artifacts import BaseArtifact, BlobArtifact, TextArtifact
from offprompt.errors import StorageError, ValidationError
from offprompt.task_memory.blobs import BlobStore
from offprompt.task_memory.chunking import Segment, chunks_from_segments, tokenize_segments
from offprompt.task_memory.pipeline import consume_behind
from offprompt.vectors import Hit, QdrantVectorStore, Range, VectorRecord

if TYPE_CHECKING:
    from offprompt.scope import Scope

__all__ = ["ArtifactStorage", "BlobArtifactStorage", "TextArtifactStorage"]

Entry = dict[str, Any]


@runtime_checkable
class ArtifactStorage(Protocol):
    """What ``TaskMemory`` needs of a storage."""

    kind: ClassVar[str]

    def write(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
    ) -> Entry: ...

    def load(
        self, namespace: str, entries: Sequence[Entry], *, tenant: str
    ) -> list[BaseArtifact]: ...

    def discard(
        self,
        namespace: str,
        entries: Sequence[Entry] | None,
        *,
        tenant: str,
        generations: Sequence[str] | None = None,
    ) -> None: ...


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


# Above this many characters, tokenising and embedding + upserting run in two threads.
_PIPELINE_MIN_CHARS = 1_000_000


class TextArtifactStorage:
    """Stores ``TextArtifact`` values as token-aware chunks in a ``QdrantVectorStore``.

    Each chunk is a point with payload ``seq`` (order within the namespace),
    ``generation``, ``start``/``end`` (character offsets) and ``tokens``; the point's
    ``text`` is the exact, non-overlapping span, so loading joins the chunks back into
    the original byte for byte. The embedded text adds ``overlap_tokens`` of the
    previous chunk for context. Which artifact a chunk belongs to, and its index there,
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

    Example:
        >>> from offprompt.vectors import QdrantVectorStore
        >>> storage = TextArtifactStorage(QdrantVectorStore(), chunk_tokens=128)
        >>> storage.chunk_tokens
        128
    """

    kind: ClassVar[str] = "text"

    def __init__(
        self,
        vector_store: QdrantVectorStore,
        *,
        chunk_tokens: int = 512,
        overlap_tokens: int = 64,
        tokenizer: Any = None,
        batch_size: int = 512,
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
        vector_store.create_payload_index("seq", "integer")
        vector_store.create_payload_index("generation", "keyword")

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
        if not isinstance(artifact, TextArtifact):
            raise ValidationError(f"TextArtifactStorage stores TextArtifact, got {artifact.type}")
        store = self._store(tenant)
        encoder = store.sparse_encoder
        text = artifact.value
        counted = {"chunks": 0, "tokens": 0}

        def store_chunks(segments: Iterable[Segment]) -> None:
            batch: list[VectorRecord] = []
            # The first batches are small so embedding and upserting start at once.
            limit = min(32, self.batch_size)
            for chunk in chunks_from_segments(
                segments,
                self.tokenizer.encoding,
                chunk_tokens=self.chunk_tokens,
                overlap_tokens=self.overlap_tokens,
                span_encoder=encoder.encode_spans if encoder is not None else None,
            ):
                batch.append(
                    VectorRecord(
                        id=f"{generation}:{first_seq + chunk.index}",
                        text=chunk.text,
                        embed_text=chunk.embed_text,
                        sparse=chunk.sparse,
                        payload={
                            "seq": first_seq + chunk.index,
                            "generation": generation,
                            "start": chunk.start,
                            "end": chunk.end,
                            "tokens": chunk.tokens,
                        },
                    )
                )
                counted["chunks"] += 1
                counted["tokens"] += chunk.tokens
                if len(batch) >= limit:
                    store.upsert(namespace, batch)
                    batch = []
                    limit = min(limit * 2, self.batch_size)
            if batch:
                store.upsert(namespace, batch)

        size = {"bytes": 0}

        def segments() -> Iterator[Segment]:
            for segment in tokenize_segments(
                text, self.tokenizer.encoding, chunk_tokens=self.chunk_tokens
            ):
                size["bytes"] += len(segment.data)
                yield segment

        if len(text) > _PIPELINE_MIN_CHARS:
            # Large outputs: this thread tokenises (GIL-free) while a worker cuts,
            # embeds and upserts the chunks of the segments before.
            consume_behind(store_chunks, segments())
        else:
            store_chunks(segments())
        chunks, tokens = counted["chunks"], counted["tokens"]
        entry = _describe(artifact, generation, first_seq)
        entry.update(chunks=chunks, tokens=tokens, bytes=size["bytes"], chars=len(text))
        return entry

    def load(self, namespace: str, entries: Sequence[Entry], *, tenant: str) -> list[BaseArtifact]:
        store = self._store(tenant)
        out: list[BaseArtifact] = []
        for entry in entries:
            first = int(entry["first_seq"])
            records = store.scroll(
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
            out.append(
                TextArtifact(
                    value="".join(r.text for r in records),
                    id=entry["id"],
                    name=entry["name"],
                    meta=entry.get("meta") or {},
                    reference=entry.get("reference"),
                )
            )
        return out

    def read_range(
        self, namespace: str, entries: Sequence[Entry], first: int, stop: int, *, tenant: str
    ) -> list[VectorRecord]:
        """Chunks with ``first <= seq < stop`` of the committed ``entries``, in order."""
        gens = [e["generation"] for e in entries]
        if not gens:
            return []
        return self._store(tenant).scroll(
            namespace, filter={"generation": gens, "seq": Range(gte=first, lt=stop)}, order_by="seq"
        )

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
        gens = [e["generation"] for e in entries]
        if not gens:
            return []
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

    def discard(
        self,
        namespace: str,
        entries: Sequence[Entry] | None,
        *,
        tenant: str,
        generations: Sequence[str] | None = None,
    ) -> None:
        store = self._store(tenant)
        if generations is not None:
            if generations:
                store.delete(namespace, filter={"generation": list(generations)})
            return
        store.delete(namespace)


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

    def __init__(self, blob_store: BlobStore, *, scope: Scope | None = None) -> None:
        self.blob_store = blob_store
        self.scope = scope
        # Only scoped calls pass ``scope``: third-party blob stores keep working.
        self._kw: dict[str, Any] = {} if scope is None else {"scope": scope}

    def write(
        self,
        namespace: str,
        artifact: BaseArtifact,
        *,
        generation: str,
        first_seq: int,
        tenant: str,
    ) -> Entry:
        if not isinstance(artifact, BlobArtifact):
            raise ValidationError(f"BlobArtifactStorage stores BlobArtifact, got {artifact.type}")
        key = self.blob_store.put(namespace, artifact.value, tenant=tenant, **self._kw)
        fields = artifact.to_dict()
        fields.pop("value", None)
        entry = _describe(artifact, generation, first_seq)
        entry.update(key=key, bytes=len(artifact.value), tokens=0, chunks=1, artifact=fields)
        return entry

    def load(self, namespace: str, entries: Sequence[Entry], *, tenant: str) -> list[BaseArtifact]:
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
        if entries is None:
            self.blob_store.delete(namespace, tenant=tenant, **self._kw)
            return
        keep = {e["key"] for e in entries}
        for key in self.blob_store.keys(namespace, tenant=tenant, **self._kw):
            if key not in keep:
                self.blob_store.delete(namespace, key, tenant=tenant, **self._kw)
