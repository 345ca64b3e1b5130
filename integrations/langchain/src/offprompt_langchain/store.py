"""``OffpromptStore``: a LangGraph ``BaseStore`` on offprompt's Qdrant vector store.

Usable wherever LangGraph takes a store: ``StateGraph.compile(store=...)``,
``langchain.agents.create_agent(..., store=...)``, tools through ``ToolRuntime.store`` or
``get_store()``. Items are points of one :class:`~offprompt.vectors.QdrantVectorStore`
namespace (embedded Qdrant by default, the same code on a server via ``url=``), so
they survive restarts when the store has a ``path``.

Mapping to Qdrant, per item (payload)::

    ns           JSON of the namespace tuple        exact namespace match
    ns_prefixes  JSON of every prefix of it         namespace_prefix search, one condition
    key, value, created_at, updated_at, updated_ts, indexed

Semantic search embeds the text at the configured ``fields`` (``"$"``: the whole value
as JSON, LangGraph's default) with the vector store's ``Embedder`` and ranks by cosine
similarity (Qdrant dense search). Differences from ``InMemoryStore``: an item with
several indexed fields gets one vector of their joined text (not one per field);
searches without a query return the newest ``updated_at`` first; TTL is not supported.

Filters follow LangGraph's semantics (exact match, nested dicts, ``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``). Top-level string equalities run inside the Qdrant
query; the rest are checked on the fetched candidates, fetching more until the page is
full or the candidates run out.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
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
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from offprompt.errors import ValidationError
from offprompt.vectors import QdrantVectorStore, VectorRecord, validate_namespace
from offprompt.vectors.records import VectorRecord as _Record

__all__ = ["OffpromptStore"]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_INDEXES = {
    "ns": "keyword",
    "ns_prefixes": "keyword",
    "item_id": "keyword",
    "indexed": "integer",
    "updated_ts": "float",
}


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


class OffpromptStore(BaseStore):
    """LangGraph store on Qdrant with semantic search through offprompt's ``Embedder``.

    Args:
        vector_store: Where items live (an embedded in-memory store if omitted, owned
            and closed by :meth:`close`). Its embedder does the semantic search.
        namespace: The vector-store namespace that holds every item.
        fields: Paths whose text is embedded (LangGraph path syntax); ``["$"]`` (the
            whole value) by default. ``put(..., index=[...])`` overrides per item,
            ``index=False`` stores the item without a vector.

    Example:
        >>> store = OffpromptStore()
        >>> store.put(("users", "alice"), "prefs", {"text": "prefers dark mode"})
        >>> store.get(("users", "alice"), "prefs").value
        {'text': 'prefers dark mode'}
        >>> store.search(("users",), query="display theme")[0].key
        'prefs'
        >>> store.close()
    """

    supports_ttl: bool = False

    def __init__(
        self,
        vector_store: QdrantVectorStore | None = None,
        *,
        namespace: str = "langgraph_store",
        fields: Sequence[str] | None = None,
    ) -> None:
        self._namespace = validate_namespace(namespace)
        self._owned = vector_store is None
        self.vector_store = vector_store if vector_store is not None else QdrantVectorStore()
        self.fields = list(fields) if fields is not None else ["$"]
        for path in self.fields:
            if not isinstance(path, str) or not path:
                raise ValidationError(f"index fields must be non-empty str paths, got {path!r}")
        self._tokenized = [(p, p if p == "$" else tokenize_path(p)) for p in self.fields]
        for key, kind in _INDEXES.items():
            self.vector_store.create_payload_index(key, kind)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"OffpromptStore(namespace={self._namespace!r}, vector_store={self.vector_store!r})"

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _validate(op: Op) -> None:
        if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
            raise ValidationError(f"unknown store operation {type(op).__name__}")
        if isinstance(op, (GetOp, PutOp)):
            if not isinstance(op.namespace, tuple):
                raise InvalidNamespaceError(
                    f"namespace must be a tuple of str, got {op.namespace!r}"
                )
            if not isinstance(op.key, str):
                raise ValidationError(f"key must be a str, got {type(op.key).__name__}")
        if isinstance(op, SearchOp) and not isinstance(op.namespace_prefix, tuple):
            raise InvalidNamespaceError(
                f"namespace_prefix must be a tuple of str, got {op.namespace_prefix!r}"
            )
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.value is not None and not isinstance(op.value, Mapping):
                raise ValidationError(
                    f"value must be a dict or None, got {type(op.value).__name__}"
                )
            if op.ttl is not None:
                raise NotImplementedError("TTL is not supported by OffpromptStore; use ttl=None")
        if isinstance(op, SearchOp):
            _check_filter(op.filter)
            if op.limit < 0 or op.offset < 0:
                raise ValidationError(f"limit and offset must be >= 0, got {op.limit}, {op.offset}")

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

    def _embed_text(self, value: Mapping[str, Any], index: Any) -> str:
        if index is False:
            return ""
        paths = self._tokenized if index is None else [(p, tokenize_path(p)) for p in index]
        texts: list[str] = []
        for _, tokens in paths:
            texts.extend(get_text_at_path(dict(value), tokens))
        return "\n".join(t for t in texts if t)

    def _apply_puts(self, puts: Mapping[str, PutOp]) -> None:
        deletes = [i for i, op in puts.items() if op.value is None]
        if deletes:
            self.vector_store.delete(self._namespace, ids=deletes)
        writes = {i: op for i, op in puts.items() if op.value is not None}
        if not writes:
            return
        existing = self._fetch(list(writes))
        now = datetime.now(timezone.utc)
        dims = self.vector_store.embedder.dimensions
        records = []
        for item_id, op in writes.items():
            assert op.value is not None
            value = json.loads(json.dumps(dict(op.value), ensure_ascii=False, allow_nan=False))
            text = self._embed_text(value, op.index)
            old = existing.get(item_id)
            created = old.payload["created_at"] if old is not None else now.isoformat()
            payload = {
                "ns": _ns_json(op.namespace),
                "ns_prefixes": [
                    _ns_json(op.namespace[:n]) for n in range(1, len(op.namespace) + 1)
                ],
                "item_id": item_id,
                "key": op.key,
                "value": value,
                "created_at": created,
                "updated_at": now.isoformat(),
                "updated_ts": now.timestamp(),
                "indexed": 1 if text.strip() else 0,
            }
            records.append(
                VectorRecord(
                    id=item_id,
                    text=text,
                    payload=payload,
                    vector=None if text.strip() else [0.0] * dims,
                )
            )
        self.vector_store.upsert(self._namespace, records)

    def _split_filter(self, flt: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        pushed: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in flt.items():
            if _PLAIN_KEY.match(key) and isinstance(value, str):
                pushed[f"value.{key}"] = value
            else:
                rest[key] = value
        return pushed, rest

    def _search(self, op: SearchOp) -> list[SearchItem]:
        flt = _check_filter(op.filter)
        pushed, _ = self._split_filter(flt)
        base: dict[str, Any] = dict(pushed)
        if op.namespace_prefix:
            base["ns_prefixes"] = _ns_json(op.namespace_prefix)
        need = op.offset + op.limit
        if need == 0:
            return []

        def keep(record: _Record) -> bool:
            value = record.payload.get("value") or {}
            return all(_compare(value.get(k), v) for k, v in flt.items())

        if op.query and op.query.strip():
            top = max(need * 2, 20)
            while True:
                hits = self.vector_store.search(
                    self._namespace,
                    op.query,
                    top_n=top,
                    filter={**base, "indexed": 1},
                    mode="dense",
                )
                matched = [
                    (h.score, _Record(id=h.id, text=h.text, payload=h.payload))
                    for h in hits
                    if keep(_Record(id=h.id, text=h.text, payload=h.payload))
                ]
                if len(matched) >= need or len(hits) < top:
                    break
                top *= 4
            page: list[SearchItem] = [
                self._to_hit(r, score=s) for s, r in matched[op.offset : need]
            ]
            if len(page) < op.limit:  # like InMemoryStore: unindexed matches come last, unscored
                unindexed = self.vector_store.scroll(self._namespace, filter={**base, "indexed": 0})
                extra = sorted(
                    (r for r in unindexed if keep(r)), key=lambda r: -float(r.payload["updated_ts"])
                )
                page.extend(self._to_hit(r) for r in extra[: op.limit - len(page)])
            return page
        records = [
            r for r in self.vector_store.scroll(self._namespace, filter=base or None) if keep(r)
        ]
        records.sort(key=lambda r: (-float(r.payload["updated_ts"]), str(r.payload["key"])))
        return [self._to_hit(r) for r in records[op.offset : need]]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for batch in self.vector_store.iter_scroll(self._namespace):
            for r in batch:
                seen.add(tuple(json.loads(r.payload["ns"])))
        found = [ns for ns in seen if all(_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``; reads see the store as it was before this batch's puts.

        Puts to the same item within one batch: the last one wins. Every op is
        validated before anything runs, so a bad op leaves the store untouched.
        """
        ops = list(ops)
        for op in ops:
            self._validate(op)
        gets = self._fetch([_item_id(op.namespace, op.key) for op in ops if isinstance(op, GetOp)])
        results: list[Result] = []
        puts: dict[str, PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                record = gets.get(_item_id(op.namespace, op.key))
                results.append(self._to_item(record) if record is not None else None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                puts[_item_id(op.namespace, op.key)] = op
                results.append(None)
        if puts:
            self._apply_puts(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (the embedded engine runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def close(self) -> None:
        """Close the vector store if this store created it."""
        if self._owned:
            self.vector_store.close()
