"""Blob stores for ``BlobArtifactStorage``: in memory, or content-addressed files.

Keys are the SHA-256 of the content, so the same bytes stored twice take one slot.
``FileBlobStore`` writes through a temporary file and ``os.replace`` (atomic on POSIX
and Windows), and validates every tenant and namespace name, so no name can reach a
path outside ``root``.

Integrity: ``FileBlobStore.get`` and ``get_range`` never return bytes that are not the
content of their key. A file whose size or SHA-256 does not match its key (truncated,
edited in place, a short read) raises :class:`~offprompt.errors.StorageError` naming the
namespace and the key, and is left exactly as it is (never deleted nor rewritten). Each
file is hashed once per store instance (so once per process for a ``TaskMemory``) and
per file signature ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)``, taken from the open
file: a file changed since (a new size, inode, mtime or change time) is hashed again,
so a repeated grep or ranged read costs no hash. Files written by this store are
recorded as verified when written. ``StoreBlobStore`` (blobs in a SQL store) hashes
what it returns once per key and process too.

Names: a tenant or namespace is a directory name of ``root``. One whose UTF-8 is longer
than 255 bytes (what most file systems allow in one name) is stored under
``..sha256-<SHA-256 hex of its UTF-8>`` instead: no valid name contains ``..``, so this
never collides with a plain name, and names that fit keep their plain directory (data
written before stays where it is). A derived tenant directory holds its real name in
the file ``..name`` (for :meth:`FileBlobStore.forget_scope`, which lists tenants). Every
method maps names the same way. An ``OSError`` of the file system surfaces as
``StorageError`` naming the namespace and the cause; a missing blob is ``NotFoundError``.

Scopes: every method also takes ``scope`` (:class:`~offprompt.scope.Scope`). A scope
with a user, agent, session or run set is its own partition (in files:
``root/.scoped/<hash of the scope>/<namespace>/``, with the scope in ``scope.json``);
otherwise the partition is the tenant (``scope.tenant`` or the ``tenant`` argument).
:meth:`FileBlobStore.forget_scope` deletes every partition a scope selects.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

from offprompt.errors import NamespaceError, NotFoundError, StorageError, ValidationError
from offprompt.names import validate_namespace

if TYPE_CHECKING:
    from offprompt.scope import Scope

_SCOPED_DIR = ".scoped"
_Part = tuple[str, str, str, str, str]
#: What identifies one version of a blob file: ``(st_ino, st_size, st_mtime_ns,
#: st_ctime_ns)`` (``st_ctime_ns`` changes on any write or ``utime``, but is the creation
#: time on Windows).
_Signature = tuple[int, int, int, int]


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
    "dir_name",
]

_KEY = re.compile(r"^[0-9a-f]{64}$")
_TEMP_PREFIX = ".tmp-"
#: Tries of a put whose directory a concurrent namespace delete keeps removing.
_PUT_TRIES = 5
#: A temp file older than this (seconds) is a killed writer's leftover, which a namespace
#: delete removes; a younger one is a write in flight in another process, left alone.
STALE_TEMP_S = 3600.0
#: Longest name (UTF-8 bytes) a directory gets as it is: NAME_MAX of Linux and macOS
#: file systems (Windows allows 255 UTF-16 units, never fewer than these bytes).
_NAME_MAX = 255
#: Directory of a name longer than that: this prefix and the SHA-256 of the name. No
#: valid tenant or namespace contains ``..`` (``validate_namespace``), so none is ever
#: spelled like this.
_DERIVED_PREFIX = "..sha256-"
#: The real name of a derived tenant directory, in a file inside it (no namespace can
#: be called this either).
_NAME_FILE = "..name"
#: Blob files (or keys) whose verification a store remembers, least recently used first
#: out (about 200 bytes each).
_VERIFIED_MAX = 100_000


def _stale(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > STALE_TEMP_S
    except OSError:
        return False


def content_key(data: bytes) -> str:
    """The content address of ``data``: its SHA-256 in hex."""
    return hashlib.sha256(data).hexdigest()


def dir_name(name: str) -> str:
    """The directory name of a validated tenant or namespace ``name``: the name itself
    when its UTF-8 fits in 255 bytes, else ``..sha256-`` and the SHA-256 of it.

    Example:
        >>> dir_name("web_search")
        'web_search'
        >>> dir_name("é" * 150)[:12]
        '..sha256-cb1'
    """
    encoded = name.encode("utf-8")
    if len(encoded) <= _NAME_MAX:
        return name
    return _DERIVED_PREFIX + hashlib.sha256(encoded).hexdigest()


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValidationError(f"blob key must be 64 lowercase hex characters, got {key!r}")
    return key


def damaged(namespace: str, key: str, what: str) -> StorageError:
    """The ``StorageError`` of a blob whose stored bytes are not its content."""
    return StorageError(
        f"blob {key} in namespace {namespace!r} is damaged: {what}; the stored output "
        "cannot be served (the damaged data is left as it is)",
        namespace=namespace,
        key=key,
    )


def check_content(namespace: str, key: str, data: bytes, where: str = "it holds") -> None:
    """Raise :func:`damaged` unless ``data`` hashes to ``key``."""
    actual = content_key(data)
    if actual != key:
        raise damaged(
            namespace,
            key,
            f"{where} {len(data)} bytes whose sha256 {actual} does not match its content address",
        )


class VerifiedBlobs:
    """What a blob store has verified: ``{blob: signature}``, the least recently used
    dropped past ``limit``; thread-safe."""

    def __init__(self, limit: int = _VERIFIED_MAX) -> None:
        self.limit = limit
        self._seen: OrderedDict[Hashable, Hashable] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def holds(self, blob: Hashable, signature: Hashable) -> bool:
        """Whether ``blob`` was verified with this very ``signature``."""
        with self._lock:
            if blob not in self._seen or self._seen[blob] != signature:
                return False
            self._seen.move_to_end(blob)
            return True

    def add(self, blob: Hashable, signature: Hashable) -> None:
        """Record ``blob`` as verified with ``signature``."""
        with self._lock:
            self._seen[blob] = signature
            self._seen.move_to_end(blob)
            while len(self._seen) > self.limit:
                self._seen.popitem(last=False)

    def discard(self, blob: Hashable) -> None:
        """Forget ``blob`` (deleted)."""
        with self._lock:
            self._seen.pop(blob, None)


def _signature(stat: os.stat_result) -> _Signature:
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@contextlib.contextmanager
def _os_errors(what: str, **context: str) -> Iterator[None]:
    """Turn an ``OSError`` escaping the block into a ``StorageError``: cannot ``what``."""
    try:
        yield
    except OSError as exc:
        raise StorageError(f"cannot {what}: {exc}", **context) from None


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

    What is read is verified against its key (see the module docstring: a damaged file
    raises ``StorageError``), and a name too long for a directory is stored under a
    derived one (:func:`dir_name`).

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
    #: large put is several times slower from a worker than on the calling thread, for
    #: little stats work to overlap. In memory and on SQL stores the worker's hash and
    #: send do overlap them.
    put_beside = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        #: The blob files this store verified (path -> signature), see the module docs.
        self.verified = VerifiedBlobs()
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
            return self.root / dir_name(part[0])
        digest = hashlib.sha256(json.dumps(list(part)).encode()).hexdigest()[:32]
        return self.root / _SCOPED_DIR / digest

    def _dir(self, namespace: str, tenant: str, scope: Scope | None = None) -> Path:
        base = self._base(_partition(tenant, scope))
        with _os_errors(f"locate namespace {namespace!r} under {base}", namespace=namespace):
            directory = (base / dir_name(validate_namespace(namespace))).resolve()
        # Belt and braces: validation already forbids separators and '..'.
        if self.root not in directory.parents:
            raise ValidationError(f"namespace {namespace!r} resolves outside the blob store root")
        return directory

    def put(
        self, namespace: str, data: bytes, *, tenant: str = "default", scope: Scope | None = None
    ) -> str:
        """Store ``data`` in the namespace's directory (written whole, then renamed); its content
        key.

        Raises:
            StorageError: The file system refused (the namespace and the cause named).
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError(f"blob data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        directory = self._dir(namespace, tenant, scope)
        key = content_key(data)
        target = directory / key
        with _os_errors(f"write blob {key} of namespace {namespace!r}", namespace=namespace):
            if target.exists():
                return key
        part = _partition(tenant, scope)
        for attempt in range(_PUT_TRIES):
            try:
                self._write(directory, target, data, part)
                break
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
                    f"cannot write blob of namespace {namespace!r} to {directory}: {exc}",
                    namespace=namespace,
                ) from None
        with contextlib.suppress(OSError):  # written from ``data``: known to be its content
            self.verified.add(str(target), _signature(target.stat()))
        return key

    def _write(self, directory: Path, target: Path, data: bytes, part: _Part) -> None:
        self._mark_partition(directory.parent, part)
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

    @staticmethod
    def _mark_partition(base: Path, part: _Part) -> None:
        """Record what ``base`` holds when its name does not say: the scope of a scoped
        partition (``scope.json``), the real name of a derived tenant directory."""
        if any(part[1:]):
            marker, text = base / "scope.json", json.dumps(list(part))
        elif base.name != part[0]:
            marker, text = base / _NAME_FILE, part[0]
        else:
            return
        if marker.exists():
            return
        base.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=base, prefix="." + _TEMP_PREFIX)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, marker)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _reading(self, namespace: str, key: str, path: Path) -> Iterator[None]:
        """Read errors of blob ``key``: missing is ``NotFoundError``, others ``StorageError``."""
        try:
            yield
        except FileNotFoundError:
            raise NotFoundError(
                f"no blob {key} in namespace {namespace!r}", namespace=namespace
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot read blob {key} of namespace {namespace!r} ({path}): {exc}",
                namespace=namespace,
            ) from None

    def _verify(
        self, namespace: str, key: str, path: Path, signature: _Signature, data: bytes
    ) -> None:
        """Check the whole content ``data`` read from ``path`` (its ``signature`` taken
        from the open file) against ``key``, hashing it unless verified with it before."""
        if len(data) != signature[1]:
            raise damaged(
                namespace, key, f"{path} is {signature[1]} bytes but {len(data)} could be read"
            )
        if self.verified.holds(str(path), signature):
            return
        check_content(namespace, key, data, where=f"{path} holds")
        self.verified.add(str(path), signature)

    def get(
        self, namespace: str, key: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> bytes:
        """The bytes stored under ``key``, verified against it.

        Raises:
            NotFoundError: No blob ``key`` in the namespace.
            StorageError: The file is damaged (its size or SHA-256 does not match the key)
                or cannot be read.
        """
        path = self._dir(namespace, tenant, scope) / _check_key(key)
        with self._reading(namespace, key, path), open(path, "rb") as handle:
            signature = _signature(os.fstat(handle.fileno()))
            data = handle.read()
        self._verify(namespace, key, path, signature, data)
        return data

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

        A file not yet verified (in this store, with its current signature) is read and
        hashed whole first, once.

        Raises:
            ValidationError: ``start`` or ``stop`` is negative.
            NotFoundError: No blob ``key`` in the namespace.
            StorageError: The file is damaged (size, SHA-256, or a short read) or
                cannot be read.
        """
        if start < 0 or stop < 0:
            raise ValidationError(f"blob range needs offsets >= 0, got {start}:{stop}")
        path = self._dir(namespace, tenant, scope) / _check_key(key)
        with self._reading(namespace, key, path), open(path, "rb") as handle:
            signature = _signature(os.fstat(handle.fileno()))
            if self.verified.holds(str(path), signature):
                return self._read_span(namespace, key, handle, signature[1], start=start, stop=stop)
            data = handle.read()
        self._verify(namespace, key, path, signature, data)
        return data[start:stop]

    @staticmethod
    def _read_span(
        namespace: str, key: str, handle: BinaryIO, size: int, *, start: int, stop: int
    ) -> bytes:
        """Bytes ``start:stop`` of a verified file of ``size`` bytes; a short read raises."""
        want = max(0, min(stop, size) - start)
        handle.seek(start)
        data = handle.read(want)
        if len(data) != want:
            raise damaged(
                namespace,
                key,
                f"read {len(data)} of the {want} bytes at offset {start} of its {size}",
            )
        return data

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

        Raises:
            StorageError: The file system refused (the namespace and the cause named).
        """
        # Several writers may delete the same files at once (two processes replacing one
        # LangChain key): a file or directory already gone is not an error, only not counted.
        directory = self._dir(namespace, tenant, scope)
        if key is not None:
            path = directory / _check_key(key)
            self.verified.discard(str(path))
            try:
                path.unlink()
            except FileNotFoundError:
                return 0
            except OSError as exc:
                raise StorageError(
                    f"cannot delete blob {key} of namespace {namespace!r} in {directory}: {exc}",
                    namespace=namespace,
                ) from None
            return 1
        with _os_errors(f"delete namespace {namespace!r} ({directory})", namespace=namespace):
            return self._delete_all(directory)

    @staticmethod
    def _delete_all(directory: Path) -> int:
        """Delete the blobs of a namespace directory, then the directory if empty."""
        try:
            entries = list(directory.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return 0
        removed = 0
        for entry in entries:
            if entry.name.startswith(_TEMP_PREFIX) and not _stale(entry):
                continue  # another process's write in flight: its own to finish or remove
            try:
                entry.unlink()
            except (FileNotFoundError, IsADirectoryError):
                continue  # gone meanwhile, or not ours
            removed += 0 if entry.name.startswith(_TEMP_PREFIX) else 1
        try:
            directory.rmdir()
        except OSError as exc:
            # Gone already, or another process is writing into it (a temp file or a
            # blob it just stored): the directory is theirs now.
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise
        return removed

    def keys(
        self, namespace: str, *, tenant: str = "default", scope: Scope | None = None
    ) -> list[str]:
        """The namespace's blob keys, sorted.

        Raises:
            StorageError: The directory cannot be listed (the namespace and the cause named).
        """
        directory = self._dir(namespace, tenant, scope)
        try:
            names = [p.name for p in directory.iterdir()]
        except (FileNotFoundError, NotADirectoryError):  # none yet, or deleted meanwhile
            return []
        except OSError as exc:
            raise StorageError(
                f"cannot list blobs of namespace {namespace!r} in {directory}: {exc}",
                namespace=namespace,
            ) from None
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
                found.append(((_tenant_of(entry), "", "", "", ""), entry))
        return found

    def forget_scope(self, scope: Scope, *, all: bool = False) -> int:
        """Delete the blob files of every partition ``scope`` selects; returns how many.

        Re-runnable: a partition half-deleted by a crash is finished on the next call.

        Raises:
            StorageError: The file system refused (the directory and the cause named).
        """
        from offprompt.stores.base import check_selector

        selected = check_selector(scope, all=all)
        removed = 0
        with _os_errors(f"list the blob partitions under {self.root}", path=str(self.root)):
            partitions = self._partitions()
        for part, directory in partitions:
            if not _selects(selected, part):
                continue
            try:
                removed += sum(
                    1 for p in directory.rglob("*") if p.is_file() and _KEY.match(p.name)
                )
                shutil.rmtree(directory)
            except OSError as exc:
                raise StorageError(
                    f"cannot delete blobs under {directory}: {exc}", path=str(directory)
                ) from None
        return removed


def _tenant_of(directory: Path) -> str:
    """The tenant a tenant directory holds: its name, or for a derived name the name in
    its ``..name`` file (the directory's own name when that is missing or does not hash
    to it: never guessed, so only an all-tenants selection reaches it)."""
    if not directory.name.startswith(_DERIVED_PREFIX):
        return directory.name
    try:
        name = (directory / _NAME_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return directory.name
    return name if dir_name(name) == directory.name else directory.name
