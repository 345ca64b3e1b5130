"""One contract, every store: InMemoryStore, SQLiteStore, QdrantStore (embedded)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.errors import NamespaceError, SerializationError, ValidationError
from offprompt.messages import Message, ToolCall
from offprompt.stores import BaseStore, ConversationStore, SessionVersion, validate_session_id

HOSTILE_IDS = [
    "it's",
    'say "hi"',
    "'; DROP TABLE offprompt_messages; --",
    "Robert'); DELETE FROM offprompt_state; --",
    "会话-ü-🚀",
    "a" * 256,
    "%_*?[]\\",
]


def msgs(*texts: str) -> list[Message]:
    return [Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(texts)]


def test_implements_protocol(store: BaseStore) -> None:
    assert isinstance(store, ConversationStore)


def test_append_assigns_consecutive_seqs_and_reads_in_order(store: BaseStore) -> None:
    assert store.append("s", msgs("a", "b"), [1, 2]) == [0, 1]
    assert store.append("s", msgs("c"), [3]) == [2]
    rows = store.read("s")
    assert [(r.seq, r.message.text, r.tokens, r.session_id) for r in rows] == [
        (0, "a", 1, "s"),
        (1, "b", 2, "s"),
        (2, "c", 3, "s"),
    ]
    assert store.count("s") == 3
    assert store.append("s", [], []) == []


def test_read_range_is_half_open(store: BaseStore) -> None:
    store.append("s", msgs(*"abcdef"), [1] * 6)
    assert [r.message.text for r in store.read("s", start=2, end=4)] == ["c", "d"]
    assert [r.message.text for r in store.read("s", start=4)] == ["e", "f"]
    assert [r.message.text for r in store.read("s", end=1)] == ["a"]
    assert store.read("s", start=5, end=5) == []
    assert store.read("s", start=10) == []


def test_read_ranges_reads_several_ranges_once_each_in_seq_order(store: BaseStore) -> None:
    store.append("s", msgs(*"abcdefgh"), [1] * 8)
    got = store.read_ranges("s", [(5, 7), (0, 1), (6, 8), (3, 3)])
    assert [(r.seq, r.message.text) for r in got] == [(0, "a"), (5, "f"), (6, "g"), (7, "h")]
    assert store.read_ranges("s", []) == []
    assert store.read_ranges("unknown", [(0, 10)]) == []
    with pytest.raises(ValidationError, match="range"):
        store.read_ranges("s", [(0, None)])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="range"):
        store.read_ranges("s", [5])  # type: ignore[list-item]


def test_read_index_gives_seq_tokens_role_without_bodies(store: BaseStore) -> None:
    store.append("s", [Message.system("x"), *msgs("a", "b")], [5, 6, 7])
    index = store.read_index("s")
    assert [(e.seq, e.tokens, e.role) for e in index] == [
        (0, 5, "system"),
        (1, 6, "user"),
        (2, 7, "assistant"),
    ]
    assert [e.seq for e in store.read_index("s", start=2)] == [2]


def test_unknown_session_is_empty_not_an_error(store: BaseStore) -> None:
    assert store.read("nobody") == []
    assert store.read_index("nobody") == []
    assert store.count("nobody") == 0
    assert store.version("nobody") == SessionVersion(0, 0)
    assert store.get_state("nobody", "k") is None
    assert store.state_keys("nobody") == []
    assert store.delete_session("nobody") == 0
    assert store.delete_before("nobody", 10) == 0


def test_version_moves_on_append_and_on_delete(store: BaseStore) -> None:
    store.append("s", msgs("a", "b", "c"), [1, 1, 1])
    v1 = store.version("s")
    assert v1.next_seq == 3
    store.append("s", msgs("d"), [1])
    v2 = store.version("s")
    assert v2.next_seq == 4 and v2.epoch == v1.epoch
    assert store.delete_before("s", 2) == 2
    v3 = store.version("s")
    assert v3.epoch > v2.epoch
    assert [r.seq for r in store.read("s")] == [2, 3]
    assert store.count("s") == 2


def test_delete_range_keeps_both_ends(store: BaseStore) -> None:
    store.append("s", msgs(*"abcde"), [1] * 5)
    assert store.delete_range("s", 1, 3) == 2
    assert [r.message.text for r in store.read("s")] == ["a", "d", "e"]
    assert store.count("s") == 3
    assert store.delete_range("s", 1, 3) == 0


def test_delete_session_removes_messages_and_state_and_never_reuses_seqs(store: BaseStore) -> None:
    store.append("s", msgs("a", "b"), [1, 1])
    store.set_state("s", "summary", {"text": "x"})
    store.append("other", msgs("keep"), [1])
    assert store.delete_session("s") == 2
    assert store.read("s") == []
    assert store.get_state("s", "summary") is None
    assert [i.session_id for i in store.sessions()] == ["other"]
    # Seqs continue after a delete, so a cached reader can tell the contents changed.
    assert store.append("s", msgs("new"), [1]) == [2]
    assert store.read("other")[0].message.text == "keep"


def test_sessions_lists_counts_and_last_activity(store: BaseStore) -> None:
    before = datetime.now(timezone.utc).timestamp() - 1
    store.append("b", msgs("x", "y"), [1, 1])
    store.append("a", msgs("x"), [1])
    store.set_state("c", "k", 1)
    infos = {i.session_id: i for i in store.sessions()}
    assert sorted(infos) == ["a", "b", "c"]
    assert [i.session_id for i in store.sessions()] == ["a", "b", "c"]
    assert infos["b"].message_count == 2 and infos["a"].message_count == 1
    assert infos["c"].message_count == 0
    last = infos["b"].last_activity
    assert last is not None and last.tzinfo is not None and last.timestamp() >= before


def test_state_documents(store: BaseStore) -> None:
    value = {"text": "résumé ✓", "next_seq": 3, "nested": [1, 2.5, None, True]}
    store.set_state("s", "summary", value)
    assert store.get_state("s", "summary") == value
    store.set_state("s", "summary", "replaced")
    assert store.get_state("s", "summary") == "replaced"
    store.set_state("s", "lc.config", 1)
    store.set_state("s", "lc.a", 2)
    assert store.state_keys("s") == ["lc.a", "lc.config", "summary"]
    assert store.state_keys("s", "lc.") == ["lc.a", "lc.config"]
    store.delete_state("s", "summary")
    store.delete_state("s", "summary")  # absent: no error
    assert store.get_state("s", "summary") is None
    assert store.get_state("other", "lc.a") is None


def test_bad_state_value_is_refused_and_keeps_old_value(store: BaseStore) -> None:
    store.set_state("s", "k", {"ok": 1})
    with pytest.raises(SerializationError):
        store.set_state("s", "k", {"bad": object()})
    with pytest.raises(SerializationError):
        store.set_state("s", "k", float("nan"))
    assert store.get_state("s", "k") == {"ok": 1}
    with pytest.raises(ValidationError):
        store.set_state("s", "", 1)


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
def test_hostile_session_ids_are_data_not_sql(store: BaseStore, session_id: str) -> None:
    store.append("victim", msgs("safe"), [1])
    store.set_state("victim", "k", "v")
    store.append(session_id, msgs("hostile"), [1])
    store.set_state(session_id, "k", "h")
    assert [r.message.text for r in store.read(session_id)] == ["hostile"]
    assert [r.message.text for r in store.read("victim")] == ["safe"]
    assert store.get_state("victim", "k") == "v"
    assert {i.session_id for i in store.sessions()} == {"victim", session_id}
    assert store.delete_session(session_id) == 1
    assert store.count("victim") == 1


@pytest.mark.parametrize("bad", ["", "a" * 257, "nul\x00byte", "new\nline", "\x1b[31m", 42, None])
def test_invalid_session_ids_are_refused(store: BaseStore, bad: object) -> None:
    with pytest.raises(NamespaceError):
        store.append(bad, msgs("x"), [1])  # type: ignore[arg-type]
    with pytest.raises(NamespaceError):
        store.read(bad)  # type: ignore[arg-type]
    assert store.sessions() == []


ODD_SCOPED_IDS = ["a/b", "..", "../../etc", "x\\y", "s" * 250, "  ", "thread:7/../x"]


def test_odd_scoped_session_ids_keep_listings_and_pruning_working(store: BaseStore) -> None:
    """Issue 14 item 4: what a scoped append accepted, sessions() and prune() can list."""
    from offprompt.retention import RetentionPolicy, prune
    from offprompt.scope import Scope

    acme = Scope(tenant="acme", user="bob")
    store.append("plain", msgs("p"), [1], scope=acme)
    for sid in ODD_SCOPED_IDS:
        store.append(sid, msgs("q", "r"), [1, 1], scope=acme)
        store.set_state(sid, "k", sid, scope=acme)
    listed = {i.session_id: i for i in store.sessions()}
    assert set(listed) == {"plain", *ODD_SCOPED_IDS}
    for sid in ODD_SCOPED_IDS:
        assert listed[sid].scope == acme.with_session(sid)
        assert listed[sid].message_count == 2
    assert {i.session_id for i in store.sessions(scope=Scope(tenant="acme"))} == set(listed)
    store.append("a/b", msgs("q2", "r2"), [1, 1], scope=acme)  # a second run
    report = prune(store, RetentionPolicy(max_count=1))
    assert report.messages == 2  # only a/b held more than one run
    assert [r.message.text for r in store.read("a/b", scope=acme)] == ["q2", "r2"]


def test_scope_session_follows_the_session_id_rule() -> None:
    from offprompt.scope import Scope

    assert Scope(tenant="t").with_session("a/../b").session == "a/../b"
    for bad in ["", "x" * 257, "new\nline", "lone \ud83d surrogate"]:
        with pytest.raises(NamespaceError):
            Scope(session=bad)
        with pytest.raises(NamespaceError):
            Scope(tenant="t").with_session(bad)
    with pytest.raises(NamespaceError):
        Scope(tenant="a/b")  # partition fields keep the namespace rule


def test_validate_session_id_message_names_the_problem() -> None:
    with pytest.raises(NamespaceError, match="256"):
        validate_session_id("x" * 10_000)
    with pytest.raises(NamespaceError, match="control character"):
        validate_session_id("a\x00b")
    with pytest.raises(NamespaceError, match="lone surrogate"):
        validate_session_id("a\udc80b")
    assert validate_session_id("ok") == "ok"


def test_bad_append_stores_nothing(store: BaseStore) -> None:
    store.append("s", msgs("keep"), [1])
    with pytest.raises(ValidationError, match=r"messages\[1\]"):
        store.append("s", [Message.user("x"), {"role": "user"}], [1, 1])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="token counts"):
        store.append("s", msgs("x", "y"), [1])
    with pytest.raises(ValidationError, match="non-negative"):
        store.append("s", msgs("x"), [-1])
    with pytest.raises(ValidationError):
        store.append("s", Message.user("x"), [1])  # type: ignore[arg-type]
    assert [r.message.text for r in store.read("s")] == ["keep"]
    assert store.version("s").next_seq == 1


def test_unicode_tool_calls_images_and_1mb_round_trip(store: BaseStore) -> None:
    big = ("ünïcødé 🚀 \u202e mixed ✓ " * 50_000)[:1_000_000]
    from PIL import Image

    parts = [
        TextArtifact(value="look"),
        ImageArtifact.from_pil(Image.new("RGB", (3, 2), (200, 10, 10))),
    ]
    originals = [
        Message.system("系统 prompt \x00-free but with \t tabs"),
        Message.user(big),
        Message.assistant(
            tool_calls=[ToolCall(id="c1", name="search", arguments={"q": "naïve", "n": [1, 2]})]
        ),
        Message.tool('{"rows": ["ok"]}', tool_call_id="c1", name="search"),
        Message.user(parts, meta={"k": {"deep": ["é", 1.5, None]}}),
    ]
    store.append("s", originals, [1, 2, 3, 4, 5])
    back = [r.message for r in store.read("s")]
    assert back == originals
    assert len(back[1].text) == 1_000_000


def test_threads_appending_to_one_session_lose_and_duplicate_nothing(store: BaseStore) -> None:
    def writer(name: str) -> None:
        for i in range(20):
            store.append(
                "shared",
                [Message.user(f"{name}-{i}-q"), Message.assistant(f"{name}-{i}-a")],
                [1, 1],
            )

    threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = store.read("shared")
    assert [r.seq for r in rows] == list(range(160))
    texts = [r.message.text for r in rows]
    assert len(set(texts)) == 160
    # each batch is contiguous: a question is always followed by its own answer
    for q, a in zip(texts[::2], texts[1::2], strict=True):
        assert q.endswith("-q") and a == q[:-2] + "-a"


async def test_async_twins(store: BaseStore) -> None:
    assert await store.aappend("s", msgs("a", "b"), [1, 2]) == [0, 1]
    assert [r.message.text for r in await store.aread("s", start=1)] == ["b"]
    assert [e.tokens for e in await store.aread_index("s")] == [1, 2]
    assert await store.acount("s") == 2
    assert (await store.aversion("s")).next_seq == 2
    await store.aset_state("s", "k", [1])
    assert await store.aget_state("s", "k") == [1]
    assert await store.astate_keys("s") == ["k"]
    await store.adelete_state("s", "k")
    assert [i.session_id for i in await store.asessions()] == ["s"]
    assert await store.adelete_before("s", 1) == 1
    assert await store.adelete_range("s", 0, 10) == 1
    assert await store.adelete_session("s") == 0


def test_stored_messages_are_values_not_the_callers_objects(store: BaseStore) -> None:
    """Issue 14 item 8: mutating what was appended or read never rewrites history."""
    given = Message.assistant(
        [TextArtifact(value="original", meta={"k": [1]})],
        tool_calls=[ToolCall(id="c1", name="f", arguments={"xs": [1, 2]})],
        meta={"m": {"n": 1}},
    )
    store.append("s", [given], [7])
    given.content[0].value = "rewritten by the caller"  # type: ignore[union-attr]
    given.content[0].meta["k"].append(2)
    given.tool_calls[0].arguments["xs"].append(3)
    given.meta["m"]["n"] = 2
    given.content.append(TextArtifact(value="extra"))
    (first,) = store.read("s")
    first.message.content[0].value = "rewritten by a reader"  # type: ignore[union-attr]
    first.message.meta["m"]["n"] = 3
    first.message.tool_calls.clear()
    (again,) = store.read("s")
    assert again.message.text == "original" and again.tokens == 7
    assert again.message.content[0].meta == {"k": [1]}
    assert again.message.tool_calls[0].arguments == {"xs": [1, 2]}
    assert again.message.meta == {"m": {"n": 1}}
    assert again.message.id == given.id and again.message.created_at == given.created_at


def test_lone_surrogates_are_refused_before_anything_is_stored(store: BaseStore) -> None:
    """Issue 14 item 3: one rule (refuse with ValidationError) at every store entry."""
    store.append("s", msgs("keep"), [1])
    store.set_state("s", "k", {"ok": 1})
    with pytest.raises(ValidationError, match="lone surrogate"):
        store.set_state("s", "k", {"bad": "\ud83d"})
    with pytest.raises(NamespaceError, match="lone surrogate"):
        store.append("s\udc80", msgs("x"), [1])
    mutated = Message.user("valid at first")
    mutated.content[0].value = "then \ud83d"  # type: ignore[union-attr]
    with pytest.raises(SerializationError, match=r"lone surrogate|surrogates not allowed"):
        store.append("s", [Message.user("first of the batch"), mutated], [1, 1])
    assert [r.message.text for r in store.read("s")] == ["keep"]
    assert store.get_state("s", "k") == {"ok": 1}
    assert {i.session_id for i in store.sessions()} == {"s"}
