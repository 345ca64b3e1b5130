"""Upgrade in place: the namespace metadata of a ``path=`` directory written before the
shared layout (points in ``vectors/``) moves into ``task.db``.

Earlier releases kept each namespace's metadata as a vectorless point of the embedded
Qdrant collection under ``path/vectors`` and the raw text in ``path/blobs``. The import
reads every such point (every tenant and scope), commits it as a task-output row of the
same partition, and records in the index which generations it already holds, so
nothing is indexed again. It runs once, in one SQLite transaction (a crash imports
nothing and the next open starts over); the old points are removed after the commit.
"""

from __future__ import annotations

import contextlib
from typing import Any

from offprompt.errors import OffpromptError
from offprompt.scope import Scope
from offprompt.stores.base import BaseTaskStore
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory.catalog import INDEX_KEY, META_KEY
from offprompt.vectors import QdrantVectorStore
from offprompt.vectors.store import (  # private-ok: the pre-0.1 layout's upgrade
    _META,
    RESERVED_KEYS,
    SCOPE_PAYLOAD_KEYS,
)

__all__ = ["drop_points", "import_points"]


def _legacy_points(vectors: QdrantVectorStore) -> list[dict[str, Any]]:
    # Every tenant's and scope's metadata points: below the public API, which is
    # scoped (this is the one caller that must see them all).
    backend = vectors._backend  # private-ok: every scope, for the upgrade alone
    cond: Any = [("kind", _META), ("record_id", META_KEY)]
    found: list[dict[str, Any]] = []
    offset: str | None = None
    while True:
        page, offset = backend.scroll(cond, limit=1024, offset=offset)
        found.extend(dict(s.payload) for s in page)
        if offset is None:
            return found


Moved = list[tuple[QdrantVectorStore, str]]


def import_points(store: BaseTaskStore, vectors: QdrantVectorStore) -> Moved:
    """Commit every legacy metadata point of ``vectors`` into ``store``; returns them
    (for :func:`drop_points` once the import is committed)."""
    moved: Moved = []
    for payload in _legacy_points(vectors):
        namespace = str(payload["namespace"])
        fields = {f: payload.get(k) or None for f, k in SCOPE_PAYLOAD_KEYS.items()}
        scope = Scope(tenant=str(payload["tenant"]), **fields)
        meta = {k: v for k, v in payload.items() if k not in RESERVED_KEYS}
        scoped = (
            vectors.with_scope(scope)
            if any(fields.values())
            else vectors.with_tenant(scope.tenant or "default")
        )
        if store.task_get(namespace, scope=scope) is None:
            store.task_commit(namespace, meta, expect=None, scope=scope)
        parsed = NamespaceMeta.parse(namespace, meta)
        held = (
            {e.generation: e.first_seq for e in parsed.indexed_artifacts()}
            if parsed.storage == "text"
            else {}
        )
        if held:
            scoped.put_metadata(namespace, INDEX_KEY, {"generations": held})
        moved.append((scoped, namespace))
    return moved


def drop_points(moved: Moved) -> None:
    """Remove the imported points (best effort: they are never read again)."""
    for scoped, namespace in moved:
        with contextlib.suppress(OffpromptError):
            scoped.delete_metadata(namespace, META_KEY)
