"""``OffpromptMemoryService``: ADK's ``BaseMemoryService`` on an offprompt store.

The memories of an app's user are the events of the sessions added to memory, each an
offprompt message (:mod:`offprompt.interop.adk`, the event kept whole) in the user's
memory partition (see :mod:`offprompt_adk._layout`), one store conversation per ADK
session. Events without content are left out, as ADK's ``InMemoryMemoryService`` leaves
them out. :meth:`OffpromptMemoryService.search_memory` ranks events by ADK's own keyword
rule (the events sharing the most words with the query, ten at most, Latin runs of
mixed-script words matched on their own), so it answers as the in-memory service does,
durably and across processes. A deleted memory stays deleted when its session is added
again.
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Mapping, Sequence

from google.adk.events.event import Event

# private-ok: ADK's memory helpers, so ranking matches its in-memory service
from google.adk.memory import _utils
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse

# private-ok: ADK's own keyword ranking, reused to match its in-memory service
from google.adk.memory.in_memory_memory_service import (
    _extract_searchable_words,
    _extract_words_lower,
)
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session

from offprompt.interop.adk import message_from_event, native_event
from offprompt.scope import Scope
from offprompt.stores import BaseStore
from offprompt.tokens import TiktokenTokenizer
from offprompt_adk._layout import StoreHolder, user_scope

__all__ = ["OffpromptMemoryService"]

_MEMORY_RUN = "adk-memory"
_DELETED_RUN = "adk-memory-deleted"
_DELETED_SESSION = "deleted"
_UNKNOWN_SESSION_ID = "__unknown_session_id__"
_MAX_SEARCH_RESULTS = 10


def _has_content(event: Event) -> bool:
    return bool(event.content and event.content.parts)


def _score(words_in_query: set[str], event: Event) -> int:
    parts = event.content.parts if event.content and event.content.parts else []
    text = " ".join(part.text for part in parts if part.text)
    words = _extract_searchable_words(text)
    if not words:
        return 0
    lowered = unicodedata.normalize("NFC", text).lower()
    return sum(1 for w in words_in_query if w in words or (not w.isascii() and w in lowered))


class OffpromptMemoryService(BaseMemoryService):
    """ADK memory in an offprompt store: a SQLite file, or any offprompt store.

    Pass it as ``Runner(memory_service=...)`` (the ``load_memory`` and
    ``preload_memory`` tools search it); I/O runs in worker threads.

    Args:
        path: A SQLite file (shared per file in this process); with neither ``path``
            nor ``store``, the default file.
        store: Any offprompt store; it stays the caller's to close.

    Raises:
        ValidationError: Both ``path`` and ``store``, or a bad one.

    Example:
        >>> import asyncio
        >>> from google.genai import types
        >>> from offprompt.stores import InMemoryStore
        >>> service = OffpromptMemoryService(store=InMemoryStore())
        >>> event = Event(author="user", content=types.Content(parts=[types.Part(text="I code in Python")]))
        >>> asyncio.run(service.add_session_to_memory(Session(app_name="a", user_id="u", id="s", events=[event])))
        >>> found = asyncio.run(service.search_memory(app_name="a", user_id="u", query="python"))
        >>> found.memories[0].content.parts[0].text
        'I code in Python'
    """

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, store: BaseStore | None = None
    ) -> None:
        self._holder = StoreHolder(path=path, store=store)
        self._tokenizer = TiktokenTokenizer()

    @property
    def store(self) -> BaseStore:
        """The offprompt store the memories live in."""
        return self._holder.store

    def close(self) -> None:
        """Release the store if this service opened it (``path=``); idempotent."""
        self._holder.close()

    def _deleted(self, app_name: str, user_id: str) -> set[str]:
        found = self.store.get_state(
            _DELETED_SESSION, "ids", scope=user_scope(app_name, user_id, _DELETED_RUN)
        )
        return set(found) if isinstance(found, list) else set()

    def _events(self, session_id: str, scope: Scope) -> list[Event]:
        events = []
        for item in self.store.read(session_id, scope=scope):
            native = native_event(item.message)
            if native is not None:
                events.append(Event.model_validate_json(json.dumps(native)))
        return events

    def _append(self, session_id: str, scope: Scope, events: Sequence[Event]) -> None:
        if not events:
            return
        messages = [
            message_from_event(json.loads(e.model_dump_json(exclude_none=True))) for e in events
        ]
        tokens = [self._tokenizer.count_message(m) for m in messages]
        self.store.append(session_id, messages, tokens, scope=scope)

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's events (replacing what an earlier add remembered)."""
        scope = user_scope(session.app_name, session.user_id, _MEMORY_RUN)
        events = [e.model_copy(deep=True) for e in session.events if _has_content(e)]

        def work() -> None:
            deleted = self._deleted(session.app_name, session.user_id)
            self.store.delete_session(session.id, scope=scope)
            self._append(session.id, scope, [e for e in events if e.id not in deleted])

        await self._holder.run(work)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember ``events`` too (a delta: events already remembered are skipped)."""
        scope = user_scope(app_name, user_id, _MEMORY_RUN)
        conversation = session_id or _UNKNOWN_SESSION_ID
        fresh = [e.model_copy(deep=True) for e in events if _has_content(e)]

        def work() -> None:
            skip = self._deleted(app_name, user_id) | {
                e.id for e in self._events(conversation, scope)
            }
            added = []
            for event in fresh:
                if event.id not in skip:
                    added.append(event)
                    skip.add(event.id)
            self._append(conversation, scope, added)

        await self._holder.run(work)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The (at most ten) remembered events sharing the most words with ``query``."""
        scope = user_scope(app_name, user_id, _MEMORY_RUN)

        def work() -> list[Event]:
            found: list[Event] = []
            for info in self.store.sessions(scope=scope):
                if info.scope is not None and info.scope.run == _MEMORY_RUN:
                    found.extend(self._events(info.session_id, scope))
            return found

        events = await self._holder.run(work)
        words_in_query = _extract_words_lower(query)
        scored: list[tuple[int, MemoryEntry]] = []
        for event in events:
            score = _score(words_in_query, event)
            if score and event.content is not None:
                entry = MemoryEntry(
                    id=event.id,
                    content=event.content,
                    author=event.author,
                    timestamp=_utils.format_timestamp(event.timestamp),
                )
                scored.append((score, entry))
        scored.sort(key=lambda pair: -pair[0])
        return SearchMemoryResponse(memories=[m for _, m in scored[:_MAX_SEARCH_RESULTS]])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget the memory ``memory_id`` (an event id), also for later adds."""
        if not memory_id:
            return
        scope = user_scope(app_name, user_id, _MEMORY_RUN)

        def work() -> None:
            hit = False
            for info in self.store.sessions(scope=scope):
                if info.scope is None or info.scope.run != _MEMORY_RUN:
                    continue
                events = self._events(info.session_id, scope)
                kept = [e for e in events if e.id != memory_id]
                if len(kept) != len(events):
                    hit = True
                    self.store.delete_session(info.session_id, scope=scope)
                    self._append(info.session_id, scope, kept)
            if hit:
                deleted = sorted(self._deleted(app_name, user_id) | {memory_id})
                where = user_scope(app_name, user_id, _DELETED_RUN)
                self.store.set_state(_DELETED_SESSION, "ids", deleted, scope=where)

        await self._holder.run(work)
