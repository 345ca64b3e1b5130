"""Strands' own ContextOffloader storage tests, run on Strands' storages and on ours.

Ported from strands-agents 1.62 ``tests/strands/vended_plugins/context_offloader/
test_storage.py`` (Apache-2.0): the ``TestInMemoryStorage`` and ``TestFileStorage``
tests that hold for every storage, parametrized over Strands' ``InMemoryStorage`` and
``FileStorage`` (the self-check) and ``OffpromptStorage`` in memory, on a task-memory
directory and on a SQLite store. The tests of one backend's own mechanics (``mem_``
reference format, file extensions, ``.metadata.json``, eviction, S3, sandboxes) are left
out; what they guard is covered for ours in test_storage.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from offprompt_strands import OffpromptStorage
from strands.vended_plugins.context_offloader import FileStorage, InMemoryStorage

from offprompt.stores import SQLiteStore

Factory = Callable[[], Any]


@pytest.fixture(
    params=["strands-memory", "strands-file", "offprompt", "offprompt-path", "offprompt-sqlite"]
)
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """``make_storage()``: a new storage instance on this test's one backing place."""
    opened: list[Any] = []
    kind = request.param
    shared = OffpromptStorage() if kind == "offprompt" else None
    sqlite = SQLiteStore(tmp_path / "memory.db") if kind == "offprompt-sqlite" else None

    def make() -> Any:
        if kind == "strands-memory":
            return InMemoryStorage()
        if kind == "strands-file":
            return FileStorage(artifact_dir=str(tmp_path / "artifacts"))
        if kind == "offprompt":
            return OffpromptStorage(shared.memory)  # type: ignore[union-attr]
        if kind == "offprompt-path":
            for storage in opened:  # one process opens a durable memory once at a time
                storage.close()
            storage = OffpromptStorage(path=tmp_path / "tm")
        else:
            storage = OffpromptStorage(store=sqlite)
        opened.append(storage)
        return storage

    make.kind = kind  # type: ignore[attr-defined]
    yield make
    for storage in opened:
        storage.close()
    if shared is not None:
        shared.close()
    if sqlite is not None:
        sqlite.close()


async def test_round_trip(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("key_1", b"hello world")
    content, content_type = await storage.retrieve(ref)
    assert content == b"hello world"
    assert content_type == "text/plain"


async def test_preserves_content_type(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("key_1", b'{"a": 1}', "application/json")
    content, content_type = await storage.retrieve(ref)
    assert content == b'{"a": 1}'
    assert content_type == "application/json"


async def test_stores_binary_content(make_storage: Factory) -> None:
    storage = make_storage()
    img_bytes = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
    ref = await storage.store("key_1", img_bytes, "image/png")
    content, content_type = await storage.retrieve(ref)
    assert content == img_bytes
    assert content_type == "image/png"


async def test_retrieve_missing_raises_key_error(make_storage: Factory) -> None:
    storage = make_storage()
    with pytest.raises(KeyError, match="Reference not found"):
        await storage.retrieve("nonexistent_ref")
    with pytest.raises(KeyError, match="Reference not found"):
        await storage.retrieve("nonexistent.txt")


async def test_unique_references(make_storage: Factory) -> None:
    storage = make_storage()
    ref1 = await storage.store("key_1", b"content a")
    ref2 = await storage.store("key_1", b"content b")
    assert ref1 != ref2
    assert (await storage.retrieve(ref1))[0] == b"content a"
    assert (await storage.retrieve(ref2))[0] == b"content b"


async def test_reference_contains_key(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("tool_abc", b"content")
    assert "tool_abc" in ref


def test_thread_safety(make_storage: Factory) -> None:
    storage = make_storage()
    refs: list[str] = []
    stored: dict[str, bytes] = {}
    errors: list[Exception] = []

    def store_item(i: int) -> None:
        try:
            ref = asyncio.run(storage.store(f"key_{i}", f"content_{i}".encode()))
            refs.append(ref)
            stored[ref] = f"content_{i}".encode()
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=store_item, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors
    assert len(set(refs)) == 50
    for ref, content in stored.items():  # (added here: every block comes back)
        assert asyncio.run(storage.retrieve(ref))[0] == content


async def test_stores_empty_content(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("key_1", b"")
    assert await storage.retrieve(ref) == (b"", "text/plain")


async def test_sanitizes_path_traversal(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("../../etc/passwd", b"content")
    assert (await storage.retrieve(ref))[0] == b"content"
    if make_storage.kind == "strands-memory":  # type: ignore[attr-defined]
        return  # (FileStorage's test: an in-memory reference is no file name)
    assert ".." not in ref
    assert "/" not in Path(ref).name


async def test_reference_is_path_free(make_storage: Factory) -> None:
    storage = make_storage()
    ref = await storage.store("key_1", b"content")
    assert "/" not in ref and "\\" not in ref
    assert ref == Path(ref).name


async def test_relative_location_round_trips(
    make_storage: Factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    storage = make_storage()
    ref = await storage.store("key_1", b"content")
    content, content_type = await storage.retrieve(ref)
    assert content == b"content"
    assert content_type == "text/plain"


async def test_content_survives_across_instances(make_storage: Factory) -> None:
    storage1 = make_storage()
    ref = await storage1.store("key_1", b"hello", "image/png")

    storage2 = make_storage()
    if make_storage.kind == "strands-memory":  # type: ignore[attr-defined]
        with pytest.raises(KeyError, match="Reference not found"):  # one instance's, by design
            await storage2.retrieve(ref)
        return
    content, content_type = await storage2.retrieve(ref)
    assert content == b"hello"
    assert content_type == "image/png"


async def test_retrieve_rejects_path_traversal(make_storage: Factory) -> None:
    storage = make_storage()
    await storage.store("passwd", b"secret")
    with pytest.raises(KeyError, match="Reference not found"):
        await storage.retrieve("../../etc/passwd")
    with pytest.raises(KeyError, match="Reference not found"):
        await storage.retrieve("../passwd")
