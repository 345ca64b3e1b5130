"""``OffpromptSaver`` stores a checkpoint's payload as a deflate delta against its parent's:
chains read back exactly (also by a fresh process), stay bounded, survive ``prune`` and
``delete_for_runs`` deleting their bases, and a missing base is a clear error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from offprompt_langchain._checkpoint_rows import FORMAT, parse_row
from offprompt_langchain.checkpoint import _SNAPSHOT_EVERY, OffpromptSaver

from offprompt.errors import DeserializationError
from offprompt.stores import SQLiteStore


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


def _docs(store: SQLiteStore, thread: str) -> dict[str, list[Any]]:
    return {
        key.rsplit("/", 1)[1]: store.get_state(thread, key)
        for key in store.state_keys(thread, "langgraph/cp/")
    }


def _snapshot(doc: list[Any]) -> bool:
    row = parse_row(doc)
    assert row is not None and row.fmt == FORMAT
    return row.depth == 0


def test_delta_chains_read_back_exactly_and_stay_bounded(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    writer = OffpromptSaver(store)
    saved = _chain(writer, "t", 2 * _SNAPSHOT_EVERY + 3)
    docs = _docs(store, "t")
    assert sum(not _snapshot(d) for d in docs.values()) >= len(docs) - 3  # mostly deltas
    assert max(d[2] for d in docs.values()) == _SNAPSHOT_EVERY - 1  # [3, parent, depth, ...]
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
