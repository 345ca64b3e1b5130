"""Every store the memories run on: real SQLite files, real embedded Qdrant, a real
PostgreSQL server (the throwaway cluster of tests/postgres_testing.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.stores import BaseStore, InMemoryStore, QdrantStore, SQLiteStore


@pytest.fixture(params=["memory", "sqlite", "qdrant", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "memory.db")
    elif request.param == "postgres":
        from offprompt.stores import PostgresStore

        made = PostgresStore(request.getfixturevalue("postgres_dsn"))
    else:
        made = QdrantStore(location=":memory:")
    yield made
    made.close()
