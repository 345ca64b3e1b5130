"""The task-output half of ``PostgresStore``: TaskMemory's stored outputs, the operations
of :mod:`offprompt.stores._tasks` run through the store's pool.

A blob larger than :data:`~offprompt.stores._tasks.PART_BYTES` is split into part rows
written by up to :data:`PARALLEL` pooled connections at once, and read back the same
way: one backend storing (TOASTing) 50 MB was most of the time to reference, and one
backend detoasting and sending it most of another process's first grep. The blob row
is written last, after every part (see :mod:`offprompt.stores._tasks`); parts that a
killed or cut-off writer left are collected by a later commit (:attr:`PgTasks.task_part_grace`).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from offprompt.errors import NotFoundError, StorageError
from offprompt.scope import Scope
from offprompt.stores import _tasks
from offprompt.stores._pg_ops import PgOp, ResultT, as_pg_op
from offprompt.stores.base import TaskRecord, check_selector

#: Connections that write (and read) one blob's parts at once, at most (and at most the
#: pool's ``max_size``). On a 2-core server 4 stored 50 MB fastest (see the benchmark).
PARALLEL = 4
#: A commit collects abandoned parts at most this often (seconds), per store.
COLLECT_EVERY_S = 600.0


class PgTasks:
    """Mixin of :class:`~offprompt.stores.postgres.PostgresStore`: its ``task_*`` methods."""

    #: Parts of an upload without a blob row are collected once they are this old
    #: (seconds, the server's clock): longer than any store of one blob takes.
    task_part_grace: float = 900.0
    _parts_collected_at: float | None = None
    _warmed_pid = 0

    if TYPE_CHECKING:
        _max_size: int
        _owns_pool: bool

        def _do(self, op: PgOp[ResultT], *, action: str, write: bool = False) -> ResultT: ...

        def _sync_pool(self) -> Any: ...

    def _task(self, op: _tasks.Op[ResultT], action: str, *, write: bool = False) -> ResultT:
        if self._warmed_pid != os.getpid():
            self._warm()
        return self._do(as_pg_op(op), action=action, write=write)

    def _warm(self) -> None:
        """On the first task-output call of a process, have the pool (the store's own)
        keep :data:`PARALLEL` connections, opened now in the background and at once: a
        pool grows one connection at a time when callers wait, which made the parallel
        fetch of another process's first read wait for three connection setups in a row."""
        self._warmed_pid = os.getpid()
        if not self._owns_pool:
            return  # a pool passed in is sized by its owner
        pool = self._sync_pool()
        wanted = min(PARALLEL, pool.max_size)
        if pool.min_size < wanted:
            pool.resize(min_size=wanted, max_size=pool.max_size)

    def _workers(self, parts: int) -> int:
        return max(1, min(parts, PARALLEL, self._max_size))

    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        part = _tasks.task_part(namespace, scope)
        return self._task(_tasks.op_get(part, namespace), "reading a task output")

    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        return self._task(_tasks.op_list(_tasks.list_part(scope)), "listing task outputs")

    def task_commit(
        self,
        namespace: str,
        meta: dict[str, Any],
        *,
        expect: int | None,
        blobs: Sequence[str] = (),
        scope: Scope | None = None,
    ) -> int | None:
        text = _tasks.check_meta(meta)
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_commit(part, namespace, text, expect=expect, blobs=blobs, now=time.time())
        locked = _tasks.op_locked(part, namespace, op)
        version = self._task(locked, "committing a task output", write=True)
        self._collect_parts()
        return version

    def _collect_parts(self, *, force: bool = False) -> int:
        """Delete abandoned parts (older than :attr:`task_part_grace`), at most every
        :data:`COLLECT_EVERY_S` unless ``force``; how many went. A failure here leaves
        them for the next time and is not the commit's."""
        now = time.monotonic()
        last = self._parts_collected_at
        if not force and last is not None and now - last < COLLECT_EVERY_S:
            return 0
        self._parts_collected_at = now
        try:
            return self._task(
                _tasks.op_collect_parts(self.task_part_grace), "collecting abandoned parts"
            )
        except StorageError:
            self._parts_collected_at = last
            return 0

    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_locked(part, namespace, _tasks.op_delete(part, namespace, parts=True))
        return self._task(op, "deleting a task output", write=True)

    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        part = _tasks.task_part(namespace, scope)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            _tasks.content_key(data)  # raises the ValidationError
        view = memoryview(data).cast("B")
        if len(view) <= _tasks.PART_BYTES:
            key = _tasks.content_key(view)
            op = _tasks.op_put_blob(part, namespace, key, bytes(view))
            self._task(op, "storing a task output's bytes", write=True)
            return key
        return self._put_parts(part, namespace, view)

    def _put_parts(self, part: _tasks.Part, namespace: str, view: memoryview) -> str:
        upload = uuid.uuid4().hex
        size = len(view)
        step = _tasks.PART_BYTES
        count = -(-size // step)
        action = "storing a task output's bytes"
        pool = ThreadPoolExecutor(self._workers(count), thread_name_prefix="offprompt-part")
        futures: list[Future[None]] = []
        try:
            for i in range(count):
                op = _tasks.op_put_part(part, namespace, upload, i, view[i * step : (i + 1) * step])
                futures.append(pool.submit(self._task, op, action))
            # Hashing overlaps the writes: hashlib lets go of the GIL, so does libpq.
            key = _tasks.content_key(view)
            for future in futures:
                future.result()
            op_seal = _tasks.op_seal_parts(
                part, namespace, key, upload=upload, count=count, size=size
            )
            self._task(op_seal, action, write=True)
        except BaseException:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            with contextlib.suppress(StorageError):  # else collected later
                self._task(_tasks.op_drop_upload(part, namespace, upload), action, write=True)
            raise
        finally:
            pool.shutdown(wait=True)
        return key

    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        part = _tasks.task_part(namespace, scope)
        head = self._task(_tasks.op_get_head(part, namespace, key), "reading a task blob")
        if head is None:
            raise NotFoundError(f"no blob {key} in namespace {namespace!r}", namespace=namespace)
        upload, count, size, data = head
        if count == 0:
            return data
        with ThreadPoolExecutor(self._workers(count), thread_name_prefix="offprompt-part") as pool:
            found: dict[int, bytes] = {}
            for got in pool.map(
                lambda i: self._task(
                    _tasks.op_get_parts(part, namespace, upload, (i,)), "reading a task blob"
                ),
                range(count),
            ):
                found.update(got)
        if len(found) != count or sum(map(len, found.values())) != size:
            raise NotFoundError(
                f"blob {key} of namespace {namespace!r} was deleted while it was read",
                namespace=namespace,
            )
        return b"".join(found[i] for i in range(count))

    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        part = _tasks.task_part(namespace, scope)
        return self._task(_tasks.op_blob_keys(part, namespace), "listing task blobs")

    def task_delete_blob(
        self,
        namespace: str,
        key: str | None = None,
        *,
        scope: Scope | None = None,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> int:
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_delete_blob(part, namespace, key, parts=True, referenced=referenced)
        return self._task(_tasks.op_locked(part, namespace, op), "deleting a task blob", write=True)

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        selected = check_selector(scope, all=all)
        op = _tasks.op_forget(selected, parts=True)
        return self._task(op, "forgetting task outputs", write=True)
