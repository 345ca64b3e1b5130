"""``OffpromptStore``: a LangGraph ``BaseStore`` on offprompt's Qdrant vector store.

Usable wherever LangGraph takes a store: ``StateGraph.compile(store=...)``,
``langchain.agents.create_agent(..., store=...)``, tools through ``ToolRuntime.store`` or
``get_store()``. Items are points of one :class:`~offprompt.vectors.QdrantVectorStore`
namespace (embedded Qdrant by default, the same code on a server via ``url=``), so
they survive restarts when the store has a ``path``.

Mapping to Qdrant, per item (payload of its point)::

    ns           JSON of the namespace tuple        exact namespace match
    ns_prefixes  JSON of every prefix of it         namespace_prefix search, one condition
    key, value, created_at, updated_at
    updated_ts   POSIX seconds, float-indexed       search without a query: ordered read
    indexed      1 if it has vectors, else 0        (2 marks the extra field points)
    expires_ts   POSIX seconds (far future if no TTL), float-indexed: sweeps, omit_expired
    ttl          minutes, when the item has a TTL

Every read is an indexed, ordered, limited Qdrant read, so its cost follows the page
size, not the number of items: a search without a query is a scroll ordered by
``updated_ts`` (newest first) with ``limit``; ``list_namespaces`` reads a registry of
namespaces (metadata documents read by point id: the root labels, and the namespaces
under each root) kept as items are written and deleted; ``get`` fetches by id.

Semantic search embeds the text at each configured field path separately (``"$"``: the
whole value as JSON, LangGraph's default; a ``[*]`` path yields one text per element),
like LangGraph's stores: the first text is the item's own vector, each further text a
field point of the item (payload ``owner``). A query runs two Qdrant searches, dense
and BM25 sparse (hybrid retrieval, as task memory does), and ranks each point by
weighted reciprocal rank fusion with the vector store's ``fusion_weights``
(:mod:`offprompt.vectors.fusion`, the fusion long-term memory uses); an item ranks as
its best point, so a match in one field is not diluted by the others. An item's
``score`` is that point's cosine similarity as the engine computes it, what
LangGraph's stores report (not an RRF rank: equal matches score equally); nothing
stored is embedded again at query time.

Filters follow LangGraph's semantics (exact match, nested dicts, ``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``). Top-level string equalities run inside the Qdrant
query; the rest are checked on the fetched candidates, fetching more until the page is
full or the candidates run out.

TTL follows LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
``sweep_interval_minutes``, ``omit_expired``): :meth:`OffpromptStore.sweep_ttl`
deletes expired items, :meth:`OffpromptStore.start_ttl_sweeper` runs it in a thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from offprompt.errors import ValidationError
from offprompt.names import validate_namespace
from offprompt.vectors import Hit, QdrantVectorStore, VectorRecord
from offprompt.vectors.fusion import fuse
from offprompt.vectors.records import Range
from offprompt.vectors.records import VectorRecord as _Record

__all__ = ["OffpromptStore"]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_INDEXES = {
    "ns": "keyword",
    "ns_prefixes": "keyword",
    "item_id": "keyword",
    "owner": "keyword",
    "indexed": "integer",
    "updated_ts": "float",
    "expires_ts": "float",
}
#: ``expires_ts`` of an item without TTL: a number, so one range condition selects
#: the live items (Qdrant's range conditions never match a missing field).
_NEVER = 1e15
_ITEMS = [0, 1]  # ``indexed`` of item points (field points are 2)
_VECTORS = [1, 2]  # ``indexed`` of points with a vector


def _ns_json(namespace: Sequence[str]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def _item_id(namespace: Sequence[str], key: str) -> str:
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_apply(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def _apply(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field never satisfies a comparison
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def _check_filter(flt: Any) -> dict[str, Any]:
    if flt is None:
        return {}
    if not isinstance(flt, Mapping):
        raise ValidationError(f"search filter must be a dict, got {type(flt).__name__}")

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ValidationError(f"filter keys must be str, got {k!r}")
                if k.startswith("$") and k not in _OPERATORS:
                    raise ValidationError(
                        f"unsupported filter operator {k!r}; use one of {_OPERATORS}"
                    )
                walk(v)

    walk(flt)
    return dict(flt)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    if condition.match_type not in ("prefix", "suffix"):
        raise ValidationError(f"unsupported namespace match type {condition.match_type!r}")
    return all(p == "*" or k == p for k, p in pairs)


def _field_id(item_id: str, index: int) -> str:
    return f"{item_id}\x1f{index}"


def _as_tuple(namespace: Any) -> Any:
    """A list namespace as a tuple (LangGraph's SQLite and Postgres stores accept lists)."""
    if isinstance(namespace, list) and all(isinstance(label, str) for label in namespace):
        return tuple(namespace)
    return namespace


def _normalized(op: Op) -> Op:
    if isinstance(op, (GetOp, PutOp)):
        # NamedTuple's _replace is public API (the underscore only avoids field names).
        return op._replace(namespace=_as_tuple(op.namespace))  # private-ok: NamedTuple API
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=_as_tuple(op.namespace_prefix))  # private-ok: as above
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        conditions = tuple(
            MatchCondition(c.match_type, _as_tuple(c.path)) if isinstance(c, MatchCondition) else c
            for c in op.match_conditions
        )
        return op._replace(match_conditions=conditions)  # private-ok: NamedTuple API
    return op


def _check_ttl_config(config: Any) -> TTLConfig | None:
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise ValidationError(f"ttl must be a TTLConfig dict, got {type(config).__name__}")
    known = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}
    unknown = set(config) - known
    if unknown:
        raise ValidationError(f"unknown TTLConfig keys {sorted(unknown)}; use {sorted(known)}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        value = config.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
        ):
            raise ValidationError(f"TTLConfig {name} must be a number > 0 or None, got {value!r}")
    return TTLConfig(**config)  # type: ignore[typeddict-item]


class _Sweeper:
    """A daemon thread that calls ``sweep`` every ``interval`` seconds until stopped."""

    def __init__(self, sweep: Callable[[], int], interval: float) -> None:
        self.stop = threading.Event()
        self.future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.thread = threading.Thread(
            target=self._run, args=(sweep, interval), name="offprompt-ttl-sweeper", daemon=True
        )
        self.thread.start()

    def _run(self, sweep: Callable[[], int], interval: float) -> None:
        try:
            while not self.stop.wait(interval):
                try:
                    sweep()
                except Exception:  # a failed sweep is retried at the next interval
                    import logging

                    logging.getLogger("offprompt.store").exception("TTL sweep failed")
        finally:
            self.future.set_result(None)


class OffpromptStore(BaseStore):
    """LangGraph store on Qdrant with hybrid semantic search through offprompt's ``Embedder``.

    Args:
        vector_store: Where items live (an embedded in-memory store if omitted, owned
            and closed by :meth:`close`). Its embedder (and BM25 encoder) do the search.
        namespace: The vector-store namespace that holds every item (and, as its
            metadata documents, the registry of LangGraph namespaces).
        fields: Paths whose text is embedded (LangGraph path syntax), each text its own
            vector; ``["$"]`` (the whole value) by default. ``put(..., index=[...])``
            overrides per item, ``index=False`` stores the item without a vector.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for puts that give
            none, ``refresh_on_read`` (reads restart an item's TTL; off unless set, as
            in LangGraph's ``SqliteStore``), ``sweep_interval_minutes``
            (for :meth:`start_ttl_sweeper`), ``omit_expired`` (hide expired items
            before a sweep deletes them).
        clock: Returns the time in POSIX seconds (``time.time``); what TTLs and
            timestamps are measured with.

    Example:
        >>> store = OffpromptStore()
        >>> store.put(("users", "alice"), "prefs", {"text": "prefers dark mode"})
        >>> store.get(("users", "alice"), "prefs").value
        {'text': 'prefers dark mode'}
        >>> store.search(("users",), query="display theme")[0].key
        'prefs'
        >>> store.close()
    """

    supports_ttl: bool = True

    def __init__(
        self,
        vector_store: QdrantVectorStore | None = None,
        *,
        namespace: str = "langgraph_store",
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._namespace = validate_namespace(namespace)
        self.ttl_config = _check_ttl_config(ttl)
        if not callable(clock):
            raise ValidationError(f"clock must be callable, got {type(clock).__name__}")
        self._clock = clock
        self._owned = vector_store is None
        self.vector_store = vector_store if vector_store is not None else QdrantVectorStore()
        self.fields = list(fields) if fields is not None else ["$"]
        for path in self.fields:
            if not isinstance(path, str) or not path:
                raise ValidationError(f"index fields must be non-empty str paths, got {path!r}")
        self._tokenized = [(p, p if p == "$" else tokenize_path(p)) for p in self.fields]
        self._lock = threading.RLock()
        self._sweeper: _Sweeper | None = None
        self._pending: dict[asyncio.AbstractEventLoop, list[tuple[list[Op], asyncio.Future[Any]]]]
        self._pending = {}
        self._tasks: set[asyncio.Task[None]] = set()  # flushes in flight (kept referenced)
        for key, kind in _INDEXES.items():
            self.vector_store.create_payload_index(key, kind)  # type: ignore[arg-type]
        self._upgrade()

    def __repr__(self) -> str:
        return f"OffpromptStore(namespace={self._namespace!r}, vector_store={self.vector_store!r})"

    # ------------------------------------------------------------------ helpers

    # The namespace registry: metadata documents of the items' vector-store namespace,
    # each read by its point id (O(1), unlike a filtered scroll, which qdrant-edge walks
    # point by point): ``roots`` lists the first labels in use, ``ns:<root>`` the
    # namespaces (JSON) under one root label.
    _ROOTS = "roots"

    def _registry_doc(self, key: str) -> list[str]:
        doc = self.vector_store.get_metadata(self._namespace, key)
        return list(doc.get("entries", [])) if doc else []

    def _put_registry_doc(self, key: str, entries: Iterable[str]) -> None:
        entries = sorted(set(entries))
        if entries:
            self.vector_store.put_metadata(self._namespace, key, {"entries": entries})
        else:
            self.vector_store.delete_metadata(self._namespace, key)

    def _upgrade(self) -> None:
        """Build the namespace registry (and TTL fields) of a store written before them."""
        vs = self.vector_store
        if self._registry_doc(self._ROOTS) or not vs.count(self._namespace):
            return
        seen: set[str] = set()
        for batch in vs.iter_scroll(self._namespace, filter={"indexed": _ITEMS}):
            stale = [str(r.id) for r in batch if "expires_ts" not in r.payload]
            if stale:
                vs.set_payload(self._namespace, stale, {"expires_ts": _NEVER})
            seen.update(str(r.payload["ns"]) for r in batch)
        self._register([tuple(json.loads(ns)) for ns in seen])

    def _register(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        by_root: dict[str, set[str]] = {}
        for ns in namespaces:
            by_root.setdefault(ns[0], set()).add(_ns_json(ns))
        if not by_root:
            return
        for root, added in by_root.items():
            key = "ns:" + _ns_json([root])
            known = set(self._registry_doc(key))
            if not added <= known:
                self._put_registry_doc(key, known | added)
        roots = set(self._registry_doc(self._ROOTS))
        if not set(by_root) <= roots:
            self._put_registry_doc(self._ROOTS, roots | set(by_root))

    def _unregister_if_empty(self, namespaces: Iterable[str]) -> None:
        """Drop registry entries of namespaces (JSON) that no longer hold an item."""
        vs = self.vector_store
        empty = [
            ns
            for ns in dict.fromkeys(namespaces)
            if not vs.count(self._namespace, filter={"ns": ns, "indexed": _ITEMS})
        ]
        by_root: dict[str, set[str]] = {}
        for ns in empty:
            by_root.setdefault(json.loads(ns)[0], set()).add(ns)
        emptied: set[str] = set()
        for root, gone in by_root.items():
            key = "ns:" + _ns_json([root])
            left = set(self._registry_doc(key)) - gone
            self._put_registry_doc(key, left)
            if not left:
                emptied.add(root)
        if emptied:
            self._put_registry_doc(self._ROOTS, set(self._registry_doc(self._ROOTS)) - emptied)

    def _registered(self, root: str | None) -> list[tuple[str, ...]]:
        roots = [root] if root is not None else self._registry_doc(self._ROOTS)
        return [
            tuple(json.loads(ns)) for r in roots for ns in self._registry_doc("ns:" + _ns_json([r]))
        ]

    def _validate(self, op: Op) -> None:
        if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
            raise ValidationError(f"unknown store operation {type(op).__name__}")
        if isinstance(op, (GetOp, PutOp)):
            if not isinstance(op.namespace, tuple):
                raise InvalidNamespaceError(
                    f"namespace must be a tuple (or list) of str, got {op.namespace!r}"
                )
            if not isinstance(op.key, str):
                raise ValidationError(f"key must be a str, got {type(op.key).__name__}")
        if isinstance(op, SearchOp) and not isinstance(op.namespace_prefix, tuple):
            raise InvalidNamespaceError(
                f"namespace_prefix must be a tuple (or list) of str, got {op.namespace_prefix!r}"
            )
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.value is not None and not isinstance(op.value, Mapping):
                raise ValidationError(
                    f"value must be a dict or None, got {type(op.value).__name__}"
                )
            if op.ttl is not None and (
                isinstance(op.ttl, bool)
                or not isinstance(op.ttl, (int, float))
                or not op.ttl > 0
                or not math.isfinite(op.ttl)
            ):
                raise ValidationError(f"ttl must be minutes > 0 or None, got {op.ttl!r}")
        if isinstance(op, SearchOp):
            _check_filter(op.filter)
            if op.limit < 0 or op.offset < 0:
                raise ValidationError(f"limit and offset must be >= 0, got {op.limit}, {op.offset}")

    @property
    def _refreshes(self) -> bool:
        # As LangGraph's SqliteStore: a read's refresh_ttl takes effect only when the
        # config turns refresh_on_read on (TTLConfig's docs say it defaults to True, but
        # the reference store, and its tests, treat an unset refresh_on_read as off).
        return bool(self.ttl_config and self.ttl_config.get("refresh_on_read", False))

    @property
    def _omit_expired(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def _live(self, now: float) -> dict[str, Any]:
        """The filter that hides expired items, when ``omit_expired`` asks for it."""
        return {"expires_ts": Range(gt=now)} if self._omit_expired else {}

    @staticmethod
    def _parts(record: _Record) -> tuple[tuple[str, ...], str, dict[str, Any], datetime, datetime]:
        p = record.payload
        return (
            tuple(json.loads(p["ns"])),
            str(p["key"]),
            dict(p.get("value") or {}),
            datetime.fromisoformat(p["created_at"]),
            datetime.fromisoformat(p["updated_at"]),
        )

    def _to_item(self, record: _Record) -> Item:
        namespace, key, value, created, updated = self._parts(record)
        return Item(
            namespace=namespace, key=key, value=value, created_at=created, updated_at=updated
        )

    def _to_hit(self, record: _Record, score: float | None = None) -> SearchItem:
        namespace, key, value, created, updated = self._parts(record)
        return SearchItem(namespace, key, value, created, updated, score=score)

    def _fetch(self, ids: Sequence[str]) -> dict[str, _Record]:
        if not ids:
            return {}
        found = self.vector_store.scroll(
            self._namespace, filter={"item_id": list(dict.fromkeys(ids))}
        )
        return {str(r.payload["item_id"]): r for r in found}

    def _texts(self, value: Mapping[str, Any], index: Any) -> list[str]:
        """The texts to embed, one per field path match (LangGraph's per-field vectors)."""
        if index is False:
            return []
        paths = self._tokenized if index is None else [(p, tokenize_path(p)) for p in index]
        texts: list[str] = []
        for _, tokens in paths:
            texts.extend(t for t in get_text_at_path(dict(value), tokens) if t and t.strip())
        return list(dict.fromkeys(texts))

    def _refresh(self, records: Iterable[_Record], now: float) -> None:
        """Restart the TTL clock of ``records`` that have a TTL and have not expired."""
        by_ttl: dict[float, list[str]] = {}
        for r in records:
            ttl = r.payload.get("ttl")
            if ttl is not None and float(r.payload.get("expires_ts", _NEVER)) > now:
                ids = by_ttl.setdefault(float(ttl), [])
                item_id = str(r.payload["item_id"])
                ids.append(item_id)
                ids.extend(
                    _field_id(item_id, i) for i in range(1, int(r.payload.get("vectors", 1)))
                )
        for ttl, ids in by_ttl.items():
            self.vector_store.set_payload(self._namespace, ids, {"expires_ts": now + ttl * 60})

    def _apply_puts(self, puts: Mapping[str, PutOp]) -> None:
        vs = self.vector_store
        existing = self._fetch(list(puts))
        now = self._clock()
        stamp = datetime.fromtimestamp(now, timezone.utc).isoformat()
        dims = vs.embedder.dimensions
        stale: list[str] = []  # field points an item no longer has
        deleted_ns: list[str] = []
        new_ns: list[tuple[str, ...]] = []
        records: list[VectorRecord] = []
        for item_id, op in puts.items():
            old = existing.get(item_id)
            old_vectors = int(old.payload.get("vectors", 1)) if old is not None else 0
            if op.value is None:
                if old is not None:
                    stale.append(item_id)
                    stale.extend(_field_id(item_id, i) for i in range(1, old_vectors))
                    deleted_ns.append(str(old.payload["ns"]))
                continue
            if old is None:
                new_ns.append(op.namespace)
            value = json.loads(json.dumps(dict(op.value), ensure_ascii=False, allow_nan=False))
            texts = self._texts(value, op.index)
            ns_prefixes = [_ns_json(op.namespace[:n]) for n in range(1, len(op.namespace) + 1)]
            expires = now + op.ttl * 60 if op.ttl is not None else _NEVER
            payload: dict[str, Any] = {
                "ns": _ns_json(op.namespace),
                "ns_prefixes": ns_prefixes,
                "item_id": item_id,
                "key": op.key,
                "value": value,
                "created_at": old.payload["created_at"] if old is not None else stamp,
                "updated_at": stamp,
                "updated_ts": now,
                "indexed": 1 if texts else 0,
                "vectors": max(len(texts), 1),
                "expires_ts": expires,
            }
            if op.ttl is not None:
                payload["ttl"] = float(op.ttl)
            records.append(
                VectorRecord(
                    id=item_id,
                    text=texts[0] if texts else "",
                    payload=payload,
                    vector=None if texts else [0.0] * dims,
                )
            )
            for i, text in enumerate(texts[1:], start=1):
                records.append(
                    VectorRecord(
                        id=_field_id(item_id, i),
                        text=text,
                        payload={
                            "ns_prefixes": ns_prefixes,
                            "owner": item_id,
                            "value": value,
                            "indexed": 2,
                            "expires_ts": expires,
                        },
                    )
                )
            stale.extend(_field_id(item_id, i) for i in range(max(len(texts), 1), old_vectors))
        if stale:
            vs.delete(self._namespace, ids=stale)
        if records:
            vs.upsert(self._namespace, records)
        self._register(new_ns)
        if deleted_ns:
            self._unregister_if_empty(deleted_ns)

    def _split_filter(self, flt: dict[str, Any]) -> dict[str, Any]:
        """The part of a filter Qdrant can run itself: top-level string equalities."""
        return {
            f"value.{key}": value
            for key, value in flt.items()
            if _PLAIN_KEY.match(key) and isinstance(value, str)
        }

    def _scan(
        self, base: dict[str, Any], keep: Callable[[_Record], bool], need: int
    ) -> list[_Record]:
        """The newest ``need`` items matching ``base`` and ``keep``: ordered, limited reads."""
        fetch = max(need, 10)
        while True:
            found = self.vector_store.scroll(
                self._namespace, filter=base, order_by="updated_ts", descending=True, limit=fetch
            )
            kept = [r for r in found if keep(r)]
            if len(kept) >= need or len(found) < fetch:
                return kept[:need]
            fetch *= 4

    def _ranked(
        self, query: str, base: dict[str, Any], keep: Callable[[_Record], bool], need: int
    ) -> list[tuple[str, float]]:
        """``(item_id, score)`` of the best ``need`` items for ``query`` (hybrid, per field).

        Points are ranked by weighted reciprocal rank fusion of a dense and a BM25
        ranking (:func:`offprompt.vectors.fusion.fuse`, the vector store's
        ``fusion_weights``; tied scores share a rank, so equal matches rank by the
        other retriever); an item ranks as its best point and reports that point's
        cosine similarity as its score (what LangGraph's stores report), as the engine
        computed it: a point only BM25 found gets it from a dense query restricted to
        those points, so no stored text is embedded again.
        """
        vs = self.vector_store
        weights = vs.fusion_weights
        flt = {**base, "indexed": _VECTORS}
        top = max(need * 2, 20)
        while True:
            dense = vs.search(self._namespace, query, top_n=top, filter=flt, mode="dense")
            sparse = (
                vs.search(self._namespace, query, top_n=top, filter=flt, mode="sparse")
                if vs.sparse_encoder is not None and weights[1] > 0
                else []
            )
            fused = fuse([dense, sparse], weights, key=lambda h: h.id, score=lambda h: h.score)
            best: dict[str, Hit] = {}  # item id -> its best point, best item first
            for hit, _ in fused:
                if not keep(_Record(id=hit.id, text="", payload=hit.payload)):
                    continue
                best.setdefault(str(hit.payload.get("owner") or hit.payload["item_id"]), hit)
            if len(best) >= need or (len(dense) < top and len(sparse) < top):
                page = list(best.items())[:need]
                cosines = {h.id: h.score for h in dense}
                cosines.update(self._cosines(query, [h for _, h in page if h.id not in cosines]))
                return [(item_id, cosines.get(hit.id, 0.0)) for item_id, hit in page]
            top *= 4

    def _cosines(self, query: str, points: Sequence[Hit]) -> dict[str, float]:
        """The engine's cosine similarity of ``query`` and each of ``points``."""
        vs = self.vector_store
        items = [h.id for h in points if not h.payload.get("owner")]
        owners = sorted({str(h.payload["owner"]) for h in points if h.payload.get("owner")})
        found: dict[str, float] = {}
        if items:
            flt: dict[str, Any] = {"item_id": items, "indexed": 1}
            hits = vs.search(self._namespace, query, top_n=len(items), filter=flt, mode="dense")
            found.update((h.id, h.score) for h in hits)
        if owners:
            flt = {"owner": owners, "indexed": 2}
            count = vs.count(self._namespace, filter=flt)
            if count:
                hits = vs.search(self._namespace, query, top_n=count, filter=flt, mode="dense")
                found.update((h.id, h.score) for h in hits)
        return found

    def _search(self, op: SearchOp, now: float) -> list[SearchItem]:
        flt = _check_filter(op.filter)
        base: dict[str, Any] = {**self._split_filter(flt), **self._live(now)}
        if op.namespace_prefix:
            base["ns_prefixes"] = _ns_json(op.namespace_prefix)
        need = op.offset + op.limit
        if need == 0:
            return []

        def keep(record: _Record) -> bool:
            value = record.payload.get("value") or {}
            return all(_compare(value.get(k), v) for k, v in flt.items())

        if not (op.query and op.query.strip()):
            page = self._scan({**base, "indexed": _ITEMS}, keep, need)[op.offset :]
            if op.refresh_ttl and self._refreshes:
                self._refresh(page, now)
            return [self._to_hit(r) for r in page]
        ranked = self._ranked(op.query, base, keep, need)[op.offset :]
        found = self._fetch([item_id for item_id, _ in ranked])
        records = [(found[i], s) for i, s in ranked if i in found]
        hits = [self._to_hit(r, score=s) for r, s in records]
        if len(hits) < op.limit:  # like InMemoryStore: unindexed matches come last, unscored
            skip = max(op.offset - len(ranked), 0)  # pages past the indexed matches
            extra = self._scan({**base, "indexed": 0}, keep, skip + op.limit - len(hits))
            extra = extra[skip:]
            records.extend((r, 0.0) for r in extra)
            hits.extend(self._to_hit(r) for r in extra)
        if op.refresh_ttl and self._refreshes:
            self._refresh([r for r, _ in records], now)
        return hits

    def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        literal: list[str] = []
        for c in conditions:  # the longest literal prefix narrows the registry read
            if c.match_type == "prefix":
                for label in c.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        found = self._registered(literal[0] if literal else None)
        found = [ns for ns in found if all(_matches(c, ns) for c in conditions)]
        if self._omit_expired:
            live = self._live(now)
            found = [
                ns
                for ns in found
                if self.vector_store.count(
                    self._namespace, filter={"ns": _ns_json(ns), "indexed": _ITEMS, **live}
                )
            ]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``; reads see the store as it was before this batch's puts.

        Puts to the same item within one batch: the last one wins. Every op is
        validated before anything runs, so a bad op leaves the store untouched.
        Namespaces may be tuples or lists of str.
        """
        ops = [_normalized(op) for op in ops]
        for op in ops:
            self._validate(op)
        with self._lock:
            now = self._clock()
            ids = [_item_id(op.namespace, op.key) for op in ops if isinstance(op, GetOp)]
            gets = self._fetch(ids)
            if self._omit_expired:
                gets = {
                    i: r
                    for i, r in gets.items()
                    if float(r.payload.get("expires_ts", _NEVER)) > now
                }
            refresh = [
                gets[_item_id(op.namespace, op.key)]
                for op in ops
                if isinstance(op, GetOp)
                and op.refresh_ttl
                and self._refreshes
                and _item_id(op.namespace, op.key) in gets
            ]
            results: list[Result] = []
            puts: dict[str, PutOp] = {}
            for op in ops:
                if isinstance(op, GetOp):
                    record = gets.get(_item_id(op.namespace, op.key))
                    results.append(self._to_item(record) if record is not None else None)
                elif isinstance(op, SearchOp):
                    results.append(self._search(op, now))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op, now))
                else:
                    puts[_item_id(op.namespace, op.key)] = op
                    results.append(None)
            if refresh:
                self._refresh({str(r.payload["item_id"]): r for r in refresh}.values(), now)
            if puts:
                self._apply_puts(puts)
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (the embedded engine runs in a worker thread).

        Concurrent calls on one event loop share a worker-thread hop: each call's ops
        still run as their own :meth:`batch` (same semantics, same errors), one after
        the other, in one thread.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        queue = self._pending.get(loop)
        if queue is None:
            queue = self._pending[loop] = []
            loop.call_soon(self._flush, loop)
        queue.append((list(ops), future))
        result: list[Result] = await future
        return result

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        groups = self._pending.pop(loop, [])

        def run() -> list[tuple[bool, Any]]:
            out: list[tuple[bool, Any]] = []
            for ops, _ in groups:
                try:
                    out.append((True, self.batch(ops)))
                except BaseException as exc:  # handed to the caller that sent these ops
                    out.append((False, exc))
            return out

        async def deliver() -> None:
            try:
                outcomes = await asyncio.to_thread(run)
            except BaseException as exc:
                outcomes = [(False, exc)] * len(groups)
            for (ok, value), (_, future) in zip(outcomes, groups, strict=True):
                if future.done():
                    continue  # the caller was cancelled
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

        task = loop.create_task(deliver())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self) -> int:
        """Delete every expired item; returns how many items were deleted."""
        with self._lock:
            now = self._clock()
            expired = {"expires_ts": Range(lt=now)}
            vs = self.vector_store
            gone = vs.scroll(self._namespace, filter={**expired, "indexed": _ITEMS})
            if not gone:
                return 0
            vs.delete(self._namespace, filter=expired)
            self._unregister_if_empty(str(r.payload["ns"]) for r in gone)
            return len(gone)

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` in a daemon thread every ``sweep_interval_minutes``.

        The interval defaults to the TTL config's ``sweep_interval_minutes``. Returns a
        future that completes when :meth:`stop_ttl_sweeper` (or :meth:`close`) stops it.
        """
        interval = sweep_interval_minutes
        if interval is None and self.ttl_config:
            interval = self.ttl_config.get("sweep_interval_minutes")
        if interval is None or isinstance(interval, bool) or not interval > 0:
            raise ValidationError(
                "start_ttl_sweeper needs sweep_interval_minutes > 0 (argument or TTLConfig)"
            )
        with self._lock:
            if self._sweeper is not None and not self._sweeper.future.done():
                return self._sweeper.future
            self._sweeper = _Sweeper(self.sweep_ttl, float(interval) * 60)
            return self._sweeper.future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``True`` if it stopped within ``timeout`` seconds."""
        sweeper = self._sweeper
        if sweeper is None:
            return True
        sweeper.stop.set()
        sweeper.thread.join(timeout)
        stopped = not sweeper.thread.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    def close(self) -> None:
        """Stop the TTL sweeper and close the vector store if this store created it."""
        self.stop_ttl_sweeper()
        if self._owned:
            self.vector_store.close()
