"""How ``OffpromptSaver`` lays out one checkpoint as one state row (format 3).

A row is, on a store that keeps bytes (``binary_state``, SQLite), the bytes ``3``,
``depth``, the parent (``0``: none; ``1`` and 16 bytes: a uuid; ``2``, a 2-byte length and
UTF-8: any other id) and then ``data``; on other stores the JSON list
``[3, parent, depth, base85 of data]``. Either way:

* ``data``: raw deflate of the checkpoint's *payload* followed by its pending
  writes, compressed with its parent's payload as the preset dictionary when
  ``depth > 0`` (a delta; ``depth`` counts the chain back to a snapshot, ``0``);
* the payload: one line of JSON ``[body type, body length, metadata type, metadata
  length, values]``, a newline, then the serializer's bytes of the body, of the metadata
  and of each small channel value, back to back (no base64, no repeated keys). It never
  changes once put, so children can be deltas against it;
* ``values``: ``{channel: [version, ref]}`` for the channels the row holds itself:
  ``{"messages": [[start, length], ...]}`` (session seqs), ``{"empty": true}`` or
  ``{"raw": [type, length]}`` (bytes in the payload); larger values have rows of their own;
* the writes (JSON after the payload, absent while there are none):
  ``[task_id, idx, channel, value, task_path]`` each, ``value`` a packed serializer value
  or a message reference; they change after the put, so a write rewrites the row.
"""

from __future__ import annotations

import base64
import json
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from offprompt.errors import DeserializationError

FORMAT = 3

__all__ = [
    "FORMAT",
    "Parts",
    "Row",
    "decode_payload",
    "deflate",
    "encode_payload",
    "encode_writes",
    "inflate",
    "parse_row",
]


@dataclass
class Row:
    """A stored checkpoint row, any format (1 and 2: a dict document, ``doc``)."""

    fmt: int
    parent: str | None
    depth: int
    data: bytes | str  # format 3: the deflated bytes; 1 and 2: the body's base64
    doc: dict[str, Any] = field(default_factory=dict)

    def stored(self, binary: bool) -> Any:
        """The value of a format-3 row: bytes, or JSON for a store without bytes."""
        data = cast(bytes, self.data)
        if not binary:
            return [FORMAT, self.parent, self.depth, base64.b85encode(data).decode("ascii")]
        return bytes([FORMAT, self.depth]) + _parent_bytes(self.parent) + data


def _parent_bytes(parent: str | None) -> bytes:
    if parent is None:
        return b"\0"
    try:
        if str(uuid.UUID(parent)) == parent:
            return b"\1" + uuid.UUID(parent).bytes
    except ValueError:
        pass
    raw = parent.encode("utf-8")
    return b"\2" + len(raw).to_bytes(2, "big") + raw


@dataclass
class Parts:
    """A checkpoint's decoded payload."""

    body: tuple[str, bytes]
    metadata: tuple[str, bytes]
    # channel -> [version, ref]; a "raw" ref holds (type, bytes) here
    values: dict[str, list[Any]]
    payload: bytes | None  # None for formats 1, 2: not a base for a format-3 delta
    writes: list[list[Any]] | None = None  # None: in a writes row of its own (formats 1, 2)


def parse_row(value: Any) -> Row | None:
    """The row of a stored value, or ``None`` if it is not a checkpoint row."""
    if isinstance(value, bytes):
        return _parse_bytes(value)
    if isinstance(value, list):
        if (
            len(value) == 4
            and value[0] == FORMAT
            and (value[1] is None or isinstance(value[1], str))
            and isinstance(value[2], int)
            and isinstance(value[3], str)
        ):
            try:
                data = base64.b85decode(value[3])
            except ValueError:
                return None
            return Row(FORMAT, value[1], value[2], data)
        return None
    if isinstance(value, dict) and value.get("format") in (1, 2):
        pair = value.get("checkpoint")
        body = pair[1] if isinstance(pair, list) and len(pair) >= 2 else ""
        depth = value.get("depth", 0)
        return Row(
            int(value["format"]),
            value.get("parent"),
            depth if isinstance(depth, int) else 0,
            body if isinstance(body, str) else "",
            value,
        )
    return None


def _parse_bytes(value: bytes) -> Row | None:
    if len(value) < 3 or value[0] != FORMAT:
        return None
    depth, kind, rest = value[1], value[2], value[3:]
    parent: str | None = None
    if kind == 1 and len(rest) >= 16:
        parent, rest = str(uuid.UUID(bytes=rest[:16])), rest[16:]
    elif kind == 2 and len(rest) >= 2:
        size = int.from_bytes(rest[:2], "big")
        try:
            parent = rest[2 : 2 + size].decode("utf-8")
        except UnicodeDecodeError:
            return None
        rest = rest[2 + size :]
    elif kind != 0:
        return None
    return Row(FORMAT, parent, depth, rest)


def encode_payload(
    body: tuple[str, bytes], metadata: tuple[str, bytes], values: Mapping[str, list[Any]]
) -> bytes:
    chunks = [body[1], metadata[1]]
    head: dict[str, list[Any]] = {}
    for channel, (version, ref) in values.items():
        if "raw" in ref:
            kind, data = ref["raw"]
            head[channel] = [version, {"raw": [kind, len(data)]}]
            chunks.append(data)
        else:
            head[channel] = [version, ref]
    line = json.dumps(
        [body[0], len(body[1]), metadata[0], len(metadata[1]), head], separators=(",", ":")
    )
    return line.encode("ascii") + b"\n" + b"".join(chunks)


def encode_writes(writes: list[list[Any]]) -> bytes:
    return json.dumps(writes, separators=(",", ":")).encode("ascii") if writes else b""


def decode_payload(stream: bytes, what: str, thread_id: str) -> Parts:
    """The parts of a row's inflated data: its payload, then its writes."""
    line, sep, rest = stream.partition(b"\n")
    try:
        body_kind, body_len, meta_kind, meta_len, head = json.loads(line)
        body = (str(body_kind), rest[:body_len])
        offset = body_len
        metadata = (str(meta_kind), rest[offset : offset + meta_len])
        offset += meta_len
        values: dict[str, list[Any]] = {}
        for channel, (version, ref) in head.items():
            if not isinstance(ref, dict):
                raise ValueError(f"channel {channel!r}")
            if "raw" in ref:
                kind, length = ref["raw"]
                ref = {"raw": (str(kind), rest[offset : offset + length])}
                offset += length
            values[channel] = [version, ref]
        if not sep or offset > len(rest) or len(body[1]) != body_len:
            raise ValueError("lengths do not add up")
        tail = rest[offset:]
        writes = json.loads(tail) if tail else []
        if not isinstance(writes, list):
            raise ValueError("writes")
    except (ValueError, TypeError, KeyError) as exc:
        raise DeserializationError(
            f"thread {thread_id!r}: checkpoint {what!r} is corrupt ({exc})",
            session_id=thread_id,
            key=what,
        ) from None
    return Parts(body, metadata, values, stream[: len(line) + 1 + offset], writes)


def deflate(payload: bytes, base: bytes | None) -> bytes:
    # The smallest window that holds the base and the payload: a 32 KB window costs more
    # to set up than a small row takes to compress. Any window inflates with 15 bits.
    wbits = min(15, max(9, (len(payload) + len(base or b"")).bit_length()))
    packer = (
        zlib.compressobj(9, zlib.DEFLATED, -wbits, 2, zdict=base)
        if base
        else zlib.compressobj(9, zlib.DEFLATED, -wbits, 2)
    )
    return packer.compress(payload) + packer.flush()


def inflate(data: bytes, base: bytes | None, what: str, thread_id: str) -> bytes:
    try:
        unpacker = zlib.decompressobj(-15, zdict=base) if base else zlib.decompressobj(-15)
        out = unpacker.decompress(data) + unpacker.flush()
        if not unpacker.eof:
            raise zlib.error("truncated")
    except zlib.error as exc:
        raise DeserializationError(
            f"thread {thread_id!r}: checkpoint {what!r} is corrupt (not deflate: {exc})",
            session_id=thread_id,
            key=what,
        ) from None
    return out
