"""``OffpromptBlobStore``: a LangChain ``BaseStore[str, bytes]`` over offprompt blob stores.

Use it wherever LangChain takes a byte store (``CacheBackedEmbeddings``, the document
store of a ``MultiVectorRetriever``...) to keep those bytes in the same place as the
task memory's blobs, e.g. a durable ``FileBlobStore``.

Layout. offprompt blob stores are content-addressed per namespace, while LangChain keys
are arbitrary strings, so each key gets its own namespace ``{namespace}.v.{sha256(key)}``
holding one record: a header (magic, write time in ns) followed by the value. A second
namespace ``{namespace}.keys`` holds the key strings themselves (their content address
is the same SHA-256), which is what :meth:`OffpromptBlobStore.yield_keys` lists. Any
key, however long or odd (slashes, ``..``, NUL, emoji), is therefore safe.

Writes put the new record first, then remove older records of the key, then index the
key: a reader always sees the whole old or the whole new value, and when several
processes write one key the newest write time wins.
"""

from __future__ import annotations

import asyncio
import hashlib
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.stores import BaseStore

from offprompt.errors import NotFoundError, ValidationError
from offprompt.names import validate_namespace
from offprompt.task_memory import BlobStore, FileBlobStore, InMemoryBlobStore

__all__ = ["OffpromptBlobStore"]

_MAGIC = b"OPKV\x01"
_HEADER = struct.Struct(">5sQ")  # magic + version, write time (ns since the epoch)


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class OffpromptBlobStore(BaseStore[str, bytes]):
    """A LangChain key-value byte store kept in an offprompt :class:`BlobStore`.

    Args:
        blob_store: ``InMemoryBlobStore`` (default), ``FileBlobStore`` or any
            ``BlobStore``; the one of a ``TaskMemory`` works too.
        path: Shortcut for ``FileBlobStore(path)`` (instead of ``blob_store``).
        namespace: Prefix of the namespaces this store uses; two stores with different
            namespaces (or tenants) on one blob store never see each other's keys.
        tenant: The blob store tenant.

    Attributes:
        blob_store: Where the bytes live.
        namespace: The namespace prefix.
        tenant: The tenant.

    Example:
        >>> store = OffpromptBlobStore()
        >>> store.mset([("a/b", b"1"), ("c", b"2")])
        >>> store.mget(["a/b", "missing"])
        [b'1', None]
        >>> sorted(store.yield_keys(prefix="a"))
        ['a/b']
    """

    def __init__(
        self,
        blob_store: BlobStore | None = None,
        *,
        path: str | Path | None = None,
        namespace: str = "langchain",
        tenant: str = "default",
    ) -> None:
        if blob_store is not None and path is not None:
            raise ValidationError("give blob_store or path, not both")
        if blob_store is None:
            blob_store = FileBlobStore(path) if path is not None else InMemoryBlobStore()
        if not isinstance(blob_store, BlobStore):
            raise ValidationError(
                f"blob_store must be an offprompt BlobStore, got {type(blob_store).__name__}"
            )
        validate_namespace(namespace)
        if len(namespace) > 120:
            raise ValidationError(f"namespace is {len(namespace)} characters; the limit is 120")
        self.blob_store = blob_store
        self.namespace = namespace
        self.tenant = validate_namespace(tenant, what="tenant")
        self._index = f"{namespace}.keys"
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"OffpromptBlobStore({self.blob_store!r}, namespace={self.namespace!r})"

    # -- helpers ----------------------------------------------------------------------
    def _value_namespace(self, key: str) -> str:
        return f"{self.namespace}.v.{_key_hash(key)}"

    @staticmethod
    def _check_key(key: Any) -> str:
        if not isinstance(key, str):
            raise ValidationError(f"keys must be str, got {type(key).__name__}")
        return key

    def _records(self, key: str) -> list[tuple[int, str, bytes]]:
        """``(write time, content key, value)`` of every record of ``key``."""
        namespace = self._value_namespace(key)
        found = []
        for content_key in self.blob_store.keys(namespace, tenant=self.tenant):
            try:
                raw = self.blob_store.get(namespace, content_key, tenant=self.tenant)
            except NotFoundError:
                continue  # removed by a concurrent write or delete
            if len(raw) < _HEADER.size or raw[:5] != _MAGIC:
                continue  # not ours
            _, written = _HEADER.unpack_from(raw)
            found.append((written, content_key, raw[_HEADER.size :]))
        return found

    def _get(self, key: str) -> bytes | None:
        records = self._records(key)
        return max(records)[2] if records else None

    def _set(self, key: str, value: bytes) -> None:
        namespace = self._value_namespace(key)
        # time_ns can repeat on coarse clocks; never let a later write sort before an earlier one.
        written = time.time_ns()
        previous = self._records(key)
        if previous:
            written = max(written, max(r[0] for r in previous) + 1)
        new_key = self.blob_store.put(
            namespace, _HEADER.pack(_MAGIC, written) + value, tenant=self.tenant
        )
        for stamp, content_key, _ in previous:
            if stamp < written and content_key != new_key:
                self.blob_store.delete(namespace, content_key, tenant=self.tenant)
        self.blob_store.put(self._index, key.encode("utf-8", "surrogatepass"), tenant=self.tenant)

    def _delete(self, key: str) -> None:
        self.blob_store.delete(self._value_namespace(key), tenant=self.tenant)
        self.blob_store.delete(self._index, _key_hash(key), tenant=self.tenant)

    # -- BaseStore ----------------------------------------------------------------------
    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        """The values of ``keys``, ``None`` for a missing key."""
        checked = [self._check_key(k) for k in keys]
        with self._lock:
            return [self._get(k) for k in checked]

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Set each key to its value (all pairs are checked before anything is written).

        Raises:
            ValidationError: A key is not a ``str`` or a value is not bytes.
        """
        pairs: list[tuple[str, bytes]] = []
        for key, value in key_value_pairs:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise ValidationError(f"value of {key!r} must be bytes, got {type(value).__name__}")
            pairs.append((self._check_key(key), bytes(value)))
        with self._lock:
            for key, value in pairs:
                self._set(key, value)

    def mdelete(self, keys: Sequence[str]) -> None:
        """Delete ``keys``; missing keys are ignored."""
        checked = [self._check_key(k) for k in keys]
        with self._lock:
            for key in checked:
                self._delete(key)

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        """The stored keys (in no particular order), only those starting with ``prefix``."""
        for content_key in self.blob_store.keys(self._index, tenant=self.tenant):
            try:
                raw = self.blob_store.get(self._index, content_key, tenant=self.tenant)
            except NotFoundError:
                continue
            key = raw.decode("utf-8", "surrogatepass")
            if prefix is None or key.startswith(prefix):
                yield key

    # -- async twins (the blob stores are sync: run them in a worker thread) ----------------
    async def amget(self, keys: Sequence[str]) -> list[bytes | None]:
        return await asyncio.to_thread(self.mget, keys)

    async def amset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        await asyncio.to_thread(self.mset, key_value_pairs)

    async def amdelete(self, keys: Sequence[str]) -> None:
        await asyncio.to_thread(self.mdelete, keys)

    async def ayield_keys(self, *, prefix: str | None = None) -> AsyncIterator[str]:
        keys = await asyncio.to_thread(lambda: list(self.yield_keys(prefix=prefix)))
        for key in keys:
            yield key
