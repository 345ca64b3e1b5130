"""SQLiteStore on real files: restarts, other processes, SIGKILL, files that are not stores."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offprompt.errors import NotAStoreError, StorageError, ValidationError
from offprompt.messages import Message
from offprompt.stores import SQLiteStore, default_path, default_store
from offprompt.stores.sqlite import MIGRATIONS, SCHEMA_VERSION


def test_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.append("s", [Message.user("hello"), Message.assistant("hi")], [3, 4])
        store.set_state("s", "k", {"v": 1})
    with SQLiteStore(path) as again:
        assert [(r.seq, r.message.text, r.tokens) for r in again.read("s")] == [
            (0, "hello", 3),
            (1, "hi", 4),
        ]
        assert again.get_state("s", "k") == {"v": 1}
        assert again.append("s", [Message.user("more")], [1]) == [2]


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    store.append("s", [Message.user("x")], [1])
    assert store.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(tmp_path / "m.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    store.close()


def test_default_path_honours_offprompt_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / "memory.db"
    store = default_store()
    assert store.path == tmp_path / "home" / "memory.db" and store.path.exists()
    store.close()
    monkeypatch.delenv("OFFPROMPT_HOME")
    monkeypatch.chdir(tmp_path)
    assert default_path() == tmp_path / ".offprompt" / "memory.db"


def test_migrates_a_version_1_file_forward(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    MIGRATIONS[1](conn)
    conn.execute("INSERT INTO offprompt_meta VALUES ('schema_version', '1')")
    for seq, text in enumerate(["a", "b"]):
        conn.execute(
            "INSERT INTO offprompt_messages VALUES (?, ?, ?, ?, ?, ?)",
            ("s", seq, "user", 2, 1_700_000_000.0, Message.user(text).model_dump_json()),
        )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION
    assert [r.message.text for r in store.read("s")] == ["a", "b"]
    assert store.count("s") == 2 and store.version("s").next_seq == 2
    assert store.append("s", [Message.user("c")], [1]) == [2]
    assert store.sessions()[0].last_activity is not None
    store.close()


def test_refuses_a_newer_schema_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE offprompt_meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="newer"):
        SQLiteStore(path)


@pytest.mark.parametrize(
    "content",
    [b"just some notes\nnot a database\n", os.urandom(4096), b"SQLite format 3"],
    ids=["text", "random", "truncated-magic"],
)
def test_a_file_that_is_not_sqlite_is_refused_and_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    with pytest.raises(NotAStoreError, match="not a SQLite database"):
        SQLiteStore(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_corrupt_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    content = b"SQLite format 3\x00" + os.urandom(4080)
    path.write_bytes(content)
    with pytest.raises(NotAStoreError):
        SQLiteStore(path)
    assert path.read_bytes() == content


def test_another_apps_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotAStoreError, match="another application"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def test_directory_and_memory_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match="directory"):
        SQLiteStore(tmp_path)
    with pytest.raises(ValidationError, match="InMemoryStore"):
        SQLiteStore(":memory:")


def test_closed_store_raises_storage_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.read("s")


def test_hostile_session_id_leaves_tables_intact(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    evil = "x'); DROP TABLE offprompt_messages; --"
    store.append(evil, [Message.user("boom")], [1])
    store.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "offprompt_messages",
        "offprompt_state",
        "offprompt_sessions",
        "offprompt_meta",
    } <= tables
    assert conn.execute("SELECT session_id FROM offprompt_messages").fetchall() == [(evil,)]
    conn.close()


WRITER = textwrap.dedent(
    """
    import sys
    from offprompt.messages import Message
    from offprompt.stores import SQLiteStore

    path, name, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SQLiteStore(path)
    print("ready", flush=True)
    i = 0
    while batches < 0 or i < batches:
        store.append("shared", [Message.user(f"{name}-{i}-q"), Message.assistant(f"{name}-{i}-a " + "x" * 2000)], [1, 1])
        i += 1
    store.close()
    """
)


def _spawn(path: Path, name: str, batches: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(batches)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _assert_pairs_intact(store: SQLiteStore) -> list[str]:
    rows = store.read("shared")
    texts = [r.message.text for r in rows]
    assert len(texts) % 2 == 0
    for q, a in zip(texts[::2], texts[1::2], strict=True):
        assert q.endswith("-q") and a.startswith(q[:-2] + "-a ")
    assert len(set(texts)) == len(texts)
    assert store.count("shared") == len(rows)
    return texts


def test_processes_appending_to_one_session_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    procs = [_spawn(path, f"p{n}", 40) for n in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = SQLiteStore(path)
    texts = _assert_pairs_intact(store)
    assert len(texts) == 3 * 40 * 2
    assert [r.seq for r in store.read("shared")] == list(range(240))
    store.close()


def test_sigkill_mid_write_leaves_a_consistent_store(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    victim = _spawn(path, "victim", -1)  # appends forever
    assert victim.stdout is not None and victim.stdout.readline().strip() == "ready"
    store = SQLiteStore(path)
    deadline = time.monotonic() + 30
    while store.count("shared") < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    reopened = SQLiteStore(path)
    texts = _assert_pairs_intact(reopened)
    assert len(texts) >= 40
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    # the store is still writable and seqs continue after the last complete batch
    next_seq = reopened.version("shared").next_seq
    assert next_seq == len(texts)
    assert reopened.append(
        "shared", [Message.user("after-q"), Message.assistant("after-a ")], [1, 1]
    ) == [next_seq, next_seq + 1]
    reopened.close()
    store.close()


def test_forked_child_uses_its_own_connection(tmp_path: Path) -> None:
    import multiprocessing

    store = SQLiteStore(tmp_path / "m.db")
    store.append("s", [Message.user("parent")], [1])
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_child_append, args=(store,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert [r.message.text for r in store.read("s")] == ["parent", "child"]
    store.close()


def _child_append(store: SQLiteStore) -> None:
    store.append("s", [Message.user("child")], [1])


HOLDER = textwrap.dedent(
    """
    import sys
    from offprompt.messages import Message
    from offprompt.stores import SQLiteStore

    path = sys.argv[1]
    first, second = SQLiteStore(path), SQLiteStore(path)
    first.append("holder", [Message.user("first")], [1])
    second.append("holder", [Message.user("second")], [1])
    print("ready", flush=True)
    sys.stdin.readline()
    third = SQLiteStore(path)  # opened while the other two hold live connections
    first.read("holder"), second.read("holder")
    print("opened", flush=True)
    sys.stdin.readline()
    for store in (first, second, third):
        store.append("holder", [Message.user("late")], [1])
    print("appended", flush=True)
    sys.stdin.readline()
    """
)

COUNTING_WRITER = textwrap.dedent(
    """
    import sys
    from offprompt.messages import Message
    from offprompt.stores import SQLiteStore

    path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SQLiteStore(path)
    for i in range(n):
        store.append("shared", [Message.user(f"{name}-{i}")], [1])
        print(i, flush=True)  # acknowledged: append returned
    store.close()
    """
)


def _counting_writer(path: Path, name: str, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", COUNTING_WRITER, str(path), name, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _acknowledged(proc: subprocess.Popen[str], already: int = 0) -> int:
    """Appends the writer acknowledged: ``already`` lines read before, plus the rest."""
    assert proc.stdout is not None
    out = proc.stdout.read()  # the file object, so lines it buffered are not lost
    assert proc.wait(timeout=120) == 0, out
    return already + len(out.split())


def test_opening_another_store_in_a_process_holding_one_keeps_the_file_intact(
    tmp_path: Path,
) -> None:
    """Issue 14 item 0: opening a store must not drop the POSIX locks of live ones."""
    path = tmp_path / "m.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None

    def step(expected: str) -> None:
        line = holder.stdout.readline().strip()  # type: ignore[union-attr]
        assert line == expected, holder.stderr.read() if holder.stderr else line

    try:
        step("ready")
        writers = [_counting_writer(path, f"w{n}", 500) for n in range(4)]
        assert writers[0].stdout is not None
        for _ in range(50):  # the first writer is well under way
            writers[0].stdout.readline()
        holder.stdin.write("\n")
        holder.stdin.flush()
        step("opened")
        acked = {f"w{n}": _acknowledged(w, 50 if n == 0 else 0) for n, w in enumerate(writers)}
        acked["later"] = _acknowledged(_counting_writer(path, "later", 200))
        holder.stdin.write("\n")
        holder.stdin.flush()
        step("appended")
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with SQLiteStore(path) as store:
        texts = {r.message.text for r in store.read("shared")}
        expected = {f"{name}-{i}" for name, n in acked.items() for i in range(n)}
        assert acked == {"w0": 500, "w1": 500, "w2": 500, "w3": 500, "later": 200}
        assert texts == expected and store.count("shared") == 2200
        assert [r.message.text for r in store.read("holder")] == [
            "first",
            "second",
            "late",
            "late",
            "late",
        ]
