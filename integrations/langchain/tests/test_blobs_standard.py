"""OffpromptBlobStore: LangChain's standard BaseStore suites, plus keys, isolation, races."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from langchain_core.stores import BaseStore
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests
from offprompt_langchain import OffpromptBlobStore

from offprompt.errors import NamespaceError, ValidationError
from offprompt.task_memory import FileBlobStore, InMemoryBlobStore

VALUES = (b"foo-bytes", b"\x00\xffbar", "bäz ✓".encode())


class TestInMemorySync(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self) -> BaseStore[str, bytes]:
        return OffpromptBlobStore(InMemoryBlobStore())

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestFileSync(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, tmp_path: Path) -> BaseStore[str, bytes]:
        return OffpromptBlobStore(path=tmp_path / "blobs")

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestInMemoryAsync(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    async def kv_store(self) -> BaseStore[str, bytes]:
        return OffpromptBlobStore(InMemoryBlobStore())

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestFileAsync(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    async def kv_store(self, tmp_path: Path) -> BaseStore[str, bytes]:
        return OffpromptBlobStore(FileBlobStore(tmp_path / "blobs"))

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


ODD_KEYS = ["a/b/../../c", "..", "", "nul\x00key", "🦊" * 300, "x" * 5000, "C:\\win\\path", " "]


def test_any_key_is_safe_and_survives_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    store = OffpromptBlobStore(path=root)
    store.mset([(k, k.encode("utf-8") * 2) for k in ODD_KEYS])
    reopened = OffpromptBlobStore(path=root)
    assert reopened.mget(ODD_KEYS) == [k.encode("utf-8") * 2 for k in ODD_KEYS]
    assert sorted(reopened.yield_keys()) == sorted(ODD_KEYS)
    assert sorted(reopened.yield_keys(prefix="🦊")) == ["🦊" * 300]
    # Nothing escaped the root.
    assert all(root in p.parents for p in root.rglob("*"))
    assert not (tmp_path / "c").exists()


def test_empty_and_large_values(tmp_path: Path) -> None:
    store = OffpromptBlobStore(path=tmp_path)
    big = bytes(range(256)) * 20_000  # 5 MB
    store.mset([("empty", b""), ("big", big)])
    assert store.mget(["empty", "big"]) == [b"", big]
    store.mset([("big", bytearray(b"small now"))])
    assert store.mget(["big"]) == [b"small now"]
    # Overwrites leave one record per key, not a pile of versions.
    # private-ok: where the store keeps one key's versions
    assert len(store.blob_store.keys(store._value_namespace("big"))) == 1


def test_namespaces_and_tenants_are_isolated() -> None:
    shared = InMemoryBlobStore()
    a = OffpromptBlobStore(shared, namespace="cache-a")
    b = OffpromptBlobStore(shared, namespace="cache-b")
    c = OffpromptBlobStore(shared, namespace="cache-a", tenant="acme")
    a.mset([("k", b"A")])
    assert b.mget(["k"]) == [None] and c.mget(["k"]) == [None]
    assert list(b.yield_keys()) == [] and list(c.yield_keys()) == []
    b.mdelete(["k"])
    assert a.mget(["k"]) == [b"A"]


def test_bad_input_is_refused_and_nothing_is_written() -> None:
    store = OffpromptBlobStore()
    store.mset([("keep", b"1")])
    with pytest.raises(ValidationError, match="must be bytes"):
        store.mset([("new", b"ok"), ("bad", "text")])  # type: ignore[list-item]
    assert store.mget(["keep", "new"]) == [b"1", None]
    with pytest.raises(ValidationError, match="keys must be str"):
        store.mget([1])  # type: ignore[list-item]
    with pytest.raises(NamespaceError):
        OffpromptBlobStore(namespace="../x")
    with pytest.raises(ValidationError, match="not both"):
        OffpromptBlobStore(InMemoryBlobStore(), path="/tmp/x")
    with pytest.raises(ValidationError, match="BlobStore"):
        OffpromptBlobStore(blob_store={})  # type: ignore[arg-type]


def test_concurrent_writers_of_one_key_leave_one_whole_value(tmp_path: Path) -> None:
    """Every write succeeds (two writers removing the same older record once killed one
    with FileNotFoundError), and one whole value is left."""
    root = tmp_path / "blobs"
    stores = [OffpromptBlobStore(path=root) for _ in range(4)]  # separate instances, one root
    values = [bytes([i]) * 10_000 for i in range(4)]
    failures: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(50):
                stores[i].mset([("hot", values[i])])
        except BaseException as exc:  # a dead writer thread would not fail the test
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    final = OffpromptBlobStore(path=root).mget(["hot"])[0]
    assert final in values
    assert list(OffpromptBlobStore(path=root).yield_keys()) == ["hot"]
