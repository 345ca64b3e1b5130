"""``OffpromptMemory``: a LlamaIndex ``BaseMemory`` on offprompt's conversation memory.

It goes wherever LlamaIndex takes ``memory=``: ``SimpleChatEngine``,
``CondensePlusContextChatEngine``, ``FunctionAgent`` / ``ReActAgent`` / ``AgentWorkflow``
runs. Every message is stored losslessly in a :class:`~offprompt.stores.ConversationStore`
(the embedded SQLite file by default, so a restart continues the conversation), and
:meth:`OffpromptMemory.get` returns the :meth:`ConversationMemory.window
<offprompt.conversation.ConversationMemory.window>`: the system prompt(s), then the newest
whole runs that fit ``token_limit``; it never starts on an assistant or tool message and
never separates a tool result from its call. Token counts are computed once per message,
when it is stored, so ``get`` costs the same on a long history as on a short one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import BaseMemory

from offprompt.adapter_kit import (
    ESCAPED_SURROGATES_META,
    escape_in_run,
    has_lone_surrogate,
)
from offprompt.conversation import ConversationMemory, Window
from offprompt.conversation.opening import open_memory
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.stores import BaseStore, InMemoryStore, SQLiteStore, release_store
from offprompt.tokens import Tokenizer
from offprompt.trace import Tracer
from offprompt_llamaindex.convert import (
    from_llamaindex,
    message_from_llamaindex,
    to_llamaindex,
)

__all__ = ["DEFAULT_TOKEN_LIMIT", "OffpromptMemory"]

DEFAULT_TOKEN_LIMIT = 3000
# Share of an LLM's context window used when only ``llm`` is given (ChatMemoryBuffer's).
_LLM_TOKEN_RATIO = 0.75
StoreKind = Literal["sqlite", "memory", "other"]


def _check_limit(token_limit: Any) -> int:
    if isinstance(token_limit, bool) or not isinstance(token_limit, int) or token_limit < 1:
        raise ValidationError(f"token_limit must be an int >= 1, got {token_limit!r}")
    return token_limit


logger = logging.getLogger("offprompt.llamaindex")


def _storable(messages: list[ChatMessage]) -> list[Message]:
    """The messages converted; lone surrogates escaped and flagged instead of refused.

    The core's rule for text arriving inside an agent run
    (:func:`offprompt._validation.escape_in_run`): refusing would crash a run that works
    with LlamaIndex's own memory, so a message holding them is stored with each written
    as its ``\\udXXX`` escape, flagged in ``meta["offprompt_escaped_surrogates"]`` and
    logged: visibly altered, never silently. Other bad input is still refused.
    """
    try:
        return from_llamaindex(list(messages))
    except ValidationError:
        dumped = [m.model_dump() if isinstance(m, ChatMessage) else None for m in messages]
        if not any(has_lone_surrogate(d) for d in dumped):
            raise
    converted = []
    for message, data in zip(messages, dumped, strict=True):
        if data is None:  # not a ChatMessage: refused, with the converter's error
            converted.append(message_from_llamaindex(message))
            continue
        escaped, changed = escape_in_run(data, what=f"a {message.role.value} message")
        if not changed:
            converted.append(message_from_llamaindex(message))
            continue
        stored = message_from_llamaindex(ChatMessage.model_validate(escaped))
        stored.meta[ESCAPED_SURROGATES_META] = True
        converted.append(stored)
    return converted


class OffpromptMemory(BaseMemory):
    """Durable, token-limited chat memory for LlamaIndex chat engines and agents.

    Build it with :meth:`from_defaults`. Serialising (``to_dict``, ``to_json``,
    ``model_dump``, pickle) records the session and where the store lives (the SQLite
    path), never the store itself; an :class:`~offprompt.stores.InMemoryStore` has no
    location, so its messages are included instead, as LlamaIndex's ``ChatMemoryBuffer``
    does. For another store (Qdrant), pass it again: ``OffpromptMemory.from_dict(data,
    store=store)``.

    Attributes:
        session_id: The conversation; the same id on the same store is the same history,
            whichever adapter (LangChain, LlamaIndex) wrote it.
        token_limit: Budget of :meth:`get`.
        path: The SQLite file, when the store is a :class:`~offprompt.stores.SQLiteStore`.
        store_kind: ``"sqlite"``, ``"memory"`` or ``"other"``.

    Example:
        >>> import tempfile, pathlib
        >>> from llama_index.core.llms import ChatMessage
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "memory.db"
        >>> memory = OffpromptMemory.from_defaults(session_id="u1", token_limit=500, path=path)
        >>> memory.put(ChatMessage(role="user", content="Hi, I'm Ada."))
        >>> OffpromptMemory.from_defaults(session_id="u1", path=path).get()[0].content
        "Hi, I'm Ada."
    """

    session_id: str = Field(default="default", description="The conversation's id.")
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, description="Budget of get().")
    path: str | None = Field(default=None, description="SQLite file of the store, if any.")
    store_kind: StoreKind = Field(default="sqlite", description="What kind of store it is.")
    chat_history: list[dict[str, Any]] | None = Field(
        default=None,
        description="Only in serialised data of an in-memory store: its messages.",
    )

    _memory: ConversationMemory = PrivateAttr()
    _holds_shared: bool = PrivateAttr(default=False)

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        *,
        session_id: str = "default",
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        path: str | Path | None = None,
        store: BaseStore | None = None,
        memory: ConversationMemory | None = None,
        tokenizer: Tokenizer | None = None,
        chat_history: Sequence[ChatMessage | dict[str, Any]] | None = None,
        store_kind: StoreKind | None = None,
        tracer: Tracer | None = None,
        **kwargs: Any,
    ) -> None:
        token_limit = _check_limit(token_limit)
        if kwargs:
            raise ValidationError(f"OffpromptMemory got unexpected arguments: {sorted(kwargs)}")
        if memory is None and store is None:
            if store_kind == "other":
                raise ValidationError(
                    "this OffpromptMemory was serialised with a store that has no path "
                    "(e.g. a QdrantStore); pass it again: from_dict(data, store=store)"
                )
            if store_kind == "memory" and path is None:
                store = InMemoryStore()
        # path= (or nothing: $OFFPROMPT_HOME/memory.db or ./.offprompt) is the process's
        # one shared store of that file, given back by close().
        holds_shared = memory is None and store is None
        conversation = open_memory(
            None if memory is not None else session_id,
            memory=memory,
            store=store,
            path=path,
            tokenizer=tokenizer,
            tracer=tracer,
        )
        store = conversation.store
        kind: StoreKind = (
            "sqlite"
            if isinstance(store, SQLiteStore)
            else "memory"
            if isinstance(store, InMemoryStore)
            else "other"
        )
        # Convert before anything is written: bad history must not wipe the session.
        history = None if chat_history is None else from_llamaindex(list(chat_history))
        super().__init__(
            session_id=conversation.session_id,
            token_limit=token_limit,
            path=str(store.path) if isinstance(store, SQLiteStore) else None,
            store_kind=kind,
            chat_history=None,
        )
        self._memory = conversation
        self._holds_shared = holds_shared
        if history is not None:
            conversation.replace(history)

    @classmethod
    def class_name(cls) -> str:
        return "OffpromptMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]  # noqa: PLR0913 keyword-only public options
        cls,
        session_id: str | None = None,
        token_limit: int | None = None,
        *,
        store: BaseStore | None = None,
        path: str | Path | None = None,
        chat_history: Sequence[ChatMessage] | None = None,
        llm: LLM | None = None,
        tokenizer: Tokenizer | None = None,
        memory: ConversationMemory | None = None,
        tracer: Tracer | None = None,
        **kwargs: Any,
    ) -> OffpromptMemory:
        """Build a memory; with no arguments, session ``"default"`` in the default SQLite file.

        Args:
            session_id: The conversation (``"default"`` if omitted).
            token_limit: Budget of :meth:`get`; 75% of ``llm``'s context window when only
                ``llm`` is given, else 3000.
            store: Any offprompt ``ConversationStore`` (``SQLiteStore``, ``QdrantStore``,
                ``InMemoryStore``).
            path: A SQLite file (instead of ``store``); ``None`` means
                ``$OFFPROMPT_HOME/memory.db`` or ``./.offprompt/memory.db``.
            chat_history: If given, **replaces** the session's messages (as
                ``ChatMemoryBuffer.from_defaults`` does).
            llm: Only used to size ``token_limit``.
            tokenizer: Counts each message once, when stored (tiktoken ``o200k_base``).
            memory: An existing ``ConversationMemory`` to wrap (its store and session).
            tracer: Receives the memory's trace events (``write``, ``window``...), e.g.
                :class:`~offprompt_llamaindex.tracing.LlamaIndexTracer` (not with ``memory=``).

        Raises:
            ValidationError: An unknown argument, a bad ``token_limit`` or history, or
                both ``store`` and ``path``.

        Example:
            >>> from offprompt.stores import InMemoryStore
            >>> OffpromptMemory.from_defaults(session_id="s", token_limit=100, store=InMemoryStore()).get()
            []
        """
        if kwargs:
            raise ValidationError(
                f"OffpromptMemory.from_defaults got unexpected arguments: {sorted(kwargs)}"
            )
        if token_limit is None:
            token_limit = (
                int(llm.metadata.context_window * _LLM_TOKEN_RATIO)
                if llm is not None
                else DEFAULT_TOKEN_LIMIT
            )
        return cls(
            session_id=session_id if session_id is not None else "default",
            token_limit=token_limit,
            store=store,
            path=path,
            memory=memory,
            tokenizer=tokenizer,
            chat_history=chat_history,
            tracer=tracer,
        )

    # -- what else callers can reach ------------------------------------------------------
    @property
    def conversation(self) -> ConversationMemory:
        """The underlying :class:`~offprompt.conversation.ConversationMemory`."""
        return self._memory

    @property
    def store(self) -> BaseStore:
        """The store the messages live in."""
        return self._memory.store

    @property
    def tokenizer_fn(self) -> Callable[[str], list[int]]:
        """Text → tokens with the memory's tokenizer.

        ``SimpleChatEngine`` uses it to count its prefix (system) messages and passes the
        count to :meth:`get` as ``initial_token_count``.
        """
        tokenizer = self._memory.tokenizer
        encode = getattr(tokenizer, "encode", None)
        if callable(encode):
            return encode  # type: ignore[no-any-return]
        return lambda text: [0] * tokenizer.count(text)

    def window(self, initial_token_count: int = 0) -> Window:
        """The offprompt :class:`~offprompt.conversation.Window` behind :meth:`get`.

        It carries ``tokens``, ``dropped`` and ``overflow`` besides the messages.
        """
        if isinstance(initial_token_count, bool) or not isinstance(initial_token_count, int):
            raise ValidationError(
                f"initial_token_count must be an int, got {initial_token_count!r}"
            )
        if initial_token_count < 0:
            raise ValidationError(
                f"initial_token_count must not be negative, got {initial_token_count}"
            )
        if initial_token_count > self.token_limit:
            # ChatMemoryBuffer's wording, and a ValueError like theirs.
            raise ValidationError("Initial token count exceeds token limit")
        if initial_token_count == self.token_limit:
            return Window(budget=0, dropped=len(self._memory))
        return self._memory.window(self.token_limit, reserve=initial_token_count)

    # -- BaseMemory -----------------------------------------------------------------------
    def get(
        self, input: Any | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """The newest messages that fit ``token_limit - initial_token_count`` tokens.

        System messages before the first user message are always kept. The rest is whole
        runs (a user message, its tool traffic, the answer), newest first, so the result
        never starts on an assistant or tool message. If not even the newest run fits,
        the result is the system message(s) and the newest user message. With
        ``initial_token_count == token_limit`` there is no room and the result is empty.

        Args:
            input: The user's input (accepted for LlamaIndex's interface; unused).
            initial_token_count: Tokens already spent by the caller (prefix messages).

        Raises:
            ValidationError: ``initial_token_count`` above ``token_limit`` (a
                ``ValueError``, as with ``ChatMemoryBuffer``) or negative.
        """
        return to_llamaindex(self.window(initial_token_count))

    def get_all(self) -> list[ChatMessage]:
        """Every stored message of the session, in order."""
        return to_llamaindex(self._memory.messages())

    def put(self, message: ChatMessage) -> None:
        """Store one message (counted once, now)."""
        self._memory.add_messages(_storable([message]))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store messages in order, in one store transaction (all or none)."""
        self._memory.add_messages(_storable(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session's messages (converted first: bad input deletes nothing)."""
        self._memory.replace(_storable(messages))

    def reset(self) -> None:
        """Delete the session's messages (and its state) from the store."""
        self._memory.clear()

    # Async twins: conversion and store I/O both run in a worker thread.
    async def aget(
        self, input: Any | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async twin of :meth:`get`."""
        return await asyncio.to_thread(self.get, input, initial_token_count)

    async def aget_all(self) -> list[ChatMessage]:
        """Async twin of :meth:`get_all`."""
        return await asyncio.to_thread(self.get_all)

    async def aput(self, message: ChatMessage) -> None:
        """Async twin of :meth:`put`."""
        await asyncio.to_thread(self.put, message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`put_messages`."""
        await asyncio.to_thread(self.put_messages, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`set`."""
        await asyncio.to_thread(self.set, messages)

    async def areset(self) -> None:
        """Async twin of :meth:`reset`."""
        await asyncio.to_thread(self.reset)

    # -- serialisation --------------------------------------------------------------------
    @field_serializer("chat_history")
    def _dump_history(self, value: Any) -> list[dict[str, Any]] | None:
        # Only an in-memory store has no location to point at: carry its messages.
        if self.store_kind != "memory":
            return None
        return [m.model_dump(mode="json") for m in self.get_all()]

    def to_string(self) -> str:
        """JSON of :meth:`to_dict` (``ChatMemoryBuffer``'s name for it)."""
        return self.to_json()

    @classmethod
    def from_string(cls, json_str: str) -> OffpromptMemory:
        """Inverse of :meth:`to_string`."""
        return cls.from_json(json_str)

    def __getstate__(self) -> dict[str, Any]:
        # Pickle the description (session, path), never connections or the tokenizer.
        return {"offprompt_memory": self.to_dict()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        data = dict(state["offprompt_memory"])
        data.pop("class_name", None)
        type(self).__init__(self, **data)

    def close(self) -> None:
        """Close the store (its connections); the memory is unusable afterwards.

        A store opened from ``path=`` is shared by every memory and history of the
        process on that file: it is closed when the last of them closes (see
        :func:`~offprompt.stores.open_store`).
        """
        if self._holds_shared:
            self._holds_shared = False
            release_store(self._memory.store)
        else:
            self._memory.store.close()
