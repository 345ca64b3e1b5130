"""The task-output API of the stores (issue 29): one contract for InMemoryStore,
SQLiteStore and PostgresStore (real file, real server); QdrantStore keeps none."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.errors import NotFoundError, StorageError, ValidationError
from offprompt.scope import Scope
from offprompt.stores import (
    BaseStore,
    ConversationStore,
    InMemoryStore,
    QdrantStore,
    SQLiteStore,
    StateStore,
    TaskStore,
)
from offprompt.task_memory import TaskMemory

ACME = Scope(tenant="acme")
BOB = Scope(tenant="acme", user="bob", session="s1")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def tasks(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "memory.db")
    else:
        from offprompt.stores import PostgresStore

        made = PostgresStore(request.getfixturevalue("postgres_dsn"))
    yield made
    made.close()


def test_a_store_without_task_outputs_is_refused_where_the_memory_is_built() -> None:
    store = QdrantStore(location=":memory:")
    assert isinstance(store, ConversationStore) and isinstance(store, StateStore)
    assert not isinstance(store, TaskStore)
    with pytest.raises(ValidationError) as refused:
        TaskMemory(store=store)
    assert str(refused.value) == (
        "TaskMemory needs a store that keeps task outputs; QdrantStore does not "
        "(use SQLiteStore, PostgresStore or InMemoryStore, or path=)"
    )
    with pytest.raises(ValidationError, match="QdrantStore does not"):
        TaskMemory(store=store.scoped(ACME))  # a view of it is no better
    with pytest.raises(StorageError, match="QdrantStore does not keep task outputs"):
        store.scoped(ACME).task_list()
    store.close()


def test_every_task_store_is_all_three(tasks: BaseStore) -> None:
    for capability in (ConversationStore, StateStore, TaskStore):
        assert isinstance(tasks, capability)
    assert isinstance(tasks.scoped(ACME), TaskStore)


def test_commit_is_versioned_and_a_stale_version_conflicts(tasks: BaseStore) -> None:
    key = tasks.task_put_blob("logs", b"raw text", scope=ACME)
    assert key == hashlib.sha256(b"raw text").hexdigest()
    assert (
        tasks.task_commit("logs", {"artifacts": [key]}, expect=None, blobs=[key], scope=ACME) == 1
    )
    assert tasks.task_commit("logs", {"stale": True}, expect=None, scope=ACME) is None
    assert tasks.task_commit("logs", {"artifacts": [key, "x"]}, expect=1, scope=ACME) == 2
    assert tasks.task_commit("logs", {"stale": True}, expect=1, scope=ACME) is None
    record = tasks.task_get("logs", scope=ACME)
    assert record is not None and record.version == 2 and record.meta == {"artifacts": [key, "x"]}
    assert tasks.task_get_blob("logs", key, scope=ACME) == b"raw text"
    assert [r.namespace for r in tasks.task_list(scope=ACME)] == ["logs"]


def test_a_commit_naming_a_missing_blob_writes_nothing(tasks: BaseStore) -> None:
    with pytest.raises(NotFoundError, match="not stored"):
        tasks.task_commit("logs", {"a": 1}, expect=None, blobs=["0" * 64], scope=ACME)
    assert tasks.task_get("logs", scope=ACME) is None


def test_partitions_and_sessions_are_separate(tasks: BaseStore) -> None:
    tasks.task_commit("n", {"who": "acme"}, expect=None, scope=ACME)
    tasks.task_commit("n", {"who": "bob"}, expect=None, scope=BOB)
    tasks.task_put_blob("n", b"bob's bytes", scope=BOB)
    assert tasks.task_get("n", scope=ACME).meta == {"who": "acme"}  # type: ignore[union-attr]
    assert tasks.task_get("n", scope=BOB).meta == {"who": "bob"}  # type: ignore[union-attr]
    assert tasks.task_blob_keys("n", scope=ACME) == []
    assert tasks.task_get("n", scope=Scope(tenant="other")) is None
    with pytest.raises(NotFoundError):
        tasks.task_get_blob("n", hashlib.sha256(b"bob's bytes").hexdigest(), scope=ACME)


def test_delete_takes_metadata_and_blobs_at_once(tasks: BaseStore) -> None:
    key = tasks.task_put_blob("n", b"x" * 1000, scope=ACME)
    tasks.task_commit("n", {"k": key}, expect=None, blobs=[key], scope=ACME)
    gone = tasks.task_delete("n", scope=ACME)
    assert gone is not None and gone.meta == {"k": key}
    assert tasks.task_get("n", scope=ACME) is None and tasks.task_blob_keys("n", scope=ACME) == []
    assert tasks.task_delete("n", scope=ACME) is None
    # After a delete the name starts again from scratch (version 1).
    assert tasks.task_commit("n", {}, expect=None, scope=ACME) == 1


def test_forget_reaches_task_outputs_by_selector(tasks: BaseStore) -> None:
    tasks.task_commit("n", {}, expect=None, scope=ACME)
    tasks.task_put_blob("n", b"bob", scope=BOB)
    tasks.task_commit("n", {}, expect=None, scope=BOB)
    assert tasks.task_forget_scope(Scope(user="bob")) == (1, 1)
    assert tasks.task_get("n", scope=BOB) is None and tasks.task_get("n", scope=ACME) is not None
    counts = tasks.forget_scope(Scope(tenant="acme"))
    assert counts.task_outputs == 1 and tasks.task_list(scope=ACME) == []
    with pytest.raises(ValidationError):
        tasks.task_forget_scope(Scope())


def test_bad_input_is_refused(tasks: BaseStore) -> None:
    with pytest.raises(ValidationError):
        tasks.task_commit("n", ["not", "a", "dict"], expect=None, scope=ACME)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        tasks.task_put_blob("n", "text, not bytes", scope=ACME)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        tasks.task_get("../escape", scope=ACME)


def test_sqlite_task_outputs_survive_reopen(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as first:
        key = first.task_put_blob("n", b"bytes", scope=ACME)
        first.task_commit("n", {"k": key}, expect=None, blobs=[key], scope=ACME)
    with SQLiteStore(tmp_path / "m.db") as again:
        assert again.task_get("n", scope=ACME).version == 1  # type: ignore[union-attr]
        assert again.task_get_blob("n", key, scope=ACME) == b"bytes"
