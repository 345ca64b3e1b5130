"""Real stores for the privacy tests: SQLite files, embedded Qdrant, files on disk."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

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


@pytest.fixture(params=["sqlite", "qdrant"])
def durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made: BaseStore = (
        SQLiteStore(tmp_path / "memory.db")
        if request.param == "sqlite"
        else QdrantStore(location=":memory:")
    )
    yield made
    made.close()


def png(color: str = "red", size: tuple[int, int] = (64, 48)) -> bytes:
    """A PNG of seeded noise (incompressible, like a real screenshot's detail)."""
    import random

    rnd = random.Random(color)
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, rnd.randbytes(size[0] * size[1] * 3)).save(buffer, format="PNG")
    return buffer.getvalue()


def raw_qdrant_payloads(store: QdrantStore) -> str:
    """Every point's payload in the collection, as one string (a raw scan, no filter)."""
    import json

    out = []
    offset = None
    while True:
        points, offset = store.client.scroll(
            store.collection, limit=256, offset=offset, with_payload=True, with_vectors=False
        )
        out.extend(json.dumps(p.payload, ensure_ascii=False) for p in points)
        if offset is None:
            return "\n".join(out)


def raw_sqlite_bytes(store: SQLiteStore) -> bytes:
    """The database file (and WAL, if any) after a TRUNCATE checkpoint, as bytes."""
    store.checkpoint()
    data = store.path.read_bytes()
    wal = store.path.with_name(store.path.name + "-wal")
    if wal.exists():
        data += wal.read_bytes()
    return data
