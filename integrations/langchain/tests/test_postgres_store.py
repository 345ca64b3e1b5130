"""OffpromptChatMessageHistory with ``store=PostgresStore(...)``: two store objects (two
machines) see one history, through the sync and the async API."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from offprompt_langchain.history import OffpromptChatMessageHistory

from offprompt.stores import PostgresStore


async def test_history_on_postgres_is_shared_by_two_stores(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as a, PostgresStore(postgres_dsn) as b:
        writer = OffpromptChatMessageHistory("alice", store=a)
        writer.add_messages([HumanMessage("My code is 7431."), AIMessage("Noted.")])
        await writer.aadd_messages([HumanMessage("What is it?"), AIMessage("7431.")])
        reader = OffpromptChatMessageHistory("alice", store=b)
        texts = ["My code is 7431.", "Noted.", "What is it?", "7431."]
        assert [m.content for m in reader.messages] == texts
        assert [m.content for m in await reader.aget_messages()] == texts
        assert [m.content for m in reader.window(10_000)] == texts
        reader.clear()
        assert writer.messages == [] and a.count("alice") == 0
