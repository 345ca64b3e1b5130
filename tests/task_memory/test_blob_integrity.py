"""Integrity on read: a damaged raw output under ``TaskMemory(path=)`` is never served.

Real files, the real embedded index and real subprocesses: the raw text of a stored
output is a content-addressed file under ``path/blobs``; truncated, or edited in place
at the same size, every read of it (grep, read_lines, json_query, query) raises
``StorageError`` naming the namespace and the key, in the process that wrote it and in
a fresh one, and the file is left as it was.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.errors import StorageError
from offprompt.task_memory import FileBlobStore, TaskMemory

LINES = 20_000
KEY = re.compile(r"^[0-9a-f]{64}$")


def _log(lines: int = LINES) -> str:
    return "".join(
        f"{i:06d} GET /api/v1/items/{i % 97} 200 latency={i % 13}ms\n" for i in range(lines)
    )


def _items() -> list[dict[str, Any]]:
    return [{"id": i, "status": "failed" if i % 7 == 0 else "ok"} for i in range(3000)]


def _blob_file(root: Path, namespace: str) -> Path:
    """The one raw file of ``namespace`` (layout: blobs/<tenant>/<namespace>/<sha256>)."""
    files = [p for p in (root / "blobs" / "default" / namespace).iterdir() if KEY.match(p.name)]
    assert len(files) == 1, files
    return files[0]


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _overwrite(path: Path, *, restore_mtime: bool) -> None:
    """Change a few bytes in place: same size, same inode (mtime restored if asked)."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(before.st_size // 3)
        old = handle.read(4)
        handle.seek(before.st_size // 3)
        handle.write(bytes(b ^ 0x01 for b in old))
    if restore_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 5_000_000_000))
    after = path.stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert (after.st_mtime_ns == before.st_mtime_ns) is restore_mtime


DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "edited, new mtime": lambda p: _overwrite(p, restore_mtime=False),
    "edited, mtime restored": lambda p: _overwrite(p, restore_mtime=True),
}


def _store(root: Path) -> tuple[TaskMemory, str, str]:
    """A memory on ``root`` holding a text ``logs`` and a JSON ``items``, indexed, whose
    views were dropped (so the next read goes to the files)."""
    memory = TaskMemory(path=root, cache_bytes=0)
    memory.store_artifact("logs", TextArtifact(value=_log()))
    memory.store_artifact("items", JsonArtifact(value=_items()))
    memory.store_artifact("other", TextArtifact(value=_log(50)))  # evicts the two views
    assert memory.wait_indexed(timeout=120)
    return memory, "logs", "items"


def _assert_damaged(exc: BaseException, namespace: str, path: Path) -> None:
    assert isinstance(exc, StorageError), repr(exc)
    message = str(exc)
    assert f"namespace {namespace!r}" in message and path.name in message, message
    assert "damaged" in message, message


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_output_raises_in_the_same_process(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "tm"
    memory, logs, items = _store(root)
    try:
        # Read once: the files are verified, so what follows tests re-verification.
        assert memory.read_lines(logs, 1, 3).value.startswith("000000 GET")
        assert memory.json_query(items, "length(@)") == 3000
        memory.store_artifact("other", TextArtifact(value=_log(60)), replace=True)
        files = {ns: _blob_file(root, ns) for ns in (logs, items)}
        content = {ns: p.read_bytes() for ns, p in files.items()}
        for path in files.values():
            DAMAGES[damage](path)
        damaged = {ns: p.read_bytes() for ns, p in files.items()}
        for call in (
            lambda: memory.read_lines(logs, 1, 3),
            lambda: memory.grep(logs, "GET"),
            lambda: memory.read(logs, 2),
        ):
            with pytest.raises(StorageError) as raised:
                call()
            _assert_damaged(raised.value, logs, files[logs])
        with pytest.raises(StorageError) as raised:
            memory.json_query(items, "length(@)")
        _assert_damaged(raised.value, items, files[items])
        # Never deleted nor rewritten.
        assert {ns: p.read_bytes() for ns, p in files.items()} == damaged != content
    finally:
        memory.close()


_READER = """
import json, sys
from offprompt.task_memory import TaskMemory
out = {}
with TaskMemory(path=sys.argv[1]) as memory:
    calls = {
        "read_lines": lambda: memory.read_lines("logs", 1, 3).value,
        "grep": lambda: memory.grep("logs", "GET").total_matches,
        "query": lambda: len(memory.query("logs", "latency", 3).value),
        "json_query": lambda: memory.json_query("items", "length(@)"),
        "other": lambda: memory.read_lines("other", 1, None).value,
    }
    for name, call in calls.items():
        try:
            out[name] = ["ok", call()]
        except Exception as exc:
            out[name] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


def _read_in_subprocess(root: Path) -> dict[str, list[Any]]:
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(root)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(600)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_output_raises_in_a_fresh_process(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "tm"
    memory, logs, items = _store(root)
    memory.close()
    files = {ns: _blob_file(root, ns) for ns in (logs, items)}
    for path in files.values():
        DAMAGES[damage](path)
    damaged = {ns: p.read_bytes() for ns, p in files.items()}
    result = _read_in_subprocess(root)
    for call, namespace in [
        ("read_lines", logs),
        ("grep", logs),
        ("query", logs),
        ("json_query", items),
    ]:
        kind, message = result[call]
        assert kind == "StorageError", (call, result[call])
        assert f"namespace {namespace!r}" in message and files[namespace].name in message
        assert "damaged" in message
    assert result["other"] == ["ok", _log(50)]  # an undamaged output still reads whole
    assert {ns: p.read_bytes() for ns, p in files.items()} == damaged


def test_undamaged_output_reads_byte_identical(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    text = _log()
    memory, logs, items = _store(root)
    memory.close()
    assert _blob_file(root, logs).read_bytes() == text.encode()
    with TaskMemory(path=root, cache_bytes=0) as fresh:
        assert fresh.read_lines(logs, 1, None).value == text
        assert fresh.grep(logs, "GET").total_matches == LINES
        assert fresh.json_query(items, "length([?status=='failed'])") == 429
        hits = fresh.query(logs, "latency=7ms", 3).value
        assert hits and all(h.value in text for h in hits)
    result = _read_in_subprocess(root)
    assert result["read_lines"] == [
        "ok",
        "000000 GET /api/v1/items/0 200 latency=0ms\n000001 GET /api/v1/items/1 200 latency=1ms\n",
    ]
    assert result["grep"] == ["ok", LINES] and result["json_query"] == ["ok", 3000]


def test_index_is_never_built_from_damaged_bytes(tmp_path: Path) -> None:
    """A second memory on the path (its own index, in memory) must index the output
    from the raw file: the job fails on the damaged bytes and indexes nothing."""
    root = tmp_path / "tm"
    memory, logs, _ = _store(root)
    try:
        path = _blob_file(root, logs)
        _truncate(path)
        with TaskMemory(path=root) as second:
            assert second.index_location == "memory"
            with pytest.raises(StorageError) as raised:
                second.query(logs, "latency", 3)
            message = str(raised.value)
            assert "could not be indexed" in message and "damaged" in message, message
            assert path.name in message
            assert second.vector_store.count(logs) == 0
    finally:
        memory.close()


def test_file_blob_store_verifies_get_and_get_range(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    data = b"".join(b"line %06d\n" % i for i in range(10_000))
    key = store.put("ns", data)
    path = tmp_path / "default" / "ns" / key
    # A fresh store (as a fresh process) hashes on first read, then trusts the signature.
    fresh = FileBlobStore(tmp_path)
    assert fresh.get_range("ns", key, 10, 30) == data[10:30]
    assert len(fresh.verified) == 1
    assert fresh.get_range("ns", key, 50_000, 200_000) == data[50_000:]
    assert fresh.get("ns", key) == data
    _overwrite(path, restore_mtime=False)
    for read in (lambda: fresh.get_range("ns", key, 0, 5), lambda: fresh.get("ns", key)):
        with pytest.raises(StorageError, match=f"blob {key} in namespace 'ns' is damaged"):
            read()
    _truncate(path)
    with pytest.raises(StorageError, match="does not match its content address"):
        FileBlobStore(tmp_path).get_range("ns", key, 0, 5)
    assert path.stat().st_size == len(data) // 2  # left as it was


def test_get_range_detects_a_short_read(tmp_path: Path) -> None:
    """A file that shrinks under a verified signature (a race no stat sees) reads short."""
    store = FileBlobStore(tmp_path)
    data = b"x" * 10_000
    key = store.put("ns", data)
    path = tmp_path / "default" / "ns" / key
    _truncate(path)
    after = path.stat()
    # Pretend the signature was taken before the truncation: the size the stat gave.
    store.verified.add(str(path), (after.st_ino, len(data), after.st_mtime_ns, after.st_ctime_ns))
    original_fstat = os.fstat

    def stale_fstat(fd: int) -> Any:
        real = original_fstat(fd)
        fields = list(real)
        fields[6] = len(data)  # st_size as before the truncation
        return type(real)(
            fields, {"st_mtime_ns": real.st_mtime_ns, "st_ctime_ns": real.st_ctime_ns}
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fstat", stale_fstat)
        with pytest.raises(StorageError, match=r"read 2000 of the 5000 bytes at offset 3000"):
            store.get_range("ns", key, 3000, 8000)
        with pytest.raises(StorageError, match="is 10000 bytes but 5000 could be read"):
            store.get("ns", key)
