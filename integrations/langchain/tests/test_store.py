"""OffpromptStore as a LangGraph ``BaseStore``: the batch API and every op, semantics
checked against LangGraph's ``InMemoryStore`` where they agree, namespace validation,
persistence, and real use as ``store=`` in ``create_agent`` and a ``StateGraph``.

Everything is real (embedded Qdrant, LangGraph, LangChain) except the chat model, which
is ``offprompt_langchain.testing.ScriptedChatModel`` with a script of replies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from offprompt_langchain.store import OffpromptStore
from offprompt_langchain.testing import ScriptedChatModel

from offprompt.errors import ValidationError
from offprompt.vectors import QdrantVectorStore


@pytest.fixture
def store() -> Iterator[OffpromptStore]:
    s = OffpromptStore()
    yield s
    s.close()


def _seed(s: BaseStore) -> None:
    s.put(("users", "alice"), "prefs", {"text": "prefers dark mode", "color": "red", "n": 5})
    s.put(("users", "bob"), "prefs", {"text": "prefers light mode", "color": "blue", "n": 2})
    s.put(
        ("users", "bob"), "pets", {"text": "has a dog", "tags": ["dog"], "meta": {"age": 3}, "n": 7}
    )
    s.put(("docs", "v1"), "d1", {"text": "python tutorial", "color": "red", "n": 9})


def test_put_get_update_delete(store: OffpromptStore) -> None:
    store.put(("a", "b"), "k", {"x": 1})
    first = store.get(("a", "b"), "k")
    assert first is not None and first.value == {"x": 1} and first.namespace == ("a", "b")
    store.put(("a", "b"), "k", {"x": 2})
    second = store.get(("a", "b"), "k")
    assert second is not None and second.value == {"x": 2}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert store.get(("a",), "k") is None and store.get(("a", "b"), "other") is None
    store.delete(("a", "b"), "k")
    assert store.get(("a", "b"), "k") is None


def test_batch_order_reads_before_writes_and_last_put_wins(store: OffpromptStore) -> None:
    store.put(("n",), "k", {"v": "old"})
    results = store.batch(
        [
            PutOp(("n",), "k", {"v": "new"}),
            GetOp(("n",), "k"),
            PutOp(("n",), "k", {"v": "newest"}),
            SearchOp(("n",)),
            ListNamespacesOp(),
            PutOp(("m",), "gone", None),
        ]
    )
    assert results[0] is None and results[2] is None and results[5] is None
    assert results[1] is not None and results[1].value == {"v": "old"}  # type: ignore[union-attr]
    assert [i.value for i in results[3]] == [{"v": "old"}]  # type: ignore[union-attr]
    assert results[4] == [("n",)]
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"v": "newest"}


def test_batch_with_a_bad_op_changes_nothing(store: OffpromptStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("bad.label",), "k", {"v": 1})])
    assert store.get(("ok",), "k") is None
    with pytest.raises(ValidationError):
        store.batch([PutOp(("ok",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        store.batch(["not an op"])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="operator"):
        store.search(("ok",), filter={"n": {"$regex": "x"}})


@pytest.mark.parametrize("namespace", [(), ("",), ("a.b",), ("nul\x00",), ("langgraph", "x"), (1,)])
def test_invalid_namespaces_are_refused(store: OffpromptStore, namespace: tuple[Any, ...]) -> None:
    with pytest.raises((InvalidNamespaceError, ValidationError)):
        store.put(namespace, "k", {"v": 1})


def test_hostile_names_are_stored_verbatim_and_isolated(store: OffpromptStore) -> None:
    tricky = [("a/b",), ("a", "b"), ('["a","b"]',), ("ü 🧠", "\\", "*"), ("a'; DROP TABLE x;--",)]
    for i, ns in enumerate(tricky):
        store.put(ns, 'k"\n', {"i": i})
    for i, ns in enumerate(tricky):
        item = store.get(ns, 'k"\n')
        assert item is not None and item.value == {"i": i} and item.namespace == ns
        assert [x.value["i"] for x in store.search(ns)] == [i]
    assert sorted(store.list_namespaces()) == sorted(tricky)


def test_filters_match_in_memory_store(store: OffpromptStore) -> None:
    reference = InMemoryStore()
    _seed(store)
    _seed(reference)
    cases: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        ((), {"color": "red"}),
        (("users",), {"color": "red"}),
        ((), {"n": {"$gt": 3}}),
        ((), {"n": {"$gte": 2, "$lt": 9}}),
        ((), {"color": {"$ne": "red"}}),
        ((), {"tags": ["dog"]}),
        ((), {"meta": {"age": 3}}),
        ((), {"n": {"$eq": 9}}),
        (("users", "bob"), {}),
        (("nobody",), {}),
    ]
    for prefix, flt in cases:
        got = {(i.namespace, i.key) for i in store.search(prefix, filter=flt, limit=50)}
        want = {(i.namespace, i.key) for i in reference.search(prefix, filter=flt, limit=50)}
        assert got == want, (prefix, flt)


def test_comparison_on_a_missing_field_is_false_not_an_error(store: OffpromptStore) -> None:
    store.put(("x",), "with", {"n": 5})
    store.put(("x",), "without", {"m": 1})
    assert [i.key for i in store.search(("x",), filter={"n": {"$gt": 1}})] == ["with"]


def test_limit_offset_and_newest_first(store: OffpromptStore) -> None:
    for i in range(7):
        store.put(("p",), f"k{i}", {"i": i})
    page1 = store.search(("p",), limit=3)
    page2 = store.search(("p",), limit=3, offset=3)
    assert [i.key for i in page1] == ["k6", "k5", "k4"]
    assert [i.key for i in page2] == ["k3", "k2", "k1"]
    assert store.search(("p",), limit=0) == []


def test_semantic_search_ranks_by_meaning(store: OffpromptStore) -> None:
    store.put(("mem",), "1", {"text": "the user is allergic to peanuts"})
    store.put(("mem",), "2", {"text": "the user likes hiking in the alps"})
    store.put(("mem",), "3", {"text": "peanuts make the user sick"}, index=False)
    hits = store.search(("mem",), query="peanuts allergy", limit=3)
    assert [h.key for h in hits] == ["1", "2", "3"]
    assert hits[0].score is not None and hits[0].score > (hits[1].score or 0)
    assert hits[2].score is None  # not indexed: listed last, unscored, like InMemoryStore
    filtered = store.search(("mem",), query="peanuts", filter={"text": {"$ne": "x"}}, limit=1)
    assert [h.key for h in filtered] == ["1"]


def test_index_fields_choose_what_is_embedded() -> None:
    s = OffpromptStore(fields=["summary"])
    s.put(("d",), "a", {"summary": "astronomy and telescopes", "body": "cooking pasta"})
    s.put(("d",), "b", {"summary": "gardening tips", "body": "cooking pasta"}, index=["body"])
    assert s.search(("d",), query="telescopes astronomy", limit=1)[0].key == "a"
    assert s.search(("d",), query="cooking pasta", limit=1)[0].key == "b"
    s.close()
    with pytest.raises(ValidationError):
        OffpromptStore(fields=[""])


def test_list_namespaces_prefix_suffix_depth(store: OffpromptStore) -> None:
    reference = InMemoryStore()
    for s in (store, reference):
        _seed(s)
        s.put(("users", "carol", "v1"), "x", {"a": 1})
    for kwargs in (
        {},
        {"prefix": ("users",)},
        {"suffix": ("v1",)},
        {"prefix": ("users", "*")},
        {"suffix": ("*", "v1")},
        {"max_depth": 1},
        {"prefix": ("users",), "max_depth": 2},
        {"limit": 2, "offset": 1},
    ):
        assert store.list_namespaces(**kwargs) == reference.list_namespaces(**kwargs), kwargs


async def test_async_api(store: OffpromptStore) -> None:
    await store.aput(("a",), "k", {"text": "asynchronous write"})
    item = await store.aget(("a",), "k")
    assert item is not None and item.value["text"] == "asynchronous write"
    hits, namespaces = await asyncio.gather(
        store.asearch(("a",), query="write"), store.alist_namespaces()
    )
    assert [h.key for h in hits] == ["k"] and namespaces == [("a",)]
    results = await store.abatch([GetOp(("a",), "k"), PutOp(("b",), "k", {"v": 1})])
    assert results[0] is not None and results[1] is None
    await store.adelete(("a",), "k")
    assert await store.aget(("a",), "k") is None


def test_persists_across_reopen(tmp_path: Path) -> None:
    s = OffpromptStore(QdrantVectorStore(path=str(tmp_path / "q")))
    s.put(("u",), "k", {"text": "durable"})
    s.vector_store.close()
    again = OffpromptStore(QdrantVectorStore(path=str(tmp_path / "q")))
    item = again.get(("u",), "k")
    assert item is not None and item.value == {"text": "durable"}
    assert again.search(("u",), query="durable")[0].key == "k"
    again.vector_store.close()


def test_ttl_expires_refreshes_and_sweeps() -> None:
    """Issue 15 item 4: TTL was refused; it now follows LangGraph's TTLConfig."""
    now = [1_000.0]
    store = OffpromptStore(
        ttl={"default_ttl": 1.0, "omit_expired": True, "refresh_on_read": True},
        clock=lambda: now[0],
    )
    store.put(("a",), "short", {"v": 1})  # default: 1 minute
    store.put(("a",), "long", {"v": 2}, ttl=10)
    store.put(("a",), "forever", {"v": 3}, ttl=None)
    now[0] += 50
    assert store.get(("a",), "short") is not None  # read: its minute starts again
    now[0] += 50
    assert {i.key for i in store.search(("a",))} == {"short", "long", "forever"}
    now[0] += 61
    assert store.get(("a",), "short", refresh_ttl=False) is None  # expired, hidden
    assert store.sweep_ttl() == 1
    assert {i.key for i in store.search(("a",), refresh_ttl=False)} == {"long", "forever"}
    now[0] += 600
    assert store.sweep_ttl() == 1 and store.list_namespaces() == [("a",)]
    store.delete(("a",), "forever")
    assert store.list_namespaces() == []
    with pytest.raises(ValidationError, match="ttl must be minutes > 0"):
        store.put(("a",), "k", {"v": 1}, ttl=-5)
    with pytest.raises(ValidationError, match="unknown TTLConfig keys"):
        OffpromptStore(ttl={"default": 5})  # type: ignore[typeddict-unknown-key]
    store.close()


# ------------------------------------------------------------------ in LangGraph / agents


@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact about the user."""
    assert runtime.store is not None
    runtime.store.put(("memories", "user-1"), "fact", {"text": fact})
    return "saved"


@tool
def recall(query: str, runtime: ToolRuntime) -> str:
    """Look up what is known about the user."""
    assert runtime.store is not None
    hits = runtime.store.search(("memories", "user-1"), query=query, limit=1)
    return hits[0].value["text"] if hits else "nothing"


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_create_agent_tools_use_the_store(store: OffpromptStore) -> None:
    model = ScriptedChatModel(
        script=[
            _call("remember", {"fact": "prefers window seats"}, "c1"),
            AIMessage(content="Noted."),
            _call("recall", {"query": "seat preference"}, "c2"),
            AIMessage(content="You like window seats."),
        ]
    )
    agent = create_agent(model, [remember, recall], store=store)
    agent.invoke({"messages": [HumanMessage("I prefer window seats")]})
    item = store.get(("memories", "user-1"), "fact")
    assert item is not None and item.value == {"text": "prefers window seats"}
    out = agent.invoke({"messages": [HumanMessage("Where do I like to sit?")]})
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages[-1].content == "prefers window seats"
    assert out["messages"][-1].content == "You like window seats."


def test_state_graph_with_store(store: OffpromptStore) -> None:
    class State(TypedDict):
        user: str
        answer: str

    def write(state: State) -> dict[str, str]:
        get_store().put(("profile", state["user"]), "lang", {"text": "answers in French"})
        return {}

    def read(state: State, *, store: BaseStore) -> dict[str, str]:
        hits = store.search(("profile", state["user"]), query="language of answers")
        return {"answer": hits[0].value["text"] if hits else ""}

    graph = StateGraph(State)
    graph.add_node("write", write)
    graph.add_node("read", read)
    graph.add_edge(START, "write")
    graph.add_edge("write", "read")
    graph.add_edge("read", END)
    app = graph.compile(store=store)
    assert app.invoke({"user": "u1", "answer": ""})["answer"] == "answers in French"
    assert store.list_namespaces(prefix=("profile",)) == [("profile", "u1")]


async def test_state_graph_async(store: OffpromptStore) -> None:
    class State(TypedDict):
        n: int

    async def node(state: State, *, store: BaseStore) -> dict[str, int]:
        await store.aput(("counter",), "c", {"n": state["n"] + 1})
        item = await store.aget(("counter",), "c")
        assert item is not None
        return {"n": int(item.value["n"])}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    app = graph.compile(store=store)
    assert (await app.ainvoke({"n": 41}))["n"] == 42


def test_search_match_condition_type_is_checked(store: OffpromptStore) -> None:
    store.put(("a",), "k", {"v": 1})
    bad = ListNamespacesOp(match_conditions=(MatchCondition("middle", ("a",)),))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        store.batch([bad])


def test_reads_without_a_query_are_limited_not_scans(store: OffpromptStore) -> None:
    """Issue 15 item 2: search without a query scrolled the whole prefix and sorted in
    Python; list_namespaces scrolled the whole collection. Both now read a page."""
    store.batch([PutOp(("test", f"n{i % 7}"), f"k{i}", {"i": i}, index=False) for i in range(295)])
    for i in range(295, 300):  # one put each: distinct updated_at (a batch shares one)
        store.put(("test", f"n{i % 7}"), f"k{i}", {"i": i}, index=False)
    reads: list[tuple[str, dict[str, Any]]] = []
    vs = store.vector_store
    scroll, iter_scroll = vs.scroll, vs.iter_scroll

    def counting_scroll(*args: Any, **kwargs: Any) -> Any:
        reads.append(("scroll", kwargs))
        return scroll(*args, **kwargs)

    def counting_iter(*args: Any, **kwargs: Any) -> Any:
        reads.append(("iter_scroll", kwargs))
        return iter_scroll(*args, **kwargs)

    vs.scroll, vs.iter_scroll = counting_scroll, counting_iter  # type: ignore[method-assign]
    page = store.search(("test",), limit=5)
    assert [i.value["i"] for i in page] == [299, 298, 297, 296, 295]  # newest first
    assert [kind for kind, _ in reads] == ["scroll"]
    assert reads[0][1]["limit"] <= 10 and reads[0][1]["order_by"] == "updated_ts"
    reads.clear()
    assert store.list_namespaces(prefix=("test",)) == [("test", f"n{i}") for i in range(7)]
    assert reads == []  # the registry is read by id, not by scrolling items
    assert store.list_namespaces(prefix=["test"], max_depth=1) == [("test",)]  # a list too


async def test_concurrent_async_calls_share_a_thread_hop_and_keep_their_own_errors(
    store: OffpromptStore,
) -> None:
    import threading

    await store.aput(("a",), "k", {"v": 1})
    threads: list[int] = []
    batch = store.batch

    def recording_batch(ops: Any) -> Any:
        threads.append(threading.get_ident())
        return batch(ops)

    store.batch = recording_batch  # type: ignore[method-assign]
    results = await asyncio.gather(
        *[store.aget(("a",), "k") for _ in range(20)],
        store.abatch([PutOp(("a",), "bad", "not a dict")]),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    assert all(r is not None and r.value == {"v": 1} for r in results[:20])  # type: ignore[union-attr]
    assert isinstance(results[20], ValidationError)  # only the bad call fails
    assert len(threads) == 21 and len(set(threads)) == 1  # one worker-thread hop for all
    assert threading.get_ident() not in threads  # and never on the event loop


class _TwoAxes:
    """A real deterministic embedder: texts with "zebra" point one way, the rest another.

    Counts the stored texts it embeds, so a search that embeds stored items again shows.
    """

    dimensions = 2

    def __init__(self) -> None:
        self.documents = 0

    def _vector(self, text: str) -> list[float]:
        if "zebra" in text:
            return [0.6, 0.8]
        number = "".join(c for c in text if c.isdigit()) or "0"
        return [1.0, 0.001 * int(number)]  # plain items close to the query, not tied

    def embed_documents(self, texts: Any) -> list[list[float]]:
        self.documents += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]  # every query looks like the plain items

    async def aembed_documents(self, texts: Any) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def test_a_bm25_only_match_keeps_the_engines_cosine_and_nothing_is_embedded_again() -> None:
    embedder = _TwoAxes()
    vs = QdrantVectorStore(embedder=embedder)
    store = OffpromptStore(vs)
    for i in range(40):  # more than a dense page: the zebra item is outside its top
        store.put(("docs",), f"plain-{i}", {"text": f"an ordinary note number {i}"})
    store.put(("docs",), "zebra", {"text": "the zebra escaped"}, index=["text"])
    embedded = embedder.documents
    hits = store.search(("docs",), query="zebra", limit=5)
    assert embedder.documents == embedded  # no stored text embedded at query time
    zebra = next(h for h in hits if h.key == "zebra")  # found by BM25 only
    assert zebra.score == pytest.approx(0.6, abs=1e-4)  # its cosine, from the engine
    store.close()
    vs.close()
