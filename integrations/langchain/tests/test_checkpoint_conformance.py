"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``).

All eight capabilities (put, put_writes, get_tuple, list, delete_thread and the extended
delete_for_runs, copy_thread, prune) run against ``OffpromptSaver`` on the SQLite file
(the default store), on a real Qdrant engine, on a real PostgreSQL server (a schema of
the throwaway cluster per saver) and on ``InMemoryStore``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from offprompt_langchain.checkpoint import OffpromptSaver

from offprompt.stores import ConversationStore, InMemoryStore, QdrantStore, SQLiteStore


def _stores(
    tmp_path: Path, request: pytest.FixtureRequest
) -> dict[str, Callable[[int], ConversationStore]]:
    def postgres(n: int) -> ConversationStore:
        from offprompt.stores import PostgresStore

        return PostgresStore(request.getfixturevalue("postgres_cluster").create_schema())

    return {
        "sqlite": lambda n: SQLiteStore(tmp_path / f"conformance-{n}.db"),
        "qdrant": lambda n: QdrantStore(path=str(tmp_path / f"qdrant-{n}")),
        "postgres": postgres,
        "memory": lambda n: InMemoryStore(),
    }


@pytest.mark.parametrize("kind", ["sqlite", "qdrant", "postgres", "memory"])
async def test_conformance_all_capabilities(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    make = _stores(tmp_path, request)[kind]
    created = 0

    @checkpointer_test(name=f"OffpromptSaver[{kind}]")
    async def factory() -> AsyncGenerator[OffpromptSaver, None]:
        nonlocal created
        created += 1
        store = make(created)
        saver = OffpromptSaver(store)
        yield saver
        store.close()

    report = await validate(factory)
    results = report.results
    assert set(results) == {c.value for c in ALL_CAPABILITIES}
    failures = {
        name: result.failures for name, result in results.items() if result.passed is not True
    }
    assert failures == {}, failures
    assert all(r.detected for r in results.values())
    assert sum(r.tests_passed for r in results.values()) > 50


def test_default_store_is_the_home_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / "home"))
    saver = OffpromptSaver()
    try:
        assert isinstance(saver.store, SQLiteStore)
        assert saver.store.path == tmp_path / "home" / "memory.db"
    finally:
        saver.close()
