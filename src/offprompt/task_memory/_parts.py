"""What every job of one ``TaskMemory`` shares: its settings, storages and records.

:class:`Parts` is built once by the facade and handed to the jobs (the
:class:`~offprompt.task_memory._index_jobs.Indexer`, the
:class:`~offprompt.task_memory._reads.Reader`, the
:class:`~offprompt.task_memory._commit.Writer`, the
:class:`~offprompt.task_memory._lifecycle.Lifecycle`), so none of them reaches back
into the facade. It owns the namespace records as this memory sees them: another
memory's and expired ones are not there, and a metadata update is retried when
another process committed first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from offprompt.errors import ExpiredError, NotFoundError, StorageError, ValidationError
from offprompt.names import validate_namespace
from offprompt.retention import RetentionPolicy
from offprompt.scope import Scope
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory.catalog import StoreCatalog, VectorCatalog
from offprompt.task_memory.storage import ArtifactStorage, TextArtifactStorage
from offprompt.trace import TraceEvent, Tracer, emit_safely

if TYPE_CHECKING:
    from offprompt.artifacts import BaseArtifact
    from offprompt.tokens import TiktokenTokenizer
    from offprompt.vectors import QdrantVectorStore

__all__ = ["COMMIT_RETRIES", "Parts"]

#: Commits retried when other processes keep committing the same namespace.
COMMIT_RETRIES = 50


@dataclass(eq=False)
class Parts:
    """The settings, storages and namespace records one memory's jobs share."""

    name: str
    tenant: str
    scope: Scope | None
    catalog: VectorCatalog | StoreCatalog
    storages: dict[type[BaseArtifact], ArtifactStorage]
    vector_store: QdrantVectorStore
    tokenizer: TiktokenTokenizer
    tracer: Tracer
    retention: RetentionPolicy | None
    page_tokens: int
    index_mode: str
    #: Held around every commit of this process (with the catalog's own guard across
    #: processes), so a job reads and writes one namespace's record as one step.
    lock: threading.RLock = field(default_factory=threading.RLock)

    # ------------------------------------------------------------- records

    def meta(self, namespace: str) -> NamespaceMeta | None:
        """The committed record of ``namespace``, or None: unknown, another memory's, or
        expired."""
        validate_namespace(namespace)
        meta = self.catalog.get(namespace)
        if meta is None or meta.memory != self.name or self.expired(meta):
            return None
        return meta

    def require(self, namespace: str) -> NamespaceMeta:
        """The committed record of ``namespace``; :meth:`missing` when there is none."""
        meta = self.meta(namespace)
        if meta is None:
            raise self.missing(namespace)
        return meta

    def expired(self, meta: NamespaceMeta, now: float | None = None) -> bool:
        """Whether ``meta`` is older than the retention's ``max_age``."""
        if self.retention is None:
            return False
        cutoff = self.retention.cutoff(now)
        return cutoff is not None and meta.written_at() < cutoff

    def missing(self, namespace: str) -> NotFoundError:
        """The error for a namespace the memory cannot read: expired (older than the
        retention's ``max_age``, not yet pruned) or unknown (never stored, deleted,
        pruned, or another memory's: no other memory's name is given away)."""
        found = self.catalog.get(namespace)
        age = None if self.retention is None else self.retention.age_seconds
        if found is not None and found.memory == self.name and age is not None:
            return ExpiredError(
                f"namespace {namespace!r} in {self.name} has expired: it is older than the "
                f"retention's max_age of {age:g} s and can no longer be read",
                namespace=namespace,
            )
        return NotFoundError(f"namespace {namespace!r} is not in {self.name}", namespace=namespace)

    def ours(self) -> dict[str, NamespaceMeta]:
        """Every record of this memory, expired ones included (retention needs them)."""
        return {ns: m for ns, m in self.catalog.list_all().items() if m.memory == self.name}

    def names(self) -> list[str]:
        """The namespaces this memory can read, sorted."""
        docs = self.catalog.list_all()
        return sorted(
            ns for ns, meta in docs.items() if meta.memory == self.name and not self.expired(meta)
        )

    def update(
        self, namespace: str, change: Callable[[NamespaceMeta], bool]
    ) -> NamespaceMeta | None:
        """Apply ``change`` to the committed record and commit it, again on a conflict
        (another process committed meanwhile); ``change`` returns False for no write.
        Returns the record after, or None when the namespace is gone."""
        with self.lock:
            for _ in range(COMMIT_RETRIES):
                meta = self.meta(namespace)
                if meta is None:
                    return None
                if not change(meta) or self.catalog.commit(namespace, meta):
                    return meta
        raise StorageError(
            f"namespace {namespace!r}: {COMMIT_RETRIES} metadata updates in a row lost to "
            "other writers",
            namespace=namespace,
        )

    # ------------------------------------------------------------ storages

    def kind_storage(self, kind: str) -> ArtifactStorage:
        """The storage of ``kind`` (``"text"``, ``"blob"``)."""
        for storage in self.storages.values():
            if storage.kind == kind:
                return storage
        raise NotFoundError(f"this TaskMemory has no {kind!r} storage")

    def text_storage(self) -> TextArtifactStorage:
        """The text storage, which must be a :class:`TextArtifactStorage`."""
        storage = self.kind_storage("text")
        if not isinstance(storage, TextArtifactStorage):
            raise ValidationError("this TaskMemory's text storage is not a TextArtifactStorage")
        return storage

    # --------------------------------------------------------------- trace

    def scope_fields(self) -> dict[str, str]:
        """The scope a trace event names."""
        return self.scope.fields() if self.scope is not None else {"tenant": self.tenant}

    def trace(
        self,
        kind: str,
        *,
        tokens: int = 0,
        scores: dict[str, float] | None = None,
        included: list[dict[str, Any]] | None = None,
        dropped: list[dict[str, Any]] | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Emit a trace event of this memory's scope; a failing tracer never fails a call."""
        event = TraceEvent(
            kind,
            scope=self.scope_fields(),
            tokens=tokens,
            scores=scores or {},
            included=included or [],
            dropped=dropped or [],
            detail=detail or {},
        )
        emit_safely(self.tracer, event)
