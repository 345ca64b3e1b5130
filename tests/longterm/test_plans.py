"""PlanMemory on the real conversation stores: DB-GPT's operations, resume after restart, faults."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offprompt.errors import DeserializationError, NamespaceError, NotFoundError, ValidationError
from offprompt.longterm.plans import PLAN_STATES, PlanMemory, SubTask
from offprompt.stores import InMemoryStore, SQLiteStore


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    s: Any
    if request.param == "postgres":
        from offprompt.stores import PostgresStore

        s = PostgresStore(request.getfixturevalue("postgres_dsn"))
    else:
        s = SQLiteStore(tmp_path / "plans.db") if request.param == "sqlite" else InMemoryStore()
    yield s
    s.close()


def _plan(conv: str = "c1") -> list[SubTask]:
    return [
        SubTask(
            conv_id=conv,
            sub_task_num=1,
            sub_task_content="Find the sales table",
            sub_task_agent="DataScientist",
        ),
        SubTask(conv_id=conv, sub_task_num=2, sub_task_content="Sum sales per region", rely="1"),
        SubTask(conv_id=conv, sub_task_num=3, sub_task_content="Chart the result ☃", rely=[1, 2]),
    ]


def test_batch_save_and_read_back(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan())
    got = plans.get_by_conv_id("c1")
    assert [t.sub_task_num for t in got] == [1, 2, 3]
    assert got[1].rely == [1] and got[2].rely == [1, 2]
    assert got[0].sub_task_agent == "DataScientist" and got[0].state == "todo"
    assert [t.sub_task_num for t in plans.get_by_conv_id_and_num("c1", [3, 1, 99])] == [1, 3]
    assert plans.get_by_conv_id("other") == []


def test_complete_and_update_follow_db_gpt(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan())
    plans.update_task("c1", 1, "running", 0, agent="SQLAgent", model="gpt-x")
    running = plans.get_by_conv_id_and_num("c1", [1])[0]
    assert (running.state, running.sub_task_agent, running.agent_model) == (
        "running",
        "SQLAgent",
        "gpt-x",
    )
    done = plans.complete_task("c1", 1, "table: sales_2024")
    assert done.state == "complete" and done.result == "table: sales_2024"
    plans.update_task("c1", 2, "retrying", 1, result="timeout")
    plans.update_task("c1", 3, "failed", 5, result="no chart lib")
    todo = plans.get_todo_plans("c1")
    assert [(t.sub_task_num, t.state, t.retry_times) for t in todo] == [(2, "retrying", 1)]
    assert plans.get_by_conv_id_and_num("c1", [2])[0].result == "timeout"


def test_resume_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    first = SQLiteStore(path)
    plans = PlanMemory(first)
    plans.batch_save(_plan("conv-42"))
    plans.complete_task("conv-42", 1, "found")
    plans.update_task("conv-42", 2, "running", 0)  # the process dies while 2 runs
    first.close()

    second = SQLiteStore(path)
    resumed = PlanMemory(second)
    assert [t.sub_task_num for t in resumed.get_todo_plans("conv-42")] == [3]
    assert [t.sub_task_num for t in resumed.get_todo_plans("conv-42", include_running=True)] == [
        2,
        3,
    ]
    nxt = resumed.next_task("conv-42")
    assert nxt is not None and nxt.sub_task_num == 2  # 3 relies on 2, which is not complete
    resumed.complete_task("conv-42", 2, "sums")
    nxt = resumed.next_task("conv-42")
    assert nxt is not None and nxt.sub_task_num == 3
    resumed.complete_task("conv-42", 3, "chart")
    assert resumed.next_task("conv-42") is None
    second.close()


def test_conversations_are_isolated_and_removable(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan("a") + _plan("b"))
    plans.complete_task("a", 1, "done in a")
    assert plans.get_by_conv_id("b")[0].state == "todo"
    plans.remove_by_conv_id("a")
    assert plans.get_by_conv_id("a") == []
    assert len(plans.get_by_conv_id("b")) == 3


def test_batch_save_replaces_a_saved_number(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan())
    plans.batch_save([SubTask(conv_id="c1", sub_task_num=2, sub_task_content="Re-planned step")])
    assert [t.sub_task_content for t in plans.get_by_conv_id("c1")][1] == "Re-planned step"
    assert len(plans.get_by_conv_id("c1")) == 3


def test_bad_batches_write_nothing(store: Any) -> None:
    plans = PlanMemory(store)
    with pytest.raises(ValidationError, match="appears twice"):
        plans.batch_save([*_plan(), SubTask(conv_id="c1", sub_task_num=1, sub_task_content="dup")])
    with pytest.raises(ValidationError, match="unknown sub-task state 'paused'"):
        plans.batch_save([_plan()[0].to_dict(), {**_plan()[1].to_dict(), "state": "paused"}])
    assert plans.get_by_conv_id("c1") == []


def test_bad_updates_change_nothing(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan())
    with pytest.raises(NotFoundError, match="conversation 'c1' has no sub-task 9"):
        plans.update_task("c1", 9, "running", 0)
    with pytest.raises(NotFoundError):
        plans.complete_task("nope", 1, "x")
    with pytest.raises(ValidationError, match="unknown sub-task state"):
        plans.update_task("c1", 1, "done", 0)
    with pytest.raises(ValidationError, match="retry_times"):
        plans.update_task("c1", 1, "running", -1)
    assert plans.get_by_conv_id("c1") == [
        SubTask.from_dict(t.to_dict()) for t in plans.get_by_conv_id("c1")
    ]
    assert [t.state for t in plans.get_by_conv_id("c1")] == ["todo"] * 3
    with pytest.raises(NamespaceError, match="conv_id"):
        plans.get_by_conv_id("")


def test_sub_task_validation() -> None:
    assert set(PLAN_STATES) == {"todo", "running", "retrying", "complete", "failed"}
    with pytest.raises(ValidationError, match="sub_task_num"):
        SubTask(conv_id="c", sub_task_num=-1, sub_task_content="x")
    with pytest.raises(ValidationError, match="conv_id"):
        SubTask(conv_id="", sub_task_num=1, sub_task_content="x")
    with pytest.raises(ValidationError, match="rely"):
        SubTask(conv_id="c", sub_task_num=1, sub_task_content="x", rely="one,two")
    with pytest.raises(DeserializationError, match="JSON object"):
        SubTask.from_dict("x")  # type: ignore[arg-type]
    task = SubTask(conv_id="c", sub_task_num=1, sub_task_content="数据 " * 10_000)
    assert SubTask.from_dict(task.to_dict()) == task
    with pytest.raises(ValidationError):
        task.state = "nope"  # type: ignore[assignment]


def test_corrupt_stored_task_is_a_clear_error(store: Any) -> None:
    plans = PlanMemory(store)
    plans.batch_save(_plan())
    store.set_state("c1", "plans/00000002", {"conv_id": "c1", "sub_task_num": "two"})
    with pytest.raises(DeserializationError, match=r"conversation 'c1', plans/00000002"):
        plans.get_by_conv_id("c1")


async def test_async_twins(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "async.db")
    plans = PlanMemory(store)
    await plans.abatch_save(_plan())
    await plans.aupdate_task("c1", 1, "running", 0)
    await plans.acomplete_task("c1", 1, "ok")
    await plans.aupdate_task("c1", 2, "retrying", 2)
    assert [t.sub_task_num for t in await plans.aget_todo_plans("c1")] == [2, 3]
    assert [t.state for t in await plans.aget_by_conv_id_and_num("c1", [1])] == ["complete"]
    results = await asyncio.gather(*(plans.aget_by_conv_id("c1") for _ in range(5)))
    assert all(len(r) == 3 for r in results)
    await plans.aremove_by_conv_id("c1")
    assert await plans.aget_by_conv_id("c1") == []
    store.close()
