"""``OffpromptOverflowStore``: the harness's ``OverflowStore`` on offprompt task memory.

pydantic-ai-harness's ``ToolOutputLimits`` spills a tool return that is too large to an
``OverflowStore`` (``async write(key, data) -> handle``, ``async read(handle) -> bytes``)
and gives the model ``read_tool_result`` / ``grep_tool_result`` over it. This store keeps
each spill in a TaskMemory namespace of its own, so the same payload is also open to
offprompt's memory tools (ranked search, regex grep, pages, JSON queries, summaries) and
lives in a durable, shared home (``path=`` a directory, ``store=`` any offprompt store).

The contract, from the harness's own store and tests:

* the handle is the key (any string, ``''`` and ``'/'`` included);
* a second write of a key replaces the first (a durable engine replays a write);
* ``read`` gives back exactly the bytes written;
* an unknown handle (``'..'`` and anything never written) raises ``FileNotFoundError``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import anyio.to_thread

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import NotFoundError, ValidationError
from offprompt.stores.base import BaseStore
from offprompt.task_memory import TaskMemory

__all__ = ["OVERFLOW_TOOL", "OffpromptOverflowStore"]

OVERFLOW_TOOL = "tool_output_limits"
"""The tool name a spill is stored under (its reference reads ``"tool_output_limits.spill"``)."""

_PREFIX = "overflow-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SLUG_CHARS = 48
_HASH_CHARS = 32


def _slug(key: str) -> str:
    """A readable hint of ``key`` for the namespace (no ``/``, no ``..``)."""
    slug = _UNSAFE.sub("_", key).replace("..", "_")[:_SLUG_CHARS].strip("._")
    return slug or "_"


def _not_found(handle: str) -> FileNotFoundError:
    """The error ``open()`` raises for a missing file, naming the handle."""
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), handle)


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise ValidationError(f"data must be bytes, got {type(data).__name__}")


def _check_key(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a str, got {type(value).__name__}")
    return value


class OffpromptOverflowStore:
    """An ``OverflowStore`` for ``ToolOutputLimits(store=...)`` on a TaskMemory.

    Each key gets its own namespace (:meth:`namespace`). A payload that is valid UTF-8
    is stored as text (indexed, so the memory tools can search it), anything else as a
    blob; either way :meth:`read` returns the exact bytes written.

    Args:
        memory: The TaskMemory to store into (the caller closes it). When omitted, one
            is opened on ``path`` (a directory) or ``store``, or in memory, and
            :meth:`close` closes it.
        path: A directory for a durable memory (``TaskMemory(path=...)``).
        store: Any offprompt store (``SQLiteStore``, ``PostgresStore``, ...) to keep the
            payloads in (the caller closes it).

    Example:
        >>> import asyncio
        >>> store = OffpromptOverflowStore()
        >>> handle = asyncio.run(store.write("run-1/call-1.0", b"disk full on node 7"))
        >>> handle, asyncio.run(store.read(handle))
        ('run-1/call-1.0', b'disk full on node 7')
        >>> store.close()
    """

    def __init__(
        self,
        memory: TaskMemory | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        store: BaseStore | None = None,
    ) -> None:
        if memory is not None and not isinstance(memory, TaskMemory):
            raise ValidationError(
                f"memory must be an offprompt TaskMemory, got {type(memory).__name__}"
            )
        if memory is not None and (path is not None or store is not None):
            raise ValidationError("give memory=, path= or store=, not several")
        self._owns_memory = memory is None
        if memory is None:
            memory = TaskMemory(path=Path(path) if path is not None else None, store=store)
        self._memory = memory

    @property
    def memory(self) -> TaskMemory:
        """The TaskMemory the payloads are stored in."""
        return self._memory

    def __repr__(self) -> str:
        return f"OffpromptOverflowStore({self._memory!r})"

    @staticmethod
    def namespace(handle: str) -> str:
        """The TaskMemory namespace that holds ``handle``'s payload.

        Deterministic and one-to-one: a readable part of the key, then 128 bits of its
        SHA-256, so two keys never share a namespace and the same key always finds its own.

        Raises:
            ValidationError: ``handle`` is not a str.
        """
        key = _check_key(handle, "handle")
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{_PREFIX}{_slug(key)}-{digest[:_HASH_CHARS]}"

    # -- the OverflowStore protocol ---------------------------------------------------

    async def write(self, key: str, data: bytes) -> str:
        """Store ``data`` under ``key`` (replacing what was there) and return ``key``.

        Raises:
            ValidationError: ``key`` is not a str or ``data`` not bytes.
        """
        key = _check_key(key, "key")
        payload = _as_bytes(data)
        await anyio.to_thread.run_sync(self.write_sync, key, payload)
        return key

    async def read(self, handle: str) -> bytes:
        """The exact bytes last written under ``handle``.

        Raises:
            FileNotFoundError: Nothing was written under ``handle`` (or it was deleted).
            ValidationError: ``handle`` is not a str.
        """
        handle = _check_key(handle, "handle")
        return await anyio.to_thread.run_sync(self.read_sync, handle)

    # -- sync twins and housekeeping ----------------------------------------------------

    def write_sync(self, key: str, data: bytes) -> str:
        """Blocking twin of :meth:`write`."""
        key = _check_key(key, "key")
        payload = _as_bytes(data)
        namespace = self.namespace(key)
        artifact: TextArtifact | BlobArtifact
        try:
            artifact = TextArtifact(value=payload.decode("utf-8"), name=namespace)
        except UnicodeDecodeError:
            artifact = BlobArtifact(value=payload, name=namespace)
        self._memory.store_artifact(
            namespace, artifact, tool=OVERFLOW_TOOL, activity="spill", replace=True
        )
        return key

    def read_sync(self, handle: str) -> bytes:
        """Blocking twin of :meth:`read`."""
        namespace = self.namespace(handle)
        memory = self._memory
        try:
            if memory.lookup_error(namespace) is not None:
                raise _not_found(handle)
            storage = memory.namespace_metadata(namespace, wait=False)["storage"]
            artifacts: list[Any] = memory.load_artifacts(namespace).value
        except NotFoundError:  # deleted between the look-up and the load
            raise _not_found(handle) from None
        if storage == "text":
            return "".join(str(a.value) for a in artifacts).encode("utf-8")
        return b"".join(bytes(a.value) for a in artifacts)

    def delete(self, handle: str) -> bool:
        """Remove ``handle``'s payload; False when there was none."""
        return self._memory.delete(self.namespace(handle))

    def close(self) -> None:
        """Close the TaskMemory if this store opened it (a memory passed in is the caller's)."""
        if self._owns_memory:
            self._memory.close()

    def __enter__(self) -> OffpromptOverflowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
