"""The two engines behind ``QdrantVectorStore`` meet here: :class:`VectorBackend`, the
small protocol they both speak (points in, scored payloads out), and its types. The
engines are :class:`~offprompt.vectors._edge.EdgeBackend` (qdrant-edge, embedded) and
:class:`~offprompt.vectors._client.ClientBackend` (qdrant-client: local mode or a
server). The store does embedding, validation and payload bookkeeping once, above them.
Conditions travel as ``[(key, value)]`` pairs (value: exact, list = any-of,
:class:`Range`, or None = unset: the field is absent, empty, or ``""``, which is how
stores written before unset fields were left out recorded them) and each backend
translates them into its own filter objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from offprompt.vectors.fusion import RRF_K as RRF_K  # re-exported (moved to fusion)
from offprompt.vectors.records import FilterValue
from offprompt.vectors.sparse import SparseVector

DENSE = "dense"
#: The sparse vector of stores written before the word analyzer (BM25 over tiktoken ids).
SPARSE = "sparse"
#: The sparse vector of BM25 over the analyzer's word terms (what new stores create).
WORDS = "words"

Cond = list[tuple[str, FilterValue | None]]
IndexKind = Literal["keyword", "integer", "float", "bool", "datetime"]
Mode = Literal["hybrid", "dense", "sparse"]


@dataclass
class BackendPoint:
    id: str
    dense: list[float] | None
    sparse: SparseVector | None
    payload: dict[str, Any]


@dataclass
class Scored:
    id: str
    score: float
    payload: dict[str, Any]


class VectorBackend(Protocol):
    """What ``QdrantVectorStore`` asks of an engine (both backends implement it)."""

    #: ``"edge"`` or ``"client"``, the store's ``engine``.
    name: str
    #: The sparse vector's name in this collection (:data:`WORDS`, or :data:`SPARSE` in
    #: stores written before the word analyzer).
    sparse_name: str
    #: Whether the collection has a dense vector.
    dense: bool

    def ensure_index(self, key: str, kind: IndexKind, *, tenant: bool = False) -> None:
        """Create a payload index on ``key`` once (``tenant``: the engine's tenant index)."""
        ...

    def purge(self) -> list[str]:
        """Rewrite what the engine can so deleted bytes leave its files; return what keeps them."""
        ...

    def upsert(self, points: Sequence[BackendPoint]) -> None:
        """Insert or replace ``points``."""
        ...

    def query(
        self,
        dense: list[float] | None,
        sparse: SparseVector | None,
        cond: Cond,
        limit: int,
        prefetch_limit: int,
        *,
        weights: tuple[float, float] = (1.0, 1.0),
        narrow_by: str | None = None,
    ) -> list[Scored]:
        """The ``limit`` best points matching ``cond``, dense and sparse fused by RRF."""
        ...

    def scroll(
        self,
        cond: Cond,
        *,
        limit: int,
        offset: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
    ) -> tuple[list[Scored], str | None]:
        """A page of points matching ``cond`` and the offset of the next (None: the last)."""
        ...

    def retrieve(self, ids: Sequence[str]) -> list[Scored]:
        """The points of ``ids`` that exist."""
        ...

    def set_payload_filter(self, cond: Cond, payload: dict[str, Any]) -> None:
        """Merge ``payload`` into every point matching ``cond``."""
        ...

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete the points of ``ids``."""
        ...

    def delete_filter(self, cond: Cond) -> None:
        """Delete every point matching ``cond``."""
        ...

    def count(self, cond: Cond) -> int:
        """How many points match ``cond`` (exact)."""
        ...

    def facet(self, key: str, cond: Cond, limit: int) -> list[str]:
        """The distinct values of ``key`` among the points matching ``cond``, sorted."""
        ...

    def flush(self) -> None:
        """Make what was written durable."""
        ...

    def close(self) -> None:
        """Release the engine (flushed first)."""
        ...
