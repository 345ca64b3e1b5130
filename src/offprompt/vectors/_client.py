"""qdrant-client behind ``QdrantVectorStore`` (``ClientBackend``): its local mode
(``:memory:`` / ``path=``) or a Qdrant server (``url=``), with native async twins when
given an ``AsyncQdrantClient`` (see :mod:`offprompt.vectors._backends` for the protocol
it meets).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from offprompt.errors import StorageError
from offprompt.vectors._backends import (
    DENSE,
    WORDS,
    BackendPoint,
    Cond,
    IndexKind,
    Scored,
)
from offprompt.vectors.fusion import RRF_K
from offprompt.vectors.records import Range
from offprompt.vectors.sparse import SparseVector

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient, QdrantClient


class ClientBackend:
    """qdrant-client: embedded local mode (``:memory:`` / ``path=``) or a server via ``url=``.

    ``aclient`` (an ``AsyncQdrantClient`` on the same server) serves the async twins;
    without it they run the sync client in a worker thread. Local mode is not
    thread-safe, so every call holds a lock.
    """

    name = "client"

    def purge(self) -> list[str]:
        """qdrant-client (local mode or a server) offers no purge: say which layer keeps data."""
        return [
            f"qdrant-client collection {self.collection!r}: deleted points stay in the "
            "engine's files until its own optimizer rewrites them"
        ]

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        dimensions: int,
        sparse: bool,
        aclient: AsyncQdrantClient | None = None,
        *,
        sparse_name: str = WORDS,
        dense: bool = True,
    ) -> None:
        from qdrant_client import models

        self.models = models
        self.client = client
        self.aclient = aclient
        self.collection = collection
        self.dimensions = dimensions
        self.sparse = sparse
        self.sparse_name = sparse_name
        self.dense = dense
        self.lock = threading.RLock()
        self._indexed: set[str] = set()
        self._async_ready = False
        from qdrant_client.local.qdrant_local import QdrantLocal

        # Local mode filters in Python and warns that payload indexes do nothing.
        self.local = isinstance(getattr(client, "_client", None), QdrantLocal)
        try:
            if not client.collection_exists(collection):
                client.create_collection(collection, **self._collection_config())
            else:
                self._check_existing(client.get_collection(collection))
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(
                f"cannot open Qdrant collection {collection!r}: {exc}", collection=collection
            ) from None

    def _collection_config(self) -> dict[str, Any]:
        m = self.models
        return {
            "vectors_config": (
                {DENSE: m.VectorParams(size=self.dimensions, distance=m.Distance.COSINE)}
                if self.dense
                else {}
            ),
            "sparse_vectors_config": (
                {self.sparse_name: m.SparseVectorParams(modifier=m.Modifier.IDF)}
                if self.sparse
                else None
            ),
        }

    def _check_existing(self, info: Any) -> None:
        vectors = info.config.params.vectors
        params = vectors.get(DENSE) if isinstance(vectors, dict) else None
        if isinstance(vectors, dict) and not vectors:
            self.dense = False  # created without dense vectors: it keeps that
        elif params is None or params.size != self.dimensions:
            raise StorageError(
                f"collection {self.collection!r} exists with incompatible vectors "
                f"(need a {DENSE!r} vector of size {self.dimensions})",
                collection=self.collection,
            )
        else:
            self.dense = True
        # An existing collection keeps the sparse vector it was written with (see SPARSE).
        names = sorted(info.config.params.sparse_vectors or {})
        if names:
            self.sparse_name = names[0]

    async def ensure_async_collection(self) -> None:
        if self._async_ready or self.aclient is None:
            return
        if not await self.aclient.collection_exists(self.collection):
            await self.aclient.create_collection(self.collection, **self._collection_config())
        self._async_ready = True

    def _index_schema(self, kind: IndexKind, tenant: bool) -> Any:
        m = self.models
        if kind == "keyword":
            return m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=tenant or None)
        return {
            "integer": m.PayloadSchemaType.INTEGER,
            "float": m.PayloadSchemaType.FLOAT,
            "bool": m.PayloadSchemaType.BOOL,
            "datetime": m.PayloadSchemaType.DATETIME,
        }[kind]

    def ensure_index(self, key: str, kind: IndexKind, *, tenant: bool = False) -> None:
        # A server needs payload indexes for filters / order_by; local mode ignores them.
        if key in self._indexed or self.local:
            return
        with self.lock:
            self.client.create_payload_index(
                self.collection, key, field_schema=self._index_schema(kind, tenant), wait=True
            )
        self._indexed.add(key)

    def filter(self, cond: Cond) -> Any:
        m = self.models
        must: list[Any] = []
        for key, value in cond:
            if value is None:
                unset = [
                    m.IsEmptyCondition(is_empty=m.PayloadField(key=key)),
                    m.FieldCondition(key=key, match=m.MatchValue(value="")),
                ]
                must.append(m.Filter(should=unset))
            elif isinstance(value, Range):
                must.append(
                    m.FieldCondition(
                        key=key,
                        range=m.Range(gte=value.gte, gt=value.gt, lte=value.lte, lt=value.lt),
                    )
                )
            elif isinstance(value, list):
                must.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(value))))
            else:
                must.append(m.FieldCondition(key=key, match=m.MatchValue(value=value)))
        return m.Filter(must=must)

    def points(self, points: Sequence[BackendPoint]) -> list[Any]:
        m = self.models
        out = []
        for p in points:
            vector: dict[str, Any] = {}
            if p.dense is not None:
                vector[DENSE] = p.dense
            if p.sparse is not None and len(p.sparse):
                vector[self.sparse_name] = m.SparseVector(
                    indices=p.sparse.indices, values=p.sparse.values
                )
            out.append(m.PointStruct(id=p.id, vector=vector, payload=p.payload))
        return out

    def query_args(
        self,
        dense: list[float] | None,
        sparse: SparseVector | None,
        cond: Cond,
        limit: int,
        prefetch_limit: int,
        *,
        weights: tuple[float, float] = (1.0, 1.0),
    ) -> dict[str, Any] | None:
        m = self.models
        flt = self.filter(cond)
        stages: list[tuple[Any, str]] = []
        if dense is not None:
            stages.append((dense, DENSE))
        if sparse is not None and len(sparse):
            stages.append(
                (m.SparseVector(indices=sparse.indices, values=sparse.values), self.sparse_name)
            )
        if not stages:
            return None
        base = {
            "collection_name": self.collection,
            "query_filter": flt,
            "limit": limit,
            "with_payload": True,
        }
        if len(stages) == 1:
            return {**base, "query": stages[0][0], "using": stages[0][1]}
        prefetch = [
            m.Prefetch(query=q, using=u, filter=flt, limit=prefetch_limit) for q, u in stages
        ]
        return {
            **base,
            "prefetch": prefetch,
            "query": m.RrfQuery(rrf=m.Rrf(k=RRF_K, weights=list(weights))),
        }

    @staticmethod
    def scored(points: Sequence[Any]) -> list[Scored]:
        return [
            Scored(str(p.id), float(getattr(p, "score", 0.0) or 0.0), dict(p.payload or {}))
            for p in points
        ]

    def scroll_args(
        self,
        cond: Cond,
        *,
        limit: int,
        offset: str | None,
        order_by: str | None,
        descending: bool = False,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {
            "collection_name": self.collection,
            "scroll_filter": self.filter(cond),
            "limit": limit,
            "with_payload": True,
            "with_vectors": False,
        }
        if order_by:
            direction = self.models.Direction.DESC if descending else self.models.Direction.ASC
            args["order_by"] = self.models.OrderBy(key=order_by, direction=direction)
        elif offset is not None:
            args["offset"] = offset
        return args

    # sync I/O
    def upsert(self, points: Sequence[BackendPoint]) -> None:
        with self.lock:
            self.client.upsert(self.collection, self.points(points), wait=True)

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
        # ``narrow_by`` is an embedded-engine shortcut; a server plans its own filters.
        args = self.query_args(dense, sparse, cond, limit, prefetch_limit, weights=weights)
        if args is None:
            return []
        with self.lock:
            return self.scored(self.client.query_points(**args).points)

    def scroll(
        self,
        cond: Cond,
        *,
        limit: int,
        offset: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
    ) -> tuple[list[Scored], str | None]:
        with self.lock:
            records, nxt = self.client.scroll(
                **self.scroll_args(
                    cond, limit=limit, offset=offset, order_by=order_by, descending=descending
                )
            )
        return self.scored(records), (str(nxt) if nxt is not None and not order_by else None)

    def retrieve(self, ids: Sequence[str]) -> list[Scored]:
        with self.lock:
            return self.scored(self.client.retrieve(self.collection, list(ids), with_payload=True))

    def set_payload_filter(self, cond: Cond, payload: dict[str, Any]) -> None:
        selector = self.models.FilterSelector(filter=self.filter(cond))
        with self.lock:
            self.client.set_payload(self.collection, payload=payload, points=selector, wait=True)

    def delete_ids(self, ids: Sequence[str]) -> None:
        with self.lock:
            self.client.delete(
                self.collection,
                points_selector=self.models.PointIdsList(points=list(ids)),
                wait=True,
            )

    def delete_filter(self, cond: Cond) -> None:
        with self.lock:
            self.client.delete(
                self.collection,
                points_selector=self.models.FilterSelector(filter=self.filter(cond)),
                wait=True,
            )

    def count(self, cond: Cond) -> int:
        with self.lock:
            return int(
                self.client.count(self.collection, count_filter=self.filter(cond), exact=True).count
            )

    def facet(self, key: str, cond: Cond, limit: int) -> list[str]:
        with self.lock:
            response = self.client.facet(
                self.collection, key, facet_filter=self.filter(cond), limit=limit, exact=True
            )
        return sorted(str(h.value) for h in response.hits)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        with self.lock:
            self.client.close()

    # async I/O (only used when an AsyncQdrantClient is present)
    async def aupsert(self, points: Sequence[BackendPoint]) -> None:
        assert self.aclient is not None
        await self.ensure_async_collection()
        await self.aclient.upsert(self.collection, self.points(points), wait=True)

    async def aquery(
        self,
        dense: list[float] | None,
        sparse: SparseVector | None,
        cond: Cond,
        limit: int,
        prefetch_limit: int,
        *,
        weights: tuple[float, float] = (1.0, 1.0),
    ) -> list[Scored]:
        assert self.aclient is not None
        await self.ensure_async_collection()
        args = self.query_args(dense, sparse, cond, limit, prefetch_limit, weights=weights)
        if args is None:
            return []
        return self.scored((await self.aclient.query_points(**args)).points)

    async def ascroll(
        self, cond: Cond, *, limit: int, offset: str | None = None, order_by: str | None = None
    ) -> tuple[list[Scored], str | None]:
        assert self.aclient is not None
        await self.ensure_async_collection()
        records, nxt = await self.aclient.scroll(
            **self.scroll_args(cond, limit=limit, offset=offset, order_by=order_by)
        )
        return self.scored(records), (str(nxt) if nxt is not None and not order_by else None)

    async def aset_payload_filter(self, cond: Cond, payload: dict[str, Any]) -> None:
        assert self.aclient is not None
        await self.ensure_async_collection()
        await self.aclient.set_payload(
            self.collection,
            payload=payload,
            points=self.models.FilterSelector(filter=self.filter(cond)),
            wait=True,
        )

    async def adelete_filter(self, cond: Cond) -> None:
        assert self.aclient is not None
        await self.ensure_async_collection()
        await self.aclient.delete(
            self.collection,
            points_selector=self.models.FilterSelector(filter=self.filter(cond)),
            wait=True,
        )

    async def adelete_ids(self, ids: Sequence[str]) -> None:
        assert self.aclient is not None
        await self.ensure_async_collection()
        await self.aclient.delete(
            self.collection, points_selector=self.models.PointIdsList(points=list(ids)), wait=True
        )

    async def acount(self, cond: Cond) -> int:
        assert self.aclient is not None
        await self.ensure_async_collection()
        return int(
            (
                await self.aclient.count(
                    self.collection, count_filter=self.filter(cond), exact=True
                )
            ).count
        )
