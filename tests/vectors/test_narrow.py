"""``search(..., narrow_by=key)``: the embedded engine filters a dense search on one key
and the rest of the filter is checked on the returned payloads; results must equal the
full-filter search, and the payload check must agree with the engine's filter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from offprompt.errors import ValidationError
from offprompt.scope import Scope
from offprompt.vectors import QdrantVectorStore, VectorRecord

# private-ok: the edge engine's filter translation is the subject
from offprompt.vectors._edge import _checkable, _edge_decode, _edge_encode, _matches

WORDS = [
    "disk",
    "cache",
    "latency",
    "server",
    "refund",
    "ticket",
    "billing",
    "invoice",
    "travel",
    "oslo",
    "berlin",
]


@pytest.fixture
def store() -> Iterator[QdrantVectorStore]:
    made = QdrantVectorStore(engine="edge")
    made.create_payload_index("user", "keyword")
    made.create_payload_index("gone", "integer")
    yield made
    made.close()


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(2 + i % 5))


def _fill(store: QdrantVectorStore) -> None:
    """Two users across two namespaces, two tenants and a scoped view; some records gone."""
    views = [store, store.with_tenant("other"), store.with_scope(Scope(user="alice"))]
    for v, view in enumerate(views):
        for namespace in ("mem", "else"):
            view.upsert(
                namespace,
                [
                    VectorRecord(
                        id=f"{v}-{namespace}-{i}",
                        text=_text(i),
                        payload={"user": f"u{i % 2}", "gone": int(i % 5 == 0)},
                    )
                    for i in range(60)
                ],
            )


@pytest.mark.parametrize("top_n", [1, 5, 20, 40])
def test_narrowed_dense_search_returns_what_the_full_filter_does(
    store: QdrantVectorStore, top_n: int
) -> None:
    _fill(store)
    for query in ("disk cache", "refund ticket oslo", "berlin travel invoice"):
        for user in ("u0", "u1"):
            flt = {"user": user, "gone": 0}
            full = store.search("mem", query, top_n=top_n, filter=flt, mode="dense")
            narrowed = store.search(
                "mem", query, top_n=top_n, filter=flt, mode="dense", narrow_by="user"
            )
            assert [h.id for h in narrowed] == [h.id for h in full]
            assert [round(h.score, 6) for h in narrowed] == [round(h.score, 6) for h in full]
            assert all(h.id.startswith("0-mem-") and h.payload["gone"] == 0 for h in narrowed)
            assert len(narrowed) == min(top_n, 24)  # 30 of u0 / u1, 6 of them gone


def test_narrowing_falls_back_when_most_candidates_fail_the_rest(
    store: QdrantVectorStore,
) -> None:
    # Only 2 of u0's 60 records are live: the engine's top candidates on "user" alone are
    # nearly all gone, so the narrowed search must run the full query and still find both.
    store.upsert(
        "mem",
        [
            VectorRecord(id=f"r{i}", text=_text(i), payload={"user": "u0", "gone": int(i > 1)})
            for i in range(60)
        ],
    )
    found = store.search(
        "mem",
        "disk cache",
        top_n=5,
        filter={"user": "u0", "gone": 0},
        mode="dense",
        narrow_by="user",
    )
    assert sorted(h.id for h in found) == ["r0", "r1"]


def test_narrow_by_must_be_a_filter_key(store: QdrantVectorStore) -> None:
    with pytest.raises(ValidationError, match="narrow_by"):
        store.search("mem", "disk", filter={"user": "u0"}, mode="dense", narrow_by="gone")


PAYLOADS: list[dict[str, Any]] = [
    {},
    {"k": ""},
    {"k": None},
    {"k": []},
    {"k": [""]},
    {"k": ["", "a"]},
    {"k": "a"},
    {"k": "b"},
    {"k": ["a", "b"]},
    {"k": 0},
    {"k": 1},
    {"k": [0, 1]},
    {"k": 0.0},
    {"k": True},
    {"k": False},
    {"k": [True]},
    {"k": "1"},
]
CONDITIONS: list[Any] = [None, "", "a", "b", ["a", "c"], 0, 1, [1, 2], True, False]


def test_payload_check_agrees_with_the_engine() -> None:
    """For every stored value and condition, ``_matches`` says what the engine's filter
    says (or ``None``, leaving it to the engine)."""
    from offprompt.vectors._edge import EdgeBackend

    backend = EdgeBackend(None, "narrow", 8, False)
    try:
        import qdrant_edge as qe

        points = [
            qe.Point(i + 1, {"dense": [1.0] * 8}, _edge_encode({"n": i, **p}))
            for i, p in enumerate(PAYLOADS)
        ]
        backend.shard.update(qe.UpdateOperation.upsert_points(points))
        decided = 0
        for wanted in CONDITIONS:
            assert _checkable(wanted)
            engine = {int(s.payload["n"]) for s in backend.scroll([("k", wanted)], limit=100)[0]}
            for i, payload in enumerate(PAYLOADS):
                verdict = _matches(_edge_decode(_edge_encode(payload)), [("k", wanted)])
                if verdict is not None:
                    decided += 1
                    assert verdict == (i in engine), (payload, wanted)
        assert decided == len(PAYLOADS) * len(CONDITIONS)
    finally:
        backend.close()
