"""``SummaryConversationMemory``: older runs folded into a running summary.

Raw runs all stay stored; the summary is a view. The summary text and the sequence
number of the first run it does not cover are kept in the store's session state under
``SUMMARY_STATE_KEY``, so they survive restarts and are shared with other processes.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Iterable
from typing import Any

from offprompt.conversation.memory import (
    ConversationMemory,
    Run,
    Window,
    check_budget,
    group_runs,
)
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.retention import RetentionPolicy
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore
from offprompt.summarizers import ExtractiveSummarizer, Summarizer
from offprompt.tokens import Tokenizer, require_codec
from offprompt.trace import Tracer

__all__ = ["SUMMARY_STATE_KEY", "SummaryConversationMemory"]

logger = logging.getLogger("offprompt.conversation")

SUMMARY_STATE_KEY = "offprompt.summary"
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"


class SummaryConversationMemory(ConversationMemory):
    """Conversation memory whose prompt view is a running summary plus the last runs.

    Runs older than the last ``offset`` are folded into a summary by ``summarizer``
    (after each add, and again before each view). The view is: the system prompt(s),
    the summary as a system message, then the runs not yet summarized (normally the
    last ``offset``). If the summarizer raises, the old summary stays, the error is
    logged, those runs stay in the view, and the next add or view retries them:
    nothing is lost. All raw messages stay in the store (:meth:`messages`, :meth:`runs`).

    Args:
        store: As for :class:`ConversationMemory`.
        session_id: The conversation.
        summarizer: Folds runs into the summary; :class:`~offprompt.summarizers.ExtractiveSummarizer`
            (offline, deterministic) by default. LLM summarizers come with the adapters.
        offset: How many of the newest runs stay verbatim.
        tokenizer: As for :class:`ConversationMemory`.
        scope: As for :class:`ConversationMemory`; the summary lives in the same partition.
        retention: As for :class:`ConversationMemory` (raw runs are pruned; the summary
            keeps what they said).
        tracer: As for :class:`ConversationMemory`; also gets ``summary`` events.
        persist_trace: As for :class:`ConversationMemory`.

    Example:
        >>> memory = SummaryConversationMemory(offset=1)
        >>> for q in ("The launch code is 7431.", "What colour is the sky?"):
        ...     memory.add_messages([Message.user(q), Message.assistant("Noted.")])
        >>> "7431" in memory.summary
        True
        >>> [m.role for m in memory.view()]
        ['system', 'user', 'assistant']
    """

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        store: BaseStore | None = None,
        session_id: str = "default",
        *,
        summarizer: Summarizer | None = None,
        offset: int = 2,
        tokenizer: Tokenizer | None = None,
        scope: Scope | None = None,
        retention: RetentionPolicy | None = None,
        tracer: Tracer | None = None,
        persist_trace: bool = False,
    ) -> None:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError(f"offset must be a non-negative int, got {offset!r}")
        super().__init__(
            store,
            session_id,
            tokenizer=tokenizer,
            scope=scope,
            retention=retention,
            tracer=tracer,
            persist_trace=persist_trace,
        )
        self.offset = offset
        if summarizer is None:  # the extractive default cuts sentences: it needs encode/decode
            codec = require_codec(self.tokenizer, what="tokenizer (for the default summarizer)")
            summarizer = ExtractiveSummarizer(tokenizer=codec)
        self.summarizer: Summarizer = summarizer
        self._summary_message: tuple[str, Message, int] | None = None

    # -- state -----------------------------------------------------------------------
    def _state(self) -> tuple[str | None, int | None]:
        state = self.store.get_state(self.session_id, SUMMARY_STATE_KEY)
        if not isinstance(state, dict):
            return None, None
        text = state.get("text")
        next_seq = state.get("next_seq")
        return (
            text if isinstance(text, str) else None,
            next_seq if isinstance(next_seq, int) else None,
        )

    @property
    def summary(self) -> str | None:
        """The current summary, ``None`` before the first fold."""
        return self._state()[0]

    def _first_unsummarized(self, next_seq: int | None) -> int:
        """Index of the first run the summary does not cover (caller holds the lock)."""
        if next_seq is None:
            return 0
        position = bisect.bisect_left(self._seqs, next_seq)
        return bisect.bisect_left(self._index.run_starts, position)

    # -- folding: plan (store), summarize (maybe async), commit (store) -------------------
    def _plan(self) -> tuple[str | None, list[Run], int] | None:
        with self._lock:
            self._sync()
            previous, next_seq = self._state()
            first = self._first_unsummarized(next_seq)
            starts = self._index.run_starts
            keep_from = len(starts) - self.offset
            if keep_from <= first:
                return None
            start = self._seqs[starts[first]]
            end = self._seqs[starts[keep_from]] if keep_from < len(starts) else None
            runs = group_runs(self.store.read(self.session_id, start=start, end=end))[1]
            until = end if end is not None else self._seqs[-1] + 1
            return previous, runs, until

    def _commit(self, text: Any, until: int) -> bool:
        if not isinstance(text, str):
            logger.error(
                "session %r: summarizer returned %s, not str; summary unchanged",
                self.session_id,
                type(text).__name__,
            )
            return False
        self.store.set_state(self.session_id, SUMMARY_STATE_KEY, {"text": text, "next_seq": until})
        self._emit(
            "summary",
            tokens=self.tokenizer.count(text),
            detail={"next_seq": until, "chars": len(text)},
        )
        return True

    def update_summary(self) -> bool:
        """Fold the runs older than the last ``offset`` into the summary now.

        Returns:
            ``True`` if the summary changed; ``False`` if there was nothing to fold or the
            summarizer failed (logged; the runs are retried next time).
        """
        plan = self._plan()
        if plan is None:
            return False
        previous, runs, until = plan
        try:
            text = self.summarizer.summarize(previous, runs)
        except Exception:
            logger.exception(
                "session %r: summarizer failed on %d run(s); the old summary stays and "
                "they are retried next time",
                self.session_id,
                len(runs),
            )
            return False
        return self._commit(text, until)

    async def aupdate_summary(self) -> bool:
        """Async :meth:`update_summary`, awaiting the summarizer's ``asummarize``."""
        plan = await asyncio.to_thread(self._plan)
        if plan is None:
            return False
        previous, runs, until = plan
        try:
            text = await self.summarizer.asummarize(previous, runs)
        except Exception:
            logger.exception(
                "session %r: summarizer failed on %d run(s); the old summary stays and "
                "they are retried next time",
                self.session_id,
                len(runs),
            )
            return False
        return await asyncio.to_thread(self._commit, text, until)

    def add_messages(self, messages: Iterable[Message]) -> None:
        super().add_messages(messages)
        self.update_summary()

    async def aadd_messages(self, messages: Iterable[Message]) -> None:
        """Async twin of :meth:`add_messages` (folds old runs into the summary with ``asummarize``)."""
        await super().aadd_messages(messages)
        await self.aupdate_summary()

    async def aadd_message(self, message: Message) -> None:
        """Async twin of :meth:`add_message`."""
        await self.aadd_messages([message])

    # -- the view --------------------------------------------------------------------
    def _summary_extra(self, text: str | None) -> list[tuple[Message, int]]:
        if not text:
            return []
        cached = self._summary_message
        if cached is None or cached[0] != text:
            message = Message.system(SUMMARY_PREFIX + text, meta={"offprompt_summary": True})
            cached = (text, message, self.tokenizer.count_message(message))
            self._summary_message = cached
        return [(cached[1], cached[2])]

    def _view_window(self, budget: int | None) -> Window:
        with self._lock:
            self._sync()
            text, next_seq = self._state()
            first = self._first_unsummarized(next_seq)
            return self._window(budget, self._summary_extra(text), first)

    def view(self) -> list[Message]:
        """System prompt(s), the summary as a system message, then the unsummarized runs."""
        self.update_summary()
        return list(self._view_window(None))

    def window(self, max_tokens: int, *, reserve: int = 0) -> Window:
        """:meth:`ConversationMemory.window` over :meth:`view`; the summary is always kept."""
        budget = check_budget(max_tokens, reserve)
        self.update_summary()
        return self._view_window(budget)

    async def aview(self) -> list[Message]:
        """Async twin of :meth:`view`."""
        await self.aupdate_summary()
        return list(await asyncio.to_thread(self._view_window, None))

    async def awindow(self, max_tokens: int, *, reserve: int = 0) -> Window:
        """Async twin of :meth:`window`."""
        budget = check_budget(max_tokens, reserve)
        await self.aupdate_summary()
        return await asyncio.to_thread(self._view_window, budget)
