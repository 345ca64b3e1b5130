"""Images (and other blobs) in stored messages, kept by reference.

A message body is stored as JSON. Before it is written, every ``ImageArtifact`` /
``BlobArtifact`` part has its base64 ``value`` replaced by ``""`` and gains a
``"$blob": <sha256 of the bytes>`` key; the bytes go to the store's blob table once per
partition (content-addressed, so a screenshot repeated 100 times is kept once). On
read the bytes are put back before the message is validated, so callers get the full
artifact and never see a reference.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping

from pydantic_core import PydanticSerializationError

from offprompt.errors import DeserializationError, SerializationError
from offprompt.messages import Message

__all__ = ["REF_KEY", "externalize", "internalize"]

REF_KEY = "$blob"
_BLOB_TYPES = frozenset({"ImageArtifact", "BlobArtifact"})


def _dump(message: Message) -> str:
    try:
        return message.model_dump_json()
    except PydanticSerializationError as exc:
        # Reached only by a message mutated after validation (e.g. a lone surrogate put
        # into a part's value): refuse it before anything is written.
        raise SerializationError(
            f"message {message.id} cannot be stored: {exc}", message_id=message.id
        ) from None


def externalize(message: Message) -> tuple[str, dict[str, bytes]]:
    """The message's JSON body with blob parts replaced by references, and the blobs.

    Raises:
        SerializationError: The message cannot be serialised (it was mutated after
            validation into something invalid, such as text with a lone surrogate).
    """
    if not any(getattr(part, "type", None) in _BLOB_TYPES for part in message.content):
        return _dump(message), {}
    data = json.loads(_dump(message))
    blobs: dict[str, bytes] = {}
    for part in data.get("content", []):
        if isinstance(part, dict) and part.get("type") in _BLOB_TYPES and part.get("value"):
            raw = base64.b64decode(part["value"])
            key = hashlib.sha256(raw).hexdigest()
            blobs[key] = raw
            part["value"] = ""
            part[REF_KEY] = key
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")), blobs


def has_refs(body: str) -> bool:
    return f'"{REF_KEY}"' in body


def ref_keys(body: str) -> list[str]:
    """The blob keys a stored body references."""
    if not has_refs(body):
        return []
    data = json.loads(body)
    return [
        str(part[REF_KEY])
        for part in data.get("content", [])
        if isinstance(part, dict) and REF_KEY in part
    ]


def internalize(body: str, fetch: Callable[[list[str]], Mapping[str, bytes]]) -> Message:
    """The message of a stored body, with referenced blobs fetched and put back."""
    if not has_refs(body):
        return Message.from_json(body)
    data = json.loads(body)
    parts = [p for p in data.get("content", []) if isinstance(p, dict) and REF_KEY in p]
    found = fetch(sorted({str(p[REF_KEY]) for p in parts}))
    for part in parts:
        key = str(part.pop(REF_KEY))
        if key not in found:
            raise DeserializationError(
                f"stored message references blob {key} which is missing from the store",
                blob=key,
            )
        part["value"] = base64.b64encode(found[key]).decode("ascii")
    return Message.from_dict(data)


def decode_cached(
    bodies: list[str], fetch: Callable[[list[str]], Mapping[str, bytes]]
) -> list[Message]:
    """Decode many bodies, fetching every referenced blob once."""
    cache: dict[str, bytes] = {}

    def cached(keys: list[str]) -> Mapping[str, bytes]:
        missing = [k for k in keys if k not in cache]
        if missing:
            cache.update(fetch(missing))
        return cache

    return [internalize(body, cached) for body in bodies]
