"""OffpromptMemory and OffpromptChatStore with ``store=PostgresStore(...)``: what one
process writes on the server, another store object (another machine) reads."""

from __future__ import annotations

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from offprompt_llamaindex import OffpromptChatStore, OffpromptMemory

from offprompt.stores import PostgresStore


async def test_memory_on_postgres_is_shared_by_two_stores(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as a, PostgresStore(postgres_dsn) as b:
        writer = OffpromptMemory.from_defaults(session_id="s", store=a, token_limit=1000)
        writer.put(ChatMessage(role="user", content="My code is 7431."))
        await writer.aput(ChatMessage(role="assistant", content="Noted: 7431."))
        reader = OffpromptMemory.from_defaults(session_id="s", store=b, token_limit=1000)
        assert [m.content for m in reader.get_all()] == ["My code is 7431.", "Noted: 7431."]
        assert [m.content for m in await reader.aget()] == ["My code is 7431.", "Noted: 7431."]
        assert b.count("s") == 2


async def test_chat_store_on_postgres_backs_llamaindex_memory(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as store:
        memory = Memory.from_defaults(
            session_id="li", token_limit=1000, chat_store=OffpromptChatStore(store)
        )
        await memory.aput(ChatMessage(role="user", content="hello from LlamaIndex"))
        await memory.aput(ChatMessage(role="assistant", content="hi"))
        assert [m.content for m in await memory.aget()] == ["hello from LlamaIndex", "hi"]
    with PostgresStore(postgres_dsn) as again:
        chat_store = OffpromptChatStore(again)
        assert await chat_store.get_keys() == ["li"]
        assert [m.content for m in await chat_store.get_messages("li")] == [
            "hello from LlamaIndex",
            "hi",
        ]
