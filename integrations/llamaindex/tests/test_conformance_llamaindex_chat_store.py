"""llama-index-core's own ``SQLAlchemyChatStore`` tests, run against ``OffpromptChatStore``.

Ported from run-llama/llama_index (MIT), ``llama-index-core/tests/storage/chat_store/
test_sql.py`` at 09e5118d6cffb504bdb7a4741547b0ea582f2106.

What was changed, and only that: the class under test (``SQLAlchemyChatStore(table_name=
..., async_database_uri="sqlite+aiosqlite:///:memory:")`` became ``OffpromptChatStore``
on a SQLite file in ``tmp_path``, and on a real PostgreSQL server: a ``PostgresStore``
on a fresh schema of the throwaway cluster) and, in ``test_delete_message``, how the message ids
are found: upstream selects the rows of its SQL table; ``delete_message(key, idx)``
takes our store's sequence number as ``idx``, read from the store's index (what
``SQLAlchemyChatStore`` calls the row id). Every upstream assertion is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus
from offprompt_llamaindex import OffpromptChatStore


@pytest.fixture(params=["sqlite", "postgres"])
def chat_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OffpromptChatStore]:
    if request.param == "sqlite":
        yield OffpromptChatStore(path=tmp_path / "memory.db")
        return
    from offprompt.stores import PostgresStore

    with PostgresStore(request.getfixturevalue("postgres_dsn")) as store:
        yield OffpromptChatStore(store)


async def test_add_get_messages(chat_store: OffpromptChatStore) -> None:
    await chat_store.add_message("user1", ChatMessage(role="user", content="hello"))
    await chat_store.add_message("user1", ChatMessage(role="assistant", content="world"))
    messages = await chat_store.get_messages("user1")
    assert len(messages) == 2
    assert messages[0].role == "user"
    assert messages[0].content == "hello"
    assert messages[1].role == "assistant"
    assert messages[1].content == "world"
    empty_messages = await chat_store.get_messages("nonexistent")
    assert len(empty_messages) == 0


async def test_add_messages_batch(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="hello"),
        ChatMessage(role="assistant", content="world"),
        ChatMessage(role="user", content="how are you?"),
    ]
    await chat_store.add_messages("batch_user", batch_messages)
    messages = await chat_store.get_messages("batch_user")
    assert len(messages) == 3
    assert [m.content for m in messages] == ["hello", "world", "how are you?"]


async def test_count_messages(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="message1"),
        ChatMessage(role="assistant", content="message2"),
        ChatMessage(role="user", content="message3"),
    ]
    await chat_store.add_messages("count_user", batch_messages)
    assert await chat_store.count_messages("count_user") == 3
    assert await chat_store.count_messages("nonexistent") == 0


async def test_set_messages(chat_store: OffpromptChatStore) -> None:
    await chat_store.add_message("replace_user", ChatMessage(role="user", content="initial"))
    new_messages = [
        ChatMessage(role="user", content="replaced1"),
        ChatMessage(role="assistant", content="replaced2"),
    ]
    await chat_store.set_messages("replace_user", new_messages)
    messages = await chat_store.get_messages("replace_user")
    assert len(messages) == 2
    assert [m.content for m in messages] == ["replaced1", "replaced2"]


async def test_delete_message(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="message1"),
        ChatMessage(role="assistant", content="message2"),
        ChatMessage(role="user", content="message3"),
    ]
    await chat_store.add_messages("delete_user", batch_messages)
    rows = chat_store.store.read_index("delete_user")  # the ids of the stored messages
    middle_id = rows[1].seq
    deleted_message = await chat_store.delete_message("delete_user", middle_id)
    assert deleted_message is not None and deleted_message.content == "message2"
    remaining_messages = await chat_store.get_messages("delete_user")
    assert len(remaining_messages) == 2
    assert [m.content for m in remaining_messages] == ["message1", "message3"]


async def test_delete_messages(chat_store: OffpromptChatStore) -> None:
    await chat_store.add_message(
        "delete_all_user1", ChatMessage(role="user", content="user1_message")
    )
    await chat_store.add_message(
        "delete_all_user2", ChatMessage(role="user", content="user2_message")
    )
    await chat_store.delete_messages("delete_all_user1")
    assert len(await chat_store.get_messages("delete_all_user1")) == 0
    assert len(await chat_store.get_messages("delete_all_user2")) == 1


async def test_delete_oldest_messages(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="oldest"),
        ChatMessage(role="assistant", content="middle"),
        ChatMessage(role="user", content="newest"),
    ]
    await chat_store.add_messages("oldest_test", batch_messages)
    deleted = await chat_store.delete_oldest_messages("oldest_test", 1)
    assert len(deleted) == 1
    assert deleted[0].content == "oldest"
    remaining = await chat_store.get_messages("oldest_test")
    assert len(remaining) == 2
    assert [m.content for m in remaining] == ["middle", "newest"]


async def test_archive_oldest_messages(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="oldest"),
        ChatMessage(role="assistant", content="middle"),
        ChatMessage(role="user", content="newest"),
    ]
    await chat_store.add_messages("archive_test", batch_messages)
    archived = await chat_store.archive_oldest_messages("archive_test", 1)
    assert len(archived) == 1
    assert archived[0].content == "oldest"
    active = await chat_store.get_messages("archive_test", status=MessageStatus.ACTIVE)
    assert len(active) == 2
    assert [m.content for m in active] == ["middle", "newest"]
    archived_msgs = await chat_store.get_messages("archive_test", status=MessageStatus.ARCHIVED)
    assert len(archived_msgs) == 1
    assert archived_msgs[0].content == "oldest"


async def test_get_messages_with_limit_offset(chat_store: OffpromptChatStore) -> None:
    batch_messages = [
        ChatMessage(role="user", content="message1"),
        ChatMessage(role="assistant", content="message2"),
        ChatMessage(role="user", content="message3"),
        ChatMessage(role="assistant", content="message4"),
        ChatMessage(role="user", content="message5"),
    ]
    await chat_store.add_messages("pagination_test", batch_messages)
    limited = await chat_store.get_messages("pagination_test", limit=2)
    assert len(limited) == 2
    assert [m.content for m in limited] == ["message1", "message2"]
    offset = await chat_store.get_messages("pagination_test", offset=2)
    assert len(offset) == 3
    assert [m.content for m in offset] == ["message3", "message4", "message5"]
    paginated = await chat_store.get_messages("pagination_test", limit=2, offset=1)
    assert len(paginated) == 2
    assert [m.content for m in paginated] == ["message2", "message3"]


async def test_get_keys(chat_store: OffpromptChatStore) -> None:
    for n in (1, 2, 3):
        await chat_store.add_message(
            f"keys_user{n}", ChatMessage(role="user", content=f"user{n}_message")
        )
    keys = await chat_store.get_keys()
    assert {"keys_user1", "keys_user2", "keys_user3"}.issubset(set(keys))
