"""``OffpromptChatStore``: durable storage for LlamaIndex's modern ``Memory``.

LlamaIndex's ``Memory`` keeps its FIFO queue in an ``AsyncDBChatStore``; the default is
an in-memory SQLite database, gone on restart. ``Memory.from_defaults(chat_store=
OffpromptChatStore(...))`` puts the queue on an offprompt
:class:`~offprompt.stores.ConversationStore` instead (the embedded SQLite file by
default, or Qdrant), where:

* a LlamaIndex ``key`` is an offprompt session id, so the LangChain adapter and
  :class:`~offprompt_llamaindex.OffpromptMemory` read the same messages;
* messages ``Memory`` flushes into its memory blocks are **archived**, never deleted:
  the status lives in the session's state (key ``llamaindex.archived``, a list of
  ``[start, end)`` sequence ranges), the messages stay where they were, in order.

``delete_message(key, idx)`` takes the message's sequence number in the store as
``idx`` (what ``SQLAlchemyChatStore`` calls the row id).

Archiving is a read-modify-write of that state document, serialised by a lock inside the
process; two processes archiving the same session at the same moment could lose one
status update (never a message).
"""

from __future__ import annotations

import asyncio
import bisect
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr, model_serializer
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from offprompt.errors import ValidationError
from offprompt.stores import (
    BaseStore,
    IndexEntry,
    SQLiteStore,
    open_store,
    validate_session_id,
)
from offprompt.tokens import Tokenizer
from offprompt.trace import TraceEvent, Tracer, emit_safely
from offprompt_llamaindex.convert import from_llamaindex, to_llamaindex

__all__ = ["ARCHIVED_STATE_KEY", "OffpromptChatStore"]

ARCHIVED_STATE_KEY = "llamaindex.archived"


def _contains(ranges: list[list[int]], starts: list[int], seq: int) -> bool:
    i = bisect.bisect_right(starts, seq) - 1
    return i >= 0 and seq < ranges[i][1]


def _add(ranges: list[list[int]], seqs: Iterable[int]) -> list[list[int]]:
    """Union of ``ranges`` and ``seqs`` as sorted, merged ``[start, end)`` ranges."""
    items = sorted([*ranges, *([s, s + 1] for s in seqs)])
    merged: list[list[int]] = []
    for start, end in items:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _spans(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted ``seqs`` as ``[start, end)`` pairs."""
    spans: list[tuple[int, int]] = []
    for seq in seqs:
        if spans and spans[-1][1] == seq:
            spans[-1] = (spans[-1][0], seq + 1)
        else:
            spans.append((seq, seq + 1))
    return spans


def _check_status(status: Any, *, optional: bool) -> MessageStatus | None:
    if status is None and optional:
        return None
    try:
        return MessageStatus(status)
    except ValueError:
        raise ValidationError(
            f"status must be a MessageStatus ({', '.join(s.value for s in MessageStatus)})"
            f"{' or None' if optional else ''}, got {status!r}"
        ) from None


def _check_count(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValidationError(f"{name} must be a non-negative int, got {n!r}")
    return n


class OffpromptChatStore(AsyncDBChatStore):
    """An ``AsyncDBChatStore`` on an offprompt store: durable, archived messages kept.

    Args:
        store: Any offprompt ``ConversationStore``; a :class:`SQLiteStore` at ``path``
            when omitted.
        path: The SQLite file when ``store`` is omitted; ``None`` means
            ``$OFFPROMPT_HOME/memory.db`` or ``./.offprompt/memory.db``. Opened by
            :func:`~offprompt.stores.open_store`: one store per file per process, shared
            with the memories and histories on it.
        tokenizer: Counts each message once, when stored (offprompt's default).
        tracer: Receives a ``write`` trace event per append, e.g.
            :class:`~offprompt_llamaindex.tracing.LlamaIndexTracer`.

    Attributes:
        path: The SQLite file, when the store is a :class:`SQLiteStore`.

    Example:
        >>> import tempfile, pathlib
        >>> from llama_index.core.memory import Memory
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "memory.db"
        >>> memory = Memory.from_defaults(session_id="u1", chat_store=OffpromptChatStore(path=path))
        >>> memory.put(ChatMessage(role="user", content="remember me"))
        >>> again = Memory.from_defaults(session_id="u1", chat_store=OffpromptChatStore(path=path))
        >>> again.get()[0].content
        'remember me'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str | None = None

    _store: BaseStore = PrivateAttr()
    _tokenizer: Tokenizer = PrivateAttr()
    _tracer: Tracer | None = PrivateAttr(default=None)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        path: str | Path | None = None,
        tokenizer: Tokenizer | None = None,
        tracer: Tracer | None = None,
        class_name: str | None = None,
        store_type: str | None = None,
    ) -> None:
        # class_name and store_type come back from model_dump(), so that
        # model_validate(dump) and from_dict(dump) rebuild the store like
        # SQLAlchemyChatStore does; only a SQLite file can be reopened from a dump.
        if class_name is not None and class_name != self.class_name():
            raise ValidationError(
                f"these settings are for {class_name!r}, not {self.class_name()!r}"
            )
        if store is None and store_type not in (None, SQLiteStore.__name__):
            raise ValidationError(
                f"the dumped chat store used a {store_type}, which a dump cannot reopen;"
                " pass store= to rebuild it"
            )
        if store is not None and path is not None:
            raise ValidationError("give at most one of store and path, not both")
        # path= (or nothing): the process's one shared store of that file (open_store).
        store = open_store(store, path=path)
        if tokenizer is None:
            from offprompt.tokens import default_tokenizer

            tokenizer = default_tokenizer()
        super().__init__(path=str(store.path) if isinstance(store, SQLiteStore) else None)
        self._store = store
        self._tokenizer = tokenizer
        self._tracer = tracer

    @classmethod
    def class_name(cls) -> str:
        return "OffpromptChatStore"

    @property
    def store(self) -> BaseStore:
        """The offprompt store behind this chat store."""
        return self._store

    @model_serializer()
    def _dump(self) -> dict[str, Any]:
        # The store is referenced by its location, never copied.
        return {
            "class_name": self.class_name(),
            "path": self.path,
            "store_type": type(self._store).__name__,
        }

    # -- sync core (each public coroutine runs one of these in a worker thread) -----------
    def _archived(self, key: str) -> list[list[int]]:
        value = self._store.get_state(key, ARCHIVED_STATE_KEY)
        if not isinstance(value, list):
            return []
        return sorted([int(r[0]), int(r[1])] for r in value if isinstance(r, list) and len(r) == 2)

    def _index(self, key: str, status: MessageStatus | None) -> list[IndexEntry]:
        entries = self._store.read_index(key)
        if status is None:
            return entries
        ranges = self._archived(key)
        starts = [r[0] for r in ranges]
        archived = status is MessageStatus.ARCHIVED
        return [e for e in entries if _contains(ranges, starts, e.seq) == archived]

    def _read(self, key: str, seqs: Sequence[int]) -> list[ChatMessage]:
        if not seqs:
            return []
        wanted = set(seqs)
        stored = self._store.read(key, start=seqs[0], end=seqs[-1] + 1)
        return to_llamaindex([s.message for s in stored if s.seq in wanted])

    def _get(
        self, key: str, status: MessageStatus | None, limit: int | None, offset: int | None
    ) -> list[ChatMessage]:
        with self._lock:
            seqs = [e.seq for e in self._index(key, status)]
        start = offset or 0
        seqs = seqs[start:] if limit is None else seqs[start : start + limit]
        return self._read(key, seqs)

    def _append(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        items = from_llamaindex(messages)  # converted first: bad input stores nothing
        if not items:
            return
        counts = [self._tokenizer.count_message(m) for m in items]
        with self._lock:
            seqs = self._store.append(key, items, counts)
            if status is MessageStatus.ARCHIVED:
                self._store.set_state(key, ARCHIVED_STATE_KEY, _add(self._archived(key), seqs))
        emit_safely(
            self._tracer,
            TraceEvent(
                "write",
                session_id=key,
                tokens=sum(counts),
                included=[
                    {"seq": s, "role": m.role, "tokens": c}
                    for s, c, m in zip(seqs, counts, items, strict=True)
                ],
                detail={"status": str(status.value)},
            ),
        )

    def _set(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        from_llamaindex(messages)  # validate before deleting anything
        with self._lock:
            self._delete_all(key, None)
            self._append(key, messages, status)

    def _delete_one(self, key: str, idx: int) -> ChatMessage | None:
        with self._lock:
            found = self._store.read(key, start=idx, end=idx + 1)
            if not found:
                return None
            self._store.delete_range(key, idx, idx + 1)
        return to_llamaindex([found[0].message])[0]

    def _delete_all(self, key: str, status: MessageStatus | None) -> None:
        with self._lock:
            if status is None:
                self._store.delete_session(key)
                return
            for start, end in _spans([e.seq for e in self._index(key, status)]):
                self._store.delete_range(key, start, end)

    def _oldest(self, key: str, n: int, *, archive: bool) -> list[ChatMessage]:
        with self._lock:
            seqs = [e.seq for e in self._index(key, MessageStatus.ACTIVE)][:n]
            messages = self._read(key, seqs)
            if not seqs:
                return []
            if archive:
                self._store.set_state(key, ARCHIVED_STATE_KEY, _add(self._archived(key), seqs))
            else:
                for start, end in _spans(seqs):
                    self._store.delete_range(key, start, end)
        return messages

    def _keys(self) -> list[str]:
        return [s.session_id for s in self._store.sessions() if s.message_count > 0]

    # -- AsyncDBChatStore ---------------------------------------------------------------
    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Messages of ``key`` with ``status`` (all if ``None``), oldest first."""
        validate_session_id(key)
        checked = _check_status(status, optional=True)
        if limit is not None:
            _check_count(limit, "limit")
        if offset is not None:
            _check_count(offset, "offset")
        return await asyncio.to_thread(self._get, key, checked, limit, offset)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """How many messages of ``key`` have ``status`` (all if ``None``)."""
        validate_session_id(key)
        checked = _check_status(status, optional=True)
        return len(await asyncio.to_thread(self._index, key, checked))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append one message with ``status``."""
        await self.add_messages(key, [message], status)

    async def add_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Append messages in order, in one store transaction."""
        validate_session_id(key)
        checked = _check_status(status, optional=False)
        assert checked is not None
        if isinstance(messages, ChatMessage):
            raise ValidationError("add_messages takes a list of ChatMessage, got one ChatMessage")
        await asyncio.to_thread(self._append, key, list(messages), checked)

    async def set_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Replace every message of ``key`` (archived ones too) with ``messages``."""
        validate_session_id(key)
        checked = _check_status(status, optional=False)
        assert checked is not None
        if isinstance(messages, ChatMessage):
            raise ValidationError("set_messages takes a list of ChatMessage, got one ChatMessage")
        await asyncio.to_thread(self._set, key, list(messages), checked)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message with sequence number ``idx``; return it (``None`` if absent)."""
        validate_session_id(key)
        _check_count(idx, "idx")
        return await asyncio.to_thread(self._delete_one, key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status``; all of them (and state) if ``None``."""
        validate_session_id(key)
        checked = _check_status(status, optional=True)
        await asyncio.to_thread(self._delete_all, key, checked)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the ``n`` oldest active messages; return them."""
        validate_session_id(key)
        _check_count(n, "n")
        return await asyncio.to_thread(self._oldest, key, n, archive=False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the ``n`` oldest active messages archived (they stay stored); return them."""
        validate_session_id(key)
        _check_count(n, "n")
        return await asyncio.to_thread(self._oldest, key, n, archive=True)

    async def get_keys(self) -> list[str]:
        """Sessions of the store that hold messages."""
        return await asyncio.to_thread(self._keys)

    # Convenience for code without an event loop.
    def archived_ranges(self, key: str) -> list[list[int]]:
        """The archived ``[start, end)`` sequence ranges of ``key`` (for inspection)."""
        return self._archived(validate_session_id(key))
