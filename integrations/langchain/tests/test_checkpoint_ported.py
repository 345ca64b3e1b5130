"""LangGraph's own saver tests, ported to ``OffpromptSaver`` (scenarios re-implemented).

Sources (langchain-ai/langgraph):

* ``libs/checkpoint/tests/test_memory.py`` @ 038f26472d65fd04a7b521762906cc60e44a00f5:
  ``test_combined_metadata``, ``test_search``, ``test_asearch``, ``test_memory_saver``
  (context managers). Changed: run on SQLite and Qdrant stores instead of
  ``InMemorySaver``; ``before`` and ``limit`` checked too (a TODO upstream). The
  ``TestInMemorySaverDeltaChannel`` cases poke ``InMemorySaver``'s private dicts and do
  not apply; the DeltaChannel behaviour they guard is covered by the graph-level cases
  below.
* ``libs/checkpoint-sqlite/tests/test_sqlite.py`` @ 0415c02b4084c1215f62cc3b2530eb918d4bf253:
  ``test_combined_metadata`` (``thread_ts`` carried into metadata) and ``test_search``.
  ``test_search_where`` / ``test_metadata_predicate`` test SqliteSaver's SQL builder and
  do not apply; ``test_informative_async_errors`` does not apply (our async methods work).
* ``libs/checkpoint-sqlite/tests/test_get_delta_channel_history.py`` @
  6c184b2b1b1078f9cc7bb5a0429743f17af8bf85: every scenario, sync and async, on a real
  ``DeltaChannel`` graph. Changed: ``OffpromptSaver`` instead of ``SqliteSaver``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    create_checkpoint,
    empty_checkpoint,
)

# private-ok: LangGraph's own test imports it
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from offprompt_langchain.checkpoint import OffpromptSaver
from typing_extensions import TypedDict

from offprompt.stores import BaseStore, PostgresStore, QdrantStore, SQLiteStore


@pytest.fixture(params=["sqlite", "qdrant", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OffpromptSaver]:
    store: BaseStore
    if request.param == "sqlite":
        store = SQLiteStore(tmp_path / "ported.db")
    elif request.param == "postgres":
        store = PostgresStore(request.getfixturevalue("postgres_dsn"))
    else:
        store = QdrantStore(path=str(tmp_path / "qdrant"))
    with OffpromptSaver(store) as made:
        yield made
    store.close()


CONFIG_1: RunnableConfig = {
    "configurable": {"thread_id": "thread-1", "thread_ts": "1", "checkpoint_ns": ""}
}
CONFIG_2: RunnableConfig = {
    "configurable": {"thread_id": "thread-2", "checkpoint_id": "2", "checkpoint_ns": ""}
}
CONFIG_3: RunnableConfig = {
    "configurable": {"thread_id": "thread-2", "checkpoint_id": "2-inner", "checkpoint_ns": "inner"}
}
METADATA_1: CheckpointMetadata = {"source": "input", "step": 2, "writes": {}, "score": 1}  # type: ignore[typeddict-unknown-key]
METADATA_2: CheckpointMetadata = {
    "source": "loop",
    "step": 1,
    "writes": {"foo": "bar"},
    "score": None,
}  # type: ignore[typeddict-unknown-key]


def _three(saver: OffpromptSaver) -> tuple[Checkpoint, Checkpoint, Checkpoint]:
    first = empty_checkpoint()
    second = create_checkpoint(first, {}, 1)
    third = empty_checkpoint()
    saver.put(CONFIG_1, first, METADATA_1, {})
    saver.put(CONFIG_2, second, METADATA_2, {})
    saver.put(CONFIG_3, third, {}, {})
    return first, second, third


def test_combined_metadata(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {
        "configurable": {
            "thread_id": "thread-2",
            "checkpoint_ns": "",
            "__super_private_key": "super_private_value",
        },
        "metadata": {"run_id": "my_run_id"},
    }
    checkpoint = create_checkpoint(empty_checkpoint(), {}, 1)
    saver.put(config, checkpoint, METADATA_2, {})
    found = saver.get_tuple(config)
    assert found is not None
    # thread_id is a LangGraph-reserved key: not copied into metadata (as InMemorySaver).
    assert found.metadata == {**METADATA_2, "run_id": "my_run_id"}


def test_search(saver: OffpromptSaver) -> None:
    first, _second, _third = _three(saver)
    found = list(saver.list(None, filter={"source": "input"}))
    assert len(found) == 1
    assert found[0].metadata == {"thread_ts": "1", **METADATA_1}
    found = list(saver.list(None, filter={"step": 1, "writes": {"foo": "bar"}}))
    assert len(found) == 1 and found[0].metadata == METADATA_2
    assert len(list(saver.list(None, filter={}))) == 3
    assert list(saver.list(None, filter={"source": "update", "step": 1})) == []
    both = list(saver.list({"configurable": {"thread_id": "thread-2"}}))
    assert {t.config["configurable"]["checkpoint_ns"] for t in both} == {"", "inner"}
    # before and limit (a TODO upstream)
    newest_first = [t.checkpoint["id"] for t in saver.list(None)]
    assert newest_first == sorted(newest_first, reverse=True)
    assert [t.checkpoint["id"] for t in saver.list(None, limit=2)] == newest_first[:2]
    before = {"configurable": {"thread_id": "thread-1", "checkpoint_id": first["id"]}}
    assert all(t.checkpoint["id"] < first["id"] for t in saver.list(None, before=before))


async def test_asearch(saver: OffpromptSaver) -> None:
    _three(saver)
    found = [c async for c in saver.alist(None, filter={"source": "input"})]
    assert len(found) == 1 and found[0].metadata["score"] == 1
    found = [c async for c in saver.alist(None, filter={"step": 1, "writes": {"foo": "bar"}})]
    assert len(found) == 1 and found[0].metadata == METADATA_2
    assert len([c async for c in saver.alist(None, filter={})]) == 3
    assert [c async for c in saver.alist(None, filter={"source": "update", "step": 1})] == []


async def test_context_managers(tmp_path: Path) -> None:
    saver = OffpromptSaver(path=str(tmp_path / "cm.db"))
    async with saver as entered:
        assert entered is saver
    with OffpromptSaver(path=str(tmp_path / "cm.db")) as again:
        assert isinstance(again, OffpromptSaver)


# -- get_delta_channel_history on a real DeltaChannel graph --------------------------
class _DeltaState(TypedDict):
    items: Annotated[list, DeltaChannel(operator.add)]


def _noop(_state: Any) -> dict[str, Any]:
    return {}


def _delta_graph(checkpointer: OffpromptSaver) -> Any:
    return (
        StateGraph(_DeltaState)
        .add_node("noop", _noop)
        .add_edge(START, "noop")
        .add_edge("noop", END)
        .compile(checkpointer=checkpointer)
    )


def _non_root(saver: OffpromptSaver, config: RunnableConfig) -> RunnableConfig:
    return next(t.config for t in saver.list(config) if t.parent_config is not None)


def _values(entry: Any) -> list[Any]:
    out: list[Any] = []
    for _task, channel, value in entry["writes"]:
        assert channel == "items"
        out.extend(value if isinstance(value, list) else [value])
    return out


def test_delta_empty_channels(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": "empty"}}
    assert saver.get_delta_channel_history(config=config, channels=[]) == {}


def test_delta_writes_oldest_to_newest(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": "history"}}
    graph = _delta_graph(saver)
    for i in range(3):
        graph.invoke({"items": [f"v{i}"]}, config)
    # operator.add over the batch of writes: what InMemorySaver gives for this graph too.
    expected = [["v0"], ["v1"], ["v2"]]
    assert graph.get_state(config).values["items"] == expected
    entry = saver.get_delta_channel_history(config=_non_root(saver, config), channels=["items"])[
        "items"
    ]
    values = _values(entry)
    assert values and values == [f"v{i}" for i in range(len(values))]
    # A fresh saver on the same store rebuilds the same state from the stored writes.
    again = _delta_graph(OffpromptSaver(saver.store))
    assert again.get_state(config).values["items"] == expected


def test_delta_seed_from_snapshot_in_ancestor(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": "seed"}}
    graph = _delta_graph(saver)
    for i in range(2):
        graph.invoke({"items": [f"v{i}"]}, config)
    history = list(saver.list(config))
    leaf = history[0]
    ancestor = next(t for t in history if t.parent_config is not None)
    assert ancestor.parent_config is not None
    parent = saver.get_tuple(ancestor.parent_config)
    assert parent is not None
    parent.checkpoint["channel_values"]["items"] = _DeltaSnapshot(["seeded", "items"])
    parent.checkpoint["channel_versions"].setdefault("items", 1)
    saver.put(
        parent.parent_config or {"configurable": ancestor.parent_config["configurable"]},
        parent.checkpoint,
        parent.metadata,
        {"items": parent.checkpoint["channel_versions"]["items"]},
    )
    entry = saver.get_delta_channel_history(config=leaf.config, channels=["items"])["items"]
    assert isinstance(entry.get("seed"), _DeltaSnapshot)
    assert entry["seed"].value == ["seeded", "items"]


def test_delta_root_has_no_seed(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": "root"}}
    _delta_graph(saver).invoke({"items": ["v0"]}, config)
    root = list(saver.list(config))[-1]
    assert root.parent_config is None
    entry = saver.get_delta_channel_history(config=root.config, channels=["items"])["items"]
    assert "seed" not in entry and entry["writes"] == []


async def test_delta_async(saver: OffpromptSaver) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": "history-async"}}
    graph = _delta_graph(saver)
    assert await saver.aget_delta_channel_history(config=config, channels=[]) == {}
    for i in range(3):
        await graph.ainvoke({"items": [f"v{i}"]}, config)
    history = [t async for t in saver.alist(config)]
    target = next(t.config for t in history if t.parent_config is not None)
    entry = (await saver.aget_delta_channel_history(config=target, channels=["items"]))["items"]
    values = _values(entry)
    assert values and values == [f"v{i}" for i in range(len(values))]
    root = history[-1]
    assert root.parent_config is None
    entry = (await saver.aget_delta_channel_history(config=root.config, channels=["items"]))[
        "items"
    ]
    assert "seed" not in entry and entry["writes"] == []
