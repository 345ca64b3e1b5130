"""Boolean payloads match boolean filters on both engines (qdrant-edge and qdrant-client).

qdrant-edge's ``MatchValue`` turns a Python bool into 0 / 1, so before the fix a bool
payload never matched a bool filter on the embedded edge engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.vectors import QdrantVectorStore, VectorRecord


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantVectorStore]:
    made = QdrantVectorStore(engine=request.param)
    yield made
    made.close()


def _records() -> list[VectorRecord]:
    return [
        VectorRecord(id="t", text="true one", payload={"flag": True, "n": 1}),
        VectorRecord(id="f", text="false one", payload={"flag": False, "n": 0}),
        VectorRecord(id="i", text="int one", payload={"flag": 1, "n": 1}),
        VectorRecord(id="s", text="str one", payload={"flag": "true", "n": 2}),
    ]


@pytest.mark.parametrize("indexed", [False, True])
def test_bool_filter_matches_only_bools(store: QdrantVectorStore, indexed: bool) -> None:
    if indexed:
        store.create_payload_index("flag", "bool")
    store.upsert("ns", _records())
    assert {r.id for r in store.scroll("ns", filter={"flag": True})} == {"t"}
    assert {r.id for r in store.scroll("ns", filter={"flag": False})} == {"f"}
    assert store.count("ns", filter={"flag": 1}) == 1  # the int, never the bool
    assert store.count("ns", filter={"flag": "true"}) == 1  # the string, never the bool
    assert [h.id for h in store.search("ns", "one", top_n=5, filter={"flag": True})] == ["t"]
    assert store.delete("ns", filter={"flag": False}) == 1
    assert store.count("ns") == 3


def test_bools_read_back_as_bools_also_nested(store: QdrantVectorStore) -> None:
    payload = {"flag": True, "meta": {"ok": False, "list": [True, 1, "x", {"deep": False}]}}
    store.upsert("ns", [VectorRecord(id="a", text="alpha", payload=payload)])
    (record,) = store.scroll("ns")
    assert record.payload["flag"] is True
    assert record.payload["meta"] == {"ok": False, "list": [True, 1, "x", {"deep": False}]}
    assert record.payload["meta"]["list"][1] == 1 and record.payload["meta"]["list"][1] is not True
    (hit,) = store.search("ns", "alpha", top_n=1)
    assert hit.payload["flag"] is True and hit.payload["meta"]["ok"] is False


def test_set_payload_bool_then_filter(store: QdrantVectorStore) -> None:
    store.upsert("ns", _records())
    store.set_payload("ns", ["i", "s"], {"flag": True})
    assert {r.id for r in store.scroll("ns", filter={"flag": True})} == {"t", "i", "s"}
    assert store.count("ns", filter={"flag": False}) == 1


def test_bool_filter_survives_reopen_on_disk(tmp_path: Path) -> None:
    first = QdrantVectorStore(path=str(tmp_path / "q"), engine="edge")
    first.upsert("ns", _records())
    first.close()
    again = QdrantVectorStore(path=str(tmp_path / "q"), engine="edge")
    try:
        assert {r.id for r in again.scroll("ns", filter={"flag": True})} == {"t"}
    finally:
        again.close()
