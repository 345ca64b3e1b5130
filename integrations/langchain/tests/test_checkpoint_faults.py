"""``OffpromptSaver`` on bad input and faults: each gets a clear error or a documented
outcome, and nothing already stored is lost. Crashes are real ``SIGKILL`` s of real
subprocesses writing a real SQLite file."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import START, MessagesState, StateGraph
from offprompt_langchain._checkpoint_rows import (
    decode_payload,
    deflate,
    encode_payload,
    inflate,
    parse_row,
)
from offprompt_langchain.checkpoint import OffpromptSaver

from offprompt.errors import DeserializationError, NamespaceError, OffpromptError, ValidationError
from offprompt.stores import InMemoryStore, SQLiteStore


def _put(
    saver: OffpromptSaver, thread: Any, messages: list[Any], parent: str | None = None, **extra: Any
) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    values = {"messages": messages, **extra}
    versions = {k: saver.get_next_version(None, None) for k in values}
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = versions
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent:
        configurable["checkpoint_id"] = parent
    return saver.put(
        {"configurable": configurable}, checkpoint, {"source": "loop", "step": 0}, versions
    )


def _cid(config: RunnableConfig) -> str:
    return config["configurable"]["checkpoint_id"]


def test_corrupt_checkpoint_document_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    first = _put(saver, "t", [HumanMessage("one", id="1")])
    second = _put(saver, "t", [HumanMessage("one", id="1"), AIMessage("two", id="2")], _cid(first))
    _put(saver, "other", [HumanMessage("elsewhere", id="9")])
    key = next(k for k in store.state_keys("t", "langgraph/cp/") if k.endswith(_cid(second)))
    store.set_state("t", key, {"format": 1, "checkpoint": ["msgpack", "!!not base64!!"]})
    with pytest.raises(DeserializationError, match="not base64"):
        saver.get_tuple(second)
    # the row's JSON itself damaged, below the store
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute("UPDATE offprompt_state SET value = '{\"format\": 1, ' WHERE key = ?", (key,))
    with pytest.raises(DeserializationError, match="corrupt"):
        OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(second)
    # nothing else is lost
    older = saver.get_tuple(first)
    assert older is not None and [
        m.content for m in older.checkpoint["channel_values"]["messages"]
    ] == ["one"]
    other = saver.get_tuple({"configurable": {"thread_id": "other"}})
    assert (
        other is not None
        and other.checkpoint["channel_values"]["messages"][0].content == "elsewhere"
    )


def test_unknown_serializer_type_names_the_type(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    saved = _put(saver, "t", [HumanMessage("hi", id="1")], extra_channel={"a": 1})
    key = store.state_keys("t", "langgraph/cp/")[0]
    row = parse_row(store.get_state("t", key))
    assert row is not None and row.depth == 0  # the thread's first checkpoint: a snapshot
    parts = decode_payload(inflate(cast(bytes, row.data), None, key, "t"), key, "t")
    version, ref = parts.values["extra_channel"]  # small values live in the row
    parts.values["extra_channel"] = [version, {"raw": ("protobuf-v9", ref["raw"][1])}]
    row.data = deflate(encode_payload(parts.body, parts.metadata, parts.values), None)
    store.set_state("t", key, row.stored(binary=True))
    with pytest.raises(DeserializationError, match="protobuf-v9"):
        saver.get_tuple(saved)
    assert store.count("t") == 1  # the message is still there


def test_messages_deleted_by_retention_are_missing_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    messages = [HumanMessage(f"m{i}", id=str(i)) for i in range(5)]
    saved = _put(saver, "t", messages)
    assert store.delete_range("t", 0, 2) == 2  # what max_runs retention does
    caplog.set_level(logging.WARNING, logger="offprompt_langchain.checkpoint")
    found = OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(saved)
    assert found is not None
    assert [m.content for m in found.checkpoint["channel_values"]["messages"]] == ["m2", "m3", "m4"]
    assert "2 of 5 messages" in caplog.text
    # the same saver (its cache) notices the deletion too
    again = saver.get_tuple(saved)
    assert again is not None and len(again.checkpoint["channel_values"]["messages"]) == 3


@pytest.mark.parametrize(
    "thread_id",
    ["ü/../'; DROP TABLE offprompt_state;--", "a/b%2Fc%25", "🧵 thread", " spaced ", "x" * 256],
)
def test_odd_thread_ids_round_trip(tmp_path: Path, thread_id: str) -> None:
    saver = OffpromptSaver(path=str(tmp_path / "m.db"))
    saved = _put(saver, thread_id, [HumanMessage("hi", id="1")])
    assert saved["configurable"]["thread_id"] == thread_id
    found = saver.get_tuple({"configurable": {"thread_id": thread_id}})
    assert found is not None and found.config["configurable"]["thread_id"] == thread_id
    assert [t.config["configurable"]["thread_id"] for t in saver.list(None)] == [thread_id]
    saver.copy_thread(thread_id, thread_id[:200] + "-copy")
    assert saver.get_tuple({"configurable": {"thread_id": thread_id[:200] + "-copy"}}) is not None
    saver.delete_thread(thread_id)
    assert saver.get_tuple({"configurable": {"thread_id": thread_id}}) is None


def test_unusable_thread_ids_are_refused(tmp_path: Path) -> None:
    saver = OffpromptSaver(InMemoryStore())
    for bad in ["", "tab\there", "nul\x00", "x" * 257]:
        with pytest.raises(NamespaceError, match="thread_id"):
            _put(saver, bad, [])
    with pytest.raises(ValidationError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    assert _put(saver, 42, [])["configurable"]["thread_id"] == "42"  # ints as the SQL savers


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="one of store, path or url"):
        OffpromptSaver(InMemoryStore(), path=str(tmp_path / "x.db"))
    with pytest.raises(ValidationError, match="api_key"):
        OffpromptSaver(api_key="k")
    saver = OffpromptSaver(InMemoryStore())
    with pytest.raises(ValidationError, match="strategy"):
        saver.prune(["t"], strategy="keep_some")
    with pytest.raises(ValidationError, match="list of thread ids"):
        saver.prune("t")
    with pytest.raises(ValidationError, match="both"):
        saver.copy_thread("t", "t")
    with pytest.raises(ValidationError, match="checkpoint_id"):
        saver.put_writes({"configurable": {"thread_id": "t"}}, [("a", 1)], "task")
    with pytest.raises(ValidationError, match="filter"):
        list(saver.list(None, filter=[("a", 1)]))  # type: ignore[arg-type]
    assert all(
        issubclass(e, OffpromptError)
        for e in (ValidationError, NamespaceError, DeserializationError)
    )


class _XorCipher(CipherProtocol):
    """A toy cipher (tests only): enough to prove every value passes through it."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


@pytest.mark.parametrize("messages_channel", ["messages", None])
def test_encrypted_serializer(tmp_path: Path, messages_channel: str | None) -> None:
    serde = EncryptedSerializer(_XorCipher())
    saver = OffpromptSaver(
        path=str(tmp_path / "m.db"), serde=serde, messages_channel=messages_channel
    )
    saved = _put(saver, "t", [HumanMessage("the secret plan", id="1")], notes="classified notes")
    found = OffpromptSaver(
        path=str(tmp_path / "m.db"), serde=serde, messages_channel=messages_channel
    ).get_tuple(saved)
    assert found is not None
    assert found.checkpoint["channel_values"]["notes"] == "classified notes"
    assert found.checkpoint["channel_values"]["messages"] == [
        HumanMessage("the secret plan", id="1")
    ]
    raw = (tmp_path / "m.db").read_bytes() + (tmp_path / "m.db-wal").read_bytes()
    assert b"classified" not in raw
    # the messages are the readable session unless messages_channel=None (read through
    # the store: its message bodies are deflated on disk, so not a raw byte match)
    session = [s.message.text for s in SQLiteStore(tmp_path / "m.db").read("t")]
    assert (session == ["the secret plan"]) is (messages_channel is not None)
    assert session == [] or messages_channel is not None
    with pytest.raises(DeserializationError, match="xor"):
        OffpromptSaver(path=str(tmp_path / "m.db")).get_tuple(saved)  # no cipher: clear error


# -- processes ------------------------------------------------------------------------
WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from offprompt_langchain.checkpoint import OffpromptSaver

    db, thread, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def reply(state):
        return {"messages": [AIMessage(f"{thread} answer {len(state['messages'])}")]}
    graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")
    app = graph.compile(checkpointer=OffpromptSaver(path=db))
    for i in range(turns):
        app.invoke({"messages": [("user", f"{thread} q{i}")]}, {"configurable": {"thread_id": thread}})
    """
)


def test_processes_write_different_threads_of_one_file(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, db, f"t{n}", "10"], stderr=subprocess.PIPE)
        for n in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
    saver = OffpromptSaver(path=db)
    for n in range(2):
        found = saver.get_tuple({"configurable": {"thread_id": f"t{n}"}})
        assert found is not None
        texts = [m.content for m in found.checkpoint["channel_values"]["messages"]]
        assert texts == [x for i in range(10) for x in (f"t{n} q{i}", f"t{n} answer {2 * i + 1}")]
        assert SQLiteStore(db).count(f"t{n}") == 20


SAME_THREAD = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from offprompt_langchain.checkpoint import OffpromptSaver

    db, who = sys.argv[1], sys.argv[2]
    saver = OffpromptSaver(path=db)
    messages, parent = [], None
    for i in range(20):
        messages = [*messages, HumanMessage(f"{who}-{i}", id=f"{who}-{i}")]
        cp = empty_checkpoint()
        version = saver.get_next_version(None, None)
        cp["channel_values"], cp["channel_versions"] = {"messages": messages}, {"messages": version}
        conf = {"thread_id": "shared", "checkpoint_ns": ""}
        if parent:
            conf["checkpoint_id"] = parent
        parent = saver.put({"configurable": conf}, cp, {"who": who}, {"messages": version})["configurable"]["checkpoint_id"]
    """
)


def test_two_processes_writing_the_same_thread_lose_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "same.db")
    procs = [
        subprocess.Popen([sys.executable, "-c", SAME_THREAD, db, who], stderr=subprocess.PIPE)
        for who in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
    saver = OffpromptSaver(path=db)
    every = list(saver.list({"configurable": {"thread_id": "shared"}}))
    assert len(every) == 40
    for tup in every:  # each checkpoint holds exactly the list its writer put
        who = tup.metadata["who"]
        texts = [m.content for m in tup.checkpoint["channel_values"]["messages"]]
        assert texts == [f"{who}-{i}" for i in range(len(texts))]
    latest = saver.get_tuple({"configurable": {"thread_id": "shared"}})
    assert latest is not None and latest.checkpoint["id"] == max(t.checkpoint["id"] for t in every)
    assert SQLiteStore(db).count("shared") == 40  # both writers' messages, each once


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from offprompt_langchain.checkpoint import OffpromptSaver

    db, where, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    saver = OffpromptSaver(path=db)
    def put(messages, parent, extra):
        cp = empty_checkpoint()
        values = {"messages": messages, "extra": extra}
        versions = {k: saver.get_next_version(None, None) for k in values}
        cp["channel_values"], cp["channel_versions"] = values, versions
        conf = {"thread_id": "t", "checkpoint_ns": ""}
        if parent:
            conf["checkpoint_id"] = parent
        return saver.put({"configurable": conf}, cp, {"n": extra}, versions)["configurable"]["checkpoint_id"]
    first = put([HumanMessage("q", id="q")], None, 1)
    print(first, flush=True)
    calls = 0
    original = getattr(saver.store, where)
    def dying(*args, **kwargs):
        global calls
        calls += 1
        if calls > after:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    setattr(saver.store, where, dying)
    put([HumanMessage("q", id="q"), AIMessage("a", id="a")], first, 2)
    print("survived", flush=True)
    """
)


@pytest.mark.parametrize(
    ("where", "after"),
    # set_state calls of that put: messages blob, other blob, checkpoint, head
    [("append", 0), ("set_state", 0), ("set_state", 2), ("set_state", 3)],
)
def test_sigkill_during_put_leaves_the_previous_checkpoint(
    tmp_path: Path, where: str, after: int
) -> None:
    db = str(tmp_path / "killed.db")
    done = subprocess.run(
        [sys.executable, "-c", KILLED, db, where, str(after)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.split()
    if lines[-1] == "survived":  # the put needed fewer calls than `after`: not a crash case
        assert done.returncode == 0
        return
    assert done.returncode == -signal.SIGKILL, done.stderr
    first = lines[0]
    saver = OffpromptSaver(path=db)
    latest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None
    if latest.checkpoint["id"] == first:
        assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == ["q"]
        assert latest.checkpoint["channel_values"]["extra"] == 1
    else:  # killed after the checkpoint document was written: the new one is whole
        assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == ["q", "a"]
    old = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": first}})
    assert old is not None and old.checkpoint["channel_values"]["extra"] == 1
    # the thread goes on: the next put works and sees a consistent session
    after_crash = _put(saver, "t", [HumanMessage("q", id="q"), AIMessage("again", id="b")], first)
    again = saver.get_tuple(after_crash)
    assert again is not None
    assert [m.content for m in again.checkpoint["channel_values"]["messages"]] == ["q", "again"]


def test_graph_over_sqlite_graph_state_matches_a_fresh_reader(tmp_path: Path) -> None:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer {len(state['messages'])}")]}

    app = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")
    graph = app.compile(checkpointer=OffpromptSaver(path=str(tmp_path / "g.db")))
    config: RunnableConfig = {"configurable": {"thread_id": "g"}}
    for i in range(3):
        graph.invoke({"messages": [("user", f"q{i}")]}, config)
    fresh = app.compile(checkpointer=OffpromptSaver(path=str(tmp_path / "g.db")))
    assert fresh.get_state(config).values == graph.get_state(config).values


def test_savers_of_one_file_share_its_one_store(tmp_path: Path) -> None:
    from offprompt.stores import open_store, release_store
    from offprompt.stores.shared import shared_holders

    db = tmp_path / "memory.db"
    first, second = OffpromptSaver(path=str(db)), OffpromptSaver(path=str(db))
    held = open_store(path=db)  # what every memory opening that file gets
    assert first.store is second.store is held
    assert shared_holders(held) == 3
    _put(first, "t", [HumanMessage("hi", id="h1")])
    first.close()
    first.close()  # a second close releases nothing more
    assert shared_holders(held) == 2 and not held.closed
    assert second.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    second.close()
    release_store(held)
    assert held.closed
