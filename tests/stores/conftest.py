"""Every store the contract suite runs against: real SQLite files, real embedded Qdrant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.stores import BaseStore, InMemoryStore, QdrantStore, SQLiteStore


@pytest.fixture(params=["memory", "sqlite", "qdrant"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "memory.db")
    else:
        made = QdrantStore(location=":memory:")
    yield made
    made.close()
