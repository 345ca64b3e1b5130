"""``OffpromptMemoryBlock``: offprompt long-term memory as a LlamaIndex memory block.

LlamaIndex's ``Memory`` flushes messages that no longer fit its short-term token budget
into its memory blocks (``aput(..., from_short_term_memory=True)``) and asks each block
for content when the chat history is built (``aget(messages, session_id=...)``). This
block stores flushed turns as :class:`~offprompt.longterm.MemoryFragment` s in a
:class:`~offprompt.longterm.LongTermMemory` and returns the fragments that score best
(similarity + recency + importance) for the current messages, rendered with
:func:`~offprompt.longterm.format_memories`.

A user message followed by an assistant reply is stored as one fragment, rendered with
DB-GPT's write template (``Question: ... / Thought: ...``); other messages with text are
stored alone as ``"{role}: {text}"``. System messages are not stored.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from offprompt.errors import ValidationError
from offprompt.longterm import (
    DEFAULT_MEMORY_TEMPLATE,
    LongTermMemory,
    MemoryFragment,
    Scope,
    format_memories,
    render_write_memory,
)

__all__ = ["OffpromptMemoryBlock"]


def _text(message: ChatMessage) -> str:
    return " ".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


class OffpromptMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory (DB-GPT model, on Qdrant) inside LlamaIndex's ``Memory``.

    Attributes:
        long_term: Where fragments live and how they are scored.
        user: Scope part written on every fragment and required on every read.
        agent: Scope part written on every fragment and required on every read.
        share_across_sessions: If True (default), a session recalls what the same
            user/agent said in earlier sessions; if False, reads are limited to the
            current ``session_id``. Fragments always record their session.
        k: Fragments returned per read.
        context_window: How many of the latest messages form the read query (default:
            the latest one, which is usually the question being asked).
        template: Per-fragment template for :func:`format_memories`.
        max_tokens: Token budget of the rendered block (None: no limit).

    Example:
        >>> from llama_index.core.memory import Memory
        >>> block = OffpromptMemoryBlock(long_term=LongTermMemory(), user="alice")
        >>> memory = Memory.from_defaults(memory_blocks=[block], token_limit=500)
    """

    name: str = Field(default="long_term_memory", description="The name of the memory block.")
    long_term: LongTermMemory = Field(description="offprompt long-term memory to use.")
    user: str | None = Field(default=None)
    agent: str | None = Field(default=None)
    share_across_sessions: bool = Field(default=True)
    k: int = Field(default=3, ge=1)
    context_window: int = Field(default=1, ge=1)
    template: str = Field(default=DEFAULT_MEMORY_TEMPLATE)
    max_tokens: int | None = Field(default=None, ge=0)

    @field_validator("long_term", mode="before")
    @classmethod
    def _is_long_term(cls, value: Any) -> Any:
        if not isinstance(value, LongTermMemory):
            raise ValueError(f"long_term must be a LongTermMemory, got {type(value).__name__}")
        return value

    def _scope(self, session_id: str | None, *, reading: bool) -> Scope:
        session = session_id if (not reading or not self.share_across_sessions) else None
        return Scope(user=self.user, agent=self.agent, session=session)

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        """The best fragments for the latest messages, rendered (``""`` when none)."""
        if not messages:
            return ""
        query = "\n".join(t for t in (_text(m) for m in messages[-self.context_window :]) if t)
        if not query:
            return ""
        found = await self.long_term.aread(
            query, self.k, scope=self._scope(session_id, reading=True)
        )
        return format_memories(found, self.template, max_tokens=self.max_tokens)

    def _observations(self, messages: list[ChatMessage]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(messages):
            message = messages[i]
            text = _text(message)
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if message.role == MessageRole.SYSTEM or not text:
                i += 1
                continue
            if (
                message.role == MessageRole.USER
                and nxt is not None
                and nxt.role == MessageRole.ASSISTANT
                and _text(nxt)
            ):
                out.append(render_write_memory(text, _text(nxt)))
                i += 2
                continue
            out.append(f"{message.role.value}: {text}")
            i += 1
        return out

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store ``messages`` (flushed from short-term memory) as fragments."""
        if not messages:
            return
        session_id = None
        for message in messages:
            if not isinstance(message, ChatMessage):
                raise ValidationError(f"expected ChatMessage items, got {type(message).__name__}")
            sid = message.additional_kwargs.pop("session_id", None)
            session_id = sid if sid is not None else session_id
        scope = self._scope(session_id, reading=False)
        fragments = [
            MemoryFragment(observation=o, scope=scope) for o in self._observations(messages)
        ]
        if fragments:
            await self.long_term.awrite_batch(fragments)
