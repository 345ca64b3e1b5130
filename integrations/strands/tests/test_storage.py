"""``OffpromptStorage`` beyond Strands' own storage tests: exact bytes, errors, scoping."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from offprompt_strands import CONTENT_TYPE_META, OffpromptStorage, memory_tools
from strands.vended_plugins.context_offloader import InMemoryStorage

from offprompt.artifacts import TextArtifact
from offprompt.errors import NamespaceError, ValidationError
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory


@pytest.fixture
def storage() -> OffpromptStorage:
    with OffpromptStorage() as opened:
        yield opened


def _retrieve_error(storage: object, reference: object) -> KeyError:
    with pytest.raises(KeyError) as caught:
        asyncio.run(storage.retrieve(reference))  # type: ignore[attr-defined]
    return caught.value


@pytest.mark.parametrize("reference", ["nope", "strands-nope", "mem_1_x", "", "strands-a/../b"])
def test_unknown_reference_error_is_strands_own(storage: OffpromptStorage, reference: str) -> None:
    ours = _retrieve_error(storage, reference)
    theirs = _retrieve_error(InMemoryStorage(), reference)
    assert type(ours) is type(theirs) is KeyError
    assert ours.args == theirs.args == (f"Reference not found: {reference}",)


def test_non_str_reference_is_not_found(storage: OffpromptStorage) -> None:
    assert _retrieve_error(storage, 42).args == ("Reference not found: 42",)


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"line one\r\nline two\n\n", "text/plain"),
        (b"\xff\xfe not utf-8", "text/plain"),
        ('{"k": "caf\u00e9"}'.encode(), "application/json"),
        (b"%PDF-1.7 \x00\x01", "application/pdf"),
        (bytes(range(256)), "image/jpeg"),
        ("\u2028 and \U0001f600".encode(), "text/markdown"),
    ],
)
def test_exact_bytes_and_type_come_back(
    storage: OffpromptStorage, content: bytes, content_type: str
) -> None:
    ref = storage.store_sync("tooluse_1_0", content, content_type)
    assert storage.retrieve_sync(ref) == (content, content_type)


def test_text_is_kept_as_text_for_the_memory_tools(storage: OffpromptStorage) -> None:
    text = "\n".join(f"line {i}" for i in range(500)) + "\nERROR disk full\n"
    ref = storage.store_sync("tooluse_9_0", text.encode(), "text/plain")
    meta = storage.memory.namespace_metadata(ref, wait=False)
    assert meta["storage"] == "text"
    assert meta["tool"] == "strands"
    assert storage.memory.load_artifacts(ref).value[0].meta[CONTENT_TYPE_META] == "text/plain"
    grep = next(t for t in memory_tools(storage.memory) if t.tool_name == "grep_memory")
    result = asyncio.run(
        _call(grep, memory_name=storage.memory.name, artifact_namespace=ref, pattern="ERROR")
    )
    assert "ERROR disk full" in result


async def _call(tool: object, **arguments: object) -> str:
    use = {"toolUseId": "t", "name": tool.tool_name, "input": arguments}  # type: ignore[attr-defined]
    events = [event async for event in tool.stream(use, {})]  # type: ignore[attr-defined]
    result = events[-1].tool_result
    assert result["status"] == "success"
    return "\n".join(part["text"] for part in result["content"])


def test_references_are_short_and_path_free(storage: OffpromptStorage) -> None:
    ref = storage.store_sync("x" * 500 + "/../\\ \u00e9", b"content")
    assert len(ref) < 80
    assert "/" not in ref and "\\" not in ref and ".." not in ref and " " not in ref
    assert ref.startswith("strands-")


def test_a_prefix_scopes_what_is_read() -> None:
    with TaskMemory() as memory:
        team_a = OffpromptStorage(memory, prefix="team-a-")
        team_b = OffpromptStorage(memory, prefix="team-b-")
        ref = team_a.store_sync("k", b"only a")
        assert ref.startswith("team-a-")
        assert team_a.retrieve_sync(ref) == (b"only a", "text/plain")
        with pytest.raises(KeyError, match="Reference not found"):
            team_b.retrieve_sync(ref)
        memory.store_artifact("team-a-other", TextArtifact(value="not a block"))
        memory.store_artifact("tool_output-1", TextArtifact(value="another tool's"))
        with pytest.raises(KeyError, match="Reference not found"):
            team_a.retrieve_sync("tool_output-1")  # outside the prefix: never read


def test_delete(storage: OffpromptStorage) -> None:
    ref = storage.store_sync("k", b"gone soon")
    assert storage.delete(ref) is True
    assert storage.delete(ref) is False
    assert storage.delete("../x") is False
    with pytest.raises(KeyError, match="Reference not found"):
        storage.retrieve_sync(ref)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("k", "text", "text/plain"), "content must be bytes"),
        ((1, b"x", "text/plain"), "key must be a str"),
        (("k", b"x", ""), "content_type must be a non-empty str"),
    ],
)
def test_bad_store_arguments(storage: OffpromptStorage, args: tuple, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        asyncio.run(storage.store(*args))


def test_bad_construction(tmp_path: Path) -> None:
    with (
        TaskMemory() as memory,
        pytest.raises(ValidationError, match="at most one of memory, path and store"),
    ):
        OffpromptStorage(memory, path=tmp_path)
    with pytest.raises(ValidationError, match="must be an offprompt TaskMemory"):
        OffpromptStorage("memory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="prefix must be a non-empty str"):
        OffpromptStorage(prefix="")
    with pytest.raises(NamespaceError):
        OffpromptStorage(prefix="a/b")


def test_close_leaves_a_given_memory_or_store_open(tmp_path: Path) -> None:
    with TaskMemory() as memory:
        OffpromptStorage(memory).close()
        ref = OffpromptStorage(memory).store_sync("k", b"still open")
        assert OffpromptStorage(memory).retrieve_sync(ref)[0] == b"still open"
    store = SQLiteStore(tmp_path / "m.db")
    try:
        with OffpromptStorage(store=store) as storage:
            ref = storage.store_sync("k", b"kept")
        assert not store.closed
        with OffpromptStorage(store=store) as storage:
            assert storage.retrieve_sync(ref)[0] == b"kept"
    finally:
        store.close()
