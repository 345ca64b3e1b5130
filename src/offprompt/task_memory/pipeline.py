"""A two-stage pipeline across a thread boundary, with errors and early stops handled.

:func:`consume_behind` runs a consumer in a worker thread while the calling thread
produces. TaskMemory uses it for large outputs: the calling thread tokenises (one
GIL-free tiktoken call per segment) and the worker cuts chunks, embeds and upserts.
That way round, rather than tokenising in the worker, because tiktoken encodes ~1.5x
slower in any thread other than the one that first used it (measured with tiktoken
0.14: ~60 ms for 1 MB on the main thread, ~90 ms on another), and because the producer then needs
the GIL only twice per segment, so it is never starved by the busy consumer.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["consume_behind"]

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
