"""Names whose UTF-8 does not fit a file name (255 bytes) under ``TaskMemory(path=)``.

A namespace or tenant of up to 200 characters is valid, but 150 'é' (300 bytes) or 100
'日本' (600 bytes) is no directory name: ``FileBlobStore`` stores such a name under a
derived directory (``..sha256-<hash>``), names that fit keep their plain directory.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import NotFoundError, StorageError
from offprompt.names import validate_namespace
from offprompt.scope import Scope
from offprompt.task_memory import FileBlobStore, TaskMemory

LONG = ["é" * 150, "日本" * 100]
LONG_TENANT = "テナント" * 50


def dir_name(name: str) -> str:
    """The directory a name gets: itself if its UTF-8 fits 255 bytes, else derived."""
    encoded = name.encode("utf-8")
    return name if len(encoded) <= 255 else "..sha256-" + hashlib.sha256(encoded).hexdigest()


def _log(lines: int, tag: str) -> str:
    return "".join(f"{i:05d} {tag} GET /items/{i} 200\n" for i in range(lines))


def _only_dir(parent: Path) -> Path:
    (found,) = [p for p in parent.iterdir() if p.is_dir()]
    return found


def test_the_long_names_are_valid_and_do_not_fit_a_file_name() -> None:
    for name in [*LONG, LONG_TENANT]:
        assert validate_namespace(name) == name and len(name) <= 200
        assert len(name.encode("utf-8")) > 255
        derived = dir_name(name)
        assert derived.startswith("..sha256-") and len(derived) == 73
    assert dir_name("short") == "short" and dir_name("é" * 127) == "é" * 127  # 254 bytes
    from offprompt.task_memory.blobs import dir_name as mapping

    for name in ["short", "é" * 127, "é" * 128, *LONG, LONG_TENANT]:
        assert mapping(name) == dir_name(name)


@pytest.mark.parametrize("namespace", LONG, ids=["e-acute", "cjk"])
def test_long_namespace_stores_reads_lists_and_deletes(tmp_path: Path, namespace: str) -> None:
    root = tmp_path / "tm"
    text, short = _log(3000, "long"), _log(200, "short")
    with TaskMemory(path=root) as memory:
        memory.store_artifact(namespace, TextArtifact(value=text))
        memory.store_artifact("short", TextArtifact(value=short))
        assert memory.read_lines(namespace, 1, None).value == text
        assert memory.grep(namespace, "long GET").total_matches == 3000
        assert memory.namespaces() == sorted([namespace, "short"])
        assert memory.wait_indexed(timeout=120)
        assert memory.query(namespace, "items 2999", 1).value
    tenant_dir = root / "blobs" / "default"
    assert sorted(p.name for p in tenant_dir.iterdir()) == sorted([dir_name(namespace), "short"])
    assert (tenant_dir / "short").is_dir()  # a name that fits keeps its plain directory
    with TaskMemory(path=root, cache_bytes=0) as reopened:
        assert reopened.read_lines(namespace, 1, None).value == text
        assert reopened.grep(namespace, "02999 long").total_matches == 1
        assert reopened.read_lines("short", 1, None).value == short
        assert reopened.delete(namespace)
        assert reopened.namespaces() == ["short"]
        with pytest.raises(NotFoundError):
            reopened.read_lines(namespace, 1, 2)
    assert [p.name for p in tenant_dir.iterdir()] == ["short"]


def test_long_namespace_holds_blobs_too(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    namespace = LONG[1]
    with TaskMemory(path=root) as memory:
        memory.store_artifact(namespace, BlobArtifact(value=b"\x00\x01" * 5000))
    with TaskMemory(path=root) as reopened:
        (loaded,) = reopened.load_artifacts(namespace).value
        assert loaded.value == b"\x00\x01" * 5000
        assert reopened.delete(namespace) and reopened.namespaces() == []


def test_long_tenant(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    namespace = LONG[0]
    text = _log(2000, "tenant")
    with TaskMemory(path=root, tenant=LONG_TENANT) as memory:
        memory.store_artifact(namespace, TextArtifact(value=text))
        memory.store_artifact("short", TextArtifact(value=text))
        assert memory.grep(namespace, "tenant GET").total_matches == 2000
    tenant_dir = _only_dir(root / "blobs")
    assert tenant_dir.name == dir_name(LONG_TENANT)
    assert (tenant_dir / "..name").read_text(encoding="utf-8") == LONG_TENANT
    assert sorted(p.name for p in tenant_dir.iterdir() if p.is_dir()) == sorted(
        [dir_name(namespace), "short"]
    )
    with TaskMemory(path=root, tenant=LONG_TENANT) as reopened:
        assert reopened.namespaces() == sorted([namespace, "short"])
        assert reopened.read_lines(namespace, 1, None).value == text
        assert reopened.delete("short") and reopened.namespaces() == [namespace]
        # forget_scope lists the tenant directories: the derived one maps back.
        counts = reopened.forget_scope(Scope(tenant=LONG_TENANT))
        assert counts["blobs"] == 1
    assert not tenant_dir.exists()


def test_file_blob_store_maps_every_method(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    namespace, tenant = LONG[1], LONG_TENANT
    key = store.put(namespace, b"0123456789", tenant=tenant)
    assert store.keys(namespace, tenant=tenant) == [key]
    assert store.get(namespace, key, tenant=tenant) == b"0123456789"
    assert store.get_range(namespace, key, 2, 5, tenant=tenant) == b"234"
    assert store.delete(namespace, key, tenant=tenant) == 1
    store.put(namespace, b"a", tenant=tenant)
    store.put(namespace, b"b", tenant=tenant)
    assert (
        store.delete(namespace, tenant=tenant) == 2 and store.keys(namespace, tenant=tenant) == []
    )
    # A scoped partition (user set) with a long namespace.
    scope = Scope(tenant=tenant, user="ユーザー" * 50)
    key = store.put(namespace, b"scoped", scope=scope)
    assert store.get(namespace, key, scope=scope) == b"scoped"
    store.put("plain", b"plain", tenant=tenant)
    assert store.forget_scope(Scope(user="ユーザー" * 50)) == 1
    assert store.forget_scope(Scope(tenant=tenant)) == 1
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    # A fresh store on the same root reads what an earlier one wrote.
    key = store.put(namespace, b"again", tenant=tenant)
    assert FileBlobStore(tmp_path).get(namespace, key, tenant=tenant) == b"again"
    assert FileBlobStore(tmp_path).forget_scope(Scope(), all=True) == 1


def test_other_os_errors_become_storage_errors(tmp_path: Path) -> None:
    """A path longer than the system allows (a deep root, a 200-byte namespace)."""
    # A root of exactly 4,000 characters: creatable (PATH_MAX is 4,096), while every
    # namespace path under it (root/default/<200 characters>) is not, whatever the
    # length of tmp_path.
    deep = tmp_path
    while len(str(deep)) < 4000 - 201:
        deep = deep / ("d" * 200)
    deep = deep / ("d" * (4000 - len(str(deep)) - 1))
    assert len(str(deep)) == 4000
    store = FileBlobStore(deep)
    namespace = "n" * 200
    for call in (
        lambda: store.put(namespace, b"data"),
        lambda: store.keys(namespace),
        lambda: store.get(namespace, "0" * 64),
        lambda: store.get_range(namespace, "0" * 64, 0, 1),
        lambda: store.delete(namespace),
    ):
        with pytest.raises(StorageError) as raised:
            call()
        assert f"namespace {namespace!r}" in str(raised.value), raised.value
        assert "too long" in str(raised.value)
