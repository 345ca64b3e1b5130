"""Issue 13 item 5 (the reference comes back at once, indexing in the background, crash
recovery) and issue 15 items 7 and 8 (storages checked at construction; the subtask
entry's answer filled in with the reference)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from offprompt.artifacts import InfoArtifact, TextArtifact
from offprompt.errors import ValidationError
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.task_memory import (
    ActionSubtaskMetaEntry,
    BlobArtifactStorage,
    InMemoryBlobStore,
    TaskMemory,
)
from offprompt.task_memory._points import points_for
from offprompt.task_memory.tools import memory_tool_specs
from offprompt.vectors import HashingEmbedder, QdrantVectorStore

NEEDLE = "CRIT vault-9 rejected the rotation key K-77421 (expired)\n"


def _logs(n: int) -> str:
    return "".join(f"2026-03-14 INFO api[pod-{i % 97}] GET /items/{i} 200\n" for i in range(n))


def test_reads_work_before_indexing_and_query_waits_for_it() -> None:
    with TaskMemory() as memory:
        text = _logs(20_000) + NEEDLE
        info = memory.process_output("logs", "call", TextArtifact(text, name="bg"))
        assert isinstance(info, InfoArtifact)
        # Raw-text reads answer whatever the index is doing.
        assert memory.grep("bg", "K-77421", regex=False).matches[0].line_number == 20_001
        assert memory.load_artifacts("bg").value[0].value == text
        hits = memory.query("bg", "vault-9 rotation key rejected", top_n=3)  # waits
        assert any("K-77421" in h.value for h in hits.value)
        assert memory.wait_indexed("bg", timeout=60) and memory.stats("bg").indexed
        meta = memory.namespace_metadata("bg")
        assert memory.vector_store.count("bg") == points_for(meta["chunks"]) > 0


def test_sync_and_background_build_the_same_index() -> None:
    text = _logs(3000) + NEEDLE
    counts = []
    for mode in ("sync", "background"):
        with TaskMemory(index=mode) as memory:  # type: ignore[arg-type]
            info = memory.process_output("logs", "call", TextArtifact(text, name="n"))
            if mode == "sync":
                assert info.meta["stats"]["indexed"] and not info.meta["stats"]["tokens_estimated"]
            assert memory.wait_indexed(timeout=60)
            meta = memory.namespace_metadata("n")
            counts.append((meta["chunks"], meta["tokens"], meta["pages"]))
    assert counts[0] == counts[1]


def test_same_code_on_the_client_engine() -> None:
    # qdrant-client's local mode: the code path of url= (ClientBackend).
    store = QdrantVectorStore(engine="client")
    with TaskMemory(vector_store=store) as memory:
        memory.process_output("logs", "call", TextArtifact(_logs(2000) + NEEDLE, name="c"))
        assert memory.grep("c", "K-77421").total_matches == 1
        assert "K-77421" in memory.query("c", "rotation key rejected", top_n=1)[0].value
        assert memory.wait_indexed("c", timeout=60)
    store.close()


def test_close_stops_cleanly_and_reopen_finishes_the_index(tmp_path: Path) -> None:
    text = _logs(60_000) + NEEDLE
    memory = TaskMemory(path=tmp_path / "tm")
    memory.process_output("logs", "call", TextArtifact(text, name="c"))
    started = time.perf_counter()
    memory.close()  # mid-index: stops at the next batch
    assert time.perf_counter() - started < 10
    assert memory.wait_indexed("c", timeout=1) is False
    memory.close()  # twice is harmless
    with TaskMemory(path=tmp_path / "tm") as again:
        assert again.load_artifacts("c").value[0].value == text
        assert again.wait_indexed("c", timeout=120)
        meta = again.namespace_metadata("c")
        assert again.vector_store.count("c") == points_for(meta["chunks"])
        assert "K-77421" in again.query("c", "vault-9 rotation key", top_n=3).to_text()


_CHILD = textwrap.dedent(
    """
    import sys, time
    from offprompt.artifacts import TextArtifact
    from offprompt.task_memory import TaskMemory

    lines = [f"2026-03-14 INFO api GET /items/{i} 200\\n" for i in range(150_000)]
    lines.insert(140_000, NEEDLE_REPR)
    memory = TaskMemory(path=sys.argv[1])
    memory.process_output("logs", "call", TextArtifact("".join(lines), name="killed"))
    print("stored", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.slow
@pytest.mark.timeout(600)  # waits up to 240 s for the index
def test_sigkill_mid_index_then_reopen_loads_byte_identical_and_finishes(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    script = tmp_path / "child.py"
    script.write_text(_CHILD.replace("NEEDLE_REPR", repr(NEEDLE)), encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "stored"
        time.sleep(0.5)  # some chunks are in, the index is not finished
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    expected = "".join(
        [f"2026-03-14 INFO api GET /items/{i} 200\n" for i in range(140_000)]
        + [NEEDLE]
        + [f"2026-03-14 INFO api GET /items/{i} 200\n" for i in range(140_000, 150_000)]
    )
    # What the crash left: committed raw text, the artifact still marked unindexed
    # (the metadata lives in task.db since issue 29).
    with SQLiteStore(root / "task.db") as raw:
        record = raw.task_get("killed", scope=Scope(tenant="default"))
        assert record is not None and record.meta["artifacts"][0]["indexed"] is False
    with TaskMemory(path=root) as memory:
        assert memory.load_artifacts("killed").value[0].value == expected
        assert memory.grep("killed", "K-77421").matches[0].line_number == 140_001
        assert memory.wait_indexed("killed", timeout=240)
        meta = memory.namespace_metadata("killed")
        assert meta["stats"]["indexed"] and memory.vector_store.count("killed") == points_for(
            meta["chunks"]
        )
        assert "K-77421" in memory.query("killed", "vault-9 rotation key", top_n=3).to_text()


# ----------------------------------------------------------- issue 15 items 7, 8


def test_a_storage_that_cannot_store_its_key_is_refused_at_construction() -> None:
    with pytest.raises(ValidationError, match="BlobArtifactStorage stores BlobArtifact"):
        TaskMemory(storages={TextArtifact: BlobArtifactStorage(InMemoryBlobStore())})
    with pytest.raises(ValidationError, match="artifact classes"):
        TaskMemory(storages={str: BlobArtifactStorage(InMemoryBlobStore())})  # type: ignore[dict-item]


def test_the_subtask_entry_answer_is_filled_with_the_reference() -> None:
    with TaskMemory(preview=False) as memory:
        entry = ActionSubtaskMetaEntry(thought="need the logs", actions="fetch()")
        info = memory.process_output(
            "logs", "call", TextArtifact(_logs(10), name="s"), context=entry
        )
        assert entry.answer == info.value
        assert memory.meta_memory.entries[-1].answer == info.value
        assert memory.namespace_metadata("s")["subtasks"][0]["answer"] == info.value
        own = ActionSubtaskMetaEntry(thought="t", actions="a", answer="kept")
        memory.process_output("logs", "call", TextArtifact(_logs(10), name="s2"), context=own)
        assert own.answer == "kept" and memory.meta_memory.entries[-1].answer == "kept"


class _HeldEmbedder(HashingEmbedder):
    """Embeds only once ``release`` is set, so a test can act while indexing is pending."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.release.wait(timeout=60)
        return super().embed_documents(texts)


def test_the_grep_and_read_tools_answer_while_indexing_is_pending() -> None:
    # The tools' namespace check must not wait for the index (a 100 MB output through
    # the MCP proxy made the first grep_memory wait minutes for it).
    embedder = _HeldEmbedder()
    with TaskMemory(vector_store=QdrantVectorStore(embedder=embedder)) as memory:
        memory.process_output("logs", "call", TextArtifact(_logs(2000) + NEEDLE, name="held"))
        tools = {spec.name: spec for spec in memory_tool_specs(memory)}
        answers: dict[str, str] = {}

        def ask() -> None:
            grep = tools["grep_memory"].call(artifact_namespace="held", pattern="K-77421")
            page = tools["read_memory"].call(artifact_namespace="held", page=1)
            answers.update(grep=grep.text, read=page.text)

        asking = threading.Thread(target=ask)
        asking.start()
        asking.join(timeout=20)
        answered_while_pending = not asking.is_alive() and not memory.stats("held").indexed
        embedder.release.set()
        asking.join()
        assert answered_while_pending
        assert "2001: CRIT vault-9 rejected the rotation key K-77421" in answers["grep"]
        assert "GET /items/0 200" in answers["read"]
        assert memory.wait_indexed("held", timeout=60)


def test_background_indexing_waits_for_reads_of_its_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch of background indexing does not start while a read (grep, read,
    read_lines, json) of the same process runs: the embedded engine's upserts keep the
    GIL for tens of ms, which made a 50 MB grep beside indexing 5-10x slower. After
    the read, indexing goes on and finishes."""
    from offprompt.task_memory import _index_jobs as module

    monkeypatch.setattr(module, "YIELD_SECONDS", 600.0)  # only the read's end frees it
    with TaskMemory() as memory:
        upserts: list[bool] = []  # one item per batch: was a read running when it began?
        first = threading.Event()
        go_on = threading.Event()
        store = memory.vector_store
        upsert = store.upsert

        def watched(namespace: str, records: Sequence[object], **kw: object) -> None:
            upserts.append(memory.indexer.reads_running > 0)
            if not first.is_set():
                first.set()
                go_on.wait(60)
            upsert(namespace, records, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(type(store), "upsert", lambda self, *a, **kw: watched(*a, **kw))
        memory.process_output("logs", "call", TextArtifact(_logs(8000) + NEEDLE, name="r"))
        assert first.wait(60), "indexing never began"
        with memory.indexer.reading():  # a read begins while the first batch is upserted
            go_on.set()
            reading_since = len(upserts)
            # The first batch ends; the next one waits for this read to end.
            grep = memory.grep("r", "K-77421", regex=False)
            time.sleep(0.5)
            assert len(upserts) == reading_since
        assert memory.wait_indexed("r", timeout=120)
        assert grep.matches[0].line_number == 8001
        assert len(upserts) > reading_since and not any(upserts[reading_since:])
        assert any("K-77421" in h.value for h in memory.query("r", "rotation key K-77421").value)


def test_close_frees_an_indexing_batch_waiting_for_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from offprompt.task_memory import _index_jobs as module

    monkeypatch.setattr(module, "YIELD_SECONDS", 600.0)
    memory = TaskMemory()
    waited = threading.Event()
    with memory.indexer.reading():
        waiter = threading.Thread(
            target=lambda: (memory.indexer.yield_to_reads(lambda: False), waited.set())
        )
        waiter.start()
        assert not waited.wait(0.3)  # held by the read
        memory.close()
        waiter.join(30)
    assert waited.is_set()


def test_a_read_begun_mid_batch_holds_indexing_off_within_a_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read that begins while the indexer upserts a batch stops it within a step of
    a few ms, not at the batch's end: the engine's upserts of a 512-chunk batch kept the
    GIL for 0.05-0.1 s, which a 50 MB grep beside them had to share."""
    from offprompt.task_memory import _index_jobs as module

    monkeypatch.setattr(module, "YIELD_SECONDS", 600.0)  # only the read's end frees it
    with TaskMemory() as memory:
        upserts: list[tuple[int, bool]] = []  # (points, was a read running?) per engine call
        held = threading.Event()
        go_on = threading.Event()
        # private-ok: wraps the engine's upsert to hold the indexer mid-batch
        backend = memory.vector_store._core.backend
        upsert = backend.upsert

        def watched(points: Sequence[object]) -> None:
            if len(points) == 1:  # the namespace's metadata point, not a chunk batch
                upsert(points)  # type: ignore[arg-type]
                return
            before = sum(n for n, _ in upserts)
            upserts.append((len(points), memory.indexer.reads_running > 0))
            if before == 32 + 64 + 128 + 256 and not held.is_set():  # the 5th batch: 512
                held.set()
                go_on.wait(60)
            upsert(points)  # type: ignore[arg-type]

        monkeypatch.setattr(backend, "upsert", watched)
        memory.process_output("logs", "call", TextArtifact(_logs(120_000) + NEEDLE, name="r"))
        assert held.wait(60), "indexing never reached its fifth batch"
        with memory.indexer.reading():  # a read begins while the batch's first step is upserted
            go_on.set()
            reading_since = len(upserts)
            time.sleep(0.5)  # time for the rest of the batch, had it not stopped
            during = upserts[reading_since:]
        assert during == []
        assert memory.wait_indexed("r", timeout=120)
        assert not any(read for _, read in upserts[reading_since:])
        assert sum(n for n, _ in upserts) > 32 + 64 + 128 + 256 + 512
        assert any("K-77421" in h.value for h in memory.query("r", "rotation key K-77421").value)


def test_indexing_under_steady_reads_yields_then_indexes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Indexing yields to reads at every step, so under reads that never end it would
    wait a whole ``YIELD_SECONDS`` a chunk: after a wait that the reads outlast, it
    indexes on for as long before it waits again."""
    from offprompt.task_memory import _index_jobs as module

    monkeypatch.setattr(module, "YIELD_SECONDS", 1.0)
    with TaskMemory() as memory:
        waits: list[float] = []
        real_wait_for = memory.indexer.reads_done.wait_for

        def counted(*args: object, **kwargs: object) -> bool:
            waits.append(time.monotonic())
            return bool(real_wait_for(*args, **kwargs))  # type: ignore[arg-type]

        monkeypatch.setattr(memory.indexer.reads_done, "wait_for", counted)
        with memory.indexer.reading():  # a read that outlasts the wait
            memory.indexer.yield_to_reads(lambda: False)
            assert len(waits) == 1
            memory.indexer.yield_to_reads(lambda: False)  # indexes on: no second wait
            assert len(waits) == 1
        with memory.indexer.reading():
            memory.indexer.yield_to_reads(lambda: False)  # reads again, budget left: still none
            assert len(waits) == 1


def test_json_queries_and_outlines_hold_indexing_off_while_they_walk_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The JMESPath walk (seconds of Python over 100k items) is part of the read, not
    only the parse: indexing of the process waits for it like for a grep."""
    from offprompt.task_memory import json_view

    seen: list[int] = []
    query, outline = json_view.query, json_view.outline
    with TaskMemory() as memory:

        def watched_query(*args: object, **kwargs: object) -> object:
            seen.append(memory.indexer.reads_running)
            return query(*args, **kwargs)  # type: ignore[arg-type]

        def watched_outline(*args: object, **kwargs: object) -> object:
            seen.append(memory.indexer.reads_running)
            return outline(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(json_view, "query", watched_query)
        monkeypatch.setattr(json_view, "outline", watched_outline)
        memory.store_artifact("jobs", TextArtifact('{"items": [{"id": 1}, {"id": 2}]}'))
        seen.clear()  # the card's outline, made while storing
        assert memory.json_query("jobs", "length(items)") == 2
        assert "items" in memory.json_outline("jobs")
        assert seen == [1, 1]
