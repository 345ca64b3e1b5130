"""Two-stage pipelines across a thread boundary, with errors and early stops handled.

:func:`consume_behind` runs a consumer in a worker thread while the calling thread
produces. TaskMemory uses it for large outputs: the calling thread tokenises (one
GIL-free tiktoken call per segment) and the worker cuts chunks, embeds and upserts.
That way round, rather than tokenising in the worker, because tiktoken encodes ~1.5x
slower in any thread other than the one that first used it (measured with tiktoken
0.14: ~60 ms for 1 MB on the main thread, ~90 ms on another), and because the producer then needs
the GIL only twice per segment, so it is never starved by the busy consumer.

:func:`run_beside` runs one call in a worker thread while the caller goes on (the raw
output's hash and durable write, which need no GIL, beside the card's line count).
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["Pending", "consume_behind", "run_beside"]

T = TypeVar("T")
R = TypeVar("R")
_DONE = object()
_ABORT = object()


class _ProducerFailed(Exception):
    """Raised inside the consumer's stream when the producer failed."""


def consume_behind(consume: Callable[[Iterator[T]], R], items: Iterator[T], depth: int = 2) -> R:
    """``consume(stream)`` in a worker thread, fed with ``items`` produced by this thread.

    At most ``depth`` items wait between the two. The worker runs in a copy of the
    caller's context (context variables, e.g. tracing spans, carry over). Returns what
    ``consume`` returns. Whichever side fails first stops the other: a producer error
    is raised here after the consumer has unwound; a consumer error is raised here
    after the producer stopped. Either way the worker has finished when this returns,
    so nothing it started is still writing.
    """
    buffer: queue.Queue[Any] = queue.Queue(maxsize=depth)
    finished = threading.Event()
    result: list[R] = []
    failure: list[BaseException] = []

    def stream() -> Iterator[T]:
        while True:
            item = buffer.get()
            if item is _DONE:
                return
            if item is _ABORT:
                raise _ProducerFailed
            yield item

    def work() -> None:
        try:
            result.append(consume(stream()))
        except _ProducerFailed:
            pass
        except BaseException as exc:  # handed to the caller, which re-raises it
            failure.append(exc)
        finally:
            finished.set()

    def put(item: Any) -> bool:
        while not finished.is_set():
            try:
                buffer.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    context = contextvars.copy_context()
    worker = threading.Thread(
        target=context.run, args=(work,), name="offprompt-consumer", daemon=True
    )
    worker.start()
    try:
        for item in items:
            if not put(item):
                break  # the consumer is done (or failed): stop producing
        put(_DONE)
    except BaseException:
        put(_ABORT)
        raise
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return result[0]


class Pending(Generic[R]):
    """A call running in a worker thread (see :func:`run_beside`)."""

    def __init__(self, call: Callable[[], R], *, inline: bool) -> None:
        self._result: list[R] = []
        self._failure: list[BaseException] = []
        self._thread: threading.Thread | None = None
        if inline:
            self._run(call)
            return
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run, call), name="offprompt-beside", daemon=True
        )
        self._thread.start()

    def _run(self, call: Callable[[], R]) -> None:
        try:
            self._result.append(call())
        except BaseException as exc:  # handed to whoever asks for the result
            self._failure.append(exc)

    def wait(self) -> None:
        """Wait for the call to finish (its result or failure stays for :meth:`result`)."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> R:
        """Wait for the call; its result, or its exception raised here."""
        self.wait()
        if self._failure:
            raise self._failure[0]
        return self._result[0]


def run_beside(call: Callable[[], R], *, inline: bool = False) -> Pending[R]:
    """Start ``call()`` in a worker thread (in a copy of the caller's context) and return
    at once; :meth:`Pending.result` waits for it. ``inline=True`` runs it here and now
    (small work is not worth a thread)."""
    return Pending(call, inline=inline)
