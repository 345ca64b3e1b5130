"""MemoryFragment and Scope: time-ordered ids, validation of bad input, scope matching."""

from __future__ import annotations

import math
import threading
from datetime import datetime, timedelta, timezone

import pytest

from offprompt.errors import NamespaceError, ValidationError
from offprompt.longterm import DiscardedMemoryFragments, MemoryFragment, Scope
from offprompt.longterm.fragment import fragment_id_time, merge_scopes, new_fragment_id
from offprompt.scope import Scope as CoreScope

T0 = datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=timezone.utc)


def test_id_encodes_creation_time_and_sorts_in_creation_order() -> None:
    f = MemoryFragment.build("remember me", now=T0)
    assert f.created_at == T0
    assert f.last_accessed_at == T0
    later = MemoryFragment.build("later", now=T0 + timedelta(milliseconds=1))
    assert f.id < later.id
    assert fragment_id_time(later.id) == T0 + timedelta(milliseconds=1)


def test_ids_are_unique_and_monotonic_within_one_millisecond() -> None:
    ids = [new_fragment_id(T0) for _ in range(500)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 500
    wall = [new_fragment_id() for _ in range(2000)]
    assert wall == sorted(wall) and len(set(wall)) == 2000


def test_ids_unique_across_threads() -> None:
    out: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [new_fragment_id() for _ in range(300)]
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 1200


def test_naive_datetime_is_utc() -> None:
    f = MemoryFragment.build("x", now=datetime(2025, 1, 1, 12, 0))
    assert f.created_at == datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_observation_is_refused(text: str) -> None:
    with pytest.raises(ValidationError, match="observation"):
        MemoryFragment(observation=text)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_embedding_is_refused(bad: float) -> None:
    with pytest.raises(ValidationError, match="embedding"):
        MemoryFragment(observation="x", embedding=[0.1, bad, 0.3])


def test_empty_embedding_is_refused() -> None:
    with pytest.raises(ValidationError, match="embedding"):
        MemoryFragment(observation="x", embedding=[])


@pytest.mark.parametrize("bad", [-0.01, 1.5, math.nan])
def test_importance_out_of_range_is_refused(bad: float) -> None:
    with pytest.raises(ValidationError, match="importance"):
        MemoryFragment(observation="x", importance=bad)


def test_assignment_is_validated_too() -> None:
    f = MemoryFragment(observation="x", importance=0.5)
    with pytest.raises(ValidationError, match="importance"):
        f.importance = -1
    assert f.importance == 0.5


def test_non_json_meta_and_bad_id_are_refused() -> None:
    with pytest.raises(ValidationError):
        MemoryFragment(observation="x", meta={"f": object()})
    with pytest.raises(ValidationError, match="UUID"):
        MemoryFragment(id="not-a-uuid", observation="x")
    with pytest.raises(ValidationError, match="version"):
        MemoryFragment(id="3f2b8a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", observation="x")


def test_unicode_and_huge_observations_round_trip() -> None:
    text = "Ünïcødé 🧠 " + "x" * 200_000
    assert MemoryFragment(observation=text).observation == text


def test_scope_matching_and_merge() -> None:
    alice = Scope(user="alice")
    assert alice.matches(Scope(user="alice", session="s1"))
    assert not alice.matches(Scope(user="bob"))
    assert not alice.matches(Scope())
    assert Scope().matches(Scope(user="anyone"))
    assert merge_scopes(Scope(agent="a1"), Scope(user="u")) == Scope(user="u", agent="a1")
    assert merge_scopes(Scope(user="a"), Scope(user="b", run="r")) == Scope(user="b", run="r")
    assert merge_scopes(Scope(tenant="t"), None) == Scope(tenant="t")
    with pytest.raises(ValidationError):
        Scope(user="  ")
    with pytest.raises(ValidationError):
        Scope(colour="x")  # type: ignore[call-arg]


def test_longterm_scope_is_the_one_core_scope() -> None:
    assert Scope is CoreScope
    full = Scope(tenant="acme", user="u1", agent="a", session="s", run="r")
    assert MemoryFragment(observation="x", scope=full).scope == full


def test_fragment_scope_accepts_the_mem0_style_keywords_dict_or_none() -> None:
    by_dict = MemoryFragment(observation="x", scope={"user": "u1", "agent": "a", "session": "s"})
    assert by_dict.scope == Scope(user="u1", agent="a", session="s")
    assert MemoryFragment(observation="x", scope=None).scope == Scope()
    assert MemoryFragment.build("x", scope=Scope(user="u1")).scope.user == "u1"


@pytest.mark.parametrize("bad", ["a/b", "..", "../etc", "x\x00y", "", "y" * 201])
def test_unsafe_scope_values_are_refused_clearly(bad: str) -> None:
    with pytest.raises(NamespaceError, match="scope value"):
        Scope(user=bad)
    with pytest.raises(ValidationError, match="scope"):
        MemoryFragment(observation="x", scope={"user": bad})


def test_discarded_fragments_bool_and_extend() -> None:
    d = DiscardedMemoryFragments()
    assert not d
    d.extend(DiscardedMemoryFragments(fragments=[MemoryFragment(observation="a")]))
    assert d and [f.observation for f in d.all] == ["a"]
