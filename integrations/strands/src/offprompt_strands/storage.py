"""``OffpromptStorage``: the storage of Strands' ``ContextOffloader`` on offprompt task memory.

``ContextOffloader`` stores every content block of an oversized tool result with
``await storage.store(key, content, content_type)`` and reads one back with
``await storage.retrieve(reference)`` (its ``retrieve_offloaded_content`` tool). Here each
stored block is one :class:`~offprompt.task_memory.TaskMemory` namespace, and the
reference is that namespace: short, path-free and the same in every process that opens
the memory (``TaskMemory(path=...)``, or any offprompt store with ``store=``). So the
stored result is also readable with offprompt's memory tools (``grep_memory``,
``read_memory``, ``json_memory`` ...) under its reference.

Bytes come back exactly as stored, with their content type. Text (``text/*`` and
``application/json`` that is valid UTF-8) is kept as a text artifact, so offprompt can
grep, page and outline it; anything else as a blob. An unknown reference raises
``KeyError(f"Reference not found: {reference}")``, as Strands' own storages do.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

from offprompt.artifacts import BaseArtifact, BlobArtifact, TextArtifact
from offprompt.errors import NamespaceError, NotFoundError, ValidationError
from offprompt.names import MAX_NAME_LENGTH, validate_namespace
from offprompt.stores import BaseStore
from offprompt.task_memory import TaskMemory

__all__ = ["CONTENT_TYPE_META", "OffpromptStorage"]

#: ``meta`` key of a stored artifact holding the content type it was stored with.
CONTENT_TYPE_META = "strands_content_type"

_TOOL = "strands"
_ACTIVITY = "context_offloader"
_KEY_CHARS = 48
_TEXTUAL = ("text/", "application/json")


def _sanitize_key(key: str) -> str:
    """``key`` with every character but ``A-Z a-z 0-9 _ -`` (and ``.`` runs) made ``_``."""
    cleaned = re.sub(r"[^A-Za-z0-9_\-]", "_", key.replace("..", "_"))
    return cleaned[:_KEY_CHARS] or "block"


def _artifact(reference: str, content: bytes, content_type: str) -> BaseArtifact:
    """The artifact that keeps ``content`` exactly: text when it is textual UTF-8, else a blob."""
    meta = {CONTENT_TYPE_META: content_type}
    if content_type.startswith(_TEXTUAL):
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return TextArtifact(value=text, name=reference, meta=meta)
    return BlobArtifact(value=content, name=reference, mime_type=content_type, meta=meta)


def _content(artifacts: list[BaseArtifact]) -> tuple[bytes, str]:
    """The stored bytes and content type of a namespace's artifacts."""
    parts: list[bytes] = []
    content_type = "application/octet-stream"
    for artifact in artifacts:
        if isinstance(artifact, BlobArtifact):
            parts.append(artifact.value)
            content_type = artifact.mime_type
        else:
            parts.append(str(artifact.value).encode("utf-8"))
        stored = artifact.meta.get(CONTENT_TYPE_META)
        if isinstance(stored, str):
            content_type = stored
    return b"".join(parts), content_type


class OffpromptStorage:
    """``ContextOffloader``'s storage on offprompt task memory, one namespace per block.

    Pass it as ``ContextOffloader(storage=OffpromptStorage(...))``. With none of
    ``memory``, ``path`` and ``store`` it keeps the blocks in an in-memory
    ``TaskMemory`` of this process.

    Args:
        memory: The ``TaskMemory`` to store in (the caller's to close).
        path: A directory for a durable ``TaskMemory(path=path)`` that every process on
            this host can open; this storage opens it and :meth:`close` closes it.
        store: Any offprompt store (``SQLiteStore``, ``PostgresStore``)
            for ``TaskMemory(store=store)``; the store stays the caller's to close.
        prefix: Start of every reference (and namespace) this storage makes; a
            reference without it is never read.

    Raises:
        ValidationError: More than one of ``memory``, ``path`` and ``store``, or a bad
            argument.

    Attributes:
        memory: The ``TaskMemory`` the blocks are stored in.
        prefix: The references' prefix.

    Example:
        >>> import asyncio
        >>> storage = OffpromptStorage()
        >>> ref = asyncio.run(storage.store("tooluse_1_0", b"disk full", "text/plain"))
        >>> asyncio.run(storage.retrieve(ref))
        (b'disk full', 'text/plain')
        >>> storage.close()
    """

    def __init__(
        self,
        memory: TaskMemory | None = None,
        *,
        path: str | Path | None = None,
        store: BaseStore | None = None,
        prefix: str = "strands-",
    ) -> None:
        options = {"memory": memory, "path": path, "store": store}
        given = [name for name, value in options.items() if value is not None]
        if len(given) > 1:
            raise ValidationError(f"give at most one of memory, path and store, got {given}")
        if memory is not None and not isinstance(memory, TaskMemory):
            raise ValidationError(
                f"memory must be an offprompt TaskMemory, got {type(memory).__name__}"
            )
        if not isinstance(prefix, str) or not prefix:
            raise ValidationError(f"prefix must be a non-empty str, got {prefix!r}")
        validate_namespace(prefix, what="prefix")
        if len(prefix) > MAX_NAME_LENGTH - _KEY_CHARS - 14:
            raise ValidationError(f"prefix is too long ({len(prefix)} characters)")
        self.prefix = prefix
        if memory is not None:
            self.memory = memory
        elif path is not None:
            self.memory = TaskMemory.at_path(path)
        elif store is not None:
            self.memory = TaskMemory.on_store(store)
        else:
            self.memory = TaskMemory.in_memory()
        self._owns_memory = memory is None

    def __repr__(self) -> str:
        return f"OffpromptStorage({self.memory!r}, prefix={self.prefix!r})"

    def close(self) -> None:
        """Close the ``TaskMemory`` this storage opened (not one passed as ``memory``)."""
        if self._owns_memory:
            self.memory.close()

    def __enter__(self) -> OffpromptStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sync twins ----------------------------------------------------------------------

    def store_sync(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """:meth:`store` without an event loop."""
        if not isinstance(key, str):
            raise ValidationError(f"key must be a str, got {type(key).__name__}")
        if isinstance(content, (bytearray, memoryview)):
            content = bytes(content)
        if not isinstance(content, bytes):
            raise ValidationError(f"content must be bytes, got {type(content).__name__}")
        if not isinstance(content_type, str) or not content_type:
            raise ValidationError(f"content_type must be a non-empty str, got {content_type!r}")
        reference = f"{self.prefix}{_sanitize_key(key)}-{uuid.uuid4().hex[:12]}"
        artifact = _artifact(reference, content, content_type)
        self.memory.store_artifact(reference, artifact, tool=_TOOL, activity=_ACTIVITY)
        return reference

    def retrieve_sync(self, reference: str) -> tuple[bytes, str]:
        """:meth:`retrieve` without an event loop."""
        if not isinstance(reference, str) or not reference.startswith(self.prefix):
            raise KeyError(f"Reference not found: {reference}")
        try:
            validate_namespace(reference)
            artifacts = self.memory.load_artifacts(reference).value
        except (NamespaceError, NotFoundError):
            raise KeyError(f"Reference not found: {reference}") from None
        if not artifacts:
            raise KeyError(f"Reference not found: {reference}")
        return _content(list(artifacts))

    def delete(self, reference: str) -> bool:
        """Remove a stored block; True when it was there (an unknown reference: False)."""
        if not isinstance(reference, str) or not reference.startswith(self.prefix):
            return False
        try:
            validate_namespace(reference)
        except NamespaceError:
            return False
        return self.memory.delete(reference)

    # -- the ContextOffloader storage protocol -------------------------------------------

    async def store(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """Store ``content`` (exactly) and return its reference, a new one on every call.

        Args:
            key: The block's key (``ContextOffloader`` gives ``{tool_use_id}_{i}``);
                sanitized into the reference, which holds no path separator or ``..``.
            content: The bytes to keep.
            content_type: Their MIME type, given back by :meth:`retrieve`.

        Raises:
            ValidationError: A key that is not a str, content that is not bytes or an
                empty content type.
        """
        return await asyncio.to_thread(self.store_sync, key, content, content_type)

    async def retrieve(self, reference: str) -> tuple[bytes, str]:
        """The bytes and content type stored under ``reference``.

        Raises:
            KeyError: ``Reference not found: {reference}`` for a reference this storage
                never made, one deleted, or another memory's.
        """
        return await asyncio.to_thread(self.retrieve_sync, reference)
