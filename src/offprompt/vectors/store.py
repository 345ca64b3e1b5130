"""``QdrantVectorStore``: namespaced hybrid (dense + BM25 sparse, RRF) search on Qdrant.

Engines (the API is identical; ``engine=`` picks one):

* ``"edge"`` - the Qdrant engine embedded in-process (``qdrant-edge-py``), one shard
  per collection under ``path`` (or a private temporary directory for ``":memory:"``).
  Its keyword payload indexes find a namespace's points without a scan.
* ``"client"`` - ``qdrant-client``: a server or cluster via ``url=`` (async twins use
  ``AsyncQdrantClient``), or its pure-Python local mode (``":memory:"`` / ``path=``),
  which scans every point on each filtered query.
* ``"auto"`` (default) - ``url=`` or ``client=`` means qdrant-client; an embedded store
  uses edge when ``qdrant_edge`` is importable (it filters without scanning and upserts
  faster: the numbers are in ``benchmarks/RESULTS_task_memory.md``), else qdrant-client
  local mode.

Every point carries ``tenant``, ``namespace`` and ``kind`` in its payload and every
read filters on all three, so one namespace (or tenant) never sees another's data.
A view made by :meth:`QdrantVectorStore.with_scope` also writes and filters on
``scope_user``, ``scope_agent``, ``scope_session`` and ``scope_run``, all
keyword-indexed, so a :class:`~offprompt.scope.Scope` is a hard partition too. An unset
scope field is left out of the payload and matched as "empty": every payload field
costs the embedded engine microseconds per point to convert, so unscoped writes (the
common case) carry only what they need.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from offprompt.errors import StorageError, ValidationError
from offprompt.names import validate_namespace
from offprompt.scope import Scope, as_scope
from offprompt.vectors._backends import BackendPoint, Cond, IndexKind, Scored, VectorBackend
from offprompt.vectors._client import ClientBackend
from offprompt.vectors._edge import EdgeBackend
from offprompt.vectors._payload import (
    NO_SCOPE,
    RESERVED_KEYS,
    SCOPE_PAYLOAD_KEYS,
    check_filter_value,
    embed_text,
)
from offprompt.vectors.analyzer import Analyzer
from offprompt.vectors.embedders import Embedder, HashingEmbedder
from offprompt.vectors.records import Hit, VectorRecord, point_id
from offprompt.vectors.sparse import BM25SparseEncoder, BM25WordEncoder, SparseVector

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient, QdrantClient

__all__ = ["RESERVED_KEYS", "SCOPE_PAYLOAD_KEYS", "QdrantVectorStore"]

Engine = Literal["auto", "edge", "client"]
SearchMode = Literal["hybrid", "dense", "sparse"]
_RECORD = "record"
_META = "meta"


def _edge_available() -> bool:
    try:
        import qdrant_edge  # noqa: F401
    except ImportError:
        return False
    return True


_PLACES = ("client", "location", "path", "url")


def _check_no_place(options: Mapping[str, Any], opener: str) -> None:
    """Refuse a second place in a classmethod that names its own."""
    given = [key for key in _PLACES if key in options]
    if given:
        raise ValidationError(
            f"QdrantVectorStore.{opener}() opens its own place; drop "
            + ", ".join(f"{key}=" for key in given)
        )


def _engine_and_url(
    engine: str,
    *,
    client: QdrantClient | None,
    location: str | None,
    path: str | None,
    url: str | None,
) -> tuple[str, str | None]:
    """The engine that serves the one place given (``"edge"`` or ``"client"``), and the
    server's URL (a ``location`` other than ``":memory:"`` is one)."""
    given = [place for place in (client, location, path, url) if place is not None]
    if len(given) > 1:
        raise ValidationError("give at most one of client, location, path, url")
    if location is not None and location != ":memory:":
        url = location
    remote = client is not None or url is not None
    if engine == "auto":
        engine = "client" if remote or not _edge_available() else "edge"
    if engine == "edge" and remote:
        raise ValidationError("engine='edge' is embedded; use engine='client' with url= or client=")
    if engine not in ("edge", "client"):
        raise ValidationError(f"engine must be 'auto', 'edge' or 'client', got {engine!r}")
    return engine, url


def _open_client(
    client: QdrantClient | None,
    aclient: AsyncQdrantClient | None,
    *,
    path: str | None,
    url: str | None,
    api_key: str | None,
) -> tuple[QdrantClient, AsyncQdrantClient | None]:
    """``client`` as given, else a qdrant-client on ``url`` (with its async twin), on
    ``path`` (local mode) or in memory."""
    if client is not None:
        return client, aclient
    from qdrant_client import AsyncQdrantClient, QdrantClient

    if url is not None:
        return QdrantClient(url=url, api_key=api_key), aclient or AsyncQdrantClient(
            url=url, api_key=api_key
        )
    if path is not None:
        return QdrantClient(path=path), aclient
    return QdrantClient(":memory:"), aclient


def _check_dense(
    backend: VectorBackend, embedder: Embedder, *, dense: bool, collection: str
) -> None:
    """Refuse an embedding model on a collection created without dense vectors: it would
    never be used (the offline ``HashingEmbedder`` is fine, BM25 ranks alone)."""
    if dense and not backend.dense and not isinstance(embedder, HashingEmbedder):
        backend.close()
        raise StorageError(
            f"collection {collection!r} was created without dense vectors, so "
            f"{type(embedder).__name__} would not be used; give another collection= "
            "(or path=) for an embedding model",
            collection=collection,
        )


def _fusion_weights(weights: tuple[float, float] | None, embedder: Embedder) -> tuple[float, float]:
    """The RRF weights of (dense, sparse): BM25 outweighs the lexical ``HashingEmbedder``."""
    if weights is None:
        weights = (1.0, 4.0) if isinstance(embedder, HashingEmbedder) else (1.0, 1.0)
    if len(weights) != 2 or min(weights) < 0:
        raise ValidationError(f"fusion_weights must be two weights >= 0, got {weights!r}")
    return float(weights[0]), float(weights[1])


def _sparse_encoder(
    backend: VectorBackend, analyzer: Analyzer | None
) -> BM25WordEncoder | BM25SparseEncoder:
    """The BM25 encoder the collection was written with."""
    if backend.sparse_name == BM25SparseEncoder.vector_name:
        return BM25SparseEncoder()  # a collection written before the word analyzer
    return BM25WordEncoder(analyzer)


def _ensure_scope_indexes(backend: VectorBackend) -> None:
    """Keyword indexes on every field each read filters on (the tenant's is the engine's
    tenant index)."""
    for key in ("tenant", "namespace", "kind", "record_id", *SCOPE_PAYLOAD_KEYS.values()):
        backend.ensure_index(key, "keyword", tenant=key == "tenant")


class _Core:
    """State shared by every tenant view of one store (engine, embedder, encoder)."""

    def __init__(
        self,
        backend: VectorBackend,
        embedder: Embedder,
        encoder: BM25WordEncoder | BM25SparseEncoder | None,
        batch_size: int,
        *,
        dense: bool = True,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.dense = dense
        self.encoder = encoder
        self.batch_size = batch_size
        self.index_kinds: dict[str, IndexKind] = {}
        self.lock = threading.RLock()
        self.closed = False


class QdrantVectorStore:
    """Namespaced vector store on Qdrant with hybrid dense + BM25 retrieval fused by RRF.

    Args:
        client: An existing ``QdrantClient`` (implies ``engine="client"``).
        location: ``":memory:"`` (the default when nothing else is given) or a URL.
        path: Directory of an embedded, persistent store.
        url: A Qdrant server or cluster; uses qdrant-client (and ``AsyncQdrantClient``).
        api_key: API key for ``url``.
        collection: Collection name (edge: shard directory name under ``path``).
        embedder: Dense embedder; ``HashingEmbedder()`` when omitted.
        sparse: Also index BM25 sparse vectors (needed for ``hybrid`` and ``sparse`` modes).
        engine: ``"auto"``, ``"edge"`` or ``"client"`` (see the module docs).
        tenant: Scope written to and filtered on every point; see :meth:`with_tenant`.
        aclient: An ``AsyncQdrantClient`` for native async twins with ``client=``.
        batch_size: Points per upsert request.
        fusion_weights: RRF weights of the (dense, sparse) rankings in ``hybrid`` mode.
            Default ``(1, 4)`` with ``HashingEmbedder`` (a lexical embedder, much weaker
            than BM25 over the analyzer's words: at this weight its ranking only fills
            in where no word matches, and recall equals BM25's alone, see
            ``benchmarks/RESULTS_longterm_recall.md``), ``(1, 1)`` with any other
            embedder.
        analyzer: The lexical analyzer of the BM25 sparse vectors (``Analyzer()``:
            English stems and stop words; ``Analyzer(language=None)`` for none). A
            collection written by an earlier version holds BM25 over tiktoken ids (its
            sparse vector is named ``"sparse"``, the new one ``"words"``): it is read and
            written with that encoder (:class:`BM25SparseEncoder`) as before.
        lexical: What a new collection's BM25 counts: ``"words"`` (the analyzer's
            stemmed words, the default: prose, conversations) or ``"tokens"`` (tiktoken
            ids, :class:`BM25SparseEncoder`: sub-word pieces also match inside
            identifiers, paths and numbers, which is why task memory uses it for tool
            outputs; on the Loghub dev logs' rare events it finds 0.998 in the top 5
            against 0.940 with words, ``benchmarks/RESULTS_query_memory_loghub.md``).
            An existing collection keeps what it was written with.
        dense: Store dense vectors (``embedder``'s) and rank with them. ``False`` makes a
            collection of BM25 sparse vectors only: ``hybrid`` searches are BM25 alone and
            ``dense`` ones are refused. ``TaskMemory`` creates its index so when it uses
            the offline ``HashingEmbedder``: there the dense vectors were the largest part
            of the index on disk and added nothing to recall
            (``benchmarks/RESULTS_query_memory_loghub.md``). An existing collection keeps
            what it was written with (with or without dense vectors); opening one without
            them with another embedder raises :class:`~offprompt.errors.StorageError`.
        payload_indexes: Extra payload fields to index, ``{"field": "keyword" | "integer"
            | "float" | "bool" | "datetime"}`` (servers need them for filters and order_by).
        wal: ``False`` (embedded, ``path=``): no write-ahead log, for an index derived
            from data kept elsewhere (task memory's chunks). Upserts are durable once
            flushed (:meth:`flush`, every ~32 MiB, :meth:`compact`, :meth:`close`);
            deletes flush at once; a crash loses the upserts since the last flush,
            together. A collection the engine cannot load is created again, empty
            (:attr:`rebuilt`). An existing collection keeps what it was created with.

    Attributes:
        engine: The engine in use, ``"edge"`` or ``"client"``.
        tenant: This view's tenant.
        rebuilt: Whether an unreadable collection without a write-ahead log was
            created again, empty, on open (see ``wal``).

    Example:
        >>> store = QdrantVectorStore()
        >>> store.upsert("docs", [VectorRecord(id="a", text="disk full on node 7", payload={})])
        >>> store.search("docs", "which node ran out of disk?", top_n=1)[0].id
        'a'
        >>> store.close()
    """

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        client: QdrantClient | None = None,
        *,
        location: str | None = None,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "offprompt",
        embedder: Embedder | None = None,
        sparse: bool = True,
        engine: Engine = "auto",
        tenant: str = "default",
        aclient: AsyncQdrantClient | None = None,
        batch_size: int = 256,
        payload_indexes: Mapping[str, IndexKind] | None = None,
        fusion_weights: tuple[float, float] | None = None,
        analyzer: Analyzer | None = None,
        lexical: Literal["words", "tokens"] = "words",
        dense: bool = True,
        wal: bool = True,
    ) -> None:
        validate_namespace(collection, what="collection")
        if not dense and not sparse:
            raise ValidationError("a store needs dense or sparse vectors (or both)")
        if lexical not in ("words", "tokens"):
            raise ValidationError(f"lexical must be 'words' or 'tokens', got {lexical!r}")
        sparse_name = (
            BM25WordEncoder.vector_name if lexical == "words" else BM25SparseEncoder.vector_name
        )
        self.tenant = validate_namespace(tenant, what="tenant")
        self._scope: dict[str, str] = dict(NO_SCOPE)
        if batch_size < 1:
            raise ValidationError(f"batch_size must be >= 1, got {batch_size}")
        chosen, url = _engine_and_url(engine, client=client, location=location, path=path, url=url)
        embedder = embedder or HashingEmbedder()
        dims = int(embedder.dimensions)
        backend: VectorBackend
        if chosen == "edge":
            backend = EdgeBackend(
                path, collection, dims, sparse, sparse_name=sparse_name, dense=dense, wal=wal
            )
        else:
            client, aclient = _open_client(client, aclient, path=path, url=url, api_key=api_key)
            backend = ClientBackend(
                client, collection, dims, sparse, aclient, sparse_name=sparse_name, dense=dense
            )
        _check_dense(backend, embedder, dense=dense, collection=collection)
        self.fusion_weights = _fusion_weights(fusion_weights, embedder)
        self.engine: str = backend.name
        self.rebuilt: bool = isinstance(backend, EdgeBackend) and backend.rebuilt
        self.collection = collection
        encoder = _sparse_encoder(backend, analyzer) if sparse else None
        self._core = _Core(backend, embedder, encoder, batch_size, dense=backend.dense)
        _ensure_scope_indexes(backend)
        for key, kind in (payload_indexes or {}).items():
            self.create_payload_index(key, kind)

    @classmethod
    def in_memory(cls, **options: Any) -> QdrantVectorStore:
        """A store of this process alone, in memory: ``QdrantVectorStore()``.

        The embedded engine (edge when ``qdrant_edge`` is importable, else qdrant-client's
        local mode); ``options`` are the constructor's other keywords.

        Raises:
            ValidationError: ``options`` name a place (``client``, ``location``, ``path``
                or ``url``), or a bad option.

        Example:
            >>> store = QdrantVectorStore.in_memory(collection="notes")
            >>> store.collection
            'notes'
            >>> store.close()
        """
        _check_no_place(options, "in_memory")
        return cls(**options)

    @classmethod
    def at_path(cls, path: str | os.PathLike[str], **options: Any) -> QdrantVectorStore:
        """A durable embedded store in the directory ``path``: ``QdrantVectorStore(path=path)``.

        Raises:
            ValidationError: ``options`` name another place, or a bad option.
        """
        _check_no_place(options, "at_path")
        return cls(path=os.fspath(path), **options)

    @classmethod
    def at_url(cls, url: str, *, api_key: str | None = None, **options: Any) -> QdrantVectorStore:
        """A store on the Qdrant server or cluster at ``url``, through qdrant-client (and
        ``AsyncQdrantClient`` for the async twins): ``QdrantVectorStore(url=url)``.

        Raises:
            ValidationError: ``options`` name another place, ``engine="edge"``, or a bad
                option.
        """
        _check_no_place(options, "at_url")
        return cls(url=url, api_key=api_key, **options)

    @classmethod
    def on_client(
        cls,
        client: QdrantClient,
        *,
        aclient: AsyncQdrantClient | None = None,
        **options: Any,
    ) -> QdrantVectorStore:
        """A store on an existing ``QdrantClient`` (and ``aclient`` for native async twins):
        ``QdrantVectorStore(client)``. :meth:`close` closes ``client`` too.

        Raises:
            ValidationError: ``options`` name another place, ``engine="edge"``, or a bad
                option.
        """
        _check_no_place(options, "on_client")
        return cls(client, aclient=aclient, **options)

    def __repr__(self) -> str:
        return f"QdrantVectorStore(engine={self.engine!r}, collection={self.collection!r}, tenant={self.tenant!r})"

    # ------------------------------------------------------------------ plumbing

    @property
    def embedder(self) -> Embedder:
        """The embedder of the dense vectors."""
        return self._core.embedder

    @property
    def dense(self) -> bool:
        """Whether this collection holds dense vectors (see ``dense=``)."""
        return self._core.dense

    @property
    def sparse_encoder(self) -> BM25WordEncoder | BM25SparseEncoder | None:
        """The BM25 encoder of this store's sparse vectors (``None`` with ``sparse=False``)."""
        return self._core.encoder

    @property
    def _backend(self) -> VectorBackend:
        if self._core.closed:
            raise StorageError("the vector store is closed", collection=self.collection)
        return self._core.backend

    def with_tenant(self, tenant: str) -> QdrantVectorStore:
        """A view of the same collection scoped to ``tenant`` (shares engine and embedder).

        Example:
            >>> store = QdrantVectorStore()
            >>> store.with_tenant("acme").tenant
            'acme'
        """
        view = object.__new__(QdrantVectorStore)
        view.__dict__.update(self.__dict__)
        view.tenant = validate_namespace(tenant, what="tenant")
        return view

    def with_scope(self, scope: Scope) -> QdrantVectorStore:
        """A view of the same collection in ``scope``'s partition.

        The tenant is ``scope.tenant`` (``"default"`` when unset); user, agent, session
        and run are written to and filtered on every point, so two scopes that differ
        in any field never see each other's records, namespaces or metadata.

        Example:
            >>> from offprompt.scope import Scope
            >>> store = QdrantVectorStore()
            >>> view = store.with_scope(Scope(tenant="acme", user="u1"))
            >>> view.upsert("docs", [VectorRecord(id="a", text="hello", payload={})])
            >>> store.with_tenant("acme").count("docs"), view.count("docs")
            (0, 1)
        """
        resolved = as_scope(scope)
        view = self.with_tenant(resolved.tenant or "default")
        view._scope = {  # private-ok: a view of this store, built here
            key: getattr(resolved, field) or "" for field, key in SCOPE_PAYLOAD_KEYS.items()
        }
        return view

    @property
    def scope(self) -> Scope:
        """The :class:`~offprompt.scope.Scope` of this view."""
        return Scope(
            tenant=self.tenant,
            **{field: self._scope[key] or None for field, key in SCOPE_PAYLOAD_KEYS.items()},
        )

    def _pid(self, namespace: str, record_id: str) -> str:
        if not any(self._scope.values()):
            return point_id(self.tenant, namespace, record_id)
        extra = (self._scope[key] for key in SCOPE_PAYLOAD_KEYS.values())
        return point_id("\x1e".join((self.tenant, *extra)), namespace, record_id)

    @property
    def _scope_payload(self) -> dict[str, str]:
        return {k: v for k, v in self._scope.items() if v}

    def _scope_cond(self) -> Cond:
        return [("tenant", self.tenant), *((k, v or None) for k, v in self._scope.items())]

    def _in_scope(self, payload: Mapping[str, Any]) -> bool:
        return payload.get("tenant") == self.tenant and all(
            payload.get(k, "") == v for k, v in self._scope.items()
        )

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete every record and metadata point of the partitions ``scope`` selects.

        A selector: ``Scope(user="u1")`` deletes u1's points in every tenant (an unset
        tenant is ``"default"`` for writes, but unrestricted here). Refuses the empty
        scope unless ``all=True``. Returns the number of points deleted.
        """
        from offprompt.stores.base import check_selector

        selected = check_selector(scope, all=all)
        cond: Cond = []
        if selected.tenant is not None:
            cond.append(("tenant", selected.tenant))
        for field, key in SCOPE_PAYLOAD_KEYS.items():
            value = getattr(selected, field)
            if value is not None:
                cond.append((key, value))
        with self._core.lock:
            removed = self._backend.count(cond)
            if removed:
                self._backend.delete_filter(cond)
        return removed

    def create_payload_index(self, key: str, kind: IndexKind) -> None:
        """Index payload field ``key`` (needed by servers for filtering and ``order_by``)."""
        if kind not in ("keyword", "integer", "float", "bool", "datetime"):
            raise ValidationError(f"unknown payload index kind {kind!r} for {key!r}")
        with self._core.lock:
            self._backend.ensure_index(key, kind)
            self._core.index_kinds[key] = kind

    def _cond(self, namespace: str, filter: Mapping[str, Any] | None, kind: str = _RECORD) -> Cond:
        validate_namespace(namespace)
        cond: Cond = [*self._scope_cond(), ("namespace", namespace), ("kind", kind)]
        for key, value in (filter or {}).items():
            if not isinstance(key, str) or not key:
                raise ValidationError(f"filter keys must be non-empty str, got {key!r}")
            if key in RESERVED_KEYS:
                raise ValidationError(f"filter key {key!r} is reserved by the store")
            cond.append((key, check_filter_value(key, value)))
        return cond

    def _payload(
        self,
        namespace: str,
        record_id: str,
        text: str,
        extra: Mapping[str, Any],
        kind: str = _RECORD,
    ) -> dict[str, Any]:
        bad = RESERVED_KEYS.intersection(extra)
        if bad:
            raise ValidationError(
                f"payload keys {sorted(bad)} are reserved by the store", record_id=record_id
            )
        payload = {
            **extra,
            "tenant": self.tenant,
            **self._scope_payload,
            "namespace": namespace,
            "kind": kind,
            "record_id": record_id,
        }
        if text:  # an empty text is left out (read back as ""): a caller keeping it elsewhere
            payload["text"] = text
        return payload

    def _prepare(self, namespace: str, records: Sequence[VectorRecord]) -> list[BackendPoint]:
        validate_namespace(namespace)
        core = self._core
        for i, record in enumerate(records):
            if not isinstance(record, VectorRecord):
                raise ValidationError(
                    f"record {i} must be a VectorRecord, got {type(record).__name__}"
                )
            if not isinstance(record.id, str) or not record.id:
                raise ValidationError(f"record {i}: id must be a non-empty str, got {record.id!r}")
            if not isinstance(record.text, str):
                raise ValidationError(f"record {record.id!r}: text must be str")
            if not isinstance(record.payload, dict):
                raise ValidationError(f"record {record.id!r}: payload must be a dict")
            if record.vector is not None and not core.dense:
                raise ValidationError(
                    f"record {record.id!r} has a dense vector, but this store has none "
                    "(created with dense=False)"
                )
            if record.vector is not None and len(record.vector) != core.embedder.dimensions:
                raise ValidationError(
                    f"record {record.id!r}: vector has {len(record.vector)} dimensions, "
                    f"the store needs {core.embedder.dimensions}"
                )
        to_embed = [i for i, r in enumerate(records) if r.vector is None] if core.dense else []
        dense: list[list[float] | None] = [r.vector for r in records]
        if to_embed:
            texts = [embed_text(records[i]) for i in to_embed]
            for i, embedded in zip(to_embed, core.embedder.embed_documents(texts), strict=True):
                dense[i] = embedded
        sparse_vectors: list[SparseVector | None] = [None] * len(records)
        if core.encoder is not None:
            sparse_vectors = [r.sparse for r in records]
            missing = [i for i, r in enumerate(records) if r.sparse is None]
            if missing:
                encoded = core.encoder.encode_documents([embed_text(records[i]) for i in missing])
                for i, sparse_vector in zip(missing, encoded, strict=True):
                    sparse_vectors[i] = sparse_vector
        points = []
        for record, vector, sparse in zip(records, dense, sparse_vectors, strict=True):
            points.append(
                BackendPoint(
                    id=self._pid(namespace, record.id),
                    dense=vector if vector is not None and any(vector) else None,
                    sparse=sparse,
                    payload=self._payload(namespace, record.id, record.text, record.payload),
                )
            )
        return points

    def _query_vectors(
        self, query: str, mode: SearchMode, top_n: int, feedback: Sequence[str] = ()
    ) -> tuple[list[float] | None, SparseVector | None]:
        if not isinstance(query, str):
            raise ValidationError(f"query must be str, got {type(query).__name__}")
        if not isinstance(top_n, int) or top_n < 1:
            raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
        if mode not in ("hybrid", "dense", "sparse"):
            raise ValidationError(f"mode must be 'hybrid', 'dense' or 'sparse', got {mode!r}")
        encoder = self._core.encoder
        if mode != "dense" and encoder is None:
            if mode == "sparse":
                raise ValidationError("mode='sparse' needs a store created with sparse=True")
            mode = "dense"
        if not self._core.dense:
            if mode == "dense":
                raise ValidationError(
                    "mode='dense' needs dense vectors; this collection has none (created "
                    "with dense=False, task memory's default without an embedding model)"
                )
            mode = "sparse"  # hybrid: BM25 is the only ranking
        dense = self._core.embedder.embed_query(query) if mode != "sparse" else None
        if dense is not None and not any(dense):
            dense = None
        sparse = None
        if mode != "dense" and isinstance(encoder, BM25WordEncoder):
            sparse = encoder.encode_query(query, feedback=feedback)
        elif mode != "dense" and encoder is not None:
            # token ids (a store written before the word analyzer): the feedback is joined
            # to the query, as such a store was read when it was written
            sparse = encoder.encode_query("\n".join([query, *feedback]))
        return dense, sparse

    @staticmethod
    def _hit(s: Scored) -> Hit:
        payload = {k: v for k, v in s.payload.items() if k not in RESERVED_KEYS}
        return Hit(
            id=str(s.payload.get("record_id", s.id)),
            score=s.score,
            text=str(s.payload.get("text", "")),
            payload=payload,
        )

    @staticmethod
    def _record(s: Scored) -> VectorRecord:
        payload = {k: v for k, v in s.payload.items() if k not in RESERVED_KEYS}
        return VectorRecord(
            id=str(s.payload.get("record_id", s.id)),
            text=str(s.payload.get("text", "")),
            payload=payload,
        )

    # ------------------------------------------------------------------ public sync

    def upsert(self, namespace: str, records: Sequence[VectorRecord]) -> None:
        """Insert or replace ``records`` in ``namespace``, embedding those without vectors.

        Records are sent in batches of ``batch_size``; the same id always maps to the
        same point, so repeating an upsert is harmless.

        Raises:
            NamespaceError: ``namespace`` is not a valid name.
            ValidationError: A record is malformed or uses a reserved payload key.
        """
        size = self._core.batch_size
        for start in range(0, len(records), size):
            points = self._prepare(namespace, records[start : start + size])
            self._backend.upsert(points)

    def search(
        self,
        namespace: str,
        query: str,
        *,
        top_n: int = 5,
        filter: Mapping[str, Any] | None = None,
        mode: SearchMode = "hybrid",
        narrow_by: str | None = None,
        feedback: Sequence[str] = (),
    ) -> list[Hit]:
        """The ``top_n`` records of ``namespace`` closest to ``query``.

        ``hybrid`` fuses a dense and a BM25 sparse prefetch with reciprocal rank fusion.
        ``filter`` adds exact-match payload conditions (a list value matches any of its
        items; a :class:`Range` a numeric range). An unknown namespace gives ``[]``.

        ``narrow_by`` names a ``filter`` key that most records fail (a user, a
        session): the embedded engine then searches ``mode="dense"`` filtered on that
        key alone and checks the rest of the filter on what it returns, which is much
        cheaper on a large plain segment and gives the same records (it falls back to
        the full filter when it cannot tell). Ignored by qdrant-client and other modes.

        ``feedback`` texts (pseudo-relevance feedback: the best hits of a first query)
        widen the BM25 query only, at a fraction of the query's weight (see
        :meth:`BM25WordEncoder.encode_query`); the dense query is ``query`` alone.
        """
        if narrow_by is not None and narrow_by not in (filter or {}):
            raise ValidationError(f"narrow_by={narrow_by!r} must be one of the filter's keys")
        cond = self._cond(namespace, filter)
        dense, sparse = self._query_vectors(query, mode, top_n, feedback)
        scored = self._backend.query(
            dense,
            sparse,
            cond,
            top_n,
            max(top_n * 4, 40),
            weights=self.fusion_weights,
            narrow_by=narrow_by,
        )
        return [self._hit(s) for s in scored]

    def iter_scroll(
        self, namespace: str, *, filter: Mapping[str, Any] | None = None, batch_size: int = 512
    ) -> Iterator[list[VectorRecord]]:
        """Records of ``namespace`` in batches (point-id order), holding one batch at a time."""
        cond = self._cond(namespace, filter)
        offset: str | None = None
        while True:
            page, offset = self._backend.scroll(cond, limit=batch_size, offset=offset)
            if page:
                yield [self._record(s) for s in page]
            if offset is None:
                return

    def scroll(
        self,
        namespace: str,
        *,
        filter: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> list[VectorRecord]:
        """Every record of ``namespace`` (matching ``filter``), ascending by ``order_by`` if given.

        ``order_by`` names a numeric payload field; it is indexed as ``integer`` on
        first use unless :meth:`create_payload_index` declared it otherwise.
        ``descending`` reverses that order; ``limit`` returns only the first ``limit``
        records of it (one indexed, ordered read: its cost follows ``limit``, not the
        size of the namespace).
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ValidationError(f"limit must be an int >= 0, got {limit!r}")
        if limit == 0:
            return []
        if order_by is None:
            if limit is not None:
                page, _ = self._backend.scroll(self._cond(namespace, filter), limit=limit)
                return [self._record(s) for s in page]
            return [r for batch in self.iter_scroll(namespace, filter=filter) for r in batch]
        if order_by in RESERVED_KEYS:
            raise ValidationError(f"cannot order by reserved key {order_by!r}")
        cond = self._cond(namespace, filter)
        if order_by not in self._core.index_kinds:
            self.create_payload_index(order_by, "integer")
        total = limit if limit is not None else self._backend.count(cond)
        if total == 0:
            return []
        page, _ = self._backend.scroll(cond, limit=total, order_by=order_by, descending=descending)
        return [self._record(s) for s in page]

    def set_payload(self, namespace: str, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` into the records ``ids`` of ``namespace`` (missing ids are skipped)."""
        validate_namespace(namespace)
        bad = RESERVED_KEYS.intersection(payload)
        if bad:
            raise ValidationError(f"payload keys {sorted(bad)} are reserved by the store")
        if not ids:
            return
        self._backend.set_payload_filter(self._ids_cond(namespace, ids), dict(payload))

    def _ids_cond(self, namespace: str, ids: Sequence[str]) -> Cond:
        """The records ``ids`` of ``namespace`` in this view (one indexed filter, no read)."""
        return [
            *self._scope_cond(),
            ("namespace", namespace),
            ("kind", _RECORD),
            ("record_id", [str(i) for i in ids]),
        ]

    def _existing(self, namespace: str, ids: Sequence[str]) -> list[str]:
        pids = [self._pid(namespace, str(i)) for i in ids]
        found = self._backend.retrieve(pids)
        return [
            s.id
            for s in found
            if s.payload.get("kind") == _RECORD
            and s.payload.get("namespace") == namespace
            and self._in_scope(s.payload)
        ]

    def delete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> int:
        """Delete records of ``namespace``: by ``ids``, by ``filter``, or all; returns how many."""
        cond = self._cond(namespace, filter)
        if ids is not None:
            if filter is not None:
                raise ValidationError("give ids or filter, not both")
            existing = self._existing(namespace, ids)
            if existing:
                self._backend.delete_ids(existing)
            return len(existing)
        removed = self._backend.count(cond)
        if removed:
            self._backend.delete_filter(cond)
        return removed

    def count(self, namespace: str, *, filter: Mapping[str, Any] | None = None) -> int:
        """How many records ``namespace`` holds (matching ``filter``)."""
        return self._backend.count(self._cond(namespace, filter))

    def namespaces(self) -> list[str]:
        """Namespaces of this tenant that hold at least one record, sorted."""
        return self._backend.facet("namespace", [*self._scope_cond(), ("kind", _RECORD)], 1_000_000)

    # -------------------------------------------------------------- metadata points

    def put_metadata(self, namespace: str, key: str, payload: Mapping[str, Any]) -> None:
        """Store a vectorless metadata document ``key`` for ``namespace`` (one atomic write).

        Metadata points are never returned by :meth:`search`, :meth:`scroll` or
        :meth:`count`; :meth:`delete` of the namespace leaves them (use
        :meth:`delete_metadata`).
        """
        validate_namespace(namespace)
        point = BackendPoint(
            id=self._pid(namespace, "\x00meta:" + key),
            dense=None,
            sparse=None,
            payload=self._payload(namespace, key, "", payload, kind=_META),
        )
        self._backend.upsert([point])

    def get_metadata(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The metadata document ``key`` of ``namespace``, or None."""
        validate_namespace(namespace)
        found = self._backend.retrieve([self._pid(namespace, "\x00meta:" + key)])
        for s in found:
            if s.payload.get("kind") == _META and self._in_scope(s.payload):
                return {k: v for k, v in s.payload.items() if k not in RESERVED_KEYS}
        return None

    def list_metadata(self, key: str) -> dict[str, dict[str, Any]]:
        """``{namespace: document}`` of every metadata document ``key`` of this tenant."""
        cond: Cond = [*self._scope_cond(), ("kind", _META), ("record_id", key)]
        out: dict[str, dict[str, Any]] = {}
        offset: str | None = None
        while True:
            page, offset = self._backend.scroll(cond, limit=1024, offset=offset)
            for s in page:
                out[str(s.payload["namespace"])] = {
                    k: v for k, v in s.payload.items() if k not in RESERVED_KEYS
                }
            if offset is None:
                return out

    def delete_metadata(self, namespace: str, key: str) -> None:
        """Delete the metadata stored under ``key`` for the namespace (none stored: nothing
        happens).
        """
        validate_namespace(namespace)
        self._backend.delete_ids([self._pid(namespace, "\x00meta:" + key)])

    def flush(self) -> None:
        """Make everything written so far durable (edge engine; a no-op for qdrant-client)."""
        self._backend.flush()

    @property
    def walless(self) -> bool:
        """Whether this is an embedded collection at ``path=`` without a write-ahead log
        (see ``wal``): its upserts are durable once flushed."""
        backend = self._backend
        return isinstance(backend, EdgeBackend) and backend.walless

    def compact(self, min_bytes: int = 0) -> bool:
        """Seal what was written since the last compaction into a read-only segment and
        reload, so the embedded engine's RAM for it (~4 KB per 512-token chunk; ~0.6 KB
        after) is released; only at ``path=``, and only when at least ``min_bytes`` (an
        estimate) were written since. Other calls wait meanwhile. Returns whether it ran.
        """
        backend = self._backend
        return isinstance(backend, EdgeBackend) and backend.compact(min_bytes)

    def purge(self) -> list[str]:
        """Remove the bytes of deleted points from the engine's files (after ``forget``).

        The embedded engine (qdrant-edge) is rebuilt from its live points, so deleted
        payloads leave its WAL and payload storage; this costs a copy of the whole
        collection. For qdrant-client there is no such call.

        Returns:
            The layers that still hold deleted data (empty when everything was purged).
        """
        with self._core.lock:
            return self._backend.purge()

    def close(self) -> None:
        """Release the engine (and remove the temporary directory of an in-memory edge store)."""
        core = self._core
        with core.lock:
            if not core.closed:
                core.closed = True
                core.backend.close()

    def __enter__(self) -> QdrantVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ async twins

    def _native_async(self) -> ClientBackend | None:
        backend = self._backend
        return (
            backend if isinstance(backend, ClientBackend) and backend.aclient is not None else None
        )

    async def aupsert(self, namespace: str, records: Sequence[VectorRecord]) -> None:
        """Async twin of :meth:`upsert` (native with ``url=``; a worker thread when embedded)."""
        native = self._native_async()
        if native is None:
            await asyncio.to_thread(self.upsert, namespace, records)
            return
        size = self._core.batch_size
        for start in range(0, len(records), size):
            points = await asyncio.to_thread(
                self._prepare, namespace, records[start : start + size]
            )
            await native.aupsert(points)

    async def asearch(
        self,
        namespace: str,
        query: str,
        *,
        top_n: int = 5,
        filter: Mapping[str, Any] | None = None,
        mode: SearchMode = "hybrid",
        narrow_by: str | None = None,
        feedback: Sequence[str] = (),
    ) -> list[Hit]:
        """Async twin of :meth:`search`."""
        native = self._native_async()
        if native is None:
            return await asyncio.to_thread(
                self.search,
                namespace,
                query,
                top_n=top_n,
                filter=filter,
                mode=mode,
                narrow_by=narrow_by,
                feedback=feedback,
            )
        if narrow_by is not None and narrow_by not in (filter or {}):
            raise ValidationError(f"narrow_by={narrow_by!r} must be one of the filter's keys")
        cond = self._cond(namespace, filter)
        dense, sparse = await asyncio.to_thread(self._query_vectors, query, mode, top_n, feedback)
        scored = await native.aquery(
            dense, sparse, cond, top_n, max(top_n * 4, 40), weights=self.fusion_weights
        )
        return [self._hit(s) for s in scored]

    async def ascroll(
        self,
        namespace: str,
        *,
        filter: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> list[VectorRecord]:
        """Async twin of :meth:`scroll`."""
        native = self._native_async()
        if native is None or order_by is not None or limit is not None:
            return await asyncio.to_thread(
                self.scroll,
                namespace,
                filter=filter,
                order_by=order_by,
                descending=descending,
                limit=limit,
            )
        cond = self._cond(namespace, filter)
        out: list[VectorRecord] = []
        offset: str | None = None
        while True:
            page, offset = await native.ascroll(cond, limit=512, offset=offset)
            out.extend(self._record(s) for s in page)
            if offset is None:
                return out

    async def aset_payload(
        self, namespace: str, ids: Sequence[str], payload: Mapping[str, Any]
    ) -> None:
        """Async twin of :meth:`set_payload`."""
        native = self._native_async()
        if native is None:
            await asyncio.to_thread(self.set_payload, namespace, ids, payload)
            return
        validate_namespace(namespace)
        bad = RESERVED_KEYS.intersection(payload)
        if bad:
            raise ValidationError(f"payload keys {sorted(bad)} are reserved by the store")
        if ids:
            await native.aset_payload_filter(self._ids_cond(namespace, ids), dict(payload))

    async def adelete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> int:
        """Async twin of :meth:`delete`."""
        native = self._native_async()
        if native is None or ids is not None:
            return await asyncio.to_thread(self.delete, namespace, ids=ids, filter=filter)
        cond = self._cond(namespace, filter)
        removed = await native.acount(cond)
        if removed:
            await native.adelete_filter(cond)
        return removed

    async def acount(self, namespace: str, *, filter: Mapping[str, Any] | None = None) -> int:
        """Async twin of :meth:`count`."""
        native = self._native_async()
        if native is None:
            return await asyncio.to_thread(self.count, namespace, filter=filter)
        return await native.acount(self._cond(namespace, filter))

    async def anamespaces(self) -> list[str]:
        """Async twin of :meth:`namespaces`."""
        return await asyncio.to_thread(self.namespaces)
