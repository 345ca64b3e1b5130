"""The two-thread ingest pipeline: order, errors both ways, early stops, context; the
raw write running beside the card's stats."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from offprompt.artifacts import ErrorArtifact, TextArtifact
from offprompt.errors import StorageError, ValidationError
from offprompt.task_memory import TaskMemory, TextArtifactStorage
from offprompt.task_memory.blobs import InMemoryBlobStore
from offprompt.task_memory.chunking import token_byte_lengths
from offprompt.task_memory.pipeline import consume_behind, run_beside
from offprompt.tokens import default_tokenizer

REQUEST = contextvars.ContextVar("REQUEST", default="none")


def test_items_arrive_in_order_and_the_result_comes_back() -> None:
    def consume(stream: Iterator[int]) -> list[int]:
        return [x * 2 for x in stream]

    assert consume_behind(consume, iter(range(100)), depth=2) == [x * 2 for x in range(100)]


def test_a_producer_error_is_raised_after_the_consumer_unwound() -> None:
    unwound = threading.Event()

    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("tokenising broke")

    def consume(stream: Iterator[int]) -> int:
        try:
            return sum(stream)
        finally:
            unwound.set()

    with pytest.raises(ValueError, match="tokenising broke"):
        consume_behind(consume, failing())
    assert unwound.is_set()


def test_a_consumer_error_stops_the_producer_and_reaches_the_caller() -> None:
    produced: list[int] = []

    def endless() -> Iterator[int]:
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    def consume(stream: Iterator[int]) -> None:
        for x in stream:
            if x == 3:
                raise RuntimeError("upsert failed")

    before = threading.active_count()
    with pytest.raises(RuntimeError, match="upsert failed"):
        consume_behind(consume, endless(), depth=2)
    assert threading.active_count() == before  # the worker has finished
    assert len(produced) <= 3 + 2 + 2  # bounded by depth: no runaway producer


def test_a_consumer_that_stops_early_stops_the_producer() -> None:
    produced: list[int] = []

    def slow() -> Iterator[int]:
        for i in range(1000):
            produced.append(i)
            time.sleep(0.001)
            yield i

    def first_two(stream: Iterator[int]) -> list[int]:
        return [next(stream), next(stream)]

    assert consume_behind(first_two, slow()) == [0, 1]
    assert len(produced) < 10


def test_the_consumer_sees_the_callers_context() -> None:
    def consume(stream: Iterator[int]) -> str:
        list(stream)
        return REQUEST.get()

    token = REQUEST.set("req-7")
    try:
        assert consume_behind(consume, iter(range(3))) == "req-7"
    finally:
        REQUEST.reset(token)


def test_invalid_unicode_in_a_large_output_is_refused_and_nothing_is_visible() -> None:
    text = "ok line\n" * 200_000 + "\ud800 broken"
    memory = TaskMemory()
    with pytest.raises(ValidationError, match="not valid Unicode"):
        memory.store_artifact("big", TextArtifact(value=text))
    assert memory.namespaces() == []
    assert memory.vector_store.count("big") == 0


def test_a_large_output_goes_through_the_pipeline_byte_identical() -> None:
    text = "".join(f"line {i} ünïcode 🚀 {'x' * (i % 50)}\n" for i in range(60_000))  # > 1 M chars
    assert len(text) > 1_000_000
    memory = TaskMemory()
    memory.process_output("tool", "run", TextArtifact(value=text, name="big"))
    assert memory.load_artifacts("big").value[0].value == text


def test_close_releases_the_embedded_engine_so_the_path_can_be_reopened(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with TaskMemory(path=tmp_path / "tm") as memory:
        memory.process_output(
            "tool", "run", TextArtifact(value="kept across a restart " * 50, name="ns")
        )
    with TaskMemory(path=tmp_path / "tm") as reopened:
        assert reopened.namespaces() == ["ns"]


# ------------------------------------------------- run_beside (the raw write's thread)


def test_run_beside_returns_the_result_raises_the_failure_and_keeps_the_context() -> None:
    REQUEST.set("req-9")
    started = threading.Event()

    def slow() -> str:
        started.set()
        time.sleep(0.05)
        return REQUEST.get()

    pending = run_beside(slow)
    assert started.wait(5)  # it runs while this thread goes on
    assert pending.result() == "req-9"

    def broken() -> str:
        raise OSError("disk gone")

    failed = run_beside(broken)
    failed.wait()  # waiting never raises
    with pytest.raises(OSError, match="disk gone"):
        failed.result()
    assert run_beside(lambda: threading.current_thread().name, inline=True).result() == (
        threading.current_thread().name
    )


class _FailingBigPuts(InMemoryBlobStore):
    """Accepts small blobs, fails on large ones (a full disk mid-write)."""

    def put(self, namespace: str, data: bytes, **kwargs: Any) -> str:
        if len(data) >= 1 << 20:
            time.sleep(0.05)  # still writing while the card's stats are computed
            raise StorageError("no space left on device")
        return super().put(namespace, data, **kwargs)


def test_a_raw_write_failing_in_its_thread_leaves_nothing_visible() -> None:
    blobs = _FailingBigPuts()
    memory = TaskMemory(blob_store=blobs)
    memory.process_output("t", "call", TextArtifact("kept line\n" * 500, name="ns"))
    before = blobs.keys("ns")
    result = memory.process_output("t", "call", TextArtifact("big line\n" * 200_000, name="ns"))
    assert isinstance(result, ErrorArtifact) and "no space left" in result.value
    assert memory.load_artifacts("ns").value[0].value == "kept line\n" * 500
    assert len(memory.load_artifacts("ns").value) == 1 and blobs.keys("ns") == before
    assert memory.grep("ns", "big line").total_matches == 0
    memory.close()


def testtoken_byte_lengths_from_the_tables_equal_the_per_token_answer() -> None:
    encoding = default_tokenizer().encoding

    class OneByOne:  # no tables: the per-token path
        max_token_value = encoding.max_token_value

        @staticmethod
        def decode_single_token_bytes(token: int) -> bytes:
            return bytes(encoding.decode_single_token_bytes(token))

    assert np.array_equal(token_byte_lengths(encoding), token_byte_lengths(OneByOne()))


def test_only_file_stores_take_the_raw_write_on_the_calling_thread(tmp_path: Path) -> None:
    """Into files the write from a worker measured ~3x slower than inline; in memory and
    on SQL stores the worker's hash overlaps the card's stats (``_commit.beside``)."""
    from offprompt.task_memory._commit import BESIDE_BYTES, beside

    with TaskMemory(path=tmp_path / "tm") as on_disk, TaskMemory() as in_memory:
        files = on_disk.storages[TextArtifact]
        memory = in_memory.storages[TextArtifact]
        assert isinstance(files, TextArtifactStorage) and isinstance(memory, TextArtifactStorage)
        assert not beside(files, 50 * BESIDE_BYTES)
        assert beside(memory, 50 * BESIDE_BYTES)
        assert not beside(memory, BESIDE_BYTES - 1)
