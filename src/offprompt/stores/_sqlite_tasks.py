"""The task-output half of ``SQLiteStore``: TaskMemory's stored outputs (metadata rows
and raw bytes, tables ``offprompt_tasks`` and ``offprompt_task_blobs``), the
operations of :mod:`offprompt.stores._tasks` run on the store's connections.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offprompt.errors import NotFoundError, StorageError
from offprompt.scope import Scope
from offprompt.stores import _tasks
from offprompt.stores.base import TaskRecord, check_selector


class SQLiteTasks:
    """Mixin of :class:`~offprompt.stores.sqlite.SQLiteStore`: its ``task_*`` methods.

    Reads run on the thread's connection, writes in the store's ``BEGIN IMMEDIATE``
    transaction (:meth:`SQLiteStore._write`).
    """

    path: Path

    if TYPE_CHECKING:

        def _conn(self) -> sqlite3.Connection: ...

        def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        def checkpoint(self, *, wait: float | None = None) -> None: ...

    def _task_read(self, op: _tasks.Op[Any]) -> Any:
        try:
            return _tasks.run_on(self._conn().execute, op)
        except sqlite3.Error as exc:
            raise StorageError(
                f"read from {self.path} failed: {exc}", path=str(self.path)
            ) from None

    def _task_write(self, op: _tasks.Op[Any]) -> Any:
        with self._write() as conn:
            return _tasks.run_on(conn.execute, op)

    def task_get(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        found: TaskRecord | None = self._task_read(
            _tasks.op_get(_tasks.task_part(namespace, scope), namespace)
        )
        return found

    def task_list(self, *, scope: Scope | None = None) -> list[TaskRecord]:
        found: list[TaskRecord] = self._task_read(_tasks.op_list(_tasks.list_part(scope)))
        return found

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
        version: int | None = self._task_write(
            _tasks.op_commit(part, namespace, text, expect=expect, blobs=blobs, now=time.time())
        )
        return version

    def task_delete(self, namespace: str, *, scope: Scope | None = None) -> TaskRecord | None:
        part = _tasks.task_part(namespace, scope)
        found: TaskRecord | None = self._task_write(_tasks.op_delete(part, namespace))
        return found

    def task_put_blob(self, namespace: str, data: bytes, *, scope: Scope | None = None) -> str:
        part = _tasks.task_part(namespace, scope)
        key = _tasks.content_key(data)
        self._task_write(_tasks.op_put_blob(part, namespace, key, bytes(data)))
        return key

    def task_get_blob(self, namespace: str, key: str, *, scope: Scope | None = None) -> bytes:
        part = _tasks.task_part(namespace, scope)
        data: bytes | None = self._task_read(_tasks.op_get_blob(part, namespace, key))
        if data is None:
            raise NotFoundError(f"no blob {key} in namespace {namespace!r}", namespace=namespace)
        return data

    def task_blob_keys(self, namespace: str, *, scope: Scope | None = None) -> list[str]:
        part = _tasks.task_part(namespace, scope)
        keys: list[str] = self._task_read(_tasks.op_blob_keys(part, namespace))
        return keys

    def task_delete_blob(
        self,
        namespace: str,
        key: str | None = None,
        *,
        scope: Scope | None = None,
        referenced: Callable[[dict[str, Any]], Collection[str]] | None = None,
    ) -> int:
        part = _tasks.task_part(namespace, scope)
        op = _tasks.op_delete_blob(part, namespace, key, referenced=referenced)
        removed: int = self._task_write(op)
        return removed

    def task_forget_scope(self, scope: Scope, *, all: bool = False) -> tuple[int, int]:
        selected = check_selector(scope, all=all)
        counts: tuple[int, int] = self._task_write(_tasks.op_forget(selected))
        with contextlib.suppress(StorageError):
            self.checkpoint(wait=0.5)
        return counts
