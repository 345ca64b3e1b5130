"""The namespace metadata ``TaskMemory`` commits to its catalog, as typed models.

One record per namespace (a row of the store's task table, or a metadata point of the
vector store for a memory without a store): which memory wrote it, what storage holds
it, where it came from, its artifacts (one :class:`ArtifactEntry` each, in write order)
and the card's statistics. Every commit writes the whole record at once (see
``_commit``), so readers never see half of a write.

Parsing is backward compatible with every record offprompt wrote before these models
existed: the same keys, the same JSON; a key a record lacks takes the default the code
used for it (an artifact without ``indexed`` was indexed at write). Serialising writes
back exactly the keys that were read or set (``exclude_unset``), so opening and
updating an older record adds nothing it did not have but what changed.

Unknown keys are **kept**, not ignored (``extra="allow"``): the store is shared by every
process that opens it, possibly of a newer offprompt that records more. Every commit
here is read-modify-write (append an artifact, mark one indexed), so dropping a key
this version does not know would silently erase a newer writer's state on its next
read. Extra keys ride along untouched; storages' own entry keys (an artifact's
``name``, ``meta``, ``reference``; a blob's ``artifact`` fields) are such keys too, and
are handed back to the storage as they were written.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from offprompt.errors import StorageError

__all__ = ["ArtifactEntry", "NamespaceMeta"]


class ArtifactEntry(BaseModel):
    """One stored artifact of a namespace, as its storage described it.

    Attributes:
        id: The artifact's id.
        generation: The write that stored it (chunks and blobs are tagged with it).
        type: The artifact class name (``TextArtifact``, ``JsonArtifact``, ...).
        bytes: Size of its raw text (UTF-8) or blob.
        chars: Characters of its text (raw writes only).
        tokens: Tokens indexed (0 until indexed).
        chunks: Chunks indexed (0 until indexed; 1 for a blob).
        first_seq: Sequence number of its first chunk in the namespace's index.
        indexed: Its chunks are all in the index. Entries written before background
            indexing have no flag: they were indexed when written.
        raw: Content key of its raw text in the blob store (text storage).
        key: Content key of its bytes (blob storage).
    """

    model_config = ConfigDict(extra="allow")

    id: str
    generation: str
    type: str = ""
    bytes: int = 0
    chars: int | None = None
    tokens: int = 0
    chunks: int = 0
    first_seq: int = 0
    indexed: bool = True
    raw: str | None = None
    key: str | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> ArtifactEntry:
        """The entry a storage returned (``write``, ``raw_entry``), as a model."""
        return cls.model_validate(dict(entry))

    def as_storage_entry(self) -> dict[str, Any]:
        """The entry as the storages read it: the dict they wrote, with what changed."""
        return self.model_dump(exclude_unset=True)

    @property
    def blob_key(self) -> str | None:
        """The blob-store key holding this artifact's bytes (raw text or blob), if any."""
        return self.raw or self.key


def referenced_blobs(record: Mapping[str, Any]) -> list[str]:
    """The blob keys a committed metadata record refers to (raw text and blob bytes):
    what a delete racing a store must keep (``StoreBlobStore(referenced=...)``)."""
    keys: list[str] = []
    for entry in record.get("artifacts") or ():
        if isinstance(entry, Mapping):
            keys.extend(str(entry[k]) for k in ("raw", "key") if entry.get(k))
    return keys


class NamespaceMeta(BaseModel):
    """The committed metadata of one namespace.

    Attributes:
        memory: The ``TaskMemory`` name that wrote it (a store may hold several).
        storage: The storage kind holding its artifacts (``"text"`` or ``"blob"``).
        tool: The tool whose output it holds.
        activity: The tool's activity.
        created_at: ISO time of the first write.
        updated_at: ISO time of the last write.
        artifacts: Its artifacts, in write order.
        subtasks: ``ActionSubtaskMetaEntry`` dicts of the steps that stored it.
        sensitive: The card shows only its shape.
        bytes: Sum of the artifacts' bytes.
        tokens: Sum of the artifacts' indexed tokens.
        chunks: Sum of the artifacts' chunks.
        stats: The card's statistics, an ``OutputStats`` dump (kept as the dump: the
            card's model owns its keys, and a newer card's keys must survive here too);
            None in records older than the card.
        pages_exact: ``stats["pages"]`` is the exact page count, not an estimate.
        version: The catalog version it was read at (not stored; a commit names it).
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    memory: str | None = None
    storage: str
    tool: str | None = None
    activity: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    artifacts: list[ArtifactEntry] = Field(default_factory=list)
    subtasks: list[dict[str, Any]] = Field(default_factory=list)
    sensitive: bool = False
    bytes: int = 0
    tokens: int = 0
    chunks: int = 0
    stats: dict[str, Any] | None = None
    pages_exact: bool = False
    version: int | None = Field(default=None, exclude=True)

    @classmethod
    def parse(
        cls, namespace: str, record: Mapping[str, Any], version: int | None = None
    ) -> NamespaceMeta:
        """The metadata of ``namespace`` from its stored ``record`` (any version's).

        Raises:
            StorageError: The record is not namespace metadata (it names the namespace).
        """
        try:
            meta = cls.model_validate({k: v for k, v in record.items() if k != "_version"})
        except ValidationError as exc:
            raise StorageError(
                f"namespace {namespace!r}: its stored metadata does not parse "
                f"({exc.error_count()} problem(s): {exc.errors()[0]['msg']} at "
                f"{'.'.join(str(p) for p in exc.errors()[0]['loc'])})",
                namespace=namespace,
            ) from None
        meta.version = version
        return meta

    def to_record(self) -> dict[str, Any]:
        """The record to store: the keys read or set (extra keys too), no version."""
        return self.model_dump(exclude_unset=True)

    def entries(self) -> list[dict[str, Any]]:
        """The artifacts as the storages read them."""
        return [e.as_storage_entry() for e in self.artifacts]

    def generations(self) -> list[str]:
        """The artifacts' generations, in write order."""
        return [e.generation for e in self.artifacts]

    def entry(self, generation: str) -> ArtifactEntry | None:
        """The artifact of ``generation``, or None."""
        return next((e for e in self.artifacts if e.generation == generation), None)

    @property
    def fully_indexed(self) -> bool:
        """Every artifact is marked indexed."""
        return all(e.indexed for e in self.artifacts)

    def indexed_artifacts(self) -> list[ArtifactEntry]:
        """The artifacts marked indexed."""
        return [e for e in self.artifacts if e.indexed]

    def totals(self) -> None:
        """Recount ``bytes``, ``tokens`` and ``chunks`` from the artifacts."""
        self.bytes = sum(e.bytes for e in self.artifacts)
        self.tokens = sum(e.tokens for e in self.artifacts)
        self.chunks = sum(e.chunks for e in self.artifacts)

    def written_at(self) -> float:
        """POSIX time of the last write (``updated_at``, else ``created_at``; 0 if none)."""
        stamp = self.updated_at or self.created_at
        try:
            return datetime.fromisoformat(str(stamp)).timestamp()
        except ValueError:
            return 0.0
