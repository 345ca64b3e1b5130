"""``OffpromptChatMessageHistory``: LangChain chat history over offprompt conversation memory.

LangChain deprecated ``BaseChatMessageHistory`` (langchain-core 1.6.4) and
``RunnableWithMessageHistory`` (1.3.3) in favour of LangGraph persistence, but existing
chains still use them, so this class supports them. The deprecation decorator on
``BaseChatMessageHistory`` only warns when the base class itself is instantiated, not a
subclass, so using this class emits no warning and none is filtered here.
``RunnableWithMessageHistory`` warns when *you* build one; that warning is LangChain's
and stays visible. The modern path is
:class:`~offprompt_langchain.middleware.OffpromptMiddleware`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from offprompt.conversation import ConversationMemory
from offprompt.conversation.opening import open_memory
from offprompt.errors import ValidationError
from offprompt.stores import BaseStore
from offprompt.tokens import Tokenizer
from offprompt.trace import Tracer
from offprompt_langchain.convert import from_langchain, to_langchain

__all__ = ["OffpromptChatMessageHistory"]


def _check_budget(max_tokens: Any) -> int | None:
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValidationError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    return max_tokens


class OffpromptChatMessageHistory(BaseChatMessageHistory):
    """Durable, token-aware chat history for LangChain, one session per ``session_id``.

    Every message is stored losslessly (tool calls, images, ids, metadata) in a
    :class:`~offprompt.conversation.ConversationMemory`; by default in the embedded
    SQLite file (``$OFFPROMPT_HOME/memory.db`` or ``./.offprompt/memory.db``), so the
    history survives restarts and is shared by every process using that file, and the
    LlamaIndex adapter reads the same session.

    Args:
        session_id: The conversation.
        memory: An existing ``ConversationMemory`` (or ``SummaryConversationMemory``)
            whose ``session_id`` is ``session_id``.
        store: Any offprompt ``ConversationStore`` (``SQLiteStore``, ``QdrantStore``,
            ``InMemoryStore``).
        path: A SQLite file (instead of ``store``). Opened by
            :func:`~offprompt.stores.open_store`: every history (and LlamaIndex memory) of
            the process on that file shares one store, so a ``get_session_history``
            factory that builds a history per call opens the file once.
        max_tokens: When set, :attr:`messages` is the newest whole runs that fit this
            many tokens (system prompt kept, tool calls never split from results);
            otherwise the full history.
        tracer: Receives the memory's trace events (write, window...), e.g. a
            :class:`~offprompt_langchain.tracing.OffpromptCallbackTracer` (not with ``memory=``).
        tokenizer: Counts each message once, when stored (tiktoken ``o200k_base``).

    Attributes:
        memory: The underlying conversation memory.
        max_tokens: The budget of :attr:`messages`, or ``None``.

    Raises:
        ValidationError: More than one of ``memory``/``store``/``path``, a ``memory``
            of another session, or a bad ``max_tokens``.

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> history = OffpromptChatMessageHistory("user-42", store=InMemoryStore())
        >>> history.add_user_message("My code is 7431.")
        >>> history.add_ai_message("Noted.")
        >>> [m.type for m in history.messages]
        ['human', 'ai']

        In a chain (the factory gets the session id from the config)::

            chain_with_history = RunnableWithMessageHistory(
                chain, lambda session_id: OffpromptChatMessageHistory(session_id, max_tokens=4000),
                input_messages_key="question", history_messages_key="history",
            )
    """

    def __init__(
        self,
        session_id: str,
        *,
        memory: ConversationMemory | None = None,
        store: BaseStore | None = None,
        path: str | os.PathLike[str] | None = None,
        max_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.max_tokens = _check_budget(max_tokens)
        self.memory = open_memory(
            session_id, memory=memory, store=store, path=path, tokenizer=tokenizer, tracer=tracer
        )

    def __repr__(self) -> str:
        return (
            f"OffpromptChatMessageHistory(session_id={self.session_id!r}, "
            f"store={self.memory.store!r}, max_tokens={self.max_tokens})"
        )

    @property
    def session_id(self) -> str:
        """The conversation this history reads and writes."""
        return self.memory.session_id

    # -- reading ---------------------------------------------------------------------
    @property  # type: ignore[override]
    def messages(self) -> list[BaseMessage]:
        """The full history, or the window of ``max_tokens`` when it is set.

        Assigning a list replaces the whole history.
        """
        if self.max_tokens is not None:
            return to_langchain(self.memory.window(self.max_tokens))
        return to_langchain(self.memory.messages())

    @messages.setter
    def messages(self, messages: Sequence[BaseMessage]) -> None:
        self.memory.replace(from_langchain(messages))

    def window(self, max_tokens: int, *, reserve: int = 0) -> list[BaseMessage]:
        """The newest whole runs that fit ``max_tokens - reserve`` tokens (system kept).

        Example:
            >>> from offprompt.stores import InMemoryStore
            >>> history = OffpromptChatMessageHistory("s", store=InMemoryStore())
            >>> history.add_messages([("system", "Be brief."), ("human", "hi"), ("ai", "hello")])
            >>> [m.type for m in history.window(1000)]
            ['system', 'human', 'ai']
        """
        return to_langchain(self.memory.window(max_tokens, reserve=reserve))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages` (store reads in a worker thread)."""
        if self.max_tokens is not None:
            return to_langchain(await self.memory.awindow(self.max_tokens))
        return to_langchain(await self.memory.amessages())

    async def awindow(self, max_tokens: int, *, reserve: int = 0) -> list[BaseMessage]:
        """Async twin of :meth:`window`."""
        return to_langchain(await self.memory.awindow(max_tokens, reserve=reserve))

    # -- writing ---------------------------------------------------------------------
    def add_messages(self, messages: Sequence[Any]) -> None:
        """Store messages in order, in one transaction (all converted first).

        Accepts LangChain messages and whatever ``convert_to_messages`` accepts.
        """
        self.memory.add_messages(from_langchain(messages))

    async def aadd_messages(self, messages: Sequence[Any]) -> None:
        """Async twin of :meth:`add_messages`."""
        await self.memory.aadd_messages(from_langchain(messages))

    def clear(self) -> None:
        """Delete the session's messages."""
        self.memory.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.memory.aclear()
