"""One retention rule: the same items and policy evict the same items, for the same
reasons, through conversations, task memory and long-term memory.

Each tier stores four items (runs, namespaces, fragments) in time order; budgets are
set from the sizes each tier itself counted, so every tier faces the same situation
(for example "room for the three small items, not for the large one"). Real stores:
the in-memory conversation store, embedded Qdrant for task and long-term memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.longterm import LongTermMemory, MemoryFragment
from offprompt.messages import Message
from offprompt.retention import Retained, RetentionPolicy, evict
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore

SMALL = "a short note about tea"
LARGE = "a long report " + "with many words " * 60


class Tier(Protocol):
    """Four items written oldest first; their sizes and times as the tier counts them."""

    sizes: list[int]
    times: list[float]

    def prune(self, policy: RetentionPolicy, now: float) -> None: ...
    def kept(self) -> list[int]: ...
    def reasons(self) -> dict[int, str]: ...


class Conversation:
    def __init__(self, texts: list[str]) -> None:
        self.memory = ConversationMemory()
        for i, text in enumerate(texts):
            self.memory.add_messages([Message.user(f"q{i}"), Message.assistant(text)])
            time.sleep(0.003)  # distinct append times (not a timed assertion)
        index = self.memory.store.read_index(self.memory.session_id)
        self.seqs = [[e.seq for e in index[2 * i : 2 * i + 2]] for i in range(len(texts))]
        self.sizes = [sum(e.tokens for e in index[2 * i : 2 * i + 2]) for i in range(len(texts))]
        self.times = [float(index[2 * i + 1].appended_at) for i in range(len(texts))]  # type: ignore[arg-type]

    def prune(self, policy: RetentionPolicy, now: float) -> None:
        self.memory.prune(policy, now=now)

    def kept(self) -> list[int]:
        return [int(r.user.text[1:]) for r in self.memory.runs() if r.user]

    def reasons(self) -> dict[int, str]:
        out = {}
        for event in self.memory.tracer.events("evict"):  # type: ignore[attr-defined]
            for d in event.dropped:
                lo, hi = d["seqs"]
                for i, seqs in enumerate(self.seqs):
                    if lo <= seqs[0] <= hi:
                        out[i] = d["reason"]
        return out


class Task:
    def __init__(self, texts: list[str]) -> None:
        self.vectors = QdrantVectorStore()
        self.memory = TaskMemory(vector_store=self.vectors)
        for i, text in enumerate(texts):
            self.memory.store_artifact(f"ns-{i}", TextArtifact(value=text))
            time.sleep(0.003)  # distinct write times (not a timed assertion)
        assert self.memory.wait_indexed(timeout=120)
        metas = [self.memory.namespace_metadata(f"ns-{i}") for i in range(len(texts))]
        self.sizes = [int(m["tokens"]) for m in metas]
        self.times = [datetime.fromisoformat(m["created_at"]).timestamp() for m in metas]

    def prune(self, policy: RetentionPolicy, now: float) -> None:
        self.memory.prune(policy, now=now)

    def kept(self) -> list[int]:
        return sorted(int(ns[3:]) for ns in self.memory.namespaces())

    def reasons(self) -> dict[int, str]:
        return {
            int(d["namespace"][3:]): d["reason"]
            for event in self.memory.tracer.events("evict")  # type: ignore[attr-defined]
            for d in event.dropped
        }

    def close(self) -> None:
        self.memory.close()
        self.vectors.close()


T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
BOB = Scope(user="bob")


class LongTerm:
    def __init__(self, texts: list[str]) -> None:
        self.memory = LongTermMemory(clock=lambda: T0 + timedelta(hours=1))
        self.ids = []
        for i, text in enumerate(texts):
            at = T0 + timedelta(minutes=i)
            self.ids.append(self.memory.write(MemoryFragment.build(text, now=at, scope=BOB)).id)
        tokenizer = self.memory.tokenizer
        self.sizes = [tokenizer.count(text) for text in texts]
        self.times = [(T0 + timedelta(minutes=i)).timestamp() for i in range(len(texts))]

    def prune(self, policy: RetentionPolicy, now: float) -> None:
        self.memory.prune(policy, now=datetime.fromtimestamp(now, tz=timezone.utc))

    def kept(self) -> list[int]:
        return sorted(self.ids.index(f.id) for f in self.memory.fragments(scope=BOB))

    def reasons(self) -> dict[int, str]:
        return {
            self.ids.index(d["id"]): d["reason"]
            for event in self.memory.tracer.events("evict")  # type: ignore[attr-defined]
            for d in event.dropped
        }

    def close(self) -> None:
        self.memory.close()


TIERS: dict[str, Callable[[list[str]], Any]] = {
    "conversation": Conversation,
    "task_memory": Task,
    "longterm": LongTerm,
}


@pytest.fixture(params=sorted(TIERS))
def make(request: pytest.FixtureRequest) -> Iterator[Callable[[list[str]], Tier]]:
    made: list[Any] = []

    def build(texts: list[str]) -> Tier:
        tier = TIERS[request.param](texts)
        made.append(tier)
        return tier  # type: ignore[no-any-return]

    yield build
    for tier in made:
        if hasattr(tier, "close"):
            tier.close()


def _after(tier: Tier) -> float:
    return tier.times[-1] + 1.0


def test_a_large_recent_item_goes_before_older_small_ones_stay(
    make: Callable[[list[str]], Tier],
) -> None:
    tier = make([SMALL, SMALL, LARGE, SMALL])
    small, large = tier.sizes[0], tier.sizes[2]
    assert large > 3 * small
    # Room for the three small items, not for the large one: what stays is the newest.
    tier.prune(
        RetentionPolicy(max_tokens=tier.sizes[0] + tier.sizes[1] + tier.sizes[3]), _after(tier)
    )
    assert tier.kept() == [3]
    assert tier.reasons() == {0: "max_tokens", 1: "max_tokens", 2: "max_tokens"}


def test_the_newest_item_stays_even_when_it_alone_exceeds_max_tokens(
    make: Callable[[list[str]], Tier],
) -> None:
    tier = make([SMALL, SMALL, LARGE])
    tier.prune(RetentionPolicy(max_tokens=tier.sizes[2] - 1), _after(tier))
    assert tier.kept() == [2]
    assert tier.reasons() == {0: "max_tokens", 1: "max_tokens"}


def test_age_then_count_with_one_set_of_reasons(make: Callable[[list[str]], Tier]) -> None:
    tier = make([SMALL, SMALL, SMALL, SMALL])
    age = 1000.0
    now = (tier.times[1] + tier.times[2]) / 2 + age  # items 0 and 1 are older than max_age
    tier.prune(RetentionPolicy(max_age=age, max_count=1), now)
    assert tier.kept() == [3]
    assert tier.reasons() == {0: "max_age", 1: "max_age", 2: "max_count"}


def test_count_keeps_the_newest(make: Callable[[list[str]], Tier]) -> None:
    tier = make([SMALL, LARGE, SMALL, SMALL])
    tier.prune(RetentionPolicy(max_count=2), _after(tier))
    assert tier.kept() == [2, 3]
    assert tier.reasons() == {0: "max_count", 1: "max_count"}


# ------------------------------------------------------------------ the function itself


def _items(*sizes: int) -> list[Retained]:
    return [Retained(str(i), size, float(i)) for i, size in enumerate(sizes)]


def test_evict_keeps_a_newest_suffix_and_names_the_first_bound_that_applies() -> None:
    items = _items(10, 10, 100, 10)
    assert [e.id for e in evict(items, RetentionPolicy(max_tokens=30))] == ["0", "1", "2"]
    assert evict(_items(10, 10), RetentionPolicy(max_tokens=20)) == []
    found = evict(items, RetentionPolicy(max_age=1.5, max_count=1), now=2.0)
    assert [(e.id, e.reason) for e in found] == [
        ("0", "max_age"),
        ("1", "max_count"),
        ("2", "max_count"),
    ]
    # age alone may take everything, the newest included
    assert len(evict(items, RetentionPolicy(max_age=1.0), now=10.0)) == 4
    # an unknown time stops the age walk: its age cannot be proven
    unknown = [Retained("a", 1, None), Retained("b", 1, 0.0)]
    assert evict(unknown, RetentionPolicy(max_age=1.0), now=10.0) == []


def test_evict_never_takes_a_protected_item_for_count_or_tokens() -> None:
    items = _items(10, 10, 10)
    found = evict(items, RetentionPolicy(max_count=1), protect={"0"})
    assert [e.id for e in found] == ["1"]  # 0 protected, 2 the newest: both stay
