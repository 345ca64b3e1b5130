"""Blob stores for ``BlobArtifactStorage``: in memory, or content-addressed files.

Keys are the SHA-256 of the content, so the same bytes stored twice take one slot.
``FileBlobStore`` writes through a temporary file and ``os.replace`` (atomic on POSIX
and Windows), and validates every tenant and namespace name, so no name can reach a
path outside ``root``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

from offprompt.errors import NotFoundError, StorageError, ValidationError
from offprompt.vectors.names import validate_namespace

__all__ = ["BlobStore", "FileBlobStore", "InMemoryBlobStore", "content_key"]

_KEY = re.compile(r"^[0-9a-f]{64}$")


def content_key(data: bytes) -> str:
    """The content address of ``data``: its SHA-256 in hex."""
    return hashlib.sha256(data).hexdigest()


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValidationError(f"blob key must be 64 lowercase hex characters, got {key!r}")
    return key


@runtime_checkable
class BlobStore(Protocol):
    """Bytes by (tenant, namespace, content key)."""

    def put(self, namespace: str, data: bytes, *, tenant: str = "default") -> str: ...

    def get(self, namespace: str, key: str, *, tenant: str = "default") -> bytes: ...

    def delete(self, namespace: str, key: str | None = None, *, tenant: str = "default") -> int: ...

    def keys(self, namespace: str, *, tenant: str = "default") -> list[str]: ...


class InMemoryBlobStore:
    """Blobs in a dict; for tests and short-lived agents.

    Example:
        >>> store = InMemoryBlobStore()
        >>> key = store.put("shots", b"png bytes")
        >>> store.get("shots", key)
        b'png bytes'
    """

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], dict[str, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, namespace: str, data: bytes, *, tenant: str = "default") -> str:
        scope = (validate_namespace(tenant, what="tenant"), validate_namespace(namespace))
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        key = content_key(data)
        with self._lock:
            self._data.setdefault(scope, {})[key] = data
        return key

    def get(self, namespace: str, key: str, *, tenant: str = "default") -> bytes:
        scope = (validate_namespace(tenant, what="tenant"), validate_namespace(namespace))
        _check_key(key)
        with self._lock:
            try:
                return self._data[scope][key]
            except KeyError:
                raise NotFoundError(
                    f"no blob {key} in namespace {namespace!r}", namespace=namespace
                ) from None

    def delete(self, namespace: str, key: str | None = None, *, tenant: str = "default") -> int:
        scope = (validate_namespace(tenant, what="tenant"), validate_namespace(namespace))
        with self._lock:
            blobs = self._data.get(scope, {})
            if key is None:
                removed = len(blobs)
                self._data.pop(scope, None)
                return removed
            return 1 if blobs.pop(_check_key(key), None) is not None else 0

    def keys(self, namespace: str, *, tenant: str = "default") -> list[str]:
        scope = (validate_namespace(tenant, what="tenant"), validate_namespace(namespace))
        with self._lock:
            return sorted(self._data.get(scope, {}))


class FileBlobStore:
    """Content-addressed files under ``root/<tenant>/<namespace>/<sha256>``.

    Args:
        root: Directory of the store (created if missing).

    Example:
        >>> import tempfile
        >>> store = FileBlobStore(tempfile.mkdtemp())
        >>> store.get("shots", store.put("shots", b"\\x89PNG"))
        b'\\x89PNG'
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create blob store at {self.root}: {exc}", path=str(self.root)
            ) from None

    def _dir(self, namespace: str, tenant: str) -> Path:
        directory = (
            self.root / validate_namespace(tenant, what="tenant") / validate_namespace(namespace)
        ).resolve()
        # Belt and braces: validation already forbids separators and '..'.
        if self.root not in directory.parents:
            raise ValidationError(f"namespace {namespace!r} resolves outside the blob store root")
        return directory

    def put(self, namespace: str, data: bytes, *, tenant: str = "default") -> str:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        directory = self._dir(namespace, tenant)
        key = content_key(data)
        target = directory / key
        if target.exists():
            return key
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StorageError(
                f"cannot write blob to {directory}: {exc}", namespace=namespace
            ) from None
        return key

    def get(self, namespace: str, key: str, *, tenant: str = "default") -> bytes:
        path = self._dir(namespace, tenant) / _check_key(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(
                f"no blob {key} in namespace {namespace!r}", namespace=namespace
            ) from None
        except OSError as exc:
            raise StorageError(f"cannot read blob {path}: {exc}", namespace=namespace) from None

    def delete(self, namespace: str, key: str | None = None, *, tenant: str = "default") -> int:
        directory = self._dir(namespace, tenant)
        if key is not None:
            path = directory / _check_key(key)
            if path.exists():
                path.unlink()
                return 1
            return 0
        removed = 0
        if directory.is_dir():
            for entry in directory.iterdir():
                if entry.is_file():
                    entry.unlink()
                    removed += 0 if entry.name.startswith(".tmp-") else 1
            directory.rmdir()
        return removed

    def keys(self, namespace: str, *, tenant: str = "default") -> list[str]:
        directory = self._dir(namespace, tenant)
        if not directory.is_dir():
            return []
        return sorted(p.name for p in directory.iterdir() if _KEY.match(p.name))
