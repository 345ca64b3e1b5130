"""Typed results between the core classes (issue 43, item 2): ``store_output`` returns a
frozen ``Stored``, ``process_output`` maps it to the same artifacts as before,
``StoredReference`` is built from it, and ``namespace_metadata`` is a frozen model that
still reads like the dict it replaced."""

from __future__ import annotations

import dataclasses
import json

import pytest

from offprompt.artifacts import BlobArtifact, ErrorArtifact, InfoArtifact, TextArtifact
from offprompt.errors import OffloadError, StorageMismatchError, ValidationError
from offprompt.task_memory import (
    BlobArtifactStorage,
    InMemoryBlobStore,
    NamespaceMetadata,
    OffloadPolicy,
    OutputStats,
    Stored,
    StoredReference,
    TaskMemory,
)

LOG = "".join(f"2026-12-07 10:{i % 60:02d} worker-{i % 7} disk {i}% full\n" for i in range(400))


def test_store_output_says_stored_small_or_empty() -> None:
    memory = TaskMemory(index="sync")
    stored = memory.store_output("logs", "fetch", TextArtifact(LOG, name="logs-1"), min_tokens=50)
    assert stored.stored and stored.verdict == "stored"
    assert stored.namespace == "logs-1" and stored.memory_name == memory.name
    assert isinstance(stored.stats, OutputStats) and stored.stats.lines == 400
    assert stored.text.startswith('Output of "logs.fetch" was stored in memory')
    assert memory.load_artifacts("logs-1").value[0].value == LOG

    small = memory.store_output("logs", "fetch", TextArtifact("ok", name="logs-2"), min_tokens=50)
    assert (small.verdict, small.text, small.namespace, small.stats) == ("small", "ok", None, None)
    assert not memory.has_namespace("logs-2")

    empty = memory.store_output("logs", "fetch", TextArtifact(" \n", name="logs-3"))
    assert (empty.verdict, empty.text, empty.stored) == ("empty", "tool output is empty", False)
    assert not memory.has_namespace("logs-3")

    with pytest.raises(dataclasses.FrozenInstanceError):
        stored.text = "changed"  # type: ignore[misc]


def test_store_output_raises_where_process_output_returns_an_error_artifact() -> None:
    memory = TaskMemory(index="sync")
    memory.store_artifact("shared", BlobArtifact(b"\x00" * 64, mime_type="application/zip"))
    text = TextArtifact(LOG, name="shared")
    with pytest.raises(StorageMismatchError):
        memory.store_output("logs", "fetch", text, min_tokens=0)
    error = memory.process_output("logs", "fetch", text, min_tokens=0)
    assert isinstance(error, ErrorArtifact)
    assert error.value.startswith("could not store output of logs.fetch: ")
    assert LOG[:40] not in error.value
    with pytest.raises(ValidationError, match="must be an artifact, got str"):
        memory.store_output("logs", "fetch", LOG)  # type: ignore[arg-type]


def test_process_output_maps_stored_to_the_same_artifacts_as_before() -> None:
    memory = TaskMemory(index="sync")
    twin = TaskMemory(index="sync")
    info = memory.process_output("logs", "fetch", TextArtifact(LOG, name="a"), min_tokens=50)
    stored = twin.store_output("logs", "fetch", TextArtifact(LOG, name="a"), min_tokens=50)
    assert isinstance(info, InfoArtifact) and stored.stats is not None
    assert info.value == stored.text
    assert info.meta == {
        "memory_name": memory.name,
        "artifact_namespace": "a",
        "stats": stored.stats.model_dump(mode="json"),  # artifact meta is JSON: lists
    }
    small = TextArtifact("ok", name="b")
    assert memory.process_output("logs", "fetch", small, min_tokens=50) is small
    blank = memory.process_output("logs", "fetch", TextArtifact("", name="c"))
    assert isinstance(blank, InfoArtifact) and blank.value == "tool output is empty"


def test_stored_reference_is_built_from_stored() -> None:
    memory = TaskMemory(index="sync")
    stored = memory.store_output("logs", "fetch", TextArtifact(LOG, name="r"), min_tokens=0)
    reference = StoredReference.from_stored(stored, tool="logs", is_error=True)
    assert stored.stats is not None
    assert (reference.memory_name, reference.namespace, reference.tool) == (
        memory.name,
        "r",
        "logs",
    )
    assert (reference.lines, reference.bytes) == (400, len(LOG.encode()))
    assert reference.tokens == stored.stats.tokens and reference.is_error
    small = memory.store_output("logs", "fetch", TextArtifact("ok", name="s"), min_tokens=50)
    with pytest.raises(ValidationError, match="nothing was stored \\(verdict 'small'\\)"):
        StoredReference.from_stored(small, tool="logs")


def test_a_storage_failure_is_one_offload_error_chained_to_its_cause() -> None:
    blobs_only = TaskMemory(storages={BlobArtifact: BlobArtifactStorage(InMemoryBlobStore())})
    policy = OffloadPolicy(blobs_only, min_tokens=0)
    with pytest.raises(OffloadError) as failed:
        policy.offload("fetch_logs", LOG)
    message = str(failed.value)
    assert message.startswith(
        "the output of fetch_logs could not be stored off-prompt: "
        "could not store output of fetch_logs.call: no storage for TextArtifact"
    )
    assert isinstance(failed.value.__cause__, ValidationError)
    assert LOG[:40] not in message


def test_namespace_metadata_is_a_frozen_model_that_reads_like_the_dict() -> None:
    memory = TaskMemory(index="sync")
    memory.process_output("logs", "fetch", TextArtifact(LOG, name="m"), min_tokens=0)
    meta = memory.namespace_metadata("m")
    assert isinstance(meta, NamespaceMetadata)
    assert meta.tool == meta["tool"] == meta.get("tool") == "logs"
    assert meta.get("no such key", 7) == 7 and "storage" in meta and "nope" not in meta
    with pytest.raises(KeyError):
        meta["nope"]
    as_dict = dict(meta.items())
    assert set(as_dict) == set(meta.keys()) >= {"bytes", "tokens", "pages", "stats", "subtasks"}
    assert as_dict == meta.model_dump()
    json.dumps(meta.model_dump())  # JSON-ready
    assert meta.output_stats is not None and meta.output_stats.lines == 400
    with pytest.raises(ValueError):
        meta.tool = "other"  # type: ignore[misc]
    stored = memory.store_artifact("n", TextArtifact("one line"))
    assert isinstance(stored, NamespaceMetadata) and stored.artifacts == 1


async def test_the_async_twins_answer_the_same() -> None:
    memory = TaskMemory(index="sync")
    stored = await memory.astore_output("logs", "fetch", TextArtifact(LOG, name="x"), min_tokens=0)
    assert isinstance(stored, Stored) and stored.stored
    meta = await memory.anamespace_metadata("x")
    assert isinstance(meta, NamespaceMetadata) and meta.namespace == "x"
