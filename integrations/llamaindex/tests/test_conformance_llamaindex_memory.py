"""llama-index-core's own ``Memory`` tests, run with ``OffpromptChatStore`` as its store.

Ported from run-llama/llama_index (MIT), ``llama-index-core/tests/memory/
test_memory_base.py`` at e83bc199e450bd6fecebb2df57e44488887483bb.

What was changed, and only that: the fixture builds ``Memory(...)`` with
``sql_store=OffpromptChatStore(path=...)`` (a SQLite file in ``tmp_path``) instead of
LlamaIndex's default in-memory ``SQLAlchemyChatStore``; the class under test is the
chat store behind the real ``Memory``. Every upstream assertion is kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.base.llms.types import AudioBlock, ChatMessage, ImageBlock
from llama_index.core.memory.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from offprompt_llamaindex import OffpromptChatStore


@pytest.fixture()
def memory(tmp_path: Path) -> Memory:
    return Memory(
        token_limit=1000,
        token_flush_size=700,
        chat_history_token_ratio=0.9,
        session_id="test_user",
        sql_store=OffpromptChatStore(path=tmp_path / "memory.db"),
    )


async def test_initialization(memory: Memory) -> None:
    assert memory.token_limit == 1000
    assert memory.token_flush_size == 700
    assert memory.session_id == "test_user"
    assert isinstance(memory.sql_store, OffpromptChatStore)  # the store under test


async def test_estimate_token_count_text(memory: Memory) -> None:
    message = ChatMessage(role="user", content="Test message")
    # private-ok: LlamaIndex's own method, as its test calls it
    count = memory._estimate_token_count(message)
    assert count == len(memory.tokenizer_fn("Test message"))


async def test_estimate_token_count_image(memory: Memory) -> None:
    block = ImageBlock(url="http://example.com/image.jpg")
    message = ChatMessage(role="user", blocks=[block])
    # private-ok: LlamaIndex's own method, as its test calls it
    assert memory._estimate_token_count(message) == memory.image_token_size_estimate


async def test_estimate_token_count_audio(memory: Memory) -> None:
    block = AudioBlock(url="http://example.com/audio.mp3")
    message = ChatMessage(role="user", blocks=[block])
    # private-ok: LlamaIndex's own method, as its test calls it
    assert memory._estimate_token_count(message) == memory.audio_token_size_estimate


async def test_manage_queue_under_limit(memory: Memory) -> None:
    await memory.aput_messages([ChatMessage(role="user", content="Short message")])
    cur_messages = await memory.aget()
    assert len(cur_messages) == 1
    assert cur_messages[0].content == "Short message"


async def test_manage_queue_over_limit(memory: Memory) -> None:
    chat_messages = [
        ChatMessage(role="user", content="x " * 500),
        ChatMessage(role="assistant", content="y " * 500),
        ChatMessage(role="user", content="z " * 500),
    ]
    # This exceeds the token limit and flushes 700 tokens (two messages)
    await memory.aput_messages(chat_messages)
    cur_messages = await memory.aget()
    assert len(cur_messages) == 1
    assert "z " in str(cur_messages[0].content)


async def test_aput(memory: Memory) -> None:
    await memory.aput(ChatMessage(role="user", content="New message"))
    messages = await memory.aget()
    assert len(messages) == 1
    assert messages[0].content == "New message"


async def test_aput_messages(memory: Memory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    messages = await memory.aget()
    assert len(messages) == 2
    assert messages[0].content == "Message 1"
    assert messages[1].content == "Response 1"


async def test_aset(memory: Memory) -> None:
    await memory.aset(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    messages = await memory.aget()
    assert len(messages) == 2
    assert messages[0].content == "Message 1"
    assert messages[1].content == "Response 1"


async def test_aget_all(memory: Memory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    messages = await memory.aget_all(status=MessageStatus.ACTIVE)
    assert len(messages) == 2
    assert messages[0].content == "Message 1"
    assert messages[1].content == "Response 1"


async def test_areset(memory: Memory) -> None:
    await memory.aput(ChatMessage(role="user", content="New message"))
    await memory.areset(status=MessageStatus.ACTIVE)
    assert len(await memory.aget()) == 0
