"""Where a ``TaskMemory`` keeps things: the ``path=`` directory and the shared-store registry.

``path=`` holds ``task.db`` (SQLite: the namespace metadata), ``blobs/`` (raw outputs)
and ``vectors/`` (the chunk index of the first process to open it; the others keep one
in a temporary directory). A directory written before the shared layout is upgraded in
place on first open (:func:`import_legacy`). Each process whose embedded index mirrors a
shared store records itself there (:func:`register`), so a forget can name what it
could not reach.
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from offprompt.errors import (
    OffpromptError,
    StorageError,
)
from offprompt.stores.base import BaseStore
from offprompt.vectors import QdrantVectorStore

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory

# BM25 over tiktoken ids for tool outputs: logs and JSON are full of identifiers, paths
# and numbers whose sub-word pieces match where whole words do not (QdrantVectorStore's
# ``lexical`` documents the measure); conversations and long-term memory count words.
TOOL_OUTPUT_LEXICAL: Literal["words", "tokens"] = "tokens"
# No dense vectors in task memory's own index: with the offline HashingEmbedder (the only
# one it can pick itself) they were the largest part of the index on disk and in the WAL
# and added nothing to recall, BM25 alone found as many rare Loghub events
# (benchmarks/RESULTS_query_memory_loghub.md). A vector_store= with an embedding model
# keeps hybrid retrieval; an index written with dense vectors keeps them.
TOOL_OUTPUT_DENSE = False
_LEGACY = ("offprompt-task-memory", "legacy-vectors-imported")
#: State session listing the processes whose embedded index mirrors the store.
_INDEXES = ("offprompt-task-indexes",)  # a session id: one state key per process


def register(memory: TaskMemory) -> str | None:
    """Record this process's embedded index in the shared store (so a forget can say
    which indexes it could not reach); removed on close."""
    if memory.store is None or memory.index_location == "given":
        return None
    key = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    try:
        index = (
            str(memory.path / "vectors")
            if memory.path is not None and memory.index_location == "path"
            else "private"
        )
        memory.store.set_state(
            _INDEXES[0],
            key,
            {"host": socket.gethostname(), "pid": os.getpid(), "index": index},
        )
    except OffpromptError:
        return None
    return key


def unregister(memory: TaskMemory) -> None:
    if memory._registration is not None and memory.store is not None:
        with contextlib.suppress(OffpromptError):
            memory.store.delete_state(_INDEXES[0], memory._registration)


def forget_unreached(memory: TaskMemory) -> list[str]:
    """The body of :meth:`TaskMemory.forget_unreached` (its docstring says what it does)."""
    if memory.store is None:
        return []
    others: list[str] = []
    durable: list[str] = []
    with contextlib.suppress(OffpromptError):
        for key in memory.store.state_keys(_INDEXES[0]):
            if key == memory._registration:
                continue
            host, pid = key.split(":")[:2]
            if host == socket.gethostname() and not alive(int(pid)):
                memory.store.delete_state(_INDEXES[0], key)  # a process that died
                continue
            others.append(f"{host}:{pid}")
            record = memory.store.get_state(_INDEXES[0], key)
            index = record.get("index") if isinstance(record, dict) else None
            if index and index != "private":
                durable.append(f"{index} (kept open by process {host}:{pid})")
    if not others:
        return []
    found = [
        f"the embedded chunk indexes of {len(others)} other open process(es) sharing "
        f"this memory's store ({', '.join(sorted(others))}): they drop the forgotten "
        "namespaces' chunks when next used and never answer from them"
    ]
    # The durable index is a file of the shared directory: name it, so the report
    # says the directory still holds bytes (forget from that process, purge=True).
    found += [f"the durable chunk index {d}: its files keep the deleted bytes" for d in durable]
    return found


def open_index(root: Path) -> tuple[QdrantVectorStore, str]:
    """This process's chunk index for ``path=``: ``root/vectors`` if no other process
    holds it (its lock), else an embedded index in a temporary directory of its own
    (removed on close), built from the stored text as namespaces are queried."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        # Processes opening a new directory at once would race to create the shard:
        # the first creates it while the others wait here, then find it locked.
        lock = open(root / ".open.lock", "a+b")  # noqa: SIM115 - held for the open only
    except OSError as exc:
        raise StorageError(f"cannot open task memory at {root}: {exc}", path=str(root)) from None
    try:
        with contextlib.suppress(ImportError):
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            # Derived from the stored text (rebuilt from it if unreadable): no WAL.
            return QdrantVectorStore(
                path=str(root / "vectors"),
                lexical=TOOL_OUTPUT_LEXICAL,
                dense=TOOL_OUTPUT_DENSE,
                wal=False,
            ), "path"
        except StorageError as exc:
            if "WouldBlock" not in str(exc) and "lock" not in str(exc).lower():
                raise
            return QdrantVectorStore(lexical=TOOL_OUTPUT_LEXICAL, dense=TOOL_OUTPUT_DENSE), "memory"
    finally:
        lock.close()  # closing the descriptor releases the flock


def open_sqlite(root: Path) -> BaseStore:
    from offprompt.stores.sqlite import SQLiteStore

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create task memory at {root}: {exc}", path=str(root)) from None
    return SQLiteStore(root / "task.db")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def import_legacy(root: Path, store: BaseStore, vectors: QdrantVectorStore, location: str) -> None:
    """Move the namespace metadata a release before the shared layout kept as points in
    ``root/vectors`` into ``task.db``, once (every tenant and scope; the raw text is
    already in ``blobs/``), and record that this index holds their indexed chunks."""
    if store.get_state(*_LEGACY) or not (root / "vectors").is_dir():
        return
    if location != "path":
        raise StorageError(
            f"{root} was written by an earlier offprompt and its index is open in another "
            "process (an earlier release?); open it once alone to upgrade it in place",
            path=str(root),
        )
    from offprompt.task_memory import _legacy

    with store.transaction():
        if store.get_state(*_LEGACY):
            return
        moved = _legacy.import_points(store, vectors)
        store.set_state(*_LEGACY, True)
    _legacy.drop_points(moved)
