"""AgentMemory in the real conversation stores: save/load, auto-persist, restart, faults."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from offprompt.errors import (
    NamespaceError,
    NotFoundError,
    SerializationError,
    StorageError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.steps import (
    ActionStep,
    AgentMemory,
    FinalAnswerStep,
    PlanningStep,
    StepError,
    TaskStep,
    Timing,
    TokenUsage,
    ToolCall,
)
from offprompt.stores import InMemoryStore, SQLiteStore


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    s: Any
    if request.param == "postgres":
        from offprompt.stores import PostgresStore

        s = PostgresStore(request.getfixturevalue("postgres_dsn"))
    else:
        s = SQLiteStore(tmp_path / "steps.db") if request.param == "sqlite" else InMemoryStore()
    yield s
    s.close()


def _run(memory: AgentMemory, n: int = 3) -> None:
    memory.steps.append(
        TaskStep(task="Sum the numbers ☃", task_images=[Image.new("RGB", (5, 4), "blue")])
    )
    memory.steps.append(
        PlanningStep(plan="1. parse\n2. add", timing=Timing(start_time=0.0, end_time=0.5))
    )
    for i in range(1, n + 1):
        memory.steps.append(
            ActionStep(
                step_number=i,
                timing=Timing(start_time=float(i), end_time=i + 0.25),
                tool_calls=[
                    ToolCall(id=f"call_{i}", name="python_interpreter", arguments=f"x{i} = {i}")
                ],
                code_action=f"x{i} = {i}",
                observations=f"x{i} is {i}",
                error=StepError(type="AgentExecutionError", message="oops") if i == 2 else None,
                token_usage=TokenUsage(input_tokens=10 * i, output_tokens=i),
                action_output=i,
                is_final_answer=i == n,
            )
        )


def test_save_and_load_round_trip(store: Any) -> None:
    memory = AgentMemory("You add numbers.")
    _run(memory)
    memory.save(store, "run-1")
    loaded = AgentMemory.load(store, "run-1")
    assert loaded.system_prompt == memory.system_prompt
    assert loaded.steps == memory.steps

    def shape(memory: AgentMemory) -> list[tuple[str, str, dict[str, Any], list[bytes]]]:
        return [(m.role, m.text, m.meta, [i.value for i in m.images]) for m in memory.to_messages()]

    assert shape(loaded) == shape(memory)
    assert (
        len(shape(loaded)) == 11
    )  # system, task, plan + follow-up, 3 x (call, observation), 1 error
    assert loaded.return_full_code() == "x1 = 1\n\nx2 = 2\n\nx3 = 3"
    assert isinstance(loaded.steps[0], TaskStep) and loaded.steps[0].task_images
    assert loaded.steps[0].task_images[0].to_pil().size == (5, 4)


def test_save_replaces_a_longer_saved_run(store: Any) -> None:
    memory = AgentMemory("sys")
    _run(memory, n=4)
    memory.save(store, "r")
    del memory.steps[2:]
    memory.save(store, "r")
    assert len(AgentMemory.load(store, "r").steps) == 2
    assert store.state_keys("r", prefix="steps/r/") == [
        "steps/r/00000000",
        "steps/r/00000001",
        "steps/r/meta",
    ]


def test_attached_memory_survives_a_restart_and_continues(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    first = SQLiteStore(path)
    memory = AgentMemory("You add numbers.")
    memory.attach(first, "run-7", session_id="user-1")
    _run(memory, n=2)  # every append is written as it happens, no save() call
    first.close()

    second = SQLiteStore(path)  # "after a restart"
    resumed = AgentMemory.load(second, "run-7", session_id="user-1", attach=True)
    assert resumed.steps == memory.steps
    resumed.steps.append(
        ActionStep(step_number=3, timing=Timing(start_time=3.0), observations="done")
    )
    resumed.steps.append(FinalAnswerStep(3))
    second.close()

    third = SQLiteStore(path)
    final = AgentMemory.load(third, "run-7", session_id="user-1")
    assert len(final.steps) == 6
    assert isinstance(final.steps[-1], FinalAnswerStep) and final.steps[-1].output == 3
    assert AgentMemory.list_runs(third, "user-1") == ["run-7"]
    third.close()


def test_attached_mutations_keep_the_store_in_step(store: Any) -> None:
    memory = AgentMemory("sys")
    memory.attach(store, "r")
    _run(memory, n=3)
    memory.steps.insert(0, TaskStep(task="first"))
    del memory.steps[2]
    memory.steps[1] = TaskStep(task="replaced")
    memory.steps.pop()
    assert AgentMemory.load(store, "r").steps == memory.steps
    # a step changed in place is written again by sync()
    step = memory.steps[-1]
    assert isinstance(step, ActionStep)
    step.observations = "edited later"
    assert AgentMemory.load(store, "r").steps != memory.steps
    memory.sync()
    assert AgentMemory.load(store, "r").steps == memory.steps
    memory.reset()
    assert AgentMemory.load(store, "r").steps == []
    assert store.state_keys("r", prefix="steps/r/") == ["steps/r/meta"]
    memory.detach()
    memory.steps.append(TaskStep(task="not persisted"))
    assert AgentMemory.load(store, "r").steps == []


def test_unserialisable_step_is_refused_and_nothing_stored_changes(store: Any) -> None:
    memory = AgentMemory("sys")
    memory.attach(store, "r")
    _run(memory, n=1)
    before = AgentMemory.load(store, "r").get_full_steps()
    bad = ActionStep(step_number=9, timing=Timing(start_time=0), action_output=object())
    with pytest.raises(SerializationError, match="action_output"):
        memory.steps.append(bad)
    assert bad not in memory.steps and len(memory.steps) == 3
    assert AgentMemory.load(store, "r").get_full_steps() == before
    memory.detach()
    memory.steps.append(bad)  # unattached memory accepts it, like smolagents
    with pytest.raises(SerializationError, match="action_output"):
        memory.save(store, "r")
    assert AgentMemory.load(store, "r").get_full_steps() == before


class _FailingStore(InMemoryStore):
    """A real InMemoryStore whose writes start failing (a full disk, say)."""

    fail = False

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        if self.fail:
            raise StorageError("disk full")
        super().set_state(session_id, key, value)


def test_a_failed_write_rolls_back_the_append() -> None:
    store = _FailingStore()
    memory = AgentMemory("sys")
    memory.attach(store, "r")
    memory.steps.append(TaskStep(task="kept"))
    store.fail = True
    with pytest.raises(StorageError, match="disk full"):
        memory.steps.append(TaskStep(task="lost"))
    assert [s.task for s in memory.steps if isinstance(s, TaskStep)] == ["kept"]
    store.fail = False
    assert AgentMemory.load(store, "r").steps == memory.steps


def test_a_crash_between_step_and_header_keeps_the_previous_run(store: Any) -> None:
    memory = AgentMemory("sys")
    memory.attach(store, "r")
    memory.steps.append(TaskStep(task="a"))
    # simulate a crash after the step was written but before the header was updated
    store.set_state("r", "steps/r/00000001", TaskStep(task="half-written").to_dict())
    assert [s.to_dict()["task"] for s in AgentMemory.load(store, "r").steps] == ["a"]


def test_unknown_step_type_in_a_stored_log_is_named(store: Any) -> None:
    memory = AgentMemory("sys")
    _run(memory, n=1)
    memory.save(store, "r")
    store.set_state("r", "steps/r/00000001", {"type": "HumanFeedbackStep", "feedback": "no"})
    with pytest.raises(
        UnknownTypeError, match=r"step 1 of run 'r': unknown step type 'HumanFeedbackStep'"
    ) as info:
        AgentMemory.load(store, "r")
    assert info.value.context["type"] == "HumanFeedbackStep"


def test_load_errors(store: Any) -> None:
    with pytest.raises(NotFoundError, match="no step memory saved for run 'nope'"):
        AgentMemory.load(store, "nope")
    store.set_state("r", "steps/r/meta", {"format": 1, "count": 2, "system_prompt": "s"})
    store.set_state("r", "steps/r/00000000", TaskStep(task="a").to_dict())
    with pytest.raises(StorageError, match="step 1 of run 'r' is missing"):
        AgentMemory.load(store, "r")
    store.set_state("r", "steps/r/meta", {"count": "many"})
    with pytest.raises(StorageError, match="corrupt step-memory header"):
        AgentMemory.load(store, "r")
    store.set_state("r", "steps/r/meta", {"format": 99, "count": 0, "system_prompt": "s"})
    with pytest.raises(StorageError, match="format 99"):
        AgentMemory.load(store, "r")
    store.set_state("r", "steps/r/meta", {"format": 1, "count": 1, "system_prompt": "s"})
    store.set_state("r", "steps/r/00000000", {"type": "TaskStep"})
    with pytest.raises(Exception, match=r"step 0 of run 'r'.*task"):
        AgentMemory.load(store, "r")


@pytest.mark.parametrize("run_id", ["", "a/b", " ", "x" * 300])
def test_bad_run_ids_are_refused(store: Any, run_id: str) -> None:
    with pytest.raises(NamespaceError, match="run_id"):
        AgentMemory("s").save(store, run_id)


def test_runs_are_isolated_and_deletable(store: Any) -> None:
    a, b = AgentMemory("A"), AgentMemory("B")
    a.steps.append(TaskStep(task="for a"))
    b.steps.append(TaskStep(task="for b"))
    a.save(store, "run", session_id="s")
    b.save(store, "run2", session_id="s")
    assert AgentMemory.load(store, "run", session_id="s").steps == a.steps
    assert AgentMemory.list_runs(store, "s") == ["run", "run2"]
    AgentMemory.delete_run(store, "run", session_id="s")
    assert AgentMemory.list_runs(store, "s") == ["run2"]
    with pytest.raises(NotFoundError):
        AgentMemory.load(store, "run", session_id="s")
    assert AgentMemory.load(store, "run2", session_id="s").system_prompt.system_prompt == "B"


def test_concurrent_runs_in_threads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "threads.db")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            memory = AgentMemory(f"agent {n}")
            memory.attach(store, f"run-{n}", session_id="shared")
            for i in range(20):
                memory.steps.append(
                    ActionStep(step_number=i, timing=Timing(start_time=i), observations=f"{n}:{i}")
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in range(4):
        loaded = AgentMemory.load(store, f"run-{n}", session_id="shared")
        assert [s.observations for s in loaded.steps if isinstance(s, ActionStep)] == [
            f"{n}:{i}" for i in range(20)
        ]
    store.close()


async def test_async_save_and_load(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "async.db")
    memory = AgentMemory("sys")
    _run(memory, n=2)
    await memory.asave(store, "r")
    loaded = await AgentMemory.aload(store, "r")
    assert loaded.steps == memory.steps
    assert loaded.system_prompt == memory.system_prompt
    memory.steps.pop()
    await memory.asave(store, "r")
    assert len((await AgentMemory.aload(store, "r")).steps) == len(memory.steps)
    assert await store.astate_keys("r", prefix="steps/r/0000000") == [
        f"steps/r/{i:08d}" for i in range(len(memory.steps))
    ]
    store.close()


def test_stored_values_are_plain_json(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "json.db")
    memory = AgentMemory("sys")
    _run(memory, n=1)
    memory.save(store, "r")
    for key in store.state_keys("r"):
        json.dumps(store.get_state("r", key))
    image = store.get_state("r", "steps/r/00000000")["task_images"][0]
    assert image["type"] == "ImageArtifact" and image["format"] == "png"
    with pytest.raises(ValidationError, match="sync"):
        memory.sync()
    store.close()


class _CountingStore(InMemoryStore):
    """A real InMemoryStore that counts step writes."""

    writes = 0

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        if not key.endswith("/meta"):
            self.writes += 1
        super().set_state(session_id, key, value)


def test_appends_write_only_the_new_step() -> None:
    store = _CountingStore()
    memory = AgentMemory("sys")
    memory.attach(store, "r")
    for i in range(50):
        memory.steps.append(TaskStep(task=str(i)))
    memory.steps += [TaskStep(task="a"), TaskStep(task="b")]
    assert store.writes == 52
    assert len(AgentMemory.load(store, "r").steps) == 52
