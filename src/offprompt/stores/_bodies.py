"""The compact form a SQLite row keeps of a message body.

A body (:func:`offprompt.stores._blobrefs.externalize`'s JSON) is stored without what
reading it can restore exactly: the ``role`` (the row has its own column), fields at their
defaults (empty ``content``, ``tool_calls``, ``meta``; ``None`` ``tool_call_id`` and
``name``) and, on each part, an empty ``meta``, a ``None`` ``reference`` and a ``name``
equal to the part's ``id`` (the artifact's own default). A compacted body of
:data:`COMPRESS_FROM` bytes or more is stored as raw deflate against a fixed preset
dictionary of the format's keys, when that saves at least a quarter; shorter bodies stay
readable JSON text. Both forms, and the full JSON of files written before, read back as
the same message.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from offprompt.errors import DeserializationError

__all__ = ["COMPRESS_FROM", "pack_body", "unpack_body"]

COMPRESS_FROM = 160
_DEFLATED = 1  # first byte of a compressed body: the dictionary below, raw deflate
# Fixed forever for _DEFLATED (a new dictionary needs a new first byte). The most
# frequent strings come last: deflate codes near matches in fewer bits.
_DICTIONARY = (
    b'"additional_kwargs":{},"response_metadata":{},"usage_metadata":{"input_tokens":'
    b'"output_tokens":"total_tokens":"finish_reason":"stop","model_name":"'
    b'{"type":"ImageArtifact","format":"png","width":"height":'
    b'"reference":"","meta":{"_langchain":{"type":"system","fields":{"status":"success"}}}'
    b'"tool_calls":[{"id":"call_","name":"","arguments":{}}],"tool_call_id":"call_'
    b'"meta":{"_langchain":{"type":"tool","fields":{}}},"name":"'
    b'"meta":{"_langchain":{"type":"ai","fields":{}}},"created_at":"'
    b'"meta":{"_langchain":{"type":"human","fields":{}}},"created_at":"2026-'
    b'{"id":"","content":[{"type":"TextArtifact","id":"","value":"'
)
_DROP_NONE = ("tool_call_id", "name")
_DROP_EMPTY = ("content", "tool_calls", "meta")


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: v
        for k, v in data.items()
        if k != "role"
        and not (k in _DROP_NONE and v is None)
        and not (k in _DROP_EMPTY and v in ([], {}))
    }
    parts = out.get("content")
    if isinstance(parts, list):
        out["content"] = [
            {
                k: v
                for k, v in part.items()
                if not (k == "meta" and v == {})
                and not (k == "reference" and v is None)
                and not (k == "name" and v == part.get("id"))
            }
            if isinstance(part, dict)
            else part
            for part in parts
        ]
    return out


def pack_body(body: str) -> str | bytes:
    """The stored form of a message's JSON body (``str``: JSON, ``bytes``: deflated)."""
    text = json.dumps(_compact(json.loads(body)), ensure_ascii=False, separators=(",", ":"))
    raw = text.encode("utf-8")
    if len(raw) < COMPRESS_FROM:
        return text
    packer = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=_DICTIONARY)
    packed = packer.compress(raw) + packer.flush()
    if len(packed) * 4 > len(raw) * 3:
        return text
    return bytes([_DEFLATED]) + packed


def unpack_body(stored: str | bytes, role: str) -> str:
    """The JSON body (with its ``role``) of a row's stored form."""
    if isinstance(stored, bytes):
        if not stored or stored[0] != _DEFLATED:
            raise DeserializationError("a stored message body has an unknown encoding")
        try:
            unpacker = zlib.decompressobj(-15, zdict=_DICTIONARY)
            text = (unpacker.decompress(stored[1:]) + unpacker.flush()).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as exc:
            raise DeserializationError(f"a stored message body is corrupt: {exc}") from None
    else:
        text = stored
    # A body written in full (schema 3 and before) has its role already: a repeated key
    # with the same value reads the same.
    return '{"role":' + json.dumps(role) + "," + text[1:]
