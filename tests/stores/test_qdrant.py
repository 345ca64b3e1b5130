"""QdrantStore specifics on embedded qdrant-client: persistence, payload-only points, CAS seqs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient, models

from offprompt.errors import NotAStoreError, ValidationError
from offprompt.messages import Message
from offprompt.stores import QdrantStore


def test_persists_on_path(tmp_path: Path) -> None:
    store = QdrantStore(path=str(tmp_path / "qdrant"))
    store.append("s", [Message.user("héllo"), Message.assistant("hi")], [3, 4])
    store.set_state("s", "summary", {"text": "t", "next_seq": 1})
    store.close()
    again = QdrantStore(path=str(tmp_path / "qdrant"))
    assert [(r.seq, r.message.text, r.tokens) for r in again.read("s")] == [
        (0, "héllo", 3),
        (1, "hi", 4),
    ]
    assert again.get_state("s", "summary") == {"text": "t", "next_seq": 1}
    assert again.append("s", [Message.user("more")], [1]) == [2]
    again.close()


def test_points_are_payload_only_and_keyed_by_session_and_seq() -> None:
    client = QdrantClient(":memory:")
    store = QdrantStore(client, collection="conv")
    store.append("s", [Message.user("x")], [1])
    info = client.get_collection("conv")
    assert not info.config.params.vectors  # no vectors at all
    points, _ = client.scroll(
        "conv",
        scroll_filter=models.Filter(
            must=[models.FieldCondition(key="kind", match=models.MatchValue(value="message"))]
        ),
        with_payload=True,
    )
    assert len(points) == 1
    payload = points[0].payload or {}
    assert payload["session"] == "s" and payload["seq"] == 0 and payload["tokens"] == 1
    assert Message.from_json(payload["body"]).text == "x"
    # idempotent id: the same (session, seq) always maps to the same point
    again = QdrantStore(client, collection="conv")
    assert again.read("s")[0].message.text == "x"
    store.close()
    client.close()  # the store did not own the client; closing it here is the caller's job


def test_two_stores_on_one_collection_share_the_sequence() -> None:
    client = QdrantClient(":memory:")
    a = QdrantStore(client, collection="shared")
    b = QdrantStore(client, collection="shared")  # a second "machine"
    assert a.append("s", [Message.user("a1")], [1]) == [0]
    assert b.append("s", [Message.user("b1"), Message.assistant("b2")], [1, 1]) == [1, 2]
    assert a.append("s", [Message.user("a2")], [1]) == [3]
    assert [r.message.text for r in b.read("s")] == ["a1", "b1", "b2", "a2"]


class RacingClient:
    """A real client that lets a rival writer win the race once, right before our CAS."""

    def __init__(self, client: QdrantClient, rival: QdrantStore) -> None:
        self._client = client
        self._rival = rival
        self.raced = False

    def upsert(self, collection_name: str, points: Any, **kwargs: Any) -> Any:
        if not self.raced and kwargs.get("update_filter") is not None:
            self.raced = True
            self._rival.append("s", [Message.user("rival")], [1])
        return self._client.upsert(collection_name, points, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_lost_compare_and_swap_retries_without_duplicate_seqs() -> None:
    client = QdrantClient(":memory:")
    rival = QdrantStore(client, collection="race")
    rival.append("s", [Message.user("first")], [1])
    racing = RacingClient(client, rival)
    store = QdrantStore(racing, collection="race")  # type: ignore[arg-type]
    seqs = store.append("s", [Message.user("mine-q"), Message.assistant("mine-a")], [1, 1])
    assert racing.raced
    assert seqs == [2, 3]  # the rival took seq 1 while we were trying
    rows = rival.read("s")
    assert [(r.seq, r.message.text) for r in rows] == [
        (0, "first"),
        (1, "rival"),
        (2, "mine-q"),
        (3, "mine-a"),
    ]


def test_refuses_a_foreign_collection() -> None:
    client = QdrantClient(":memory:")
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client.upsert(
        "docs", [models.PointStruct(id=str(uuid.uuid4()), vector=[0.1, 0.2], payload={"t": "x"})]
    )
    with pytest.raises(NotAStoreError, match="docs"):
        QdrantStore(client, collection="docs")
    assert client.count("docs").count == 1


def test_one_connection_option_only() -> None:
    with pytest.raises(ValidationError, match="one of"):
        QdrantStore(location=":memory:", url="http://localhost:6333")
