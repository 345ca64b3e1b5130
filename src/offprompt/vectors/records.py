"""Records, hits and filter values that ``QdrantVectorStore`` exchanges with callers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from offprompt.vectors.sparse import SparseVector

__all__ = ["FilterValue", "Hit", "Range", "VectorRecord", "point_id"]

#: Fixed uuid namespace of offprompt point ids, so ids are stable across processes.
POINT_NAMESPACE = uuid.UUID("6f0b6c1e-2f1d-5c43-9a57-0ff9403f0d11")


def point_id(tenant: str, namespace: str, record_id: str) -> str:
    """The Qdrant point id of a record: uuid5 of tenant, namespace and the record's id.

    The same record written twice lands on the same point (idempotent upserts), and
    equal record ids in two namespaces or two tenants never collide.
    """
    return str(uuid.uuid5(POINT_NAMESPACE, f"{tenant}\x1f{namespace}\x1f{record_id}"))


@dataclass
class VectorRecord:
    """One item to store or one item read back.

    Attributes:
        id: Any string; mapped to a uuid5 point id within the namespace.
        text: The text kept in the payload and returned by searches.
        payload: Extra JSON payload (keys ``namespace``, ``tenant``, ``kind``,
            ``record_id`` and ``text`` are reserved by the store).
        vector: A precomputed dense vector; embedded from ``embed_text`` / ``text`` if None.
        sparse: A precomputed sparse vector; BM25-encoded from ``embed_text`` / ``text`` if None.
        embed_text: Text to embed instead of ``text`` (e.g. a chunk with overlap context).
    """

    id: str
    text: str
    payload: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None
    sparse: SparseVector | None = None
    embed_text: str | None = None


@dataclass
class Hit:
    """A search result: the record's id, its fused score, text and payload."""

    id: str
    score: float
    text: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Range:
    """A numeric range condition for ``filter=`` values (bounds optional)."""

    gte: float | None = None
    gt: float | None = None
    lte: float | None = None
    lt: float | None = None


#: A ``filter=`` value: exact match, match-any of a list, or a numeric :class:`Range`.
FilterValue = str | int | bool | list[str] | list[int] | Range
