"""``OffpromptOverflowStore`` beyond the harness's tests: exact bytes of every kind,
any key, the namespace rule, durability across instances, and clear errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from offprompt_pydantic_ai import OffpromptOverflowStore

from offprompt.errors import ValidationError
from offprompt.names import validate_namespace
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory

PAYLOADS = [
    b"",
    b"plain text\n",
    b"crlf\r\nlines\r\n\r\n",
    "\ufeffbom, accents \u00e9\u00e8 and emoji \U0001f600\n".encode(),
    b"\x00\x01\x02\xff\xfe binary",
    b"\xc3\x28 invalid utf-8",
    bytes(range(256)) * 40,
]
KEYS = ["", "/", "//", "..", "../..", "run-1/call-1.0", "a b!@#", "x" * 500, "\u00e9/\u2028/\x00"]


@pytest.fixture
def store() -> Iterator[OffpromptOverflowStore]:
    with OffpromptOverflowStore() as opened:
        yield opened


@pytest.mark.parametrize("data", PAYLOADS, ids=range(len(PAYLOADS)))
async def test_exact_bytes_back(store: OffpromptOverflowStore, data: bytes) -> None:
    handle = await store.write("k", data)
    assert await store.read(handle) == data


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
async def test_any_key_is_its_own_handle(store: OffpromptOverflowStore, key: str) -> None:
    assert await store.write(key, key.encode("utf-8", "surrogatepass") + b"!") == key
    assert await store.read(key) == key.encode("utf-8", "surrogatepass") + b"!"


async def test_keys_that_look_alike_stay_apart(store: OffpromptOverflowStore) -> None:
    # LocalFileOverflowStore maps "a b" and "a_b" (and "" and "/") to one file; here each
    # key is its own payload.
    for key in ["a b", "a_b", "", "/", "a/b", "a//b"]:
        await store.write(key, key.encode())
    for key in ["a b", "a_b", "", "/", "a/b", "a//b"]:
        assert await store.read(key) == key.encode()


def test_namespace_is_deterministic_one_to_one_and_valid() -> None:
    names = {key: OffpromptOverflowStore.namespace(key) for key in [*KEYS, "a b", "a_b"]}
    assert len(set(names.values())) == len(names)
    for key, name in names.items():
        assert validate_namespace(name) == name
        assert OffpromptOverflowStore.namespace(key) == name


async def test_the_error_for_an_unknown_handle_is_open_s(store: OffpromptOverflowStore) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        await store.read("nope/x.0")
    assert caught.value.errno == 2
    assert str(caught.value) == "[Errno 2] No such file or directory: 'nope/x.0'"


async def test_a_deleted_handle_is_unknown(store: OffpromptOverflowStore) -> None:
    await store.write("k", b"data")
    assert store.delete("k") is True
    with pytest.raises(FileNotFoundError):
        await store.read("k")
    assert store.delete("k") is False


async def test_a_binary_rewrite_of_a_text_key_replaces_it(store: OffpromptOverflowStore) -> None:
    await store.write("k", b"text first")
    await store.write("k", b"\xff\x00")
    assert await store.read("k") == b"\xff\x00"
    await store.write("k", b"text again")
    assert await store.read("k") == b"text again"


async def test_a_spill_outlives_its_store_on_disk(tmp_path: Path) -> None:
    with OffpromptOverflowStore(path=tmp_path / "home") as first:
        await first.write("run-1/call-1.0", b"kept on disk\n")
    with OffpromptOverflowStore(path=tmp_path / "home") as second:
        assert await second.read("run-1/call-1.0") == b"kept on disk\n"


async def test_on_a_sqlite_store_across_instances(tmp_path: Path) -> None:
    db = SQLiteStore(tmp_path / "memory.db")
    try:
        with OffpromptOverflowStore(store=db) as first:
            await first.write("k", b"\x00shared")
        with OffpromptOverflowStore(store=db) as second:
            assert await second.read("k") == b"\x00shared"
    finally:
        db.close()


async def test_a_memory_passed_in_is_used_and_left_open() -> None:
    memory = TaskMemory()
    store = OffpromptOverflowStore(memory)
    assert store.memory is memory
    await store.write("k", b"hello")
    store.close()
    assert memory.namespaces() == [store.namespace("k")]
    memory.close()


async def test_bad_input_gets_a_clear_error(store: OffpromptOverflowStore) -> None:
    with pytest.raises(ValidationError, match="data must be bytes, got str"):
        await store.write("k", "text")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="key must be a str, got int"):
        await store.write(1, b"x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="handle must be a str"):
        await store.read(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="TaskMemory"):
        OffpromptOverflowStore("memory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not several"):
        OffpromptOverflowStore(store.memory, path=os.devnull)
    assert store.memory.namespaces() == []  # nothing stored by a refused write
