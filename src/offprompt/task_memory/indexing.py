"""The background indexer: one worker thread that indexes namespaces in order.

``TaskMemory`` stores a raw output durably, commits its metadata with the new artifacts
marked ``indexed: false``, and hands the namespace to :class:`BackgroundIndexer`. The
worker runs ``job(namespace, should_stop)`` for each submitted namespace, first in first
out, so a namespace's artifacts are indexed in the order they were written.
:meth:`wait` blocks until a namespace (or every namespace) has no job queued or running.
:meth:`stop` asks the running job to stop at its next batch (``should_stop()`` turns
true), drops the queue and joins the thread; what was not indexed is resumed the next
time the memory is opened.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["BackgroundIndexer"]

Job = Callable[[str, Callable[[], bool]], None]


class BackgroundIndexer:
    """Runs ``job`` for submitted namespaces in one daemon thread.

    Args:
        job: ``job(namespace, should_stop)``; exceptions are recorded in
            :attr:`failures` (by namespace) and reported by :meth:`wait`.
        on_error: Called with ``(namespace, exception)`` when a job fails.
    """

    def __init__(
        self, job: Job, *, on_error: Callable[[str, BaseException], None] | None = None
    ) -> None:
        self._job = job
        self._on_error = on_error
        self._queue: deque[str] = deque()
        self._pending: dict[str, int] = {}
        self._cond = threading.Condition()
        self._stopping = False
        self.failures: dict[str, str] = {}
        self._thread = threading.Thread(target=self._run, name="offprompt-indexer", daemon=True)
        self._thread.start()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (no new job starts)."""
        return self._stopping

    def submit(self, namespace: str) -> bool:
        """Queue ``namespace``; False once the indexer is stopping."""
        with self._cond:
            if self._stopping:
                return False
            self.failures.pop(namespace, None)
            self._pending[namespace] = self._pending.get(namespace, 0) + 1
            self._queue.append(namespace)
            self._cond.notify_all()
            return True

    def pending(self, namespace: str | None = None) -> bool:
        """Whether ``namespace`` (any namespace when None) has a job queued or running."""
        with self._cond:
            return bool(self._pending) if namespace is None else namespace in self._pending

    def wait(self, namespace: str | None = None, timeout: float | None = None) -> bool:
        """Block until ``namespace`` (or every namespace) has no job left.

        Returns True when that happened and no such job failed; False on timeout, on a
        failure, or when the indexer stopped with work left.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while (namespace in self._pending) if namespace is not None else self._pending:
                if self._stopping:
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            if namespace is None:
                return not self.failures
            return namespace not in self.failures

    def stop(self, timeout: float | None = None) -> None:
        """Stop the running job at its next batch, drop the queue, join the worker."""
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _should_stop(self) -> bool:
        return self._stopping

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    self._pending.clear()
                    self._cond.notify_all()
                    return
                namespace = self._queue.popleft()
            try:
                self._job(namespace, self._should_stop)
            except BaseException as exc:
                if not self._stopping:
                    with self._cond:
                        self.failures[namespace] = f"{type(exc).__name__}: {exc}"
                    if self._on_error is not None:
                        self._on_error(namespace, exc)
            finally:
                with self._cond:
                    left = self._pending.get(namespace, 1) - 1
                    if left <= 0:
                        self._pending.pop(namespace, None)
                    else:
                        self._pending[namespace] = left
                    self._cond.notify_all()
