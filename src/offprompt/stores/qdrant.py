"""``QdrantStore``: conversation logs in a Qdrant collection, shared by several machines.

Every message is a payload-only point (the collection has no vectors) with id
``uuid5(session, seq)`` and payload ``kind="message", session, seq, role, tokens,
appended_at, body`` (the message as JSON text, so it round-trips byte for byte).
Payload indexes on ``session`` (keyword), ``seq`` (integer) and ``kind`` (keyword) let
a Qdrant server filter and order without scanning; reads order by ``seq``.

Scopes: a point of a scoped partition (:class:`~offprompt.scope.Scope`) also carries
``partition`` (its canonical key) and the set fields ``tenant``, ``user``, ``agent``,
``run`` (all keyword-indexed); its id includes the partition. Every read filters on
``partition`` (the unscoped partition: ``partition`` is empty), so partitions never see
each other's points; ``forget`` selects by the individual fields. Images in messages
are ``kind="blob"`` points, one per partition and content hash, referenced from the
messages' ``blobs`` payload list.

Sequence numbers across machines: each session has one counter point
(``kind="counter"``: ``next_seq``, ``epoch``, ``claim``). A writer reserves ``n`` seqs by
compare-and-swap: it upserts the counter with ``next_seq + n`` and a fresh random
``claim`` under ``update_filter=claim == <the claim it read>`` (Qdrant applies a
conditional update atomically per point), then reads the counter back; if the claim
is its own, the seqs are its, else another writer won and it retries with backoff.
Only then are the message points written, so two writers never share a seq. A writer
that dies between the reservation and the upsert leaves a gap in seqs, never a
duplicate; readers do not assume seqs are contiguous. In one process, a lock
serialises calls (qdrant-client's local mode is not thread-safe).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
import uuid
import warnings
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from offprompt.errors import NotAStoreError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores._blobrefs import decode_cached, externalize
from offprompt.stores.base import (
    BaseStore,
    ForgetCounts,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    check_range,
    check_scope_session,
    check_selector,
    check_state,
    encode_state,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm


Part = tuple[str, str, str, str]
_SCOPE_KEYS = ("tenant", "user", "agent", "run")

__all__ = ["QdrantStore"]

_NAMESPACE = uuid.UUID("6f1b8f5e-4d0c-5a43-9b1e-0ff9203bd5a1")
_MARKER_ID = str(uuid.uuid5(_NAMESPACE, "offprompt-conversation-store"))
_PAGE = 512
_CAS_ATTEMPTS = 200


def _point_id(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x00".join(parts)))


def _pid(part: Part, *parts: str) -> str:
    """Point id in a partition; the unscoped partition keeps the original ids."""
    return _point_id(*parts) if not any(part) else _point_id(*parts, "\x01", *part)


def _partition_key(part: Part) -> str:
    return json.dumps(list(part), ensure_ascii=False)


def _scope_payload(part: Part) -> dict[str, Any]:
    if not any(part):
        return {}
    payload: dict[str, Any] = {"partition": _partition_key(part)}
    payload.update({k: v for k, v in zip(_SCOPE_KEYS, part, strict=True) if v})
    return payload


class QdrantStore(BaseStore):
    """A :class:`~offprompt.stores.ConversationStore` in a Qdrant collection.

    Give exactly one of ``client``, ``location`` (``":memory:"`` or a server URL),
    ``path`` (embedded, on disk) or ``url`` (a Qdrant server or cluster); with none, an
    embedded in-memory client is used. The same code serves all of them.

    Args:
        client: An existing ``QdrantClient``; the store does not close it.
        location: Passed to ``QdrantClient(location=...)``.
        path: Directory of an embedded, persistent Qdrant.
        url: A Qdrant server.
        api_key: The server's API key, with ``url``.
        collection: Collection name; created (payload-only, with indexes) if missing.
            An existing collection that holds points but is not an offprompt store is
            refused with :class:`~offprompt.errors.NotAStoreError`.

    Attributes:
        client: The Qdrant client.
        collection: The collection name.

    Example:
        >>> store = QdrantStore(location=":memory:")
        >>> store.append("s", [Message.user("hi")], [4])
        [0]
        >>> store.read("s")[0].message.text
        'hi'
    """

    def __init__(
        self,
        client: QdrantClient | None = None,
        *,
        location: str | None = None,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "offprompt_messages",
    ) -> None:
        from qdrant_client import QdrantClient

        given = [
            n
            for n, v in (("client", client), ("location", location), ("path", path), ("url", url))
            if v is not None
        ]
        if len(given) > 1:
            raise ValidationError(
                f"give one of client, location, path or url, not {' and '.join(given)}"
            )
        if not isinstance(collection, str) or not collection:
            raise ValidationError(f"collection must be a non-empty str, got {collection!r}")
        self._owns_client = client is None
        if client is None:
            if path is not None:
                client = QdrantClient(path=str(path))
            elif url is not None:
                client = QdrantClient(url=url, api_key=api_key)
            else:
                client = QdrantClient(location=location or ":memory:", api_key=api_key)
        self.client = client
        self.collection = collection
        self._lock = threading.RLock()
        self._ensure_collection()

    def __repr__(self) -> str:
        return f"QdrantStore(collection={self.collection!r})"

    # -- setup -----------------------------------------------------------------------
    def _ensure_collection(self) -> None:
        from qdrant_client.http import models as qm

        with self._lock:
            if not self.client.collection_exists(self.collection):
                try:
                    self.client.create_collection(self.collection, vectors_config={})
                except Exception:
                    if not self.client.collection_exists(self.collection):  # not a lost race
                        raise
            marker = self.client.retrieve(self.collection, [_MARKER_ID])
            if not marker:
                if self.client.count(self.collection, exact=True).count:
                    raise NotAStoreError(
                        f"Qdrant collection {self.collection!r} holds points but is not an "
                        "offprompt conversation store; choose another collection",
                        collection=self.collection,
                    )
                self.client.upsert(
                    self.collection,
                    [
                        qm.PointStruct(
                            id=_MARKER_ID,
                            vector={},
                            payload={"kind": "marker", "app": "offprompt", "schema_version": 1},
                        )
                    ],
                )
            with warnings.catch_warnings():
                # local mode warns that payload indexes have no effect; a server uses them
                warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                for field, schema in (
                    ("session", qm.PayloadSchemaType.KEYWORD),
                    ("kind", qm.PayloadSchemaType.KEYWORD),
                    ("seq", qm.PayloadSchemaType.INTEGER),
                    ("partition", qm.PayloadSchemaType.KEYWORD),
                    ("tenant", qm.PayloadSchemaType.KEYWORD),
                    ("user", qm.PayloadSchemaType.KEYWORD),
                    ("agent", qm.PayloadSchemaType.KEYWORD),
                    ("run", qm.PayloadSchemaType.KEYWORD),
                    ("blobs", qm.PayloadSchemaType.KEYWORD),
                ):
                    self.client.create_payload_index(self.collection, field, schema)

    # -- filters ---------------------------------------------------------------------
    @staticmethod
    def _filter(
        kind: str,
        session_id: str | None = None,
        start: int | None = None,
        end: int | None = None,
        *,
        part: Part | None = ("", "", "", ""),
    ) -> qm.Filter:
        """Points of ``kind`` in exactly partition ``part`` (``None``: any partition)."""
        from qdrant_client.http import models as qm

        must: list[Any] = [qm.FieldCondition(key="kind", match=qm.MatchValue(value=kind))]
        if part is not None:
            if any(part):
                must.append(
                    qm.FieldCondition(
                        key="partition", match=qm.MatchValue(value=_partition_key(part))
                    )
                )
            else:
                must.append(qm.IsEmptyCondition(is_empty=qm.PayloadField(key="partition")))
        if session_id is not None:
            must.append(qm.FieldCondition(key="session", match=qm.MatchValue(value=session_id)))
        if start is not None or end is not None:
            must.append(qm.FieldCondition(key="seq", range=qm.Range(gte=start, lt=end)))
        return qm.Filter(must=must)

    @staticmethod
    def _selector(kind: str, scope: Scope) -> qm.Filter:
        """Points of ``kind`` in every partition ``scope`` selects."""
        from qdrant_client.http import models as qm

        must: list[Any] = [qm.FieldCondition(key="kind", match=qm.MatchValue(value=kind))]
        for field, value in scope.fields().items():
            key = "session" if field == "session" else field
            must.append(qm.FieldCondition(key=key, match=qm.MatchValue(value=value)))
        return qm.Filter(must=must)

    def _scan(
        self,
        session_id: str,
        start: int | None,
        end: int | None,
        fields: list[str],
        part: Part = ("", "", "", ""),
    ) -> list[dict[str, Any]]:
        """Message payloads with ``start <= seq < end``, ordered by seq, page by page."""
        from qdrant_client.http import models as qm

        out: list[dict[str, Any]] = []
        cursor = start
        while True:
            with self._lock:
                points, _ = self.client.scroll(
                    self.collection,
                    scroll_filter=self._filter("message", session_id, cursor, end, part=part),
                    order_by=qm.OrderBy(key="seq", direction=qm.Direction.ASC),
                    limit=_PAGE,
                    with_payload=fields,
                    with_vectors=False,
                )
            out.extend(p.payload or {} for p in points)
            if len(points) < _PAGE:
                return out
            cursor = int(out[-1]["seq"]) + 1

    def _counter(self, session_id: str, part: Part = ("", "", "", "")) -> dict[str, Any] | None:
        with self._lock:
            found = self.client.retrieve(self.collection, [_pid(part, "counter", session_id)])
        return dict(found[0].payload or {}) if found else None

    def _bump(
        self, session_id: str, reserve: int, deletions: int, part: Part = ("", "", "", "")
    ) -> int:
        """Reserve ``reserve`` seqs and add ``deletions`` to the epoch by compare-and-swap.

        Returns the first reserved seq.
        """
        from qdrant_client.http import models as qm

        counter_id = _pid(part, "counter", session_id)
        for attempt in range(_CAS_ATTEMPTS):
            claim = uuid.uuid4().hex
            with self._lock:
                current = self._counter(session_id, part)
                first = int(current["next_seq"]) if current else 0
                payload = {
                    "kind": "counter",
                    "session": session_id,
                    "next_seq": first + reserve,
                    "epoch": (int(current["epoch"]) if current else 0) + deletions,
                    "claim": claim,
                    "last_activity": time.time()
                    if reserve
                    else (current or {}).get("last_activity"),
                    **_scope_payload(part),
                }
                point = qm.PointStruct(id=counter_id, vector={}, payload=payload)
                if current is None:
                    self.client.upsert(
                        self.collection, [point], update_mode=qm.UpdateMode.INSERT_ONLY
                    )
                else:
                    self.client.upsert(
                        self.collection,
                        [point],
                        update_filter=qm.Filter(
                            must=[
                                qm.FieldCondition(
                                    key="claim", match=qm.MatchValue(value=current["claim"])
                                )
                            ]
                        ),
                    )
                after = self._counter(session_id, part)
            if after is not None and after.get("claim") == claim:
                return first
            time.sleep(random.uniform(0, 0.002 * min(attempt + 1, 50)))
        raise StorageError(
            f"could not reserve sequence numbers for session {session_id!r} after "
            f"{_CAS_ATTEMPTS} attempts (heavy contention)",
            session_id=session_id,
        )

    # -- messages --------------------------------------------------------------------
    def _append(
        self, session_id: str, messages: list[Message], tokens: list[int], *, scope: Scope | None
    ) -> list[int]:
        from qdrant_client.http import models as qm

        part = check_scope_session(session_id, scope)
        if not messages:
            return []
        encoded = [externalize(m) for m in messages]
        now = time.time()
        extra = _scope_payload(part)
        blobs = {k: v for _, found in encoded for k, v in found.items()}
        if blobs:
            blob_points = [
                qm.PointStruct(
                    id=_pid(part, "blob", key),
                    vector={},
                    payload={
                        "kind": "blob",
                        "key": key,
                        "data": base64.b64encode(data).decode("ascii"),
                        **extra,
                    },
                )
                for key, data in blobs.items()
            ]
            with self._lock:
                self.client.upsert(self.collection, blob_points, wait=True)
        first = self._bump(session_id, len(messages), 0, part)
        seqs = list(range(first, first + len(messages)))
        points = [
            qm.PointStruct(
                id=_pid(part, "message", session_id, str(seq)),
                vector={},
                payload={
                    "kind": "message",
                    "session": session_id,
                    "seq": seq,
                    "role": m.role,
                    "tokens": count,
                    "appended_at": now,
                    "body": body,
                    **({"blobs": sorted(found)} if found else {}),
                    **extra,
                },
            )
            for seq, m, count, (body, found) in zip(seqs, messages, tokens, encoded, strict=True)
        ]
        with self._lock:
            for i in range(0, len(points), _PAGE):
                self.client.upsert(self.collection, points[i : i + _PAGE], wait=True)
        return seqs

    def _fetch_blobs(self, part: Part, keys: list[str]) -> dict[str, bytes]:
        with self._lock:
            found = self.client.retrieve(
                self.collection, [_pid(part, "blob", k) for k in keys], with_payload=True
            )
        return {
            str(p.payload["key"]): base64.b64decode(p.payload["data"])
            for p in found
            if p.payload and p.payload.get("kind") == "blob"
        }

    def _read(
        self, session_id: str, *, start: int | None, end: int | None, scope: Scope | None
    ) -> list[StoredMessage]:
        part = check_scope_session(session_id, scope)
        payloads = self._scan(session_id, start, end, ["seq", "tokens", "body"], part)
        messages = decode_cached(
            [str(p["body"]) for p in payloads], lambda keys: self._fetch_blobs(part, keys)
        )
        return [
            StoredMessage(session_id, int(p["seq"]), message, int(p["tokens"]))
            for p, message in zip(payloads, messages, strict=True)
        ]

    def read_index(
        self, session_id: str, *, start: int | None = None, scope: Scope | None = None
    ) -> list[IndexEntry]:
        part = check_scope_session(session_id, scope)
        check_range(start, None)
        return [
            IndexEntry(int(p["seq"]), int(p["tokens"]), str(p["role"]), p.get("appended_at"))
            for p in self._scan(
                session_id, start, None, ["seq", "tokens", "role", "appended_at"], part
            )
        ]

    def version(self, session_id: str, *, scope: Scope | None = None) -> SessionVersion:
        part = check_scope_session(session_id, scope)
        counter = self._counter(session_id, part)
        if counter is None:
            return SessionVersion(0, 0)
        return SessionVersion(int(counter["next_seq"]), int(counter["epoch"]))

    def count(self, session_id: str, *, scope: Scope | None = None) -> int:
        part = check_scope_session(session_id, scope)
        return self._count(self._filter("message", session_id, part=part))

    def _count(self, selector: qm.Filter) -> int:
        with self._lock:
            return int(self.client.count(self.collection, count_filter=selector, exact=True).count)

    def _points_of(self, selector: qm.Filter, fields: list[str] | bool) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        offset: Any = None
        while True:
            with self._lock:
                points, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=selector,
                    limit=_PAGE,
                    offset=offset,
                    with_payload=fields,
                    with_vectors=False,
                )
            found.extend(dict(p.payload or {}) for p in points)
            if offset is None:
                return found

    @staticmethod
    def _part_of(payload: dict[str, Any]) -> Part:
        raw = payload.get("partition")
        if not raw:
            return ("", "", "", "")
        a, b, c, d = json.loads(raw)
        return (a, b, c, d)

    def sessions(self, *, scope: Scope | None = None) -> list[SessionInfo]:

        selector = as_scope(scope)
        counters = {
            (self._part_of(p), str(p["session"])): p
            for p in self._points_of(self._selector("counter", selector), True)
        }
        with_state = {
            (self._part_of(p), str(p["session"]))
            for p in self._points_of(self._selector("state", selector), ["session", "partition"])
        }
        out = []
        for part, sid in sorted(set(counters) | with_state, key=lambda k: (k[1], k[0])):
            n = self.count(sid, scope=Scope.from_partition(part)) if (part, sid) in counters else 0
            if not n and (part, sid) not in with_state:
                continue
            last = counters.get((part, sid), {}).get("last_activity")
            out.append(
                SessionInfo(
                    sid,
                    n,
                    None if last is None else datetime.fromtimestamp(last, timezone.utc),
                    Scope.from_partition(part, sid) if any(part) else None,
                )
            )
        return out

    def _gc_blobs(self, part: Part, keys: set[str]) -> int:
        """Delete blobs of ``part`` among ``keys`` that no message references any more."""
        from qdrant_client.http import models as qm

        removed = 0
        for key in sorted(keys):
            selector = self._filter("message", part=part)
            assert selector.must is not None and isinstance(selector.must, list)
            selector.must.append(qm.FieldCondition(key="blobs", match=qm.MatchValue(value=key)))
            if self._count(selector):
                continue
            with self._lock:
                if self.client.retrieve(self.collection, [_pid(part, "blob", key)]):
                    self.client.delete(
                        self.collection,
                        qm.PointIdsList(points=[_pid(part, "blob", key)]),
                        wait=True,
                    )
                    removed += 1
        return removed

    def _blob_keys(self, selector: qm.Filter) -> set[str]:
        return {
            str(k) for p in self._points_of(selector, ["blobs"]) for k in (p.get("blobs") or [])
        }

    def delete_session(self, session_id: str, *, scope: Scope | None = None) -> int:
        from qdrant_client.http import models as qm

        part = check_scope_session(session_id, scope)
        selector = self._filter("message", session_id, part=part)
        with self._lock:
            deleted = self._count(selector)
            keys = self._blob_keys(selector)
            self.client.delete(self.collection, qm.FilterSelector(filter=selector), wait=True)
            self.client.delete(
                self.collection,
                qm.FilterSelector(filter=self._filter("state", session_id, part=part)),
                wait=True,
            )
        self._gc_blobs(part, keys)
        if self._counter(session_id, part) is not None:
            self._bump(session_id, 0, 1, part)
        return deleted

    def delete_range(
        self, session_id: str, start: int | None, end: int | None, *, scope: Scope | None = None
    ) -> int:
        from qdrant_client.http import models as qm

        part = check_scope_session(session_id, scope)
        check_range(start, end)
        selector = self._filter("message", session_id, start, end, part=part)
        with self._lock:
            deleted = self._count(selector)
            keys = self._blob_keys(selector) if deleted else set()
            if deleted:
                self.client.delete(self.collection, qm.FilterSelector(filter=selector), wait=True)
        if deleted:
            self._gc_blobs(part, keys)
            self._bump(session_id, 0, 1, part)
        return deleted

    def forget_scope(self, scope: Scope, *, all: bool = False) -> ForgetCounts:
        from qdrant_client.http import models as qm

        selected = check_selector(scope, all=all)
        counts: dict[str, int] = {}
        with self._lock:
            messages = self._selector("message", selected)
            sessions = {
                (self._part_of(p), str(p["session"]))
                for kind in ("message", "state")
                for p in self._points_of(self._selector(kind, selected), ["session", "partition"])
            }
            blob_keys = {
                (self._part_of(p), str(k))
                for p in self._points_of(messages, ["blobs", "partition"])
                for k in (p.get("blobs") or [])
            }
            for kind in ("message", "state", "counter"):
                selector = self._selector(kind, selected)
                counts[kind] = self._count(selector)
                if counts[kind]:
                    self.client.delete(
                        self.collection, qm.FilterSelector(filter=selector), wait=True
                    )
            blobs = 0
            if selected.session is None:
                selector = self._selector("blob", selected)
                blobs = self._count(selector)
                if blobs:
                    self.client.delete(
                        self.collection, qm.FilterSelector(filter=selector), wait=True
                    )
            else:
                by_part: dict[Part, set[str]] = {}
                for part, key in blob_keys:
                    by_part.setdefault(part, set()).add(key)
                blobs = sum(self._gc_blobs(part, keys) for part, keys in by_part.items())
        return ForgetCounts(counts["message"], counts["state"], len(sessions), blobs)

    def blob_count(self, *, scope: Scope | None = None) -> int:

        return self._count(
            self._selector("blob", as_scope(scope).model_copy(update={"session": None}))
        )

    # -- state -----------------------------------------------------------------------
    def get_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> Any | None:
        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        with self._lock:
            found = self.client.retrieve(self.collection, [_pid(part, "state", session_id, key)])
        return json.loads(found[0].payload["value"]) if found and found[0].payload else None

    def set_state(
        self, session_id: str, key: str, value: Any, *, scope: Scope | None = None
    ) -> None:
        from qdrant_client.http import models as qm

        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        text = encode_state(value)
        point = qm.PointStruct(
            id=_pid(part, "state", session_id, key),
            vector={},
            payload={
                "kind": "state",
                "session": session_id,
                "key": key,
                "value": text,
                **_scope_payload(part),
            },
        )
        with self._lock:
            self.client.upsert(self.collection, [point], wait=True)

    def delete_state(self, session_id: str, key: str, *, scope: Scope | None = None) -> None:
        from qdrant_client.http import models as qm

        part = check_scope_session(session_id, scope)
        check_state(session_id, key)
        with self._lock:
            self.client.delete(
                self.collection,
                qm.PointIdsList(points=[_pid(part, "state", session_id, key)]),
                wait=True,
            )

    def state_keys(
        self, session_id: str, prefix: str = "", *, scope: Scope | None = None
    ) -> list[str]:
        part = check_scope_session(session_id, scope)
        if not isinstance(prefix, str):
            raise ValidationError(f"prefix must be a str, got {type(prefix).__name__}")
        keys = [
            str(p["key"])
            for p in self._points_of(self._filter("state", session_id, part=part), ["key"])
        ]
        return sorted(k for k in keys if k.startswith(prefix))

    def close(self) -> None:
        if self._owns_client:
            with self._lock:
                self.client.close()
