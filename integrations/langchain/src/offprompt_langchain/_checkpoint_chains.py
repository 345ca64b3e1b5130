"""The delta chains of ``OffpromptSaver``: reading and writing checkpoint rows.

A checkpoint row (format 3, :mod:`offprompt_langchain._checkpoint_rows`) is deflated
with its parent's payload as the preset dictionary; ``depth`` counts the chain, and a
snapshot comes at least every :data:`SNAPSHOT_EVERY` rows, so a read undoes at most
that many deltas. This mixin decodes rows (with a cache of decoded parents), packs
serializer bytes, rewrites rows as snapshots before a checkpoint they depend on is
deleted, and reads and rewrites a row's pending writes. Rows of formats 1 and 2 are
still read.
"""

from __future__ import annotations

import base64
import operator
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, cast

from langgraph.checkpoint.serde.base import SerializerProtocol

from offprompt.errors import DeserializationError, OffpromptError
from offprompt.stores.base import BaseStore
from offprompt_langchain._checkpoint_keys import (
    CP_PREFIX,
    cp_key,
    head_key,
    quote_part,
    unquote_part,
    writes_key,
)
from offprompt_langchain._checkpoint_rows import (
    FORMAT,
    Parts,
    Row,
    decode_payload,
    deflate,
    encode_payload,
    encode_writes,
    inflate,
    parse_row,
)

SNAPSHOT_EVERY = 16  # a delta chain is at most this long: reads stay cheap
_RAW_CACHE = 512
_COMPRESS_ABOVE = 200


class DeltaChains:
    """Checkpoint rows of one store: decode (undoing deltas), pack, snapshot, writes.

    Attributes (set by the saver):
        store: The conversation store the rows live in.
        serde: LangGraph's serializer.
    """

    store: BaseStore
    serde: SerializerProtocol
    _binary: bool
    _raw: OrderedDict[tuple[str, str, str], tuple[bytes | str, Parts]]

    def _dump(self, value: Any) -> list[str]:
        kind, data = self.serde.dumps_typed(value)
        return self._pack(kind, data)

    @staticmethod
    def _pack(kind: str, data: bytes, zdict: bytes | None = None) -> list[str]:
        if zdict:
            packer = zlib.compressobj(9, zdict=zdict)
            delta = packer.compress(data) + packer.flush()
            if len(delta) < len(data):
                return [kind, base64.b64encode(delta).decode("ascii"), "zdict"]
        if len(data) > _COMPRESS_ABOVE:
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                return [kind, base64.b64encode(packed).decode("ascii"), "zlib"]
        return [kind, base64.b64encode(data).decode("ascii")]

    def _load(self, pair: Any, thread_id: str, key: str) -> Any:
        return self._loads(pair[0], self._unpack(pair, thread_id, key), thread_id, key)

    def _unpack(self, pair: Any, thread_id: str, key: str, zdict: bytes | None = None) -> bytes:
        """The serializer's bytes of a stored ``[type, base64, compression?]`` pair."""
        if not (
            isinstance(pair, list)
            and len(pair) in (2, 3)
            and all(isinstance(p, str) for p in pair)
            and (len(pair) == 2 or pair[2] == "zlib" or (pair[2] == "zdict" and zdict))
        ):
            raise DeserializationError(
                f"thread {thread_id!r}: stored value {key!r} is corrupt (expected [type, data])",
                session_id=thread_id,
                key=key,
            )
        try:
            data = base64.b64decode(pair[1], validate=True)
            if len(pair) == 3 and pair[2] == "zdict":
                unpacker = zlib.decompressobj(zdict=cast(bytes, zdict))
                data = unpacker.decompress(data) + unpacker.flush()
            elif len(pair) == 3:
                data = zlib.decompress(data)
        except (ValueError, zlib.error):
            raise DeserializationError(
                f"thread {thread_id!r}: stored value {key!r} is not base64 (or not zlib)",
                session_id=thread_id,
            ) from None
        return data

    def _loads(self, kind: str, data: bytes, thread_id: str, key: str) -> Any:
        try:
            return self.serde.loads_typed((kind, data))
        except Exception as exc:
            raise DeserializationError(
                f"thread {thread_id!r}: {key!r} cannot be read by {type(self.serde).__name__} "
                f"(serializer type {kind!r}): {type(exc).__name__}: {exc}",
                session_id=thread_id,
                key=key,
            ) from None

    def _get(self, thread_id: str, key: str) -> Any:
        try:
            return self.store.get_state(thread_id, key)
        except ValueError as exc:  # a row whose JSON text is damaged
            if isinstance(exc, OffpromptError):
                raise
            raise DeserializationError(
                f"thread {thread_id!r}: stored document {key!r} is corrupt: {exc}",
                session_id=thread_id,
                key=key,
            ) from None

    def _row(self, thread_id: str, ns: str, checkpoint_id: str) -> Row | None:
        key = cp_key(ns, checkpoint_id)
        value = self._get(thread_id, key)
        if value is None:
            return None
        row = parse_row(value)
        if row is None:
            raise DeserializationError(
                f"thread {thread_id!r}: checkpoint document {key!r} is corrupt or of an "
                f"unknown format",
                session_id=thread_id,
                key=key,
            )
        return row

    def _parts(self, thread_id: str, ns: str, checkpoint_id: str, row: Row, hops: int = 0) -> Parts:
        """The checkpoint's body, metadata and own values, undoing its delta."""
        cache_key = (thread_id, ns, checkpoint_id)
        cached = self._raw.get(cache_key)
        if cached is not None and cached[0] == row.data:
            self._raw.move_to_end(cache_key)
            return cached[1]
        what = cp_key(ns, checkpoint_id)
        if row.fmt != FORMAT:
            kind, data = self._body_bytes(thread_id, ns, checkpoint_id, row.doc)
            meta = row.doc.get("metadata")
            values = {
                channel: pair
                for channel, pair in (row.doc.get("values") or {}).items()
                if isinstance(pair, list) and len(pair) == 2
            }
            parts = Parts(
                (kind, data),
                (
                    meta[0] if isinstance(meta, list) and meta else "",
                    self._unpack(meta, thread_id, what),
                ),
                values,
                None,
            )
        else:
            base = None
            if row.depth > 0:
                parent = self._row(thread_id, ns, row.parent) if row.parent else None
                if parent is None or hops >= SNAPSHOT_EVERY:
                    raise DeserializationError(
                        f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a "
                        f"delta against {row.parent!r}, which is missing",
                        session_id=thread_id,
                        key=what,
                    )
                base = self._parts(thread_id, ns, cast(str, row.parent), parent, hops + 1).payload
                if base is None:
                    raise DeserializationError(
                        f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a "
                        f"delta against {row.parent!r}, which is not of format {FORMAT}",
                        session_id=thread_id,
                        key=what,
                    )
            raw = inflate(cast(bytes, row.data), base, what, thread_id)
            parts = decode_payload(raw, what, thread_id)
        self._remember(thread_id, ns, checkpoint_id, row, parts)
        return parts

    def _remember(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row, parts: Parts
    ) -> None:
        self._raw[(thread_id, ns, checkpoint_id)] = (row.data, parts)
        while len(self._raw) > _RAW_CACHE:
            self._raw.popitem(last=False)

    def _body_bytes(
        self, thread_id: str, ns: str, checkpoint_id: str, doc: Mapping[str, Any], hops: int = 0
    ) -> tuple[str, bytes]:
        """A format 1 or 2 checkpoint's body: its serializer type and bytes."""
        pair = doc.get("checkpoint")
        key = cp_key(ns, checkpoint_id)
        zdict = None
        if isinstance(pair, list) and len(pair) == 3 and pair[2] == "zdict":
            base = doc.get("parent")
            base_row = (
                self._row(thread_id, ns, base)
                if isinstance(base, str) and hops < SNAPSHOT_EVERY
                else None
            )
            if base_row is None or base_row.fmt == FORMAT:
                raise DeserializationError(
                    f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a delta "
                    f"against {base!r}, which is missing",
                    session_id=thread_id,
                    key=key,
                )
            zdict = self._body_bytes(thread_id, ns, cast(str, base), base_row.doc, hops + 1)[1]
        data = self._unpack(pair, thread_id, key, zdict)
        return cast(list[str], pair)[0], data

    def _body(self, thread_id: str, ns: str, checkpoint_id: str, row: Row) -> Any:
        kind, data = self._parts(thread_id, ns, checkpoint_id, row).body
        body = self._loads(kind, data, thread_id, cp_key(ns, checkpoint_id))
        if not isinstance(body, dict) or "channel_versions" not in body:
            raise DeserializationError(
                f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is corrupt",
                session_id=thread_id,
            )
        return body

    def _metadata(self, thread_id: str, ns: str, checkpoint_id: str, row: Row) -> Any:
        kind, data = self._parts(thread_id, ns, checkpoint_id, row).metadata
        return self._loads(kind, data, thread_id, cp_key(ns, checkpoint_id))

    def _snapshot_row(
        self, parts: Parts, writes: list[list[Any]] | None, parent: str | None
    ) -> Row:
        payload = parts.payload
        if payload is None:
            payload = encode_payload(parts.body, parts.metadata, parts.values)
        return Row(FORMAT, parent, 0, deflate(payload + encode_writes(writes or []), None))

    def _detach(self, thread_id: str, ns: str, doomed: set[str]) -> None:
        """Rewrite as snapshots the checkpoints that stay but whose delta chain runs
        through one in ``doomed`` (before those are deleted)."""
        if not doomed:
            return
        rows = {
            cid: self._row(thread_id, ns, cid) for _, cid in self._checkpoint_ids(thread_id, ns)
        }
        for cid, row in rows.items():
            if cid in doomed or row is None:
                continue
            link, hops = row.parent if row.depth > 0 else None, 0
            while isinstance(link, str) and link not in doomed and hops < SNAPSHOT_EVERY:
                base = rows.get(link)
                link = base.parent if base is not None and base.depth > 0 else None
                hops += 1
            if not (isinstance(link, str) and link in doomed):
                continue
            parts = self._parts(thread_id, ns, cid, row)
            if row.fmt == FORMAT:
                fresh = self._snapshot_row(parts, parts.writes, row.parent)
                self.store.set_state(thread_id, cp_key(ns, cid), fresh.stored(self._binary))
                self._remember(thread_id, ns, cid, fresh, parts)
            else:
                doc = {k: v for k, v in row.doc.items() if k != "depth"}
                doc["checkpoint"] = self._pack(*parts.body)
                self.store.set_state(thread_id, cp_key(ns, cid), doc)

    def _checkpoint_ids(self, thread_id: str, ns: str | None) -> list[tuple[str, str]]:
        """``(ns, checkpoint_id)`` of the thread, newest first."""
        prefix = CP_PREFIX if ns is None else f"{CP_PREFIX}{quote_part(ns)}/"
        found = []
        for key in self.store.state_keys(thread_id, prefix):
            ns_part, _, cp_id = key[len(CP_PREFIX) :].rpartition("/")
            found.append((unquote_part(ns_part), cp_id))
        found.sort(key=operator.itemgetter(1), reverse=True)
        return found

    def _latest(self, thread_id: str, ns: str) -> tuple[str, Row] | None:
        head = self._get(thread_id, head_key(ns))
        if isinstance(head, str):
            row = self._row(thread_id, ns, head)
            if row is not None:
                return head, row
        # No head yet, or a put died between its checkpoint and its head: list them.
        for _, checkpoint_id in self._checkpoint_ids(thread_id, ns):
            row = self._row(thread_id, ns, checkpoint_id)
            if row is not None:
                return checkpoint_id, row
        return None

    def _writes_of(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row | None
    ) -> dict[str, list[Any]]:
        """The checkpoint's writes by ``task_id<US>idx`` (in its row, or a legacy row)."""
        if row is not None and row.fmt == FORMAT:
            writes = self._parts(thread_id, ns, checkpoint_id, row).writes or []
            return {f"{w[0]}\x1f{w[1]}": list(w) for w in writes if isinstance(w, list) and w}
        key = writes_key(ns, checkpoint_id)
        stored = self._get(thread_id, key) or {}
        if not isinstance(stored, dict):
            raise DeserializationError(
                f"thread {thread_id!r}: writes {key!r} are corrupt", session_id=thread_id
            )
        return stored

    def _store_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        row: Row | None,
        writes: dict[str, list[Any]],
    ) -> None:
        if row is None or row.fmt != FORMAT:
            self.store.set_state(thread_id, writes_key(ns, checkpoint_id), writes)
            return
        parts = self._parts(thread_id, ns, checkpoint_id, row)
        base = None
        if row.depth > 0:
            parent = self._row(thread_id, ns, row.parent) if row.parent else None
            if parent is not None:
                base = self._parts(thread_id, ns, cast(str, row.parent), parent).payload
        payload = cast(bytes, parts.payload)
        if base is None:
            row.depth = 0  # its base is gone (only a damaged thread): a snapshot now
        rows = list(writes.values())
        row.data = deflate(payload + encode_writes(rows), base)
        self.store.set_state(thread_id, cp_key(ns, checkpoint_id), row.stored(self._binary))
        fresh = Parts(parts.body, parts.metadata, parts.values, payload, rows)
        self._remember(thread_id, ns, checkpoint_id, row, fresh)
