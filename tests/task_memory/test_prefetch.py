"""The chunking pipeline's prefetch thread: order, errors and early stops."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.chunking import prefetch


def test_items_arrive_in_order() -> None:
    assert list(prefetch(iter(range(100)), depth=2)) == list(range(100))


def test_a_producer_error_reaches_the_consumer() -> None:
    def failing() -> Iterator[int]:
        yield 1
        raise ValueError("chunking broke")

    with pytest.raises(ValueError, match="chunking broke"):
        list(prefetch(failing()))


def test_a_consumer_that_stops_early_stops_the_producer() -> None:
    produced: list[int] = []

    def endless() -> Iterator[int]:
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    stream = prefetch(endless(), depth=2)
    assert next(stream) == 0
    stream.close()  # what a failing upsert does to the for loop
    assert threading.active_count() == before
    assert len(produced) <= 4  # bounded by depth: it did not run ahead unboundedly


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
