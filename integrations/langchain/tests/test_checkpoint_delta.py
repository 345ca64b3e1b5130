"""``OffpromptSaver`` stores a checkpoint's payload as a deflate delta against its parent's:
chains read back exactly (also by a fresh process), stay bounded, survive ``prune`` and
``delete_for_runs`` deleting their bases, and a missing base is a clear error."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from offprompt_langchain._checkpoint_rows import FORMAT, parse_row
from offprompt_langchain.checkpoint import SNAPSHOT_EVERY, OffpromptSaver
from offprompt_langchain.convert import from_langchain

from offprompt.errors import DeserializationError
from offprompt.stores import InMemoryStore, SQLiteStore


def _chain(saver: OffpromptSaver, thread: str, n: int, run_of: Any = None) -> list[RunnableConfig]:
    """``n`` checkpoints, each the child of the one before, as a graph's loop puts them."""
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    versions: dict[str, Any] = {}
    messages: list[Any] = []
    saved = []
    for step in range(n):
        messages = [*messages, HumanMessage(f"m{step}", id=f"h{step}")]
        new = {c: saver.get_next_version(versions.get(c), None) for c in ("messages", "x")}
        versions.update(new)
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": messages, "x": step}
        checkpoint["channel_versions"] = dict(versions)
        checkpoint["versions_seen"] = {"agent": {"messages": versions["messages"]}}
        metadata: dict[str, Any] = {"source": "loop", "step": step, "parents": {}}
        if run_of is not None:
            metadata["run_id"] = run_of(step)
        config = saver.put(config, checkpoint, metadata, new)  # type: ignore[arg-type]
        saved.append(config)
    return saved


def _docs(store: SQLiteStore, thread: str) -> dict[str, Any]:
    return {
        key.rsplit("/", 1)[1]: store.get_state(thread, key)
        for key in store.state_keys(thread, "langgraph/cp/")
    }


def _depth(doc: Any) -> int:
    row = parse_row(doc)
    assert row is not None and row.fmt == FORMAT
    return row.depth


def _snapshot(doc: Any) -> bool:
    return _depth(doc) == 0


def test_delta_chains_read_back_exactly_and_stay_bounded(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    writer = OffpromptSaver(store)
    saved = _chain(writer, "t", 2 * SNAPSHOT_EVERY + 3)
    docs = _docs(store, "t")
    assert sum(not _snapshot(d) for d in docs.values()) >= len(docs) - 3  # mostly deltas
    assert max(_depth(d) for d in docs.values()) == SNAPSHOT_EVERY - 1
    assert all(isinstance(d, bytes) for d in docs.values())  # SQLite keeps rows as bytes
    # a fresh saver (no cache) reads every checkpoint the writer reads, equal
    reader = OffpromptSaver(SQLiteStore(tmp_path / "m.db"))
    for config in reversed(saved):
        mine, fresh = writer.get_tuple(config), reader.get_tuple(config)
        assert mine is not None and fresh is not None
        assert fresh.checkpoint == mine.checkpoint
        assert fresh.metadata == mine.metadata
    assert [t.checkpoint["id"] for t in reader.list({"configurable": {"thread_id": "t"}})] == [
        c["configurable"]["checkpoint_id"] for c in reversed(saved)
    ]


def test_prune_keeps_the_latest_readable_when_its_bases_go(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    saved = _chain(saver, "t", 5)
    latest = saved[-1]
    before = saver.get_tuple(latest)
    assert before is not None and not _snapshot(
        _docs(store, "t")[latest["configurable"]["checkpoint_id"]]
    )
    saver.prune(["t"])
    docs = _docs(store, "t")
    assert list(docs) == [latest["configurable"]["checkpoint_id"]]
    assert _snapshot(docs[latest["configurable"]["checkpoint_id"]])
    after = OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(latest)
    assert after is not None and after.checkpoint == before.checkpoint


def test_delete_for_runs_rewrites_the_children_it_would_orphan(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    saved = _chain(saver, "t", 6, run_of=lambda step: "run-a" if step in (1, 2) else "run-b")
    kept = [saved[0], *saved[3:]]
    expected = {c["configurable"]["checkpoint_id"]: saver.get_tuple(c) for c in kept}
    saver.delete_for_runs(["run-a"])
    reader = OffpromptSaver(SQLiteStore(tmp_path / "m.db"))
    assert {t.checkpoint["id"] for t in reader.list({"configurable": {"thread_id": "t"}})} == set(
        expected
    )
    for checkpoint_id, tup in expected.items():
        found = reader.get_tuple(
            {
                "configurable": {
                    "thread_id": "t",
                    "checkpoint_ns": "",
                    "checkpoint_id": checkpoint_id,
                }
            }
        )
        assert found is not None and tup is not None and found.checkpoint == tup.checkpoint


def test_a_missing_delta_base_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    saved = _chain(saver, "t", 3)
    parent = saved[1]["configurable"]["checkpoint_id"]
    store.delete_state("t", f"langgraph/cp//{parent}")  # below the saver, e.g. by hand
    with pytest.raises(DeserializationError, match="delta against"):
        OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(saved[2])
    first = OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(saved[0])
    assert first is not None and [
        m.content for m in first.checkpoint["channel_values"]["messages"]
    ] == ["m0"]


def test_get_tuple_returns_a_fresh_list_each_time(tmp_path: Path) -> None:
    saver = OffpromptSaver(SQLiteStore(tmp_path / "m.db"))
    saved = _chain(saver, "t", 3)
    first = saver.get_tuple(saved[-1])
    assert first is not None
    first.checkpoint["channel_values"]["messages"].append(AIMessage("mine", id="x"))
    again = saver.get_tuple(saved[-1])
    assert again is not None
    assert [m.id for m in again.checkpoint["channel_values"]["messages"]] == ["h0", "h1", "h2"]


def test_a_thread_written_in_format_2_reads_and_grows(tmp_path: Path) -> None:
    """Rows of the previous layout (a document per checkpoint, its writes in a row of their
    own, base64 serializer values) read back; new checkpoints on top use format 3."""
    store = SQLiteStore(tmp_path / "m.db")
    saver = OffpromptSaver(store)
    serde = saver.serde
    (seq,) = store.append("t", [from_langchain([HumanMessage("old", id="h0")])[0]], [2])

    def packed(value: Any) -> list[str]:
        kind, data = serde.dumps_typed(value)
        return [kind, base64.b64encode(data).decode("ascii")]

    checkpoint = empty_checkpoint()
    checkpoint["channel_versions"] = {"messages": "0000000001.00000001", "x": "0000000001.00000002"}
    body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    store.set_state(
        "t",
        f"langgraph/cp//{checkpoint['id']}",
        {
            "format": 2,
            "checkpoint": packed(body),
            "metadata": packed({"source": "input", "step": -1, "parents": {}}),
            "parent": None,
            "run_id": None,
            "values": {
                "messages": ["0000000001.00000001", {"messages": [[seq, 1]], "count": 1}],
                "x": ["0000000001.00000002", {"value": packed(41)}],
            },
        },
    )
    store.set_state(
        "t",
        f"langgraph/writes//{checkpoint['id']}",
        {"task\x1f0": ["task", 0, "x", packed(42), ""]},
    )
    config: RunnableConfig = {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": checkpoint["id"]}
    }
    old = OffpromptSaver(SQLiteStore(tmp_path / "m.db")).get_tuple(config)
    assert old is not None
    assert old.checkpoint["channel_values"] == {"messages": [HumanMessage("old", id="h0")], "x": 41}
    assert old.metadata == {"source": "input", "step": -1, "parents": {}}
    assert old.pending_writes == [("task", "x", 42)]
    saver.put_writes(config, [("x", 43)], "task-2")  # still its own writes row
    child = empty_checkpoint()
    child["channel_values"] = {"messages": [HumanMessage("old", id="h0")], "x": 43}
    child["channel_versions"] = {"messages": "0000000001.00000001", "x": "0000000002.00000003"}
    new = saver.put(
        config, child, {"source": "loop", "step": 0, "parents": {}}, {"x": "0000000002.00000003"}
    )
    fresh = OffpromptSaver(SQLiteStore(tmp_path / "m.db"))
    latest = fresh.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None and latest.config == new
    assert latest.checkpoint["channel_values"] == {
        "messages": [HumanMessage("old", id="h0")],
        "x": 43,
    }
    assert _snapshot(_docs(store, "t")[child["id"]])  # no delta against a format-2 parent
    again = fresh.get_tuple(config)
    assert again is not None and again.pending_writes == [("task", "x", 42), ("task-2", "x", 43)]
    assert [t.checkpoint["id"] for t in fresh.list({"configurable": {"thread_id": "t"}})] == [
        child["id"],
        checkpoint["id"],
    ]


def test_on_a_store_without_bytes_rows_are_json(tmp_path: Path) -> None:
    store = InMemoryStore()
    saved = _chain(OffpromptSaver(store), "t", SNAPSHOT_EVERY + 2)
    rows = [store.get_state("t", k) for k in store.state_keys("t", "langgraph/cp/")]
    assert all(isinstance(r, list) and r[0] == FORMAT for r in rows)
    assert max(_depth(r) for r in rows) == SNAPSHOT_EVERY - 1
    fresh = OffpromptSaver(store)  # nothing cached: every delta undone from the rows
    for config in saved:
        found = fresh.get_tuple(config)
        assert (
            found is not None and found.checkpoint["id"] == config["configurable"]["checkpoint_id"]
        )
    latest = fresh.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None
    assert [m.id for m in latest.checkpoint["channel_values"]["messages"]] == [
        f"h{i}" for i in range(SNAPSHOT_EVERY + 2)
    ]
