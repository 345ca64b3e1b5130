"""OffpromptMemoryBlock inside a real LlamaIndex ``Memory``: messages flushed out of the
short-term budget land in long-term memory (embedded Qdrant), and ``memory.get()``
includes the fragments relevant to the current messages. No model is involved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from offprompt_llamaindex.block import OffpromptMemoryBlock

from offprompt.longterm import LongTermMemory, Scope

FILLER = "filler words about nothing in particular " * 6


@pytest.fixture
def ltm() -> Iterator[LongTermMemory]:
    memory = LongTermMemory()
    yield memory
    memory.close()


def _memory(block: OffpromptMemoryBlock, session_id: str = "s1") -> Memory:
    return Memory.from_defaults(
        session_id=session_id,
        memory_blocks=[block],
        token_limit=400,
        chat_history_token_ratio=0.5,
        token_flush_size=100,
    )


def _chat(memory: Memory) -> None:
    memory.put(ChatMessage(role="user", content="I am allergic to peanuts, remember that."))
    memory.put(ChatMessage(role="assistant", content="Noted: no peanuts for you."))
    for i in range(8):
        memory.put(ChatMessage(role="user", content=f"question {i}: {FILLER}"))
        memory.put(ChatMessage(role="assistant", content=f"answer {i}: {FILLER}"))


def _system_text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role.value == "system")


def test_flushed_messages_become_fragments_and_come_back(ltm: LongTermMemory) -> None:
    block = OffpromptMemoryBlock(long_term=ltm, user="alice")
    memory = _memory(block)
    _chat(memory)
    stored = ltm.fragments(scope=Scope(user="alice"))
    assert stored, "the small token limit must have flushed messages into the block"
    first = stored[0]
    assert first.observation == (
        "Question: I am allergic to peanuts, remember that.\nThought: Noted: no peanuts for you."
    )
    assert first.scope == Scope(user="alice", session="s1")
    memory.put(ChatMessage(role="user", content="Can I eat peanuts or a peanut snack?"))
    history = memory.get()
    assert "allergic to peanuts" in _system_text(history)
    assert "<long_term_memory>" in _system_text(history)


def test_a_later_session_recalls_but_other_users_do_not(ltm: LongTermMemory) -> None:
    _chat(_memory(OffpromptMemoryBlock(long_term=ltm, user="alice"), "s1"))
    later = _memory(OffpromptMemoryBlock(long_term=ltm, user="alice"), "s2")
    later.put(ChatMessage(role="user", content="Any peanut allergies I told you about?"))
    assert "allergic to peanuts" in _system_text(later.get())
    other = _memory(OffpromptMemoryBlock(long_term=ltm, user="bob"), "s3")
    other.put(ChatMessage(role="user", content="Any peanut allergies I told you about?"))
    assert "peanuts" not in _system_text(other.get())
    private = _memory(
        OffpromptMemoryBlock(long_term=ltm, user="alice", share_across_sessions=False), "s4"
    )
    private.put(ChatMessage(role="user", content="Any peanut allergies I told you about?"))
    assert "allergic to peanuts" not in _system_text(private.get())


async def test_block_async_api_directly(ltm: LongTermMemory) -> None:
    block = OffpromptMemoryBlock(long_term=ltm, user="u", k=2, template="- {observation}")
    await block.aput(
        [
            ChatMessage(role="system", content="be nice"),
            ChatMessage(role="user", content="My cat is called Miso."),
            ChatMessage(role="tool", content="weather: rain"),
            ChatMessage(role="assistant", content=""),
        ],
        from_short_term_memory=True,
        session_id="sx",
    )
    texts = sorted(f.observation for f in ltm.fragments())
    assert texts == ["tool: weather: rain", "user: My cat is called Miso."]
    got = await block.aget([ChatMessage(role="user", content="what is my cat's name?")])
    assert got.startswith("- user: My cat is called Miso.")
    assert await block.aget([]) == ""
    assert await block.aget([ChatMessage(role="user", content="   ")]) == ""


def test_rejects_a_non_memory(ltm: LongTermMemory) -> None:
    with pytest.raises(ValueError, match="LongTermMemory"):
        OffpromptMemoryBlock(long_term="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        OffpromptMemoryBlock(long_term=ltm, k=0)
