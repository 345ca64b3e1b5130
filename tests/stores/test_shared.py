"""open_store / release_store: one shared SQLiteStore per resolved path, the rule written once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from offprompt.conversation.opening import open_memory
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.stores import InMemoryStore, SQLiteStore, open_store, release_store
from offprompt.stores.shared import shared_holders


def test_one_store_per_resolved_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "memory.db"
    stores = [open_store(path=db), open_store(path=str(db)), open_store(path="sub/../memory.db")]
    assert all(s is stores[0] for s in stores) and isinstance(stores[0], SQLiteStore)
    assert shared_holders(stores[0]) == 3
    other = open_store(path=tmp_path / "other.db")
    assert other is not stores[0] and shared_holders(other) == 1
    for store in (*stores, other):
        release_store(store)


def test_the_last_release_closes_and_the_next_open_reopens(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    first, second = open_store(path=db), open_store(path=db)
    first.append("s", [Message.user("kept")], [3])
    release_store(first)
    assert not second.closed and second.count("s") == 1  # the other holder still works
    release_store(second)
    assert second.closed and shared_holders(second) == 0
    again = open_store(path=db)
    assert again is not second and again.count("s") == 1  # nothing stored was lost
    again.close()  # closed directly, not released: the next open replaces it
    replaced = open_store(path=db)
    assert replaced is not again and not replaced.closed and shared_holders(replaced) == 1
    release_store(replaced)


def test_a_given_store_is_the_callers(tmp_path: Path) -> None:
    mine = InMemoryStore()
    assert open_store(mine) is mine and shared_holders(mine) == 0
    sqlite = SQLiteStore(tmp_path / "a.db")
    assert open_store(sqlite, path=tmp_path / "a.db") is sqlite  # its own file: same store
    with pytest.raises(ValidationError, match="not both"):
        open_store(sqlite, path=tmp_path / "b.db")
    with pytest.raises(ValidationError, match="ConversationStore"):
        open_store("memory.db")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="path must be"):
        open_store(path=42)  # type: ignore[arg-type]
    release_store(mine)  # a store nobody shares is closed at once
    release_store(sqlite)
    assert sqlite.closed


def test_a_url_is_refused_with_what_to_do_instead(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="store="):
        open_store(path="postgresql://user@db.example/offprompt")
    assert not any(tmp_path.iterdir())


def test_threads_opening_one_path_share_one_store(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    opened: list[object] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        opened.append(open_store(path=db))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(s) for s in opened}) == 1 and shared_holders(opened[0]) == 8  # type: ignore[arg-type]
    for store in opened:
        release_store(store)  # type: ignore[arg-type]


def test_open_memory_rules(tmp_path: Path) -> None:
    memory = open_memory("s", path=tmp_path / "m.db")
    assert memory.session_id == "s" and shared_holders(memory.store) == 1
    assert open_memory("s", memory=memory) is memory
    assert open_memory(None, memory=memory) is memory
    with pytest.raises(ValidationError, match="at most one"):
        open_memory("s", memory=memory, store=InMemoryStore())
    with pytest.raises(ValidationError, match="belongs to session"):
        open_memory("other", memory=memory)
    with pytest.raises(ValidationError, match="tracer="):
        open_memory("s", memory=memory, tracer=lambda e: None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="ConversationMemory"):
        open_memory("s", memory=object())  # type: ignore[arg-type]
    assert shared_holders(memory.store) == 1  # refused calls opened nothing
    release_store(memory.store)


def test_the_default_path_is_shared_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFPROMPT_HOME", os.fspath(tmp_path))
    first, second = open_store(), open_store(path=tmp_path / "memory.db")
    assert first is second
    release_store(first)
    release_store(second)
