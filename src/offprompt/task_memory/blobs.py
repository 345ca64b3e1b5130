"""Blob stores for ``BlobArtifactStorage``: in memory, or content-addressed files.

Keys are the SHA-256 of the content, so the same bytes stored twice take one slot.
``FileBlobStore`` writes through a temporary file and ``os.replace`` (atomic on POSIX
and Windows), and validates every tenant and namespace name, so no name can reach a
path outside ``root``.

Scopes: every method also takes ``scope`` (:class:`~offprompt.scope.Scope`). A scope
with a user, agent, session or run set is its own partition (in files:
``root/.scoped/<hash of the scope>/<namespace>/``, with the scope in ``scope.json``);
otherwise the partition is the tenant (``scope.tenant`` or the ``tenant`` argument).
:meth:`FileBlobStore.forget_scope` deletes every partition a scope selects.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from offprompt.errors import NamespaceError, NotFoundError, StorageError, ValidationError
from offprompt.names import validate_namespace

if TYPE_CHECKING:
    from offprompt.scope import Scope

_SCOPED_DIR = ".scoped"
_Part = tuple[str, str, str, str, str]


def _partition(tenant: str, scope: Scope | None) -> _Part:
    """``(tenant, user, agent, session, run)`` of a blob call, ``""`` for unset."""
    if scope is None:
        return (validate_namespace(tenant, what="tenant"), "", "", "", "")
    from offprompt.scope import as_scope

    resolved = as_scope(scope)
    return (
        resolved.tenant or validate_namespace(tenant, what="tenant"),
        resolved.user or "",
        resolved.agent or "",
        resolved.session or "",
        resolved.run or "",
    )


def _selects(scope: Scope, part: _Part) -> bool:
    fields = ("tenant", "user", "agent", "session", "run")
    return all(part[fields.index(f)] == v for f, v in scope.fields().items())


__all__ = [
    "BlobStore",
    "FileBlobStore",
    "InMemoryBlobStore",
    "ScopedBlobStore",
    "content_key",
]

_KEY = re.compile(r"^[0-9a-f]{64}$")
_TEMP_PREFIX = ".tmp-"
#: Tries of a put whose directory a concurrent namespace delete keeps removing.
_PUT_TRIES = 5
#: A temp file older than this (seconds) is a killed writer's leftover, which a namespace
#: delete removes; a younger one is a write in flight in another process, left alone.
STALE_TEMP_S = 3600.0


def _stale(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > STALE_TEMP_S
    except OSError:
        return False


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

    def put(self, namespace: str, data: bytes, *, tenant: str = "default") -> str:
        """Store ``data`` in the namespace; its content key (SHA-256 hex)."""
        ...

    def get(self, namespace: str, key: str, *, tenant: str = "default") -> bytes:
        """The bytes stored under ``key``; ``NotFoundError`` when there are none."""
        ...

    def delete(self, namespace: str, key: str | None = None, *, tenant: str = "default") -> int:
        """Delete the blob ``key``, or the whole namespace when ``key`` is None; how many blobs
        went.
        """
        ...

    def keys(self, namespace: str, *, tenant: str = "default") -> list[str]:
        """The namespace's blob keys, sorted."""
        ...


class ScopedBlobStore(BlobStore, Protocol):
    """A :class:`BlobStore` whose methods also take ``scope`` and that can forget one."""

    def put(
        self, namespace: str, data: bytes, *, tenant: str = "default", scope: Scope | None = None
    ) -> str:
        """:meth:`BlobStore.put` within ``scope``."""
        ...

    def get(
        self, namespace: str, key: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> bytes:
        """:meth:`BlobStore.get` within ``scope``."""
        ...

    def delete(
        self,
        namespace: str,
        key: str | None = None,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> int:
        """:meth:`BlobStore.delete` within ``scope``."""
        ...

    def keys(
        self, namespace: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> list[str]:
        """:meth:`BlobStore.keys` within ``scope``."""
        ...

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete every blob stored under ``scope`` (``all=True`` for the empty scope); how many
        went.
        """
        ...


class InMemoryBlobStore:
    """Blobs in a dict; for tests and short-lived agents.

    Example:
        >>> store = InMemoryBlobStore()
        >>> key = store.put("shots", b"png bytes")
        >>> store.get("shots", key)
        b'png bytes'
    """

    def __init__(self) -> None:
        self._data: dict[tuple[_Part, str], dict[str, bytes]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(namespace: str, tenant: str, scope: Scope | None) -> tuple[_Part, str]:
        return (_partition(tenant, scope), validate_namespace(namespace))

    def put(
        self, namespace: str, data: bytes, *, tenant: str = "default", scope: Scope | None = None
    ) -> str:
        """Store ``data`` in the namespace; its content key (SHA-256 hex)."""
        part = self._key(namespace, tenant, scope)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        key = content_key(data)
        with self._lock:
            self._data.setdefault(part, {})[key] = data
        return key

    def get(
        self, namespace: str, key: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> bytes:
        """The bytes stored under ``key``; ``NotFoundError`` when there are none."""
        part = self._key(namespace, tenant, scope)
        _check_key(key)
        with self._lock:
            try:
                return self._data[part][key]
            except KeyError:
                raise NotFoundError(
                    f"no blob {key} in namespace {namespace!r}", namespace=namespace
                ) from None

    def get_range(
        self,
        namespace: str,
        key: str,
        start: int,
        stop: int,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> bytes:
        """Bytes ``start:stop`` of the blob ``key`` (what ``get(...)[start:stop]`` gives)."""
        return self.get(namespace, key, tenant=tenant, scope=scope)[start:stop]

    def delete(
        self,
        namespace: str,
        key: str | None = None,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> int:
        """Delete the blob ``key``, or the whole namespace when ``key`` is None; how many blobs
        went.
        """
        part = self._key(namespace, tenant, scope)
        with self._lock:
            blobs = self._data.get(part, {})
            if key is None:
                removed = len(blobs)
                self._data.pop(part, None)
                return removed
            return 1 if blobs.pop(_check_key(key), None) is not None else 0

    def keys(
        self, namespace: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> list[str]:
        """The namespace's blob keys, sorted."""
        part = self._key(namespace, tenant, scope)
        with self._lock:
            return sorted(self._data.get(part, {}))

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete the blobs of every partition ``scope`` selects; returns how many."""
        from offprompt.stores.base import check_selector

        selected = check_selector(scope, all=all)
        removed = 0
        with self._lock:
            for part_ns in [k for k in self._data if _selects(selected, k[0])]:
                removed += len(self._data.pop(part_ns))
        return removed


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

    #: Whether ``TaskMemory`` should call :meth:`put` from a worker thread beside the
    #: card's stats (a store without this attribute: yes). Not for files: measured with
    #: ``benchmarks/bench_shared.py`` (section 1, the disk synced before each store), a
    #: 50 MB put took 0.17-0.21 s from a worker against ~0.06 s on the calling thread,
    #: with ~10 ms of stats to overlap. In memory and on SQL stores the worker's hash and
    #: send do overlap them (10 MB in memory 0.011 s against 0.015 s on the caller).
    put_beside = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create blob store at {self.root}: {exc}", path=str(self.root)
            ) from None

    def _base(self, part: _Part) -> Path:
        if not any(part[1:]):
            if part[0] == _SCOPED_DIR:
                raise NamespaceError(f"tenant {_SCOPED_DIR!r} is reserved by FileBlobStore")
            return self.root / part[0]
        digest = hashlib.sha256(json.dumps(list(part)).encode()).hexdigest()[:32]
        return self.root / _SCOPED_DIR / digest

    def _dir(self, namespace: str, tenant: str, scope: Scope | None = None) -> Path:
        directory = (
            self._base(_partition(tenant, scope)) / validate_namespace(namespace)
        ).resolve()
        # Belt and braces: validation already forbids separators and '..'.
        if self.root not in directory.parents:
            raise ValidationError(f"namespace {namespace!r} resolves outside the blob store root")
        return directory

    def put(
        self, namespace: str, data: bytes, *, tenant: str = "default", scope: Scope | None = None
    ) -> str:
        """Store ``data`` in the namespace's directory (written whole, then renamed); its content
        key.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        directory = self._dir(namespace, tenant, scope)
        key = content_key(data)
        target = directory / key
        if target.exists():
            return key
        part = _partition(tenant, scope)
        for attempt in range(_PUT_TRIES):
            try:
                self._write(directory, target, data, part)
                return key
            except FileNotFoundError:
                # A delete of the namespace in another process removed the (empty)
                # directory between our mkdir and our write: make it again.
                if attempt == _PUT_TRIES - 1:
                    raise StorageError(
                        f"cannot write blob to {directory}: the directory was removed "
                        f"{_PUT_TRIES} times while writing (namespace deleted meanwhile)",
                        namespace=namespace,
                    ) from None
            except OSError as exc:
                raise StorageError(
                    f"cannot write blob to {directory}: {exc}", namespace=namespace
                ) from None
        return key  # pragma: no cover - the loop returns or raises

    @staticmethod
    def _write(directory: Path, target: Path, data: bytes, part: _Part) -> None:
        if any(part[1:]):
            marker = directory.parent / "scope.json"
            if not marker.exists():
                directory.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(json.dumps(list(part)), encoding="utf-8")
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def get(
        self, namespace: str, key: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> bytes:
        """The bytes stored under ``key``; ``NotFoundError`` when there are none."""
        path = self._dir(namespace, tenant, scope) / _check_key(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(
                f"no blob {key} in namespace {namespace!r}", namespace=namespace
            ) from None
        except OSError as exc:
            raise StorageError(f"cannot read blob {path}: {exc}", namespace=namespace) from None

    def get_range(
        self,
        namespace: str,
        key: str,
        start: int,
        stop: int,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> bytes:
        """Bytes ``start:stop`` of the blob ``key``, read alone (what ``get(...)[start:stop]``
        gives, without reading the rest): a passage of a large output costs one small read.

        Raises:
            ValidationError: ``start`` or ``stop`` is negative.
        """
        if start < 0 or stop < 0:
            raise ValidationError(f"blob range needs offsets >= 0, got {start}:{stop}")
        path = self._dir(namespace, tenant, scope) / _check_key(key)
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                return handle.read(max(0, stop - start))
        except FileNotFoundError:
            raise NotFoundError(
                f"no blob {key} in namespace {namespace!r}", namespace=namespace
            ) from None
        except OSError as exc:
            raise StorageError(f"cannot read blob {path}: {exc}", namespace=namespace) from None

    def delete(
        self,
        namespace: str,
        key: str | None = None,
        *,
        tenant: str = "default",
        scope: Scope | None = None,
    ) -> int:
        """Delete the blob ``key``, or the whole namespace when ``key`` is None; how many blobs
        went.
        """
        # Several writers may delete the same files at once (two processes replacing one
        # LangChain key): a file or directory already gone is not an error, only not counted.
        directory = self._dir(namespace, tenant, scope)
        if key is not None:
            try:
                (directory / _check_key(key)).unlink()
            except FileNotFoundError:
                return 0
            except OSError as exc:
                raise StorageError(
                    f"cannot delete blob {key} in {directory}: {exc}", namespace=namespace
                ) from None
            return 1
        removed = 0
        try:
            entries = list(directory.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return 0
        except OSError as exc:
            raise StorageError(
                f"cannot list blobs in {directory}: {exc}", namespace=namespace
            ) from None
        for entry in entries:
            if entry.name.startswith(_TEMP_PREFIX) and not _stale(entry):
                continue  # another process's write in flight: its own to finish or remove
            try:
                entry.unlink()
            except (FileNotFoundError, IsADirectoryError):
                continue  # gone meanwhile, or not ours
            except OSError as exc:
                raise StorageError(
                    f"cannot delete blob {entry}: {exc}", namespace=namespace
                ) from None
            removed += 0 if entry.name.startswith(_TEMP_PREFIX) else 1
        try:
            directory.rmdir()
        except OSError as exc:
            # Gone already, or another process is writing into it (a temp file or a
            # blob it just stored): the directory is theirs now.
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise StorageError(
                    f"cannot delete blob directory {directory}: {exc}", namespace=namespace
                ) from None
        return removed

    def keys(
        self, namespace: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> list[str]:
        """The namespace's blob keys, sorted."""
        directory = self._dir(namespace, tenant, scope)
        try:
            names = [p.name for p in directory.iterdir()]
        except (FileNotFoundError, NotADirectoryError):  # none yet, or deleted meanwhile
            return []
        return sorted(name for name in names if _KEY.match(name))

    def _partitions(self) -> list[tuple[_Part, Path]]:
        found: list[tuple[_Part, Path]] = []
        if not self.root.is_dir():
            return found
        for entry in sorted(self.root.iterdir()):
            if entry.name == _SCOPED_DIR and entry.is_dir():
                for scoped in sorted(entry.iterdir()):
                    marker = scoped / "scope.json"
                    try:
                        raw = json.loads(marker.read_text(encoding="utf-8"))
                        part = (str(raw[0]), str(raw[1]), str(raw[2]), str(raw[3]), str(raw[4]))
                    except (OSError, ValueError, IndexError, TypeError):
                        continue  # not ours, or half-written: never guess
                    found.append((part, scoped))
            elif entry.is_dir():
                found.append(((entry.name, "", "", "", ""), entry))
        return found

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete the blob files of every partition ``scope`` selects; returns how many.

        Re-runnable: a partition half-deleted by a crash is finished on the next call.
        """
        from offprompt.stores.base import check_selector

        selected = check_selector(scope, all=all)
        removed = 0
        for part, directory in self._partitions():
            if not _selects(selected, part):
                continue
            removed += sum(1 for p in directory.rglob("*") if p.is_file() and _KEY.match(p.name))
            try:
                shutil.rmtree(directory)
            except OSError as exc:
                raise StorageError(
                    f"cannot delete blobs under {directory}: {exc}", path=str(directory)
                ) from None
        return removed
