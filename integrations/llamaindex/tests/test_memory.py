"""OffpromptMemory in LlamaIndex's chat engines and agents, on real SQLite files.

The only fake is the LLM (``ScriptedFunctionLLM``, a real ``FunctionCallingLLM``
subclass that records its inputs). Engines, agents, workflows, index, retriever and the
store are the real classes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import FunctionTool
from offprompt_llamaindex import OffpromptEmbedding, OffpromptMemory
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of, tool_call

from offprompt.conversation import ConversationMemory
from offprompt.errors import NamespaceError, ValidationError
from offprompt.messages import Message
from offprompt.stores import InMemoryStore, QdrantStore, SQLiteStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


# -- the BaseMemory contract ---------------------------------------------------------------


def test_is_a_llamaindex_base_memory_with_sqlite_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / "home"))
    memory = OffpromptMemory.from_defaults()
    assert isinstance(memory, BaseMemory)
    assert memory.session_id == "default" and memory.token_limit == 3000
    assert isinstance(memory.store, SQLiteStore)
    assert Path(memory.path or "") == tmp_path / "home" / "memory.db"
    memory.put(user("persisted"))
    assert [m.content for m in OffpromptMemory.from_defaults().get_all()] == ["persisted"]


def test_put_get_set_reset_roundtrip(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s", path=db)
    memory.put(ChatMessage(role="system", content="Be brief."))
    memory.put_messages([user("hi"), assistant("hello")])
    assert [(m.role.value, m.content) for m in memory.get()] == [
        ("system", "Be brief."),
        ("user", "hi"),
        ("assistant", "hello"),
    ]
    memory.set([user("fresh"), assistant("start")])
    assert [m.content for m in memory.get_all()] == ["fresh", "start"]
    memory.reset()
    assert memory.get_all() == [] and memory.get() == []


def test_messages_come_back_equal_with_tool_calls_and_images(db: Path, png: object) -> None:
    image = png()  # type: ignore[operator]
    messages = [
        ChatMessage(role="user", blocks=[TextBlock(text="what is this?"), ImageBlock(image=image)]),
        tool_call("lookup", "call-1", query="façade ☃"),
        ChatMessage(
            role="tool", content='{"hit": 1}', additional_kwargs={"tool_call_id": "call-1"}
        ),
        assistant("It is a façade ☃."),
    ]
    memory = OffpromptMemory.from_defaults(session_id="s", path=db)
    memory.put_messages(messages)
    again = OffpromptMemory.from_defaults(session_id="s", path=db).get_all()
    assert [m.model_dump() for m in again] == [m.model_dump() for m in messages]
    assert isinstance(again[0].blocks[1], ImageBlock)


def test_get_keeps_system_whole_runs_and_never_starts_on_assistant_or_tool(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s", path=db, token_limit=120)
    memory.put(ChatMessage(role="system", content="You are the ops bot."))
    for i in range(12):
        memory.put_messages(
            [
                user(f"check host {i}"),
                tool_call("ping", f"c{i}", host=f"h{i}"),
                ChatMessage(
                    role="tool", content="up " * 5, additional_kwargs={"tool_call_id": f"c{i}"}
                ),
                assistant(f"host {i} is up"),
            ]
        )
    window = memory.get()
    assert window[0].role.value == "system"
    assert window[1].role.value == "user"
    assert window[-1].content == "host 11 is up"
    assert 1 < len(window) < len(memory.get_all())
    # Every tool result in the window has its call in the window too.
    call_ids = {b.tool_call_id for m in window for b in m.blocks if hasattr(b, "tool_call_id")}
    for message in window:
        if message.role.value == "tool":
            assert message.additional_kwargs["tool_call_id"] in call_ids
    assert memory.window().tokens <= 120


def test_initial_token_count_shrinks_the_window(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s", path=db, token_limit=200)
    for i in range(10):
        memory.put_messages([user(f"question {i} " * 3), assistant(f"answer {i} " * 3)])
    full = memory.get()
    smaller = memory.get(initial_token_count=150)
    assert len(smaller) < len(full)
    assert smaller == full[len(full) - len(smaller) :]
    assert memory.get(initial_token_count=200) == []
    with pytest.raises(ValueError, match="Initial token count exceeds token limit"):
        memory.get(initial_token_count=201)
    with pytest.raises(ValidationError, match="negative"):
        memory.get(initial_token_count=-1)


def test_bad_input_is_refused_and_nothing_stored_is_lost(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s", path=db)
    memory.put_messages([user("keep me"), assistant("kept")])
    with pytest.raises(ValidationError):
        memory.put("not a message")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.set([user("ok"), 42])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        memory.put_messages([user("ok"), object()])  # type: ignore[list-item]
    assert [m.content for m in memory.get_all()] == ["keep me", "kept"]
    with pytest.raises(ValidationError, match="token_limit"):
        OffpromptMemory.from_defaults(path=db, token_limit=0)
    with pytest.raises(ValidationError, match="unexpected"):
        OffpromptMemory.from_defaults(path=db, chat_store_key="x")
    with pytest.raises(ValidationError, match="not both"):
        OffpromptMemory.from_defaults(path=db, store=InMemoryStore())
    with pytest.raises(NamespaceError):
        OffpromptMemory.from_defaults(session_id="bad\x00id", path=db)
    with pytest.raises(ValidationError, match="ConversationStore"):
        OffpromptMemory.from_defaults(store="memory.db")  # type: ignore[arg-type]


def test_not_a_store_file_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes")
    with pytest.raises(Exception, match="not a SQLite database"):
        OffpromptMemory.from_defaults(path=path)
    assert path.read_text() == "my notes"


def test_huge_and_unicode_messages(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s-ü-漢字", path=db, token_limit=50)
    big = "ü漢字🙂 " * 50_000
    memory.put_messages([user(big), assistant("ok")])
    assert memory.get_all()[0].content == big
    window = memory.window()
    assert not window.overflow and memory.get() == []  # an answered run: whole or absent
    memory.put(user(big))
    assert memory.window().overflow and [m.role.value for m in memory.get()] == ["user"]


def test_sessions_are_isolated(db: Path) -> None:
    a = OffpromptMemory.from_defaults(session_id="a", path=db)
    b = OffpromptMemory.from_defaults(session_id="b", path=db)
    a.put(user("for a"))
    b.put(user("for b"))
    assert [m.content for m in a.get_all()] == ["for a"]
    assert [m.content for m in b.get_all()] == ["for b"]


def test_threads_appending_to_one_session_lose_nothing(db: Path) -> None:
    memory = OffpromptMemory.from_defaults(session_id="s", path=db)

    def worker(n: int) -> None:
        for i in range(20):
            memory.put_messages([user(f"{n}-{i}"), assistant(f"re {n}-{i}")])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = memory.get_all()
    assert len(everything) == 160
    # Each put_messages is one transaction: a user message is always followed by its answer.
    for first, second in zip(everything[::2], everything[1::2], strict=True):
        assert second.content == f"re {first.content}"


class ThreadRecordingStore(SQLiteStore):
    """A real SQLite store that notes which thread ran each of its reads and writes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: set[int] = set()

    def append(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.threads.add(threading.get_ident())
        return super().append(*args, **kwargs)

    def read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.threads.add(threading.get_ident())
        return super().read(*args, **kwargs)


async def test_async_twins_do_not_block_the_loop(db: Path) -> None:
    store = ThreadRecordingStore(db)
    memory = OffpromptMemory.from_defaults(session_id="s", store=store, token_limit=100)
    loop_thread = threading.get_ident()
    await memory.aput(user("hi " * 20_000))
    await memory.aput_messages([assistant("hello"), user("again"), assistant("yes")])
    window = await memory.aget()
    everything = await memory.aget_all()
    await memory.aset([user("replaced")])
    replaced = await memory.aget_all()
    await memory.areset()
    emptied = await memory.aget_all()
    # every store read and write of the async twins ran off the event loop's thread
    assert store.threads and loop_thread not in store.threads
    assert [m.content for m in window] == ["again", "yes"]
    assert len(everything) == 4
    assert [m.content for m in replaced] == ["replaced"] and emptied == []


def test_qdrant_store_backs_it_too() -> None:
    store = QdrantStore(location=":memory:")
    memory = OffpromptMemory.from_defaults(session_id="q", store=store, token_limit=500)
    memory.put_messages([user("on qdrant"), assistant("yes")])
    assert [m.content for m in memory.get()] == ["on qdrant", "yes"]
    assert memory.store_kind == "other"
    data = memory.to_dict()
    with pytest.raises(ValidationError, match="store=store"):
        OffpromptMemory.from_dict(data)
    again = OffpromptMemory.from_dict(data, store=store)
    assert [m.content for m in again.get_all()] == ["on qdrant", "yes"]


def test_wraps_an_existing_conversation_memory(db: Path) -> None:
    conversation = ConversationMemory(SQLiteStore(db), "shared")
    conversation.add_messages([Message.user("from core"), Message.assistant("hi core")])
    memory = OffpromptMemory.from_defaults(memory=conversation, token_limit=500)
    assert [m.content for m in memory.get()] == ["from core", "hi core"]
    memory.put(user("from llamaindex"))
    assert conversation.messages()[-1].text == "from llamaindex"


# -- chat engines ----------------------------------------------------------------------


def test_simple_chat_engine_counts_its_system_prompt_and_survives_restart(db: Path) -> None:
    llm = ScriptedFunctionLLM(script=["Nice to meet you, Ada.", "You are Ada."])
    memory = OffpromptMemory.from_defaults(session_id="chat", path=db, token_limit=2000)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be kind.")
    assert str(engine.chat("Hi, I'm Ada.")) == "Nice to meet you, Ada."

    # "Restart": a new memory object and engine on the same file continue the chat.
    memory2 = OffpromptMemory.from_defaults(session_id="chat", path=db, token_limit=2000)
    engine2 = SimpleChatEngine.from_defaults(llm=llm, memory=memory2, system_prompt="Be kind.")
    assert str(engine2.chat("Who am I?")) == "You are Ada."
    seen = [(m.role.value, m.content) for m in llm.calls[-1]]
    assert seen == [
        ("system", "Be kind."),
        ("user", "Hi, I'm Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]
    assert len(memory2.get_all()) == 4


def test_simple_chat_engine_window_is_limited(db: Path) -> None:
    llm = ScriptedFunctionLLM(script=["ok"])
    memory = OffpromptMemory.from_defaults(session_id="chat", path=db, token_limit=300)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Sys.")
    for i in range(30):
        engine.chat(f"message number {i} " + "filler " * 20)
    last = llm.calls[-1]
    assert last[0].content == "Sys." and last[1].role.value == "user"
    assert last[-1].content.startswith("message number 29")
    assert len(last) < 20 and len(memory.get_all()) == 60


async def test_simple_chat_engine_async(db: Path) -> None:
    llm = ScriptedFunctionLLM(script=["first", "second"])
    memory = OffpromptMemory.from_defaults(session_id="chat", path=db)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    await engine.achat("one")
    await engine.achat("two")
    assert [m.content for m in await memory.aget_all()] == ["one", "first", "two", "second"]


def test_condense_plus_context_chat_engine(db: Path) -> None:
    docs = [
        Document(text="The cafeteria opens at 8 am."),
        Document(text="Parking is in building C."),
    ]
    index = VectorStoreIndex.from_documents(docs, embed_model=OffpromptEmbedding())
    llm = ScriptedFunctionLLM(
        script=[
            "At 8 am.",  # first turn: no history, no condensing
            "When does the cafeteria open tomorrow?",  # condensed question
            "Also at 8 am.",
        ]
    )
    memory = OffpromptMemory.from_defaults(session_id="rag", path=db, token_limit=1500)
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=index.as_retriever(similarity_top_k=1), llm=llm, memory=memory
    )
    assert str(engine.chat("When does the cafeteria open?")) == "At 8 am."
    assert str(engine.chat("And tomorrow?")) == "Also at 8 am."
    # The condense step saw the first exchange, read from OffpromptMemory.
    assert "When does the cafeteria open?" in text_of(llm.calls[1])
    assert "At 8 am." in text_of(llm.calls[1])
    assert [m.content for m in memory.get_all()] == [
        "When does the cafeteria open?",
        "At 8 am.",
        "And tomorrow?",
        "Also at 8 am.",
    ]
    engine.reset()
    assert memory.get_all() == []


# -- agents -------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_function_agent_second_run_continues_the_first(db: Path) -> None:
    llm = ScriptedFunctionLLM(
        script=[tool_call("add", "call-1", a=2, b=3), "2 + 3 = 5.", "I said 5."]
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(add)], llm=llm, system_prompt="Math.")
    memory = OffpromptMemory.from_defaults(session_id="agent", path=db)
    assert str(await agent.run("What is 2 + 3?", memory=memory)) == "2 + 3 = 5."
    roles = [m.role.value for m in memory.get_all()]
    assert roles == ["user", "assistant", "tool", "assistant"]

    # Second run, new memory object on the same file: the model sees the first run.
    memory2 = OffpromptMemory.from_defaults(session_id="agent", path=db)
    assert str(await agent.run("What did you say?", memory=memory2)) == "I said 5."
    seen = llm.calls[-1]
    assert [m.role.value for m in seen] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert seen[3].content == "5" and seen[3].additional_kwargs["tool_call_id"] == "call-1"
    assert len(memory2.get_all()) == 6


async def test_react_agent_run_with_memory(db: Path) -> None:
    llm = ScriptedFunctionLLM(
        script=[
            'Thought: I need to add.\nAction: add\nAction Input: {"a": 4, "b": 5}',
            "Thought: I can answer without using any more tools.\nAnswer: 9",
            "Thought: I can answer without using any more tools.\nAnswer: It was 9.",
        ]
    )
    agent = ReActAgent(tools=[FunctionTool.from_defaults(add)], llm=llm)
    memory = OffpromptMemory.from_defaults(session_id="react", path=db)
    assert str(await agent.run("4 + 5?", memory=memory)) == "9"
    await agent.run("What was it?", memory=memory)
    stored = memory.get_all()
    assert stored[0].content == "4 + 5?"
    assert any("Observation: 9" in (m.content or "") for m in stored)
    assert (stored[-1].content or "").endswith("Answer: It was 9.")
    assert "4 + 5?" in text_of(llm.calls[-1])


async def test_agent_workflow_with_two_runs(db: Path) -> None:
    llm = ScriptedFunctionLLM(script=["Hello from the workflow.", "Still here."])
    agent = FunctionAgent(name="helper", description="helps", tools=[], llm=llm)
    workflow = AgentWorkflow(agents=[agent])
    memory = OffpromptMemory.from_defaults(session_id="wf", path=db)
    await workflow.run("hi", memory=memory)
    await workflow.run("still there?", memory=memory)
    assert [m.content for m in memory.get_all()] == [
        "hi",
        "Hello from the workflow.",
        "still there?",
        "Still here.",
    ]
    assert "Hello from the workflow." in text_of(llm.calls[-1])


def test_a_new_process_continues_the_conversation(db: Path) -> None:
    first = OffpromptMemory.from_defaults(session_id="proc", path=db)
    first.put_messages([user("remember 4242"), assistant("noted")])
    script = textwrap.dedent(
        f"""
        from llama_index.core.llms import ChatMessage
        from offprompt_llamaindex import OffpromptMemory
        memory = OffpromptMemory.from_defaults(session_id="proc", path={str(db)!r})
        assert [m.content for m in memory.get()] == ["remember 4242", "noted"]
        memory.put(ChatMessage(role="user", content="from the child"))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ}, timeout=120)
    assert first.get_all()[-1].content == "from the child"


async def test_workflow_context_round_trip_keeps_the_memory(db: Path) -> None:
    """A serialised agent Context (ctx.to_dict) references the memory by path and resumes."""
    import json

    from llama_index.core.workflow import Context

    llm = ScriptedFunctionLLM(script=["one", "two"])
    agent = FunctionAgent(tools=[], llm=llm)
    memory = OffpromptMemory.from_defaults(session_id="ctx", path=db)
    handler = agent.run("hi", memory=memory)
    await handler
    data = json.loads(json.dumps(handler.ctx.to_dict()))
    resumed = agent.run("again", ctx=Context.from_dict(agent, data))
    await resumed
    restored = await resumed.ctx.store.get("memory")
    assert isinstance(restored, OffpromptMemory) and restored is not memory
    assert [m.content for m in await restored.aget_all()] == ["hi", "one", "again", "two"]
    assert [m.content for m in memory.get_all()] == ["hi", "one", "again", "two"]


def test_public_names_are_exported() -> None:
    import offprompt_llamaindex

    for name in (
        "OffpromptMemory",
        "OffpromptChatStore",
        "OffpromptTool",
        "TaskMemoryToolSpec",
        "offprompt_tool",
    ):
        assert name in offprompt_llamaindex.__all__
        assert getattr(offprompt_llamaindex, name).__module__.startswith("offprompt_llamaindex.")


def test_lone_surrogates_are_stored_escaped_and_flagged_not_refused(db: Path) -> None:
    """Issue 14 item 3: the memory inside an agent run must not crash on invalid Unicode
    that LlamaIndex's own memory takes; it stores it visibly escaped and flagged."""
    from offprompt._validation import ESCAPED_SURROGATES_META

    memory = OffpromptMemory.from_defaults(session_id="s", path=db)
    broken = b"sensor \xff reading".decode("utf-8", "surrogateescape")
    memory.put(user(broken))
    memory.put_messages([assistant("fine"), user("what is \ud83d?")])
    assert [m.content for m in memory.get_all()] == [
        "sensor \\udcff reading",
        "fine",
        "what is \\ud83d?",
    ]
    stored = [r.message for r in memory.store.read("s")]
    assert [ESCAPED_SURROGATES_META in m.meta for m in stored] == [True, False, True]
    with pytest.raises(ValidationError):  # other bad input is still refused
        memory.put_messages([user("\ud83d"), "not a message"])  # type: ignore[list-item]
    assert len(memory.get_all()) == 3
