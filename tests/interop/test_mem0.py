"""mem0 memories, validated against what the real ``mem0ai`` package writes.

The fixture runs the real ``mem0.Memory`` offline: a LangChain ``Embeddings`` (our
``OffpromptEmbeddings``, a hashing embedder: no model, no network) and mem0's Qdrant
store on a temporary path; ``infer=False`` stores the texts as given, so no LLM is
called (the OpenAI key is a dummy that is never used). Telemetry is off.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from offprompt.errors import DeserializationError, ValidationError
from offprompt.interop import ConversionReport
from offprompt.interop.mem0 import (
    MEM0_META_KEY,
    aimport_mem0,
    import_mem0,
    memories_from_mem0,
    memories_to_mem0,
)
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.longterm.fragment import utc


@pytest.fixture(scope="module")
def mem0_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``get_all()`` of a real mem0 Memory holding memories of two users and an agent."""
    root: Path = tmp_path_factory.mktemp("mem0")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEM0_TELEMETRY", "False")
        patch.setenv("OPENAI_API_KEY", "sk-dummy-never-used")
        patch.setenv("MEM0_DIR", str(root / "mem0home"))
        from mem0 import Memory
        from offprompt_langchain import OffpromptEmbeddings

        memory = Memory.from_config(
            {
                "embedder": {
                    "provider": "langchain",
                    "config": {"model": OffpromptEmbeddings(dimensions=64), "embedding_dims": 64},
                },
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "path": str(root / "qdrant"),
                        "collection_name": "m",
                        "embedding_model_dims": 64,
                        "on_disk": True,
                    },
                },
                "history_db_path": str(root / "history.db"),
            }
        )
        memory.add(
            "Alice prefers window seats on long flights ☃",
            user_id="alice",
            infer=False,
            metadata={"source": "chat", "weight": 2, "tags": ["travel", "ünï"]},
        )
        memory.add(
            [
                {"role": "user", "content": "I am vegetarian, no seafood either"},
                {"role": "assistant", "content": "Noted: vegetarian meals on every booking"},
            ],
            user_id="alice",
            agent_id="travel-agent",
            run_id="trip-42",
            infer=False,
        )
        memory.add("Bob prefers aisle seats and flies economy", user_id="bob", infer=False)
        memory.add("Bob is allergic to peanuts", user_id="bob", run_id="trip-7", infer=False)
        memory.add("Fares are cheaper on Tuesdays", agent_id="travel-agent", infer=False)
        data = {
            "alice": memory.get_all(filters={"user_id": "alice"}),
            "bob": memory.get_all(filters={"user_id": "bob"}),
            "agent": memory.get_all(filters={"agent_id": "travel-agent"}),
        }
        search = memory.search("seats", filters={"user_id": "alice"})
    data["search"] = search
    yield data


@pytest.fixture(scope="module")
def shared_ltm() -> Iterator[LongTermMemory]:
    """A long-term memory holding one fragment, which bad imports must leave alone."""
    ltm = LongTermMemory()
    import_mem0([{"id": "keep", "memory": "already here", "user_id": "u"}], ltm)
    yield ltm
    ltm.close()


def _all_items(mem0_data: dict[str, Any]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for key in ("alice", "bob", "agent"):
        for item in mem0_data[key]["results"]:
            seen[item["id"]] = item
    return sorted(seen.values(), key=lambda i: i["created_at"])


def test_real_mem0_items_map_to_fragments(mem0_data: dict[str, Any]) -> None:
    alice = mem0_data["alice"]
    assert len(alice["results"]) == 3
    report = ConversionReport()
    fragments = memories_from_mem0(alice, report)
    assert report.converted == 3 and not report
    by_text = {f.observation: f for f in fragments}
    window = by_text["Alice prefers window seats on long flights ☃"]
    item = next(i for i in alice["results"] if i["memory"] == window.observation)
    assert window.scope == Scope(user="alice")
    assert window.meta[MEM0_META_KEY]["id"] == item["id"]
    assert window.meta[MEM0_META_KEY]["hash"] == item["hash"]
    assert window.meta[MEM0_META_KEY]["metadata"] == {
        "source": "chat",
        "weight": 2,
        "tags": ["travel", "ünï"],
    }
    assert window.meta[MEM0_META_KEY]["role"] == "user"
    assert window.importance is None and not window.is_insight
    created = utc(datetime.fromisoformat(item["created_at"]))
    # The id is time-ordered and encodes mem0's created_at (to the millisecond).
    assert abs((window.created_at - created).total_seconds()) < 0.001
    assert window.last_accessed_at == utc(datetime.fromisoformat(item["updated_at"]))
    vegetarian = by_text["I am vegetarian, no seafood either"]
    assert vegetarian.scope == Scope(user="alice", agent="travel-agent", session="trip-42")
    assert by_text["Noted: vegetarian meals on every booking"].meta[MEM0_META_KEY]["role"] == (
        "assistant"
    )
    ids = [f.id for f in fragments]
    assert len(set(ids)) == 3 and all(i not in {x["id"] for x in alice["results"]} for i in ids)


@pytest.mark.parametrize("key", ["alice", "bob", "agent", "search"])
def test_real_mem0_output_round_trips_exactly(mem0_data: dict[str, Any], key: str) -> None:
    data = mem0_data[key]
    original = copy.deepcopy(data)
    report = ConversionReport()
    exported = memories_to_mem0(memories_from_mem0(data), report)
    assert exported == original  # every field, null metadata and score included
    assert [list(i) for i in exported["results"]] == [list(i) for i in original["results"]]
    assert not report and report.converted == len(original["results"])
    # JSON text and a bare list are read the same way.
    text = json.dumps(original, ensure_ascii=False)
    assert memories_to_mem0(memories_from_mem0(text)) == original
    assert memories_to_mem0(memories_from_mem0(text.encode("utf-8"))) == original
    assert memories_to_mem0(memories_from_mem0(original["results"])) == original
    assert data == original  # the input is not modified


def test_long_term_read_for_one_user_never_returns_another(mem0_data: dict[str, Any]) -> None:
    everything = _all_items(mem0_data)
    assert len(everything) == 6
    ltm = LongTermMemory()
    try:
        stored = import_mem0(everything, ltm)
        assert len(stored) == 6 and ltm.count() == 6
        for query in ("seats", "food allergies", "flights", "peanuts", "Tuesdays"):
            alice = ltm.read(query, k=10, scope=Scope(user="alice"))
            bob = ltm.read(query, k=10, scope=Scope(user="bob"))
            assert alice and {f.scope.user for f in alice} == {"alice"}
            assert bob and {f.scope.user for f in bob} == {"bob"}
        trip = ltm.read("seats", k=10, scope=Scope(session="trip-42"))
        assert {f.observation for f in trip} == {
            "I am vegetarian, no seafood either",
            "Noted: vegetarian meals on every booking",
        }
        agent = ltm.read("fares", k=10, scope=Scope(agent="travel-agent"))
        assert {f.scope.agent for f in agent} == {"travel-agent"} and len(agent) == 3

        # Back out of the store: mem0's fields are intact; what mem0 cannot carry is listed.
        report = ConversionReport()
        back = memories_to_mem0(ltm.fragments(scope=Scope(user="bob")), report)
        assert back == {"results": [i for i in everything if i.get("user_id") == "bob"]}
        assert {(loss.what, loss.reason) for loss in report.losses} >= {
            ("importance", "mem0 memories have no importance")
        }
        assert {loss.what for loss in report.losses} <= {"importance", "last_accessed_at"}
    finally:
        ltm.close()


async def test_async_import_matches_sync(mem0_data: dict[str, Any]) -> None:
    ltm = LongTermMemory()
    try:
        stored = await aimport_mem0(json.dumps(mem0_data["bob"]), ltm, importance=0.25)
        assert [f.importance for f in stored] == [0.25, 0.25]
        assert sorted(f.observation for f in ltm.fragments(scope=Scope(user="bob"))) == [
            "Bob is allergic to peanuts",
            "Bob prefers aisle seats and flies economy",
        ]
        assert ltm.count(scope=Scope(user="alice")) == 0
    finally:
        ltm.close()


def test_fragment_that_was_not_imported_exports_like_mem0_writes() -> None:
    when = datetime(2025, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)
    fragment = MemoryFragment.build(
        "Carol works nights ✓",
        now=when,
        importance=0.7,
        is_insight=True,
        scope=Scope(user="carol", session="s1"),
        embedding=[0.1, 0.2],
        meta={"origin": "notes"},
    )
    report = ConversionReport()
    item = memories_to_mem0([fragment], report)["results"][0]
    assert item == {
        "id": fragment.id,
        "memory": "Carol works nights ✓",
        "hash": hashlib.md5("Carol works nights ✓".encode()).hexdigest(),
        "metadata": {"origin": "notes"},
        "created_at": "2025-05-06T07:08:09.123000+00:00",
        "updated_at": "2025-05-06T07:08:09.123000+00:00",
        "user_id": "carol",
        "run_id": "s1",
    }
    assert sorted(loss.what for loss in report.losses) == ["embedding", "importance", "is_insight"]
    again = memories_from_mem0(memories_to_mem0([fragment]))[0]
    assert again.scope == fragment.scope and again.created_at == fragment.created_at


def test_changed_scope_and_extra_meta_of_an_imported_fragment(mem0_data: dict[str, Any]) -> None:
    fragment = memories_from_mem0(mem0_data["bob"])[0]
    widened = fragment.model_copy(
        update={"scope": Scope(agent="helper"), "meta": {**fragment.meta, "note": "x"}}
    )
    report = ConversionReport()
    item = memories_to_mem0([widened], report)["results"][0]
    assert "user_id" not in item and item["agent_id"] == "helper"
    assert [loss.what for loss in report.losses] == ["meta keys ['note']"]


def test_other_top_level_keys_are_reported(mem0_data: dict[str, Any]) -> None:
    data = {**mem0_data["bob"], "relations": [{"source": "bob", "target": "peanuts"}]}
    report = ConversionReport()
    assert len(memories_from_mem0(data, report)) == 2
    assert [str(loss) for loss in report.losses] == [
        "mem0 data: 'relations' not carried (only the memories ('results') are imported)"
    ]


def test_unicode_and_huge_memories() -> None:
    huge = "ünïcødé 🚀 " * 100_000  # about 1.3 MB of text
    item = {"id": "m-1", "memory": huge, "user_id": "用户", "metadata": {"k": "ß" * 10}}
    fragment = memories_from_mem0([item])[0]
    assert fragment.observation == huge and fragment.scope.user == "用户"
    assert memories_to_mem0([fragment]) == {"results": [item]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"results": [{"id": "a", "memory": "x"}', "malformed JSON in mem0 data"),
        ("not json at all", "malformed JSON in mem0 data"),
        (42, "got int"),
        ({"memories": []}, "got an object with keys 'memories'"),
        ({"results": {"id": "a"}}, "'results' must be a list, got dict"),
        ([{"id": "a", "memory": "ok"}, "text"], "mem0 memory 1: expected an object, got str"),
        ([{"id": "m-9", "hash": "h"}], "mem0 memory 0 (id 'm-9'): missing 'memory'"),
        ([{"id": "m-9", "memory": 5}], "mem0 memory 0 (id 'm-9'): 'memory' must be a non-empty"),
        ([{"id": "m-9", "memory": "   "}], "'memory' must be a non-empty string"),
        ([{"id": 7, "memory": "x"}], "mem0 memory 0: 'id' must be a string or null, got int"),
        ([{"id": "m", "memory": "x", "metadata": [1]}], "'metadata' must be an object or null"),
        ([{"id": "m", "memory": "x", "user_id": 3}], "'user_id' must be a non-empty string"),
        ([{"id": "m", "memory": "x", "run_id": ""}], "'run_id' must be a non-empty string"),
        (
            [{"id": "m", "memory": "x", "created_at": "yesterday"}],
            "(id 'm'): created_at 'yesterday' is not an ISO 8601 date-time",
        ),
        (
            [{"id": "m", "memory": "x", "metadata": {"v": float("nan")}}],
            "(id 'm'): mem0 memory must be JSON-serialisable",
        ),
    ],
)
def test_bad_input_is_named_and_nothing_is_written(
    shared_ltm: LongTermMemory, data: Any, message: str
) -> None:
    with pytest.raises(DeserializationError) as info:
        import_mem0(data, shared_ltm)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert [f.observation for f in shared_ltm.fragments()] == ["already here"]


def test_bad_arguments() -> None:
    with pytest.raises(ValidationError, match="importance"):
        memories_from_mem0([], importance=1.5)
    with pytest.raises(ValidationError, match="long_term must be a LongTermMemory"):
        import_mem0([], object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="long_term must be a LongTermMemory"):
        asyncio.run(aimport_mem0([], object()))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="fragment 1 must be a MemoryFragment"):
        memories_to_mem0([MemoryFragment(observation="x"), {"memory": "y"}])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="sequence of MemoryFragment"):
        memories_to_mem0(MemoryFragment(observation="x"))  # type: ignore[arg-type]
    assert memories_from_mem0({"results": []}) == [] and memories_to_mem0([]) == {"results": []}
