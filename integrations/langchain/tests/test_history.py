"""OffpromptChatMessageHistory on real stores, in RunnableWithMessageHistory, across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from offprompt_langchain import OffpromptChatMessageHistory
from offprompt_langchain.testing import ScriptedChatModel

from offprompt.conversation import ConversationMemory, SummaryConversationMemory
from offprompt.errors import ValidationError
from offprompt.stores import InMemoryStore, SQLiteStore

TURN = [
    HumanMessage("What's the weather in Zürich? 🌦", id="h1"),
    AIMessage(
        "", tool_calls=[{"name": "weather", "args": {"city": "Zürich"}, "id": "c1"}], id="a1"
    ),
    ToolMessage("12 °C, rain", tool_call_id="c1", artifact={"source": "api"}, id="t1"),
    AIMessage("12 °C and rainy.", id="a2"),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_default_store_is_the_embedded_sqlite_file(home: Path) -> None:
    history = OffpromptChatMessageHistory("user-1")
    history.add_messages([SystemMessage("Be brief.", id="s0"), *TURN])
    assert (home / "memory.db").is_file()
    again = OffpromptChatMessageHistory("user-1")  # a new object reads the same session
    assert again.messages == [SystemMessage("Be brief.", id="s0"), *TURN]
    assert OffpromptChatMessageHistory("user-2").messages == []
    assert isinstance(history.memory.store, SQLiteStore)


def test_path_store_and_memory_arguments(tmp_path: Path) -> None:
    by_path = OffpromptChatMessageHistory("s", path=tmp_path / "a.db")
    by_path.add_messages(TURN)
    assert OffpromptChatMessageHistory("s", store=SQLiteStore(tmp_path / "a.db")).messages == TURN
    memory = ConversationMemory(InMemoryStore(), "s")
    wrapped = OffpromptChatMessageHistory("s", memory=memory)
    wrapped.add_user_message("hi")
    assert [m.text for m in memory.messages()] == ["hi"]
    with pytest.raises(ValidationError, match="at most one"):
        OffpromptChatMessageHistory("s", store=InMemoryStore(), path=tmp_path / "b.db")
    with pytest.raises(ValidationError, match="belongs to session"):
        OffpromptChatMessageHistory("other", memory=memory)
    with pytest.raises(ValidationError, match="max_tokens"):
        OffpromptChatMessageHistory("s", store=InMemoryStore(), max_tokens=0)
    with pytest.raises(ValidationError):
        OffpromptChatMessageHistory("", store=InMemoryStore())


def test_max_tokens_window_keeps_system_and_whole_runs() -> None:
    history = OffpromptChatMessageHistory("s", store=InMemoryStore())
    history.add_messages([SystemMessage("You are terse.")])
    for i in range(20):
        history.add_messages(
            [HumanMessage(f"question {i} " + "words " * 40), *TURN[1:3], AIMessage(f"answer {i}")]
        )
    full = history.messages
    assert len(full) == 1 + 20 * 4
    window = history.window(400)
    assert window[0] == SystemMessage("You are terse.")
    assert isinstance(window[1], HumanMessage) and 1 < len(window) < len(full)
    assert window[1:] == full[len(full) - len(window) + 1 :]  # a suffix of whole runs
    budgeted = OffpromptChatMessageHistory("s", memory=history.memory, max_tokens=400)
    assert budgeted.messages == window
    assert history.memory.window(400).tokens <= 400


def test_summary_memory_window() -> None:
    memory = SummaryConversationMemory(InMemoryStore(), "s", offset=1)
    history = OffpromptChatMessageHistory("s", memory=memory, max_tokens=2000)
    history.add_messages([HumanMessage("The launch code is 7431."), AIMessage("Noted.")])
    history.add_messages([HumanMessage("What colour is the sky?"), AIMessage("Blue.")])
    view = history.messages
    assert isinstance(view[0], SystemMessage) and "7431" in view[0].text
    assert [m.text for m in view[1:]] == ["What colour is the sky?", "Blue."]
    assert len(OffpromptChatMessageHistory("s", memory=memory).messages) == 4  # all raw runs


def test_setter_clear_and_isolation() -> None:
    store = InMemoryStore()
    a = OffpromptChatMessageHistory("a", store=store)
    b = OffpromptChatMessageHistory("b", store=store)
    a.add_messages(TURN)
    b.add_user_message("only b")
    a.messages = [HumanMessage("replaced")]
    assert [m.text for m in a.messages] == ["replaced"]
    a.clear()
    assert a.messages == [] and [m.text for m in b.messages] == ["only b"]


def test_bad_messages_store_nothing() -> None:
    history = OffpromptChatMessageHistory("s", store=InMemoryStore())
    history.add_messages(TURN)
    with pytest.raises(ValidationError, match="Unsupported message type"):
        history.add_messages([HumanMessage("ok"), object()])  # type: ignore[list-item]
    assert history.messages == TURN


def test_unicode_and_huge_messages_round_trip(tmp_path: Path) -> None:
    text = ("Grüße 👋🏽 — 中文 — \u200b zero-width\r\n" * 5000) + "\x00 nul"
    history = OffpromptChatMessageHistory("big", path=tmp_path / "m.db")
    history.add_messages([HumanMessage(text), AIMessage("ok")])
    assert OffpromptChatMessageHistory("big", path=tmp_path / "m.db").messages[0].content == text


def test_threads_append_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    def writer(n: int) -> None:
        history = OffpromptChatMessageHistory("shared", path=path)
        for i in range(10):
            history.add_messages([HumanMessage(f"w{n}-{i}"), AIMessage(f"r{n}-{i}")])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = [m.text for m in OffpromptChatMessageHistory("shared", path=path).messages]
    assert len(texts) == 80
    for n in range(4):  # each writer's pairs stay together and in order
        mine = [t for t in texts if t[1:].startswith(f"{n}-")]
        assert mine == [x for i in range(10) for x in (f"w{n}-{i}", f"r{n}-{i}")]


async def test_async_methods_do_not_use_the_sync_path() -> None:
    history = OffpromptChatMessageHistory("s", store=InMemoryStore(), max_tokens=10_000)

    def refuse(*args: object) -> None:
        raise AssertionError("the sync method was called")

    history.add_messages = refuse  # type: ignore[method-assign]
    history.clear = refuse  # type: ignore[method-assign]
    await history.aadd_messages(TURN)
    assert await history.aget_messages() == TURN
    assert await history.awindow(10_000) == TURN
    await history.aclear()
    assert await history.aget_messages() == []


def _chain(model: ScriptedChatModel) -> ChatPromptTemplate:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You remember things."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    return prompt | model  # type: ignore[return-value]


def _with_history(model: ScriptedChatModel, **history_kwargs: object) -> RunnableWithMessageHistory:
    def get_session_history(session_id: str) -> OffpromptChatMessageHistory:
        return OffpromptChatMessageHistory(session_id, **history_kwargs)  # type: ignore[arg-type]

    # The deprecation warning is LangChain's own (RunnableWithMessageHistory is deprecated);
    # it is asserted, not silenced.
    with pytest.warns(LangChainDeprecationWarning, match="RunnableWithMessageHistory"):
        return RunnableWithMessageHistory(
            _chain(model),
            get_session_history,
            input_messages_key="question",
            history_messages_key="history",
        )


def test_runnable_with_message_history(home: Path) -> None:
    model = ScriptedChatModel(script=["Noted: 7431.", "Your code is 7431."])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OffpromptChatMessageHistory("probe")
    assert caught == []  # our class adds no deprecation noise
    chain = _with_history(model)
    config = {"configurable": {"session_id": "alice"}}
    chain.invoke({"question": "My code is 7431."}, config)
    answer = chain.invoke({"question": "What is my code?"}, config)
    assert answer.content == "Your code is 7431."
    second_input = [m.text for m in model.calls[1]]
    assert second_input == [
        "You remember things.",
        "My code is 7431.",
        "Noted: 7431.",
        "What is my code?",
    ]
    stored = OffpromptChatMessageHistory("alice").messages
    assert [m.text for m in stored] == [*second_input[1:], "Your code is 7431."]


async def test_runnable_with_message_history_async_and_budget(home: Path) -> None:
    model = ScriptedChatModel(script=[f"answer {i}" for i in range(6)])
    chain = _with_history(model, max_tokens=60)
    config = {"configurable": {"session_id": "bob"}}
    for i in range(6):
        await chain.ainvoke({"question": f"question {i} " + "pad " * 10}, config)
    assert len(OffpromptChatMessageHistory("bob").messages) == 12  # everything stored
    last_input = model.calls[-1]
    assert len(last_input) < 12  # but only the budgeted window was sent
    assert isinstance(last_input[1], HumanMessage)


WRITER = """
import sys
from offprompt_langchain import OffpromptChatMessageHistory
from offprompt_langchain.testing import ScriptedChatModel
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])
chain = RunnableWithMessageHistory(
    prompt | ScriptedChatModel(script=["Stored, Ünïcode ✓."]),
    lambda sid: OffpromptChatMessageHistory(sid),
    input_messages_key="q", history_messages_key="history",
)
chain.invoke({"q": sys.argv[1]}, {"configurable": {"session_id": "restart"}})
"""

READER = """
import json
from offprompt_langchain import OffpromptChatMessageHistory
print(json.dumps([[m.type, m.text] for m in OffpromptChatMessageHistory("restart").messages]))
"""


def test_history_survives_a_process_restart(tmp_path: Path) -> None:
    env = dict(os.environ, OFFPROMPT_HOME=str(tmp_path / "home"))

    def run(code: str, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    run(WRITER, "Remember 🦊 42")
    assert json.loads(run(READER)) == [["human", "Remember 🦊 42"], ["ai", "Stored, Ünïcode ✓."]]
