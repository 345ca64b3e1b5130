"""OffpromptChatStore under LlamaIndex's Memory, on real SQLite files.

The memory blocks are LlamaIndex's own (``StaticMemoryBlock``,
``FactExtractionMemoryBlock``); the fact extractor's LLM is the only fake.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import FactExtractionMemoryBlock, Memory, StaticMemoryBlock
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from offprompt_llamaindex import OffpromptChatStore, OffpromptMemory
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of

from offprompt.conversation import ConversationMemory
from offprompt.errors import NamespaceError, ValidationError
from offprompt.stores import InMemoryStore, QdrantStore, SQLiteStore


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def test_is_an_async_db_chat_store(db: Path) -> None:
    store = OffpromptChatStore(path=db)
    assert isinstance(store, AsyncDBChatStore)
    assert OffpromptChatStore.class_name() == "OffpromptChatStore"
    assert store.model_dump() == {
        "class_name": "OffpromptChatStore",
        "path": str(db),
        "store_type": "SQLiteStore",
    }
    assert isinstance(store.store, SQLiteStore)


async def test_settings_load_back(db: Path) -> None:
    """Issue 15 item 5: model_validate(model_dump()) raised a plain TypeError."""
    store = OffpromptChatStore(path=db)
    await store.add_message("k", user("kept"))
    again = OffpromptChatStore.model_validate(store.model_dump())
    assert again.path == str(db) and again.model_dump() == store.model_dump()
    assert [m.content for m in await again.get_messages("k")] == ["kept"]
    from_json = OffpromptChatStore.model_validate_json(store.model_dump_json())
    assert from_json.path == str(db)


def test_settings_of_another_class_or_an_unreopenable_store_are_refused(db: Path) -> None:
    # pydantic wraps the error model_validate meets in its own ValidationError (a ValueError)
    with pytest.raises(ValueError, match="for 'SQLAlchemyChatStore', not 'OffpromptChatStore'"):
        OffpromptChatStore.model_validate({"class_name": "SQLAlchemyChatStore", "path": str(db)})
    with pytest.raises(ValueError, match="used a QdrantStore, which a dump cannot reopen"):
        OffpromptChatStore.model_validate(
            {"class_name": "OffpromptChatStore", "path": None, "store_type": "QdrantStore"}
        )
    with pytest.raises(ValidationError, match="QdrantStore"):
        OffpromptChatStore(store_type="QdrantStore")
    assert not db.exists()  # nothing was created by the refused settings


async def test_statuses_archive_and_delete(db: Path) -> None:
    store = OffpromptChatStore(path=db)
    await store.add_messages("k", [user(f"m{i}") for i in range(6)])
    assert await store.count_messages("k") == 6
    archived = await store.archive_oldest_messages("k", 2)
    assert [m.content for m in archived] == ["m0", "m1"]
    assert [m.content for m in await store.get_messages("k")] == ["m2", "m3", "m4", "m5"]
    assert [m.content for m in await store.get_messages("k", status=MessageStatus.ARCHIVED)] == [
        "m0",
        "m1",
    ]
    every = await store.get_messages("k", status=None)
    assert [m.content for m in every] == [f"m{i}" for i in range(6)]
    assert await store.count_messages("k", status=None) == 6
    assert [m.content for m in await store.get_messages("k", limit=2, offset=1)] == ["m3", "m4"]

    deleted = await store.delete_oldest_messages("k", 1)
    assert [m.content for m in deleted] == ["m2"]
    assert await store.count_messages("k", status=MessageStatus.ARCHIVED) == 2
    gone = await store.delete_message("k", 5)
    assert gone is not None and gone.content == "m5"
    assert await store.delete_message("k", 5) is None
    await store.add_message("k", assistant("late archive"), status=MessageStatus.ARCHIVED)
    assert [m.content for m in await store.get_messages("k", status=MessageStatus.ARCHIVED)] == [
        "m0",
        "m1",
        "late archive",
    ]
    await store.delete_messages("k", status=MessageStatus.ACTIVE)
    assert await store.count_messages("k") == 0
    assert await store.count_messages("k", status=MessageStatus.ARCHIVED) == 3
    await store.set_messages("k", [user("fresh")])
    assert [m.content for m in await store.get_messages("k", status=None)] == ["fresh"]
    assert await store.get_keys() == ["k"]
    await store.delete_messages("k")
    assert await store.get_keys() == []


async def test_bad_input_changes_nothing(db: Path) -> None:
    store = OffpromptChatStore(path=db)
    await store.add_messages("k", [user("safe")])
    with pytest.raises(ValidationError):
        await store.set_messages("k", [user("ok"), "nope"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        await store.add_messages("k", [object()])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="status"):
        await store.get_messages("k", status="deleted")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="n must"):
        await store.archive_oldest_messages("k", -1)
    with pytest.raises(NamespaceError):
        await store.add_message("", user("x"))
    assert [m.content for m in await store.get_messages("k", status=None)] == ["safe"]
    with pytest.raises(ValidationError, match="not both"):
        OffpromptChatStore(InMemoryStore(), path=db)


def fill(memory: Memory, turns: int) -> None:
    for i in range(turns):
        memory.put(user(f"turn {i}: my favourite number is {i} " + "filler " * 15))
        memory.put(assistant(f"noted {i} " + "ok " * 15))


def test_memory_flushes_into_blocks_and_keeps_archived_messages(db: Path) -> None:
    chat_store = OffpromptChatStore(path=db)
    memory = Memory.from_defaults(
        session_id="life",
        chat_store=chat_store,
        token_limit=400,
        token_flush_size=100,
        chat_history_token_ratio=0.5,
        memory_blocks=[StaticMemoryBlock(name="profile", static_content="The user is Ada.")],
    )
    fill(memory, 20)
    all_messages = memory.get_all()
    assert len(all_messages) == 40  # nothing deleted
    active = memory.get_all(status=MessageStatus.ACTIVE)
    archived = memory.get_all(status=MessageStatus.ARCHIVED)
    assert len(archived) > 0 and len(active) + len(archived) == 40
    assert archived + active == all_messages  # archived are the oldest, in order
    window = memory.get()
    assert window[0].role.value == "system" and "The user is Ada." in text_of(window[:1])
    assert window[1].role.value == "user"

    # Restart: a new Memory on a new chat store over the same file sees everything.
    reopened = Memory.from_defaults(
        session_id="life", chat_store=OffpromptChatStore(path=db), token_limit=400
    )
    assert reopened.get_all() == all_messages
    assert reopened.get_all(status=MessageStatus.ARCHIVED) == archived
    assert [m.content for m in reopened.get()] == [m.content for m in active]


async def test_fact_extraction_block_receives_the_flushed_messages(db: Path) -> None:
    llm = ScriptedFunctionLLM(script=["<facts><fact>Ada likes the number 7.</fact></facts>"])
    block = FactExtractionMemoryBlock(name="facts", llm=llm, max_facts=5)
    memory = Memory.from_defaults(
        session_id="facts",
        chat_store=OffpromptChatStore(path=db),
        token_limit=400,
        token_flush_size=100,
        chat_history_token_ratio=0.5,
        memory_blocks=[block],
    )
    for i in range(12):
        await memory.aput(user(f"turn {i}: my favourite number is 7 " + "filler " * 15))
        await memory.aput(assistant(f"noted {i} " + "ok " * 15))
    assert llm.calls, "the flush must reach the fact extraction block"
    assert "my favourite number is 7" in text_of(llm.calls[0])
    assert "Ada likes the number 7." in block.facts
    window = await memory.aget()
    assert "Ada likes the number 7." in text_of(window[:1])
    assert len(await memory.aget_all()) == 24


def test_sessions_are_shared_with_offprompt_memory_and_the_core(db: Path) -> None:
    memory = Memory.from_defaults(session_id="shared", chat_store=OffpromptChatStore(path=db))
    memory.put(user("written by Memory"))
    ours = OffpromptMemory.from_defaults(session_id="shared", path=db)
    assert [m.content for m in ours.get_all()] == ["written by Memory"]
    ours.put(assistant("written by OffpromptMemory"))
    core = ConversationMemory(SQLiteStore(db), "shared")
    assert [m.text for m in core.messages()] == ["written by Memory", "written by OffpromptMemory"]
    assert [m.content for m in memory.get_all()] == [
        "written by Memory",
        "written by OffpromptMemory",
    ]


def test_works_on_a_qdrant_store() -> None:
    store = OffpromptChatStore(QdrantStore(location=":memory:"))
    memory = Memory.from_defaults(
        session_id="q",
        chat_store=store,
        token_limit=300,
        token_flush_size=60,
        chat_history_token_ratio=0.5,
    )
    fill(memory, 8)
    assert len(memory.get_all()) == 16
    assert len(memory.get_all(status=MessageStatus.ARCHIVED)) > 0
    assert store.model_dump()["path"] is None
    assert store.model_dump()["store_type"] == type(store.store).__name__


def test_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path))
    assert OffpromptChatStore().path == str(tmp_path / "memory.db")


# -- llama-index-core's own Memory tests (tests/memory/test_memory_base.py and
#    test_memory_custom_chat_store.py), run with OffpromptChatStore as the backend -------


@pytest.fixture
def li_memory(db: Path) -> Memory:
    return Memory(
        token_limit=1000,
        token_flush_size=700,
        chat_history_token_ratio=0.9,
        session_id="test_user",
        sql_store=OffpromptChatStore(path=db),
    )


async def test_li_manage_queue_over_limit_archives_two(li_memory: Memory) -> None:
    await li_memory.aput_messages(
        [
            ChatMessage(role="user", content="x " * 500),
            ChatMessage(role="assistant", content="y " * 500),
            ChatMessage(role="user", content="z " * 500),
        ]
    )
    current = await li_memory.aget()
    assert len(current) == 1 and "z " in (current[0].content or "")
    archived = await li_memory.aget_all(status=MessageStatus.ARCHIVED)
    assert [m.role.value for m in archived] == ["user", "assistant"]
    assert len(await li_memory.aget_all()) == 3


async def test_li_aset_aget_all_areset(li_memory: Memory) -> None:
    await li_memory.aset([user("Message 1"), assistant("Response 1")])
    assert [m.content for m in await li_memory.aget()] == ["Message 1", "Response 1"]
    active = await li_memory.aget_all(status=MessageStatus.ACTIVE)
    assert [m.content for m in active] == ["Message 1", "Response 1"]
    await li_memory.areset(status=MessageStatus.ACTIVE)
    assert await li_memory.aget() == []


async def test_li_first_message_must_be_user(db: Path) -> None:
    memory = Memory(
        token_limit=100,
        token_flush_size=50,
        chat_history_token_ratio=0.5,
        session_id="first_user",
        sql_store=OffpromptChatStore(path=db),
    )
    await memory.aput_messages([user("x " * 100), assistant("ok")])
    current = await memory.aget()
    assert current and current[0].role.value == "user"


async def test_li_tool_turn_is_kept_together(db: Path) -> None:
    memory = Memory(
        token_limit=150,
        token_flush_size=80,
        chat_history_token_ratio=0.5,
        session_id="tools",
        sql_store=OffpromptChatStore(path=db),
    )
    await memory.aput_messages(
        [
            user("a " * 40),
            assistant("b " * 20),
            ChatMessage(role="tool", content="c " * 20),
            assistant("d " * 20),
        ]
    )
    current = await memory.aget()
    assert current and current[0].role.value == "user"
    for i, message in enumerate(current):
        if message.role.value == "tool":
            assert i > 0 and current[i - 1].role.value in ("assistant", "tool")


def test_li_from_defaults_seeds_history_and_sync_put_across_loops(db: Path) -> None:
    store = OffpromptChatStore(path=db)
    memory = Memory.from_defaults(
        session_id="seed", token_limit=1000, chat_history=[user("Seeded")], chat_store=store
    )
    assert memory.sql_store is store
    memory.put(user("one"))  # each sync call runs its own event loop
    memory.put(user("two"))
    assert [m.content for m in memory.get_all()] == ["Seeded", "one", "two"]
