"""``QdrantStore``: conversation logs in a Qdrant collection, shared by several machines.

Every message is a payload-only point (the collection has no vectors) with id
``uuid5(session, seq)`` and payload ``kind="message", session, seq, role, tokens,
appended_at, body`` (the message as JSON text, so it round-trips byte for byte).
Payload indexes on ``session`` (keyword), ``seq`` (integer) and ``kind`` (keyword) let
a Qdrant server filter and order without scanning; reads order by ``seq``.

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

import json
import random
import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from offprompt.errors import NotAStoreError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.stores.base import (
    BaseStore,
    IndexEntry,
    SessionInfo,
    SessionVersion,
    StoredMessage,
    check_append,
    check_range,
    check_state,
    encode_state,
    validate_session_id,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

__all__ = ["QdrantStore"]

_NAMESPACE = uuid.UUID("6f1b8f5e-4d0c-5a43-9b1e-0ff9203bd5a1")
_MARKER_ID = str(uuid.uuid5(_NAMESPACE, "offprompt-conversation-store"))
_PAGE = 512
_CAS_ATTEMPTS = 200


def _point_id(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x00".join(parts)))


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
                ):
                    self.client.create_payload_index(self.collection, field, schema)

    # -- filters ---------------------------------------------------------------------
    @staticmethod
    def _filter(
        kind: str, session_id: str | None = None, start: int | None = None, end: int | None = None
    ) -> qm.Filter:
        from qdrant_client.http import models as qm

        must: list[Any] = [qm.FieldCondition(key="kind", match=qm.MatchValue(value=kind))]
        if session_id is not None:
            must.append(qm.FieldCondition(key="session", match=qm.MatchValue(value=session_id)))
        if start is not None or end is not None:
            must.append(qm.FieldCondition(key="seq", range=qm.Range(gte=start, lt=end)))
        return qm.Filter(must=must)

    def _scan(
        self, session_id: str, start: int | None, end: int | None, fields: list[str]
    ) -> list[dict[str, Any]]:
        """Message payloads with ``start <= seq < end``, ordered by seq, page by page."""
        from qdrant_client.http import models as qm

        out: list[dict[str, Any]] = []
        cursor = start
        while True:
            with self._lock:
                points, _ = self.client.scroll(
                    self.collection,
                    scroll_filter=self._filter("message", session_id, cursor, end),
                    order_by=qm.OrderBy(key="seq", direction=qm.Direction.ASC),
                    limit=_PAGE,
                    with_payload=fields,
                    with_vectors=False,
                )
            out.extend(p.payload or {} for p in points)
            if len(points) < _PAGE:
                return out
            cursor = int(out[-1]["seq"]) + 1

    def _counter(self, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self.client.retrieve(self.collection, [_point_id("counter", session_id)])
        return dict(found[0].payload or {}) if found else None

    def _bump(self, session_id: str, reserve: int, deletions: int) -> int:
        """Reserve ``reserve`` seqs and add ``deletions`` to the epoch by compare-and-swap.

        Returns the first reserved seq.
        """
        from qdrant_client.http import models as qm

        counter_id = _point_id("counter", session_id)
        for attempt in range(_CAS_ATTEMPTS):
            claim = uuid.uuid4().hex
            with self._lock:
                current = self._counter(session_id)
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
                after = self._counter(session_id)
            if after is not None and after.get("claim") == claim:
                return first
            time.sleep(random.uniform(0, 0.002 * min(attempt + 1, 50)))
        raise StorageError(
            f"could not reserve sequence numbers for session {session_id!r} after "
            f"{_CAS_ATTEMPTS} attempts (heavy contention)",
            session_id=session_id,
        )

    # -- messages --------------------------------------------------------------------
    def append(
        self, session_id: str, messages: Sequence[Message], tokens: Sequence[int]
    ) -> list[int]:
        from qdrant_client.http import models as qm

        items, counts = check_append(session_id, messages, tokens)
        if not items:
            return []
        bodies = [m.model_dump_json() for m in items]
        now = time.time()
        first = self._bump(session_id, len(items), 0)
        seqs = list(range(first, first + len(items)))
        points = [
            qm.PointStruct(
                id=_point_id("message", session_id, str(seq)),
                vector={},
                payload={
                    "kind": "message",
                    "session": session_id,
                    "seq": seq,
                    "role": m.role,
                    "tokens": count,
                    "appended_at": now,
                    "body": body,
                },
            )
            for seq, m, count, body in zip(seqs, items, counts, bodies, strict=True)
        ]
        with self._lock:
            for i in range(0, len(points), _PAGE):
                self.client.upsert(self.collection, points[i : i + _PAGE], wait=True)
        return seqs

    def read(
        self, session_id: str, *, start: int | None = None, end: int | None = None
    ) -> list[StoredMessage]:
        validate_session_id(session_id)
        check_range(start, end)
        return [
            StoredMessage(session_id, int(p["seq"]), Message.from_json(p["body"]), int(p["tokens"]))
            for p in self._scan(session_id, start, end, ["seq", "tokens", "body"])
        ]

    def read_index(self, session_id: str, *, start: int | None = None) -> list[IndexEntry]:
        validate_session_id(session_id)
        check_range(start, None)
        return [
            IndexEntry(int(p["seq"]), int(p["tokens"]), str(p["role"]))
            for p in self._scan(session_id, start, None, ["seq", "tokens", "role"])
        ]

    def version(self, session_id: str) -> SessionVersion:
        validate_session_id(session_id)
        counter = self._counter(session_id)
        if counter is None:
            return SessionVersion(0, 0)
        return SessionVersion(int(counter["next_seq"]), int(counter["epoch"]))

    def count(self, session_id: str) -> int:
        validate_session_id(session_id)
        with self._lock:
            return int(
                self.client.count(
                    self.collection, count_filter=self._filter("message", session_id), exact=True
                ).count
            )

    def _sessions_of(self, kind: str) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        offset: Any = None
        while True:
            with self._lock:
                points, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=self._filter(kind),
                    limit=_PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                )
            for p in points:
                payload = p.payload or {}
                found[str(payload["session"])] = payload
            if offset is None:
                return found

    def sessions(self) -> list[SessionInfo]:
        counters = self._sessions_of("counter")
        with_state = self._sessions_of("state")
        out = []
        for sid in sorted(set(counters) | set(with_state)):
            n = self.count(sid) if sid in counters else 0
            if not n and sid not in with_state:
                continue
            last = counters.get(sid, {}).get("last_activity")
            out.append(
                SessionInfo(
                    sid, n, None if last is None else datetime.fromtimestamp(last, timezone.utc)
                )
            )
        return out

    def delete_session(self, session_id: str) -> int:
        from qdrant_client.http import models as qm

        validate_session_id(session_id)
        with self._lock:
            deleted = self.count(session_id)
            self.client.delete(
                self.collection,
                qm.FilterSelector(filter=self._filter("message", session_id)),
                wait=True,
            )
            self.client.delete(
                self.collection,
                qm.FilterSelector(filter=self._filter("state", session_id)),
                wait=True,
            )
        if self._counter(session_id) is not None:
            self._bump(session_id, 0, 1)
        return deleted

    def delete_range(self, session_id: str, start: int | None, end: int | None) -> int:
        from qdrant_client.http import models as qm

        validate_session_id(session_id)
        check_range(start, end)
        selector = self._filter("message", session_id, start, end)
        with self._lock:
            deleted = int(
                self.client.count(self.collection, count_filter=selector, exact=True).count
            )
            if deleted:
                self.client.delete(self.collection, qm.FilterSelector(filter=selector), wait=True)
        if deleted:
            self._bump(session_id, 0, 1)
        return deleted

    # -- state -----------------------------------------------------------------------
    def get_state(self, session_id: str, key: str) -> Any | None:
        check_state(session_id, key)
        with self._lock:
            found = self.client.retrieve(self.collection, [_point_id("state", session_id, key)])
        return json.loads(found[0].payload["value"]) if found and found[0].payload else None

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        from qdrant_client.http import models as qm

        check_state(session_id, key)
        text = encode_state(value)
        point = qm.PointStruct(
            id=_point_id("state", session_id, key),
            vector={},
            payload={"kind": "state", "session": session_id, "key": key, "value": text},
        )
        with self._lock:
            self.client.upsert(self.collection, [point], wait=True)

    def delete_state(self, session_id: str, key: str) -> None:
        from qdrant_client.http import models as qm

        check_state(session_id, key)
        with self._lock:
            self.client.delete(
                self.collection,
                qm.PointIdsList(points=[_point_id("state", session_id, key)]),
                wait=True,
            )

    def state_keys(self, session_id: str, prefix: str = "") -> list[str]:
        validate_session_id(session_id)
        if not isinstance(prefix, str):
            raise ValidationError(f"prefix must be a str, got {type(prefix).__name__}")
        keys: list[str] = []
        offset: Any = None
        while True:
            with self._lock:
                points, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=self._filter("state", session_id),
                    limit=_PAGE,
                    offset=offset,
                    with_payload=["key"],
                    with_vectors=False,
                )
            keys.extend(str((p.payload or {})["key"]) for p in points)
            if offset is None:
                return sorted(k for k in keys if k.startswith(prefix))

    def close(self) -> None:
        if self._owns_client:
            with self._lock:
                self.client.close()
