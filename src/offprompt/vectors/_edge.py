"""The Qdrant engine embedded through qdrant-edge (``EdgeBackend``): the default engine
of ``QdrantVectorStore`` and of task memory. Also what its on-disk shard needs around
it: the free-space checks, the shard's recorded config, an interrupted purge finished,
and the booleans and narrowing the engine lacks (see :mod:`offprompt.vectors._backends`
for the protocol it meets).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from offprompt.errors import StorageError
from offprompt.vectors._backends import (
    DENSE,
    WORDS,
    BackendPoint,
    Cond,
    IndexKind,
    Scored,
)
from offprompt.vectors._scratch import ScratchDir
from offprompt.vectors.fusion import RRF_K
from offprompt.vectors.records import FilterValue, Range
from offprompt.vectors.sparse import SparseVector

# qdrant-edge's ``MatchValue`` takes a Python bool as the integer 0 / 1, so a boolean
# payload value can never match a boolean condition on that engine. The edge backend
# therefore stores booleans as these keyword strings, matches them as keywords and turns
# them back into bools on the way out; callers see real bools on both engines, and a
# bool condition matches only bool values (never the integers 0 / 1), as in qdrant-client.
_EDGE_TRUE = "\x00bool:true"
_EDGE_FALSE = "\x00bool:false"


def _edge_encode(value: Any) -> Any:
    """``value`` with every bool (also nested in dicts and lists) as its edge keyword."""
    if value is True:
        return _EDGE_TRUE
    if value is False:
        return _EDGE_FALSE
    if isinstance(value, dict):
        # the common payload (strings, numbers, empty containers) is passed through as is
        for item in value.values():
            if isinstance(item, (bool, tuple)) or (isinstance(item, (dict, list)) and item):
                return {k: _edge_encode(v) for k, v in value.items()}
        return value
    if isinstance(value, (list, tuple)):
        return [_edge_encode(v) for v in value]
    return value


def _edge_decode(value: Any) -> Any:
    """The inverse of :func:`_edge_encode`."""
    if type(value) is dict:
        # a payload of plain strings and numbers (the common case) is returned as it is
        for item in value.values():
            kind = type(item)
            if kind is dict or kind is list or (kind is str and item[:1] == "\x00"):
                return {k: _edge_decode(v) for k, v in value.items()}
        return value
    if isinstance(value, str):
        if value == _EDGE_TRUE:
            return True
        if value == _EDGE_FALSE:
            return False
        return value
    if isinstance(value, dict):
        return {k: _edge_decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_edge_decode(v) for v in value]
    return value


#: Extra points a narrowed dense search (:meth:`EdgeBackend._narrowed`) fetches, so a
#: few that fail the rest of the filter (other namespaces, forgotten ones) do not force
#: the full query.
_NARROW_SLACK = 10


def _checkable(value: FilterValue | None) -> bool:
    """Whether :func:`_matches` decides a condition on ``value`` (ranges are left to the engine)."""
    if value is None or isinstance(value, (str, int)):
        return True
    return isinstance(value, list) and all(isinstance(v, (str, int)) for v in value)


def _scalar_matches(stored: Any, wanted: str | int) -> bool | None:
    """Qdrant's exact match of one stored value: same type (a bool is no int), same value."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(stored, str):
        return isinstance(wanted, str) and stored == wanted
    if isinstance(stored, int):
        return isinstance(wanted, int) and stored == wanted
    if stored is None or isinstance(stored, float):
        return False
    return None  # an object: let the engine decide


def _matches(payload: dict[str, Any], cond: Cond) -> bool | None:
    """Whether a decoded payload meets every condition of ``cond`` as the engine's filter
    does (``None``: a value this check does not model; the caller asks the engine)."""
    for key, wanted in cond:
        stored = payload.get(key)
        if wanted is None:  # unset: absent, null, empty array, or "" (also in an array)
            if isinstance(stored, list):
                if any(v is None or isinstance(v, (dict, list)) for v in stored):
                    return None
                if not stored or "" in stored:
                    continue
                return False
            if stored is None or stored == "":
                continue
            if isinstance(stored, (str, int, float)):
                return False
            return None
        values = stored if isinstance(stored, list) else [stored]
        options = wanted if isinstance(wanted, list) else [wanted]
        hit = False
        for value in values:
            for option in options:
                verdict = _scalar_matches(value, option)  # type: ignore[arg-type]
                if verdict is None:
                    return None
                hit = hit or verdict
        if not hit:
            return False
    return True


#: Free space the embedded engine must find on its filesystem, besides each batch.
#: qdrant-edge writes through memory-mapped, sparsely pre-allocated files (32 MiB WAL
#: segments, 32 MiB payload pages, 1-4 MiB pages per payload index: about 235 MiB of
#: apparent size for an empty shard, almost none of it allocated). When a write touches
#: a page the filesystem cannot allocate, the kernel kills the process with SIGBUS: no
#: exception, no cleanup. So offprompt refuses to open or to write unless this much is
#: free, and raises :class:`~offprompt.errors.StorageError` instead.
EDGE_MIN_FREE_BYTES = 64 * 1024 * 1024
#: Disk bytes a point may cost per byte of its payload and vectors (WAL copy, payload
#: storage, payload indexes, vector storage).
_EDGE_WRITE_FACTOR = 4
#: A durable shard is flushed after upserts of about this many bytes (:func:`_point_bytes`).
#: The engine keeps every update in its write-ahead log until the segments are flushed,
#: and does not flush on its own: 150k points grew the WAL to 181 MB, against 48 MB
#: (the segments it always keeps) when flushed every 10k points.
_EDGE_FLUSH_BYTES = 32 * 1024 * 1024


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged write can still allocate on ``directory``'s filesystem."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    stats = os.statvfs(probe)
    return stats.f_bavail * stats.f_frsize


def unbacked_bytes(directory: Path) -> int:
    """Bytes of the files under ``directory`` that have no disk blocks yet (sparse holes).

    Loading a shard may touch every page of its mapped files (on tmpfs it does: an
    empty-looking shard of 6 MiB grew by 80 MiB on load), so opening one needs room
    for all of them.
    """
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                info = os.stat(os.path.join(root, name))
            except OSError:
                continue
            total += max(0, info.st_size - info.st_blocks * 512)
    return total


def _point_bytes(point: BackendPoint) -> int:
    size = 256 + 4 * len(point.dense or ())
    if point.sparse is not None:
        size += 8 * len(point.sparse)
    for key, value in point.payload.items():
        size += len(key) + (len(value) * 4 if isinstance(value, str) else 64)
    return size


def check_free_space(directory: Path, needed: int, *, doing: str) -> None:
    """Raise :class:`StorageError` unless ``needed`` bytes plus the engine's margin are free."""
    free = free_bytes(directory)
    if free < needed + EDGE_MIN_FREE_BYTES:
        raise StorageError(
            f"not enough free disk space to {doing} at {directory}: {free / 2**20:.1f} MiB "
            f"free, the embedded Qdrant engine needs {(needed + EDGE_MIN_FREE_BYTES) / 2**20:.1f}"
            " MiB (it writes through memory-mapped files, and a full disk would kill the "
            "process with SIGBUS); nothing was written",
            path=str(directory),
            free=free,
            needed=needed + EDGE_MIN_FREE_BYTES,
        )


def _existing_config(directory: Path) -> dict[str, Any] | None:
    try:
        raw = json.loads((directory / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def existing_sparse_name(directory: Path) -> str | None:
    """The sparse vector name a shard at ``directory`` was created with (``None``: no shard
    there yet, or one without sparse vectors)."""
    raw = _existing_config(directory)
    names = sorted((raw.get("sparse_vectors") or {}) if raw is not None else {})
    return names[0] if names else None


def existing_dense(directory: Path) -> bool | None:
    """Whether the shard at ``directory`` was created with the dense vector (``None``: no
    shard there yet)."""
    raw = _existing_config(directory)
    if raw is None:
        return None
    return DENSE in (raw.get("vectors") or {})


def existing_wal(directory: Path) -> bool | None:
    """Whether the shard at ``directory`` was created with a write-ahead log (``None``: no
    shard there yet)."""
    raw = _existing_config(directory)
    if raw is None:
        return None
    return raw.get("wal_enabled") is not False


def edge_config(
    dimensions: int,
    sparse: bool,
    *,
    ephemeral: bool,
    sparse_name: str = WORDS,
    dense: bool = True,
    wal: bool | None = None,
) -> Any:
    """The ``qdrant_edge.EdgeConfig`` of an offprompt collection.

    An ephemeral shard (a private temporary directory deleted on close) gains nothing
    from a write-ahead log, so it has none: upserts skip writing every point to disk a
    second time. A shard at a ``path=`` keeps the engine's write-ahead log unless
    ``wal`` is False (``None``: what an existing shard was created with; the engine
    refuses to change it). Without ``dense`` the shard holds sparse vectors only (no
    storage for dense ones at all).

    The sparse index the optimizer builds (:meth:`EdgeBackend.compact`) is memory-mapped
    (``Memory.Cold``) with float16 weights: 0.33 KB per chunk of tool output on disk
    instead of 0.53 KB, and no anonymous memory (it stays in the page cache). An
    appendable segment keeps its own index in RAM whatever this says.
    """
    import qdrant_edge as qe

    return qe.EdgeConfig(
        vectors=(
            {DENSE: qe.EdgeVectorParams(size=dimensions, distance=qe.Distance.Cosine)}
            if dense
            else None
        ),
        sparse_vectors=(
            {
                sparse_name: qe.EdgeSparseVectorParams(
                    modifier=qe.Modifier.Idf,
                    memory=qe.Memory.Cold,
                    datatype=qe.VectorStorageDatatype.Float16,
                )
            }
            if sparse
            else None
        ),
        payload_memory=qe.Memory.Cold,
        id_tracker_memory=qe.Memory.Cold,
        # The optimizer runs only in compact(): each call seals what was appended into a
        # segment of its own instead of merging it with the older ones (a merge rewrites
        # every earlier point again, compaction after compaction).
        optimizers=qe.EdgeOptimizersConfig(default_segment_number=_EDGE_SEGMENTS),
        wal_enabled=False if ephemeral else wal,
    )


#: Segments a compacted shard may keep before the optimizer merges them.
_EDGE_SEGMENTS = 16
_LOCK_SUFFIX = ".lock"


def _lock_directory(directory: Path) -> IO[bytes] | None:
    """Hold an exclusive ``flock`` on ``<directory>.lock`` (beside the shard, so a
    :meth:`EdgeBackend.purge` that swaps the directory keeps it); ``None`` without fcntl.

    The engine locks a shard only through its write-ahead log: a shard without one could
    be opened by two processes at once, each overwriting the other's files.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    directory.parent.mkdir(parents=True, exist_ok=True)
    handle = open(directory.with_name(directory.name + _LOCK_SUFFIX), "a+b")  # noqa: SIM115
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StorageError(
            f"cannot open embedded Qdrant shard at {directory}: it is locked by another "
            "process (WouldBlock)",
            path=str(directory),
        ) from None
    return handle


def _release_heap() -> None:
    """Give the C heap's free pages back to the system (glibc only; elsewhere nothing).

    The engine frees a closed segment's memory, but glibc keeps freed pages in the
    process (a shard of 51k chunks: 246 MB anonymous after close, 155 MB after this).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _gated(method: _Method) -> _Method:
    """Run an :class:`EdgeBackend` method under its gate's shared hold."""

    @functools.wraps(method)
    def run(self: EdgeBackend, *args: Any, **kwargs: Any) -> Any:
        with self._gate.shared():
            return method(self, *args, **kwargs)

    return cast(_Method, run)


class _Gate:
    """A shared/exclusive lock: engine calls share it, :meth:`EdgeBackend.compact` (which
    closes and reloads the shard) holds it alone. Shared holds must not nest (a waiting compaction would block the inner one)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._exclusive = True  # new shared holds wait from here on
            while self._shared:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


_PURGE_NEW = ".purge-new"
_PURGE_OLD = ".purge-old"


def _finish_interrupted_purge(directory: Path) -> None:
    """Complete or undo a :meth:`EdgeBackend.purge` that a crash interrupted."""
    fresh = directory.with_name(directory.name + _PURGE_NEW)
    retired = directory.with_name(directory.name + _PURGE_OLD)
    if not directory.exists() and fresh.is_dir():
        fresh.rename(directory)  # crashed between the two renames: the new shard is whole
    shutil.rmtree(fresh, ignore_errors=True)  # an unfinished copy
    shutil.rmtree(retired, ignore_errors=True)


class EdgeBackend:
    """The Qdrant engine embedded through ``qdrant_edge.EdgeShard`` (one shard = one collection).

    ``path=None`` uses a private temporary directory removed on :meth:`close` (the
    ":memory:" equivalent: nothing outlives the process; a killed process's directory
    is removed by the next one created, see :mod:`offprompt.vectors._scratch`), so it
    runs without a write-ahead log (see :func:`edge_config`).

    ``wal=False`` creates a shard at ``path`` without a write-ahead log, for an index
    derived from data kept elsewhere (task memory's chunk index: its text is in the
    store). Its writes are durable once flushed (every ~32 MiB of upserts, on
    :meth:`compact` and :meth:`close`; after every delete and payload update at once):
    a crash loses the upserts since the last flush, which the caller writes again from
    the data the index is derived from. A shard the engine cannot load (a crash
    mid-flush) is deleted and created empty (:attr:`rebuilt`).
    """

    name = "edge"

    def __init__(
        self,
        path: str | None,
        collection: str,
        dimensions: int,
        sparse: bool,
        *,
        sparse_name: str = WORDS,
        dense: bool = True,
        wal: bool = True,
    ) -> None:
        import qdrant_edge as qe

        self.qe = qe
        self._temp: ScratchDir | None = None
        self._lock: IO[bytes] | None = None
        if path is None:
            self._temp = ScratchDir()  # removes those of processes that died, too
            directory = Path(self._temp.path) / collection
        else:
            directory = Path(path) / collection
            try:
                self._lock = _lock_directory(directory)
            except OSError as exc:
                raise StorageError(
                    f"cannot open embedded Qdrant shard at {directory}: {exc}",
                    path=str(directory),
                ) from None
        self.directory = directory
        #: Whether the shard could not be loaded and was created empty (``wal=False`` only).
        self.rebuilt = False
        try:
            self._open(
                qe,
                path,
                collection,
                dimensions,
                sparse,
                sparse_name=sparse_name,
                dense=dense,
                wal=wal,
            )
        except BaseException:
            self._release()
            raise
        self._indexed: set[str] = set()
        self._index_schemas: dict[str, Any] = {}
        self._closed = False
        self._unflushed = 0  # bytes upserted since the last flush (durable shards only)
        self._appended = 0  # bytes upserted since the last compaction
        # compact() closes and reloads the shard: every other call holds this gate shared
        self._gate = _Gate()

    def _open(
        self,
        qe: Any,
        path: str | None,
        collection: str,
        dimensions: int,
        sparse: bool,
        *,
        sparse_name: str,
        dense: bool,
        wal: bool,
    ) -> None:
        directory = self.directory
        # An existing shard keeps the sparse vector it was written with (see SPARSE), its
        # dense vector or the lack of one, and its write-ahead log or the lack of one.
        self.sparse_name = existing_sparse_name(directory) or sparse_name
        had_dense = existing_dense(directory)
        self.dense = dense if had_dense is None else had_dense
        had_wal = existing_wal(directory)
        #: A durable shard without a write-ahead log (see the class docs).
        self.walless = path is not None and (not wal if had_wal is None else not had_wal)
        config = edge_config(
            dimensions,
            sparse,
            ephemeral=path is None,
            sparse_name=self.sparse_name,
            dense=self.dense,
            wal=False if self.walless else None,
        )
        self._config = config
        _finish_interrupted_purge(directory)
        existing = unbacked_bytes(directory) if directory.is_dir() else 0
        check_free_space(directory, existing, doing="open the embedded Qdrant shard")
        try:
            if directory.is_dir() and any(directory.iterdir()):
                try:
                    self.shard = qe.EdgeShard.load(str(directory), config)
                except Exception:
                    if not self.walless:
                        raise
                    # A derived index the engine cannot read: start it again, empty.
                    shutil.rmtree(directory)
                    directory.mkdir(parents=True)
                    self.shard = qe.EdgeShard.create(str(directory), config)
                    self.rebuilt = True
            else:
                directory.mkdir(parents=True, exist_ok=True)
                self.shard = qe.EdgeShard.create(str(directory), config)
        except Exception as exc:  # the engine raises plain RuntimeError / ValueError
            raise StorageError(
                f"cannot open embedded Qdrant shard at {directory}: {exc}",
                path=str(directory),
                collection=collection,
            ) from None

    def _release(self) -> None:
        if self._temp is not None:
            self._temp.remove()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None

    @_gated
    def ensure_index(self, key: str, kind: IndexKind, *, tenant: bool = False) -> None:
        if key in self._indexed:
            return
        qe = self.qe
        schema: Any
        if kind == "keyword" or kind == "bool":  # bools are stored as keywords here
            # Memory-mapped once compact() seals a segment (an appendable one keeps its
            # own in RAM): a keyword index of unique values (record_id) is ~110 B a point.
            schema = qe.KeywordIndexParams(is_tenant=tenant or None, memory=qe.Memory.Cold)
        else:
            schema = {
                "integer": qe.PayloadSchemaType.Integer,
                "float": qe.PayloadSchemaType.Float,
                "bool": qe.PayloadSchemaType.Bool,
                "datetime": qe.PayloadSchemaType.Datetime,
            }[kind]
        existing = self.shard.info().payload_schema
        if key not in existing:
            check_free_space(self.directory, 0, doing=f"index payload field {key!r}")
            self.shard.update(qe.UpdateOperation.create_field_index(key, schema))
        self._indexed.add(key)
        self._index_schemas[key] = schema

    @_gated
    def purge(self) -> list[str]:
        """Rewrite the shard from its live points; return the layers that keep old bytes.

        Deleting points in the engine only marks them: their payloads stay in the
        segment's ``payload_storage`` pages and in the ``wal/`` segment until those are
        rewritten, and the engine offers no call that rewrites them on demand
        (``optimize()`` vacuums only past its ``deleted_threshold``, the WAL keeps its
        open segment). So the shard is rebuilt: every live point (vectors and payload)
        is copied into a new shard next to it, the payload indexes this process knows
        are recreated, and the new directory replaces the old one, which is deleted.
        A crash midway leaves the old shard or the complete new one (see
        :func:`_finish_interrupted_purge`). Payload indexes made by another process and
        not declared here are not recreated (queries still work, unindexed).
        """
        qe = self.qe
        self.shard.flush()
        fresh = self.directory.with_name(self.directory.name + _PURGE_NEW)
        shutil.rmtree(fresh, ignore_errors=True)
        check_free_space(self.directory, 0, doing="rebuild the shard to purge deleted data")
        rebuilt = qe.EdgeShard.create(str(fresh), self._config)
        try:
            for key, schema in self._index_schemas.items():
                rebuilt.update(qe.UpdateOperation.create_field_index(key, schema))
            offset = None
            while True:
                records, offset = self.shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=512, with_payload=True, with_vector=True)
                )
                if records:
                    batch = [qe.Point(r.id, r.vector or {}, r.payload) for r in records]
                    check_free_space(fresh, 4096 * len(batch), doing="rebuild the shard")
                    rebuilt.update(qe.UpdateOperation.upsert_points(batch))
                if offset is None:
                    break
            rebuilt.flush()
        finally:
            rebuilt.close()
        self.shard.close()
        retired = self.directory.with_name(self.directory.name + _PURGE_OLD)
        shutil.rmtree(retired, ignore_errors=True)
        self.directory.rename(retired)
        fresh.rename(self.directory)
        shutil.rmtree(retired, ignore_errors=True)
        self.shard = qe.EdgeShard.load(str(self.directory), self._config)
        return []

    def _filter(self, cond: Cond) -> Any:
        qe = self.qe
        must: list[Any] = []
        for key, value in cond:
            if value is None:
                unset = [qe.IsEmptyCondition(key), qe.FieldCondition(key, match=qe.MatchValue(""))]
                must.append(qe.Filter(should=unset))
            elif isinstance(value, Range):
                must.append(
                    qe.FieldCondition(
                        key,
                        range=qe.RangeFloat(gte=value.gte, gt=value.gt, lte=value.lte, lt=value.lt),
                    )
                )
            elif isinstance(value, list):
                must.append(qe.FieldCondition(key, match=qe.MatchAny(list(value))))
            else:
                must.append(qe.FieldCondition(key, match=qe.MatchValue(_edge_encode(value))))
        return qe.Filter(must=must)

    @_gated
    def upsert(self, points: Sequence[BackendPoint]) -> None:
        qe = self.qe
        batch = []
        for p in points:
            vector: dict[str, Any] = {}
            if p.dense is not None:
                vector[DENSE] = p.dense
            if p.sparse is not None and len(p.sparse):
                vector[self.sparse_name] = qe.SparseVector(p.sparse.indices, p.sparse.values)
            batch.append(qe.Point(p.id, vector, _edge_encode(p.payload)))
        size = sum(_point_bytes(p) for p in points)
        check_free_space(
            self.directory, _EDGE_WRITE_FACTOR * size, doing=f"store {len(points)} points"
        )
        self.shard.update(qe.UpdateOperation.upsert_points(batch))
        self._appended += size
        if self._temp is None:
            self._unflushed += size
            if self._unflushed >= _EDGE_FLUSH_BYTES:
                self._unflushed = 0
                self.shard.flush()  # lets the engine drop what its WAL holds

    @_gated
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
        """The ``limit`` best points matching ``cond``; see :meth:`_narrowed` for ``narrow_by``."""
        qe = self.qe
        flt = self._filter(cond)
        stages = []
        if dense is not None:
            stages.append(qe.Query.Nearest(dense, using=DENSE))
        if sparse is not None and len(sparse):
            stages.append(
                qe.Query.Nearest(
                    qe.SparseVector(sparse.indices, sparse.values), using=self.sparse_name
                )
            )
        if not stages:
            return []
        if len(stages) == 1:
            if narrow_by is not None and dense is not None:
                narrowed = self._narrowed(stages[0], cond, limit, narrow_by)
                if narrowed is not None:
                    return narrowed
            request = qe.QueryRequest(limit=limit, query=stages[0], filter=flt, with_payload=True)
        else:
            request = qe.QueryRequest(
                limit=limit,
                prefetches=[qe.Prefetch(limit=prefetch_limit, query=s, filter=flt) for s in stages],
                query=qe.Fusion.Rrf(k=RRF_K, weights=list(weights)),
                filter=flt,
                with_payload=True,
            )
        return [
            Scored(str(p.id), float(p.score), _edge_decode(dict(p.payload or {})))
            for p in self.shard.query(request)
        ]

    def _narrowed(self, stage: Any, cond: Cond, limit: int, key: str) -> list[Scored] | None:
        """A dense search filtered in the engine on ``key``'s condition alone, the rest of
        ``cond`` checked on the returned payloads; ``None`` when that cannot decide.

        The embedded engine scans a plain segment's filtered points one by one and checks
        every condition of the filter on each of them; a single indexed condition is
        served straight from its index. At 100k points with a one-in-ten ``key`` the
        full filter (partition, namespace, kind, the caller's keys) costs 3x the dense
        search filtered on ``key`` alone. The result is the same: the engine returns the
        best ``limit + _NARROW_SLACK`` points matching ``key``, a superset of ``cond``;
        if at least ``limit`` of them match all of ``cond`` (or the engine ran out of
        points), the first ``limit`` of those are the best of ``cond``'s points. When
        too few match, or a condition cannot be checked here, the caller runs the full
        query.
        """
        primary: Cond = [(k, v) for k, v in cond if k == key and _checkable(v) and v is not None]
        if len(primary) != 1 or not all(
            _checkable(v) and "." not in k and "[" not in k for k, v in cond
        ):
            return None
        qe = self.qe
        wanted = limit + _NARROW_SLACK
        request = qe.QueryRequest(
            limit=wanted, query=stage, filter=self._filter(primary), with_payload=True
        )
        found = self.shard.query(request)
        kept: list[Scored] = []
        for point in found:
            payload = _edge_decode(dict(point.payload or {}))
            verdict = _matches(payload, cond)
            if verdict is None:
                return None
            if verdict:
                kept.append(Scored(str(point.id), float(point.score), payload))
                if len(kept) == limit:
                    return kept
        return kept if len(found) < wanted else None

    @_gated
    def scroll(
        self,
        cond: Cond,
        *,
        limit: int,
        offset: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
    ) -> tuple[list[Scored], str | None]:
        qe = self.qe
        direction = qe.Direction.Desc if descending else qe.Direction.Asc
        request = qe.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=self._filter(cond),
            with_payload=True,
            with_vector=False,
            order_by=qe.OrderBy(order_by, direction=direction) if order_by else None,
        )
        records, next_offset = self.shard.scroll(request)
        out = [Scored(str(r.id), 0.0, _edge_decode(dict(r.payload or {}))) for r in records]
        return out, (str(next_offset) if next_offset is not None and not order_by else None)

    @_gated
    def retrieve(self, ids: Sequence[str]) -> list[Scored]:
        records = self.shard.retrieve(list(ids), True, False)
        return [Scored(str(r.id), 0.0, _edge_decode(dict(r.payload or {}))) for r in records]

    @_gated
    def set_payload_filter(self, cond: Cond, payload: dict[str, Any]) -> None:
        ids = next((v for k, v in cond if k == "record_id" and isinstance(v, list)), [None])
        size = _point_bytes(BackendPoint("", None, None, payload))
        check_free_space(
            self.directory, _EDGE_WRITE_FACTOR * len(ids) * size, doing="update payloads"
        )
        operation = self.qe.UpdateOperation.set_payload_by_filter(
            self._filter(cond), _edge_encode(payload)
        )
        self.shard.update(operation)
        self._sync()

    @_gated
    def delete_ids(self, ids: Sequence[str]) -> None:
        check_free_space(self.directory, 0, doing="delete points")  # deletes write the WAL
        self.shard.update(self.qe.UpdateOperation.delete_points(list(ids)))
        self._sync()

    @_gated
    def delete_filter(self, cond: Cond) -> None:
        check_free_space(self.directory, 0, doing="delete points")
        self.shard.update(self.qe.UpdateOperation.delete_points_by_filter(self._filter(cond)))
        self._sync()

    @_gated
    def count(self, cond: Cond) -> int:
        return int(self.shard.count(self.qe.CountRequest(exact=True, filter=self._filter(cond))))

    @_gated
    def facet(self, key: str, cond: Cond, limit: int) -> list[str]:
        response = self.shard.facet(
            self.qe.FacetRequest(key, limit=limit, exact=True, filter=self._filter(cond))
        )
        return sorted(str(_edge_decode(h.value)) for h in response.hits)

    def _sync(self) -> None:
        """Make a delete or payload update durable at once on a shard without a WAL."""
        if self.walless:
            self.shard.flush()

    @_gated
    def flush(self) -> None:
        self.shard.flush()
        self._unflushed = 0

    def compact(self, min_bytes: int = 0) -> bool:
        """Seal what was appended since the last compaction into an indexed, read-only
        segment and reload the shard, so the engine's memory for it is released.

        The engine keeps an appendable segment's sparse index, payload indexes and id
        tracker in RAM (about 4 KB per 512-token chunk of tool output); its optimizer
        rewrites them into a segment whose indexes are memory-mapped, but the process
        keeps the memory until the shard is closed. So: flush, optimize, close, return
        the freed heap to the system, load. Only a durable shard (``path=``) is
        compacted, and only when at least ``min_bytes`` (:func:`_point_bytes`) were
        upserted since the last time; returns whether it ran. Every other call waits
        meanwhile.
        """
        if self._temp is not None or self._appended < max(1, min_bytes):
            return False
        with self._gate.exclusive():
            if self._closed:
                return False
            check_free_space(self.directory, 0, doing="compact the shard")
            self.shard.flush()
            self.shard.optimize()
            self.shard.close()
            _release_heap()
            try:
                self.shard = self.qe.EdgeShard.load(str(self.directory), self._config)
            except Exception as exc:
                self._closed = True
                self._release()
                raise StorageError(
                    f"cannot reload embedded Qdrant shard at {self.directory} after "
                    f"compacting it: {exc}",
                    path=str(self.directory),
                ) from None
            self._appended = 0
            self._unflushed = 0
            return True

    def close(self) -> None:
        with self._gate.exclusive():
            if self._closed:
                return
            self._closed = True
            try:
                # Every write checks the free space first; this flush must too. Another
                # writer on the filesystem (the raw outputs beside the index, or any
                # other program) may have filled it since, and a flush that touches an
                # unallocated mapped page is SIGBUS. Without it the shard closes as after
                # a crash: the upserts since the last flush are lost from the index and
                # indexed again from the stored text when a memory next opens it.
                if free_bytes(self.directory) >= EDGE_MIN_FREE_BYTES:
                    self.shard.flush()
                self.shard.close()
            finally:
                self._release()
