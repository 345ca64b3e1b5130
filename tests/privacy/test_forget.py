"""forget(scope): everything of a subject goes, in every store; the raw stores are then
scanned (SQLite file bytes after a WAL checkpoint, every Qdrant point, blob files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.artifacts import BlobArtifact, ImageArtifact, TextArtifact
from offprompt.conversation import ConversationMemory, SummaryConversationMemory
from offprompt.errors import ValidationError
from offprompt.forget import ForgetError, Forgettable, forget
from offprompt.longterm.plans import PlanMemory, SubTask
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.steps import AgentMemory, TaskStep
from offprompt.stores import BaseStore, QdrantStore, SQLiteStore
from offprompt.task_memory import FileBlobStore, TaskMemory

from .conftest import png, raw_qdrant_payloads, raw_sqlite_bytes

BOB = Scope(tenant="acme", user="bob")
ALICE = Scope(tenant="acme", user="alice")


def _write_everything(store: BaseStore, scope: Scope, marker: str) -> None:
    image = ImageArtifact(value=png("blue"), format="png", width=64, height=48)
    memory = SummaryConversationMemory(store, "chat", scope=scope, offset=0, persist_trace=True)
    memory.add_messages(
        [
            Message.system("be brief"),
            Message.user([TextArtifact(value=f"I am {marker}, see screenshot"), image]),
            Message.assistant(f"hello {marker}"),
        ]
    )
    assert marker in (memory.summary or "")  # folded on add (offset=0)
    agent = AgentMemory("sys")
    agent.steps.append(TaskStep(task=f"help {marker}"))
    agent.save(store, "run-1", scope=scope)
    PlanMemory(store, scope=scope).batch_save(
        [SubTask(conv_id="c1", sub_task_num=1, sub_task_content=f"plan for {marker}")]
    )


def _scan(store: BaseStore) -> str:
    if isinstance(store, SQLiteStore):
        return raw_sqlite_bytes(store).decode("latin-1")
    assert isinstance(store, QdrantStore)
    return raw_qdrant_payloads(store)


def test_forget_user_leaves_no_trace_in_the_raw_store(durable_store: BaseStore) -> None:
    _write_everything(durable_store, BOB, "BOB-MARKER-7f3a")
    _write_everything(durable_store, ALICE, "ALICE-MARKER-9c1d")
    before = _scan(durable_store)
    assert "BOB-MARKER-7f3a" in before and "ALICE-MARKER-9c1d" in before  # the scan sees data

    report = forget(Scope(user="bob"), stores=[durable_store])
    (result,) = report.results
    assert result.deleted["messages"] == 3 and result.deleted["state"] >= 4
    assert result.deleted["blobs"] == 1 and report.complete

    after = _scan(durable_store)
    assert "BOB-MARKER-7f3a" not in after
    assert "ALICE-MARKER-9c1d" in after
    assert durable_store.count("chat", scope=ALICE) == 3
    assert durable_store.blob_count(scope=ALICE) == 1
    assert durable_store.sessions(scope=Scope(user="bob")) == []

    again = forget(Scope(user="bob"), stores=[durable_store])
    assert again.results[0].already_gone and again.total == 0


def test_forget_deletes_task_memory_chunks_metadata_and_blob_files(tmp_path: Path) -> None:
    blobs = FileBlobStore(tmp_path / "blobs")
    memories = {
        marker: TaskMemory(path=tmp_path / marker, blob_store=blobs, scope=scope)
        for scope, marker in ((BOB, "BOB-MARKER-7f3a"), (ALICE, "ALICE-MARKER-9c1d"))
    }
    for marker, memory in memories.items():
        memory.store_artifact("out", TextArtifact(value=f"log line about {marker} " * 50))
        memory.store_artifact("shot", BlobArtifact(value=f"bytes of {marker}".encode()))

    def blob_bytes() -> bytes:
        return b"".join(p.read_bytes() for p in (tmp_path / "blobs").rglob("*") if p.is_file())

    assert b"BOB-MARKER-7f3a" in blob_bytes()
    report = forget(Scope(user="bob"), task_memory=list(memories.values()))
    bob_result = report.results[0]
    # Two blobs since issue 13: the text output's raw text, and the blob artifact.
    assert bob_result.deleted["points"] > 0 and bob_result.deleted["blobs"] == 2
    assert b"BOB-MARKER-7f3a" not in blob_bytes()
    assert b"ALICE-MARKER-9c1d" in blob_bytes()
    for marker, memory in memories.items():
        # private-ok: the engine's raw points, unfiltered, prove what is left
        backend = memory.vector_store._backend
        payloads = [s.payload for s in backend.scroll([], limit=10_000)[0]]
        # chunks hold where their text is in the raw output, never the text
        assert marker not in str(payloads)
        assert not any(p.get("scope_user") == "bob" for p in payloads)
        if marker.startswith("ALICE"):
            assert any(p.get("namespace") == "out" for p in payloads)
            assert memory.namespaces() == ["out", "shot"]
    assert memories["BOB-MARKER-7f3a"].namespaces() == []
    for memory in memories.values():
        memory.vector_store.close()


def test_empty_scope_refuses_unless_all(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    store.append("s", [Message.user("keep me")], [1])
    with pytest.raises(ValidationError, match="all=True"):
        forget(Scope(), stores=[store])
    with pytest.raises(ValidationError):
        store.forget_scope(Scope())
    assert store.count("s") == 1
    report = forget(Scope(), stores=[store], all=True)
    assert report.total == 1 and store.count("s") == 0
    store.close()


class _Flaky:
    """A long-term-memory stand-in that crashes once, then works (a real Forgettable)."""

    def __init__(self) -> None:
        self.calls = 0
        self.items = {"bob": 3}

    def forget(self, scope: Scope) -> int:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("disk on fire")
        return self.items.pop(scope.user or "", 0)


def test_a_crash_midway_is_finished_by_a_rerun(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    _write_everything(store, BOB, "BOB-MARKER-7f3a")
    flaky = _Flaky()
    assert isinstance(flaky, Forgettable)
    with pytest.raises(ForgetError) as info:
        forget(Scope(user="bob"), stores=[store], participants=[flaky])
    first = info.value.report
    assert first.results[0].deleted["messages"] == 3 and first.results[1].error
    assert "run forget again" in "\n".join(first.lines())

    second = forget(Scope(user="bob"), stores=[store], participants=[flaky])
    assert second.results[0].already_gone
    assert second.results[1].deleted == {"items": 3}
    assert "already gone" in second.lines()[0]
    assert "BOB-MARKER-7f3a" not in raw_sqlite_bytes(store).decode("latin-1")
    store.close()


def test_forget_one_session_keeps_the_users_other_sessions(durable_store: BaseStore) -> None:
    for session in ("s1", "s2"):
        ConversationMemory(durable_store, session, scope=BOB).add_messages(
            [Message.user(f"{session} data"), Message.assistant("ok")]
        )
    report = forget(Scope(user="bob", session="s1"), stores=[durable_store])
    assert report.results[0].deleted["messages"] == 2
    assert durable_store.count("s1", scope=BOB) == 0
    assert durable_store.count("s2", scope=BOB) == 2


def test_cli_forget_prompts_and_deletes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from offprompt.cli import main

    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "memory.db")
    _write_everything(store, BOB, "BOB-MARKER-7f3a")
    _write_everything(store, ALICE, "ALICE-MARKER-9c1d")
    store.close()

    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["--home", str(home), "forget", "--user", "bob"]) == 1
    assert "nothing deleted" in capsys.readouterr().err
    assert main(["--home", str(home), "forget"]) == 1  # no scope: refused
    capsys.readouterr()

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["--home", str(home), "forget", "--user", "bob"]) == 0
    assert "deleted" in capsys.readouterr().out
    assert main(["--home", str(home), "forget", "--user", "bob", "--yes"]) == 0
    assert "already gone" in capsys.readouterr().out

    store = SQLiteStore(home / "memory.db")
    raw = raw_sqlite_bytes(store).decode("latin-1")
    assert "BOB-MARKER-7f3a" not in raw and "ALICE-MARKER-9c1d" in raw
    store.close()


def test_forget_with_a_held_reader_does_not_report_a_clean_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 2: a reader's open transaction keeps the WAL; forget must say so."""
    import sqlite3

    import offprompt.stores.sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "CHECKPOINT_WAIT", 0.3)
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    store.checkpoint()
    # Short ids keep the body under 160 bytes, so plain text on disk (longer bodies are
    # deflated, and the raw-byte checks below could not see the marker)
    marked = Message.user(TextArtifact(value="I am BOB-MARKER-5e1b", id="p1"), id="m1")
    store.append("chat", [marked], [5], scope=BOB)

    def raw() -> bytes:
        wal = path.with_name(path.name + "-wal")
        return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")

    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM offprompt_messages").fetchone() == (1,)
        with pytest.raises(ForgetError) as caught:
            forget(Scope(user="bob"), stores=[store])
        (result,) = caught.value.report.results
        assert result.error is not None and "read transaction" in result.error
        assert "deleted 1 messages" in result.error
        assert b"BOB-MARKER-5e1b" in raw()  # it was right not to claim a clean WAL
        assert store.read("chat", scope=BOB) == []  # the rows themselves are gone
    finally:
        reader.close()
    report = forget(Scope(user="bob"), stores=[store])  # the reader left: re-run finishes
    assert report.complete and report.results[0].already_gone
    assert b"BOB-MARKER-5e1b" not in raw()
    assert path.with_name(path.name + "-wal").stat().st_size == 0
    store.close()


def _raw_hits(root: Path, marker: bytes) -> list[str]:
    """Every file under ``root`` whose raw bytes contain ``marker``."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and marker in p.read_bytes()
    )


def test_forget_with_purge_leaves_no_trace_in_the_vector_engine_files(tmp_path: Path) -> None:
    """Issue 14 item 9: after forget(purge=True) the deleted chunks are in no file of the
    embedded engine (WAL, payload storage), also after close; the rest stays searchable.
    A chunk holds no text (only where it is in the raw output), so what marks it in the
    engine's files is its namespace."""
    bob_marker, alice_marker = b"bob-notes-3c9e", b"alice-notes-8d2f"
    root = tmp_path / "tm"
    memory = TaskMemory(path=root, scope=BOB)
    memory.store_artifact("bob-notes-3c9e", TextArtifact(value="note BOB-CHUNK-3c9e " * 400))
    alice = TaskMemory(path=tmp_path / "tm-alice", scope=ALICE)  # another memory, untouched
    alice.store_artifact("alice-notes-8d2f", TextArtifact(value="note ALICE-CHUNK-8d2f " * 400))
    assert memory.wait_indexed(timeout=60) and alice.wait_indexed(timeout=60)
    memory.vector_store.flush()
    vectors = root / "vectors"
    assert _raw_hits(vectors, b"BOB-CHUNK-3c9e") == []  # the text is stored once, not here
    assert _raw_hits(vectors, bob_marker)  # the scan sees the chunks (WAL and payload pages)

    unpurged = forget(Scope(user="bob"), task_memory=memory)
    assert unpurged.complete and not unpurged.purged
    assert "purge=True" in unpurged.results[0].residue[0]
    assert _raw_hits(vectors, bob_marker)  # what the README used to admit: bytes remain

    report = forget(Scope(user="bob"), task_memory=memory, purge=True)
    assert report.purged and report.results[0].residue == []
    assert _raw_hits(vectors, bob_marker) == []
    memory.close()
    assert _raw_hits(vectors, bob_marker) == []
    with TaskMemory(path=root, scope=BOB) as reopened:
        assert reopened.namespaces() == []
    assert _raw_hits(tmp_path / "tm-alice" / "vectors", alice_marker)
    assert alice.namespaces() == ["alice-notes-8d2f"]
    alice.close()


def test_purge_keeps_the_other_subjects_searchable(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    bob = TaskMemory(path=root, scope=BOB)
    bob.store_artifact("bob-notes", TextArtifact(value="bob likes BOB-CHUNK-11 " * 300))
    bob.vector_store.flush()
    forget(Scope(user="nobody"), task_memory=bob, purge=True)  # nothing to delete, rebuilt
    assert bob.namespaces() == ["bob-notes"]
    assert bob.vector_store.count("bob-notes") > 0
    hits = bob.query("bob-notes", "bob likes", top_n=3).value
    assert hits and "BOB-CHUNK-11" in hits[0].value
    bob.close()
    with TaskMemory(path=root, scope=BOB) as again:  # the rebuilt shard loads after restart
        assert again.namespaces() == ["bob-notes"]
