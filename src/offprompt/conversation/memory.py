"""``ConversationMemory``: lossless message history with token-budgeted windows.

Every message is stored with the token count computed when it was added. The memory
keeps, per session, a :class:`~offprompt.conversation.window.RunIndex` (prefix sums of
those counts and the positions where runs start), catching up from the store by sequence
number whenever the store's :class:`~offprompt.stores.SessionVersion` moved (another
thread, process or machine appended or deleted). A window is then one version check,
:func:`~offprompt.conversation.window.select_window` (a binary search) and one range read
of the messages it returns: O(log n + window), never a re-tokenization.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from offprompt.conversation.window import (
    RunIndex,
    WindowPlan,
    select_window,
    window_trace_fields,
)
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.retention import RetentionPolicy, evict_runs
from offprompt.scope import Scope, as_scope
from offprompt.stores.base import (
    BaseStore,
    IndexEntry,
    ScopedStore,
    SessionVersion,
    StoredMessage,
    validate_session_id,
)
from offprompt.stores.memory import InMemoryStore
from offprompt.tokens import Tokenizer, default_tokenizer
from offprompt.trace import (
    InMemoryTracer,
    MultiTracer,
    StoreTracer,
    TraceEvent,
    Tracer,
    emit_safely,
    scope_fields,
)

__all__ = ["ConversationMemory", "Run", "Window", "group_runs"]

logger = logging.getLogger("offprompt.conversation")


@dataclass(frozen=True)
class Run:
    """One user turn: the user message, the tool traffic it caused, the final answer.

    Attributes:
        messages: The run's messages in order; the first is the user message.
        seqs: Their sequence numbers in the store (empty if the run was built by hand).
        tokens: Their stored token counts, summed.

    Example:
        >>> run = Run([Message.user("2+2?"), Message.assistant("4")])
        >>> run.user.text, run.answer.text
        ('2+2?', '4')
    """

    messages: list[Message]
    seqs: list[int] = field(default_factory=list)
    tokens: int = 0

    @property
    def user(self) -> Message | None:
        """The user message that opened the run."""
        first = self.messages[0] if self.messages else None
        return first if first is not None and first.role == "user" else None

    @property
    def answer(self) -> Message | None:
        """The last assistant message that calls no tool (the final answer), if any."""
        for message in reversed(self.messages):
            if message.role == "assistant" and not message.tool_calls:
                return message
        return None

    @property
    def tool_traffic(self) -> list[Message]:
        """Assistant messages that call tools, and the tool results."""
        return [
            m for m in self.messages if m.role == "tool" or (m.role == "assistant" and m.tool_calls)
        ]

    @property
    def start_seq(self) -> int | None:
        """The store sequence number of the run's first message (``None`` when unknown)."""
        return self.seqs[0] if self.seqs else None


class Window(list[Message]):
    """The messages a prompt gets, with how they were chosen.

    A ``list`` of :class:`Message`, so it goes wherever a message list goes.

    Attributes:
        tokens: Stored token counts of the messages in the window, summed.
        budget: ``max_tokens - reserve``.
        dropped: Messages of the history left out.
        overflow: ``True`` when not even the newest run fit and that run is still
            waiting for its answer: the window then holds the system message(s) and the
            newest user message only (and may exceed ``budget``), or, if there is no
            run, system messages over budget. A newest run that already has its final
            answer is never cut: if it does not fit, the window holds no run at all
            (like LlamaIndex's ``ChatMemoryBuffer``), and ``overflow`` is ``True`` only
            if the system messages alone are over budget.
    """

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        tokens: int = 0,
        budget: int = 0,
        dropped: int = 0,
        overflow: bool = False,
    ) -> None:
        super().__init__(messages)
        self.tokens = tokens
        self.budget = budget
        self.dropped = dropped
        self.overflow = overflow

    def __repr__(self) -> str:
        return (
            f"Window({len(self)} messages, tokens={self.tokens}, budget={self.budget}, "
            f"dropped={self.dropped}, overflow={self.overflow})"
        )


def group_runs(stored: Sequence[StoredMessage]) -> tuple[list[StoredMessage], list[Run]]:
    """Split stored messages into the preamble (before the first user message) and runs."""
    preamble: list[StoredMessage] = []
    groups: list[list[StoredMessage]] = []
    for item in stored:
        if item.message.role == "user":
            groups.append([item])
        elif groups:
            groups[-1].append(item)
        else:
            preamble.append(item)
    runs = [
        Run([s.message for s in g], [s.seq for s in g], sum(s.tokens for s in g)) for g in groups
    ]
    return preamble, runs


def is_final_answer(message: Message) -> bool:
    """Whether ``message`` completes a run: an assistant reply that calls no tool."""
    return message.role == "assistant" and not message.tool_calls


def check_budget(max_tokens: Any, reserve: Any) -> int:
    """The history budget ``max_tokens - reserve``; ``ValidationError`` unless both are ints,
    ``max_tokens`` is positive and ``reserve`` leaves room.
    """
    for name, value in (("max_tokens", max_tokens), ("reserve", reserve)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"{name} must be an int, got {value!r}")
    if max_tokens <= 0:
        raise ValidationError(f"max_tokens must be positive, got {max_tokens}")
    if reserve < 0:
        raise ValidationError(f"reserve must not be negative, got {reserve}")
    if reserve >= max_tokens:
        raise ValidationError(
            f"reserve ({reserve}) leaves no room in max_tokens ({max_tokens}) for history"
        )
    return int(max_tokens - reserve)


def check_messages(messages: Any) -> list[Message]:
    """``messages`` (one message or an iterable of them) as a list; ``ValidationError`` on anything
    else.
    """
    if isinstance(messages, Message):
        return [messages]
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise ValidationError(
            f"expected a Message or a sequence of Messages, got {type(messages).__name__}"
        )
    items = list(messages)
    for index, message in enumerate(items):
        if not isinstance(message, Message):
            raise ValidationError(
                f"messages[{index}] must be an offprompt Message, got {type(message).__name__}; "
                "convert framework messages with the adapters (e.g. offprompt_langchain.from_langchain)"
            )
    return items


class ConversationMemory:
    """Lossless conversation history for one session, with token-budgeted windows.

    Every message is stored (in ``store``), grouped into :class:`Run` s on read, and
    counted once, when added. :meth:`window` returns the newest whole runs that fit a
    budget, with the system prompt(s) kept.

    Args:
        store: Where messages live; an :class:`~offprompt.stores.InMemoryStore` if
            omitted. Pass a :class:`~offprompt.stores.SQLiteStore` to survive restarts.
        session_id: The conversation; unknown sessions start empty.
        tokenizer: Counts each message once on add; tiktoken ``o200k_base`` by default.
        max_runs: Keep at most this many runs: after each add, the oldest runs beyond
            the limit are **deleted from the store** (the preamble before the first user
            message is kept). ``None`` keeps everything.
        scope: Tenant / user / agent / run the session belongs to
            (:class:`~offprompt.scope.Scope`). The store keeps each scope's sessions in
            their own partition and filters every read by it; ``store`` is then a
            :class:`~offprompt.stores.ScopedStore` view. ``None``: the unscoped partition.
        retention: A :class:`~offprompt.retention.RetentionPolicy` bounding the stored
            history (oldest whole runs go first); applied after every add when its
            ``on_write`` is true, and by :meth:`prune`.
        tracer: Receives a :class:`~offprompt.trace.TraceEvent` per write, eviction and
            window; an :class:`~offprompt.trace.InMemoryTracer` (256 events) by default.
        persist_trace: Also keep the session's newest 200 events in the store state,
            for ``offprompt show SESSION --trace``.

    Example:
        >>> memory = ConversationMemory()
        >>> memory.add_messages([Message.system("Be brief."), Message.user("Hi"), Message.assistant("Hello!")])
        >>> [m.role for m in memory.window(1000)]
        ['system', 'user', 'assistant']
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        session_id: str = "default",
        *,
        tokenizer: Tokenizer | None = None,
        max_runs: int | None = None,
        scope: Scope | None = None,
        retention: RetentionPolicy | None = None,
        tracer: Tracer | None = None,
        persist_trace: bool = False,
    ) -> None:
        if retention is not None and not isinstance(retention, RetentionPolicy):
            raise ValidationError(
                f"retention must be a RetentionPolicy, got {type(retention).__name__}"
            )
        if max_runs is not None and (
            isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1
        ):
            raise ValidationError(f"max_runs must be a positive int or None, got {max_runs!r}")
        if store is None:
            store = InMemoryStore()
        if tokenizer is None:
            tokenizer = default_tokenizer()
        self.session_id = validate_session_id(session_id)
        self.scope: Scope | None = None
        if scope is not None:
            self.scope = as_scope(scope).with_session(self.session_id)
            store = ScopedStore(store, self.scope)
        elif isinstance(store, ScopedStore):
            self.scope = store.scope.with_session(self.session_id)
        self.store = store
        self.tokenizer = tokenizer
        self.max_runs = max_runs
        self.retention = retention
        self.tracer: Tracer = tracer if tracer is not None else InMemoryTracer(256)
        if persist_trace:
            self.tracer = MultiTracer([self.tracer, StoreTracer(store)])
        self._lock = threading.RLock()
        self._overflow_logged = False
        self._drop_logged = False
        self._reset_cache()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(session_id={self.session_id!r}, store={self.store!r})"

    # -- the cached index (prefix sums, run starts) --------------------------------------
    def _reset_cache(self) -> None:
        self._version: SessionVersion | None = None
        self._seqs: list[int] = []  # seq of each position
        self._index = RunIndex()  # prefix sums, run starts, pinned system messages
        self._times: list[float | None] = []  # append time per position (retention)

    def _extend(self, entries: Iterable[IndexEntry]) -> None:
        seqs, index = self._seqs, self._index
        last = seqs[-1] if seqs else None
        for entry in entries:
            if last is not None and entry.seq <= last:
                continue  # already cached (a read that raced with our own append)
            last = entry.seq
            seqs.append(entry.seq)
            index.append(entry.role, entry.tokens)
            self._times.append(entry.appended_at)

    def _sync(self) -> None:
        """Bring the cache up to the store's version (caller holds the lock)."""
        current = self.store.version(self.session_id)
        cached = self._version
        if cached == current:
            return
        if cached is None or cached.epoch != current.epoch:
            self._reset_cache()
            entries = self.store.read_index(self.session_id)
        else:
            entries = self.store.read_index(self.session_id, start=cached.next_seq)
        self._extend(entries)
        next_seq = max(current.next_seq, self._seqs[-1] + 1 if self._seqs else 0)
        self._version = SessionVersion(next_seq, current.epoch)

    # -- writing ---------------------------------------------------------------------
    def add_message(self, message: Message) -> None:
        """Store one message (its token count is computed now, once)."""
        self.add_messages([message])

    def add_messages(self, messages: Iterable[Message]) -> None:
        """Store messages in order, in one store transaction.

        Raises:
            ValidationError: An item is not a :class:`Message`; nothing is stored.
        """
        self._add_messages(check_messages(messages))

    def _add_messages(self, items: list[Message]) -> None:
        if not items:
            return
        counts = [self.tokenizer.count_message(m) for m in items]
        with self._lock:
            seqs = self.store.append(self.session_id, items, counts)
            now = time.time()
            cached = self._version
            if cached is not None and seqs and seqs[0] == cached.next_seq:
                self._extend(
                    IndexEntry(s, c, m.role, now)
                    for s, c, m in zip(seqs, counts, items, strict=True)
                )
                self._version = SessionVersion(seqs[-1] + 1, cached.epoch)
            self._emit(
                "write",
                tokens=sum(counts),
                included=[
                    {"seq": s, "role": m.role, "tokens": c}
                    for s, c, m in zip(seqs, counts, items, strict=True)
                ],
            )
            if self.max_runs is not None:
                self._evict(self.max_runs)
            if self.retention is not None and self.retention.on_write:
                self._prune(self.retention, None)

    def _emit(self, kind: str, **fields: Any) -> None:
        emit_safely(
            self.tracer,
            TraceEvent(kind, session_id=self.session_id, scope=scope_fields(self.scope), **fields),
        )

    def _drop_runs(self, first_kept: int, reasons: str | Sequence[str]) -> int:
        """Delete runs before index ``first_kept`` (caller holds the lock and synced).

        ``reasons``: one for all, or one per run; the ``evict`` event lists each stretch
        of runs dropped for one reason.
        """
        runs = self._index.run_starts
        if first_kept <= 0 or not runs:
            return 0
        per_run = [reasons] * first_kept if isinstance(reasons, str) else list(reasons)

        def end_of(run: int) -> int:
            return runs[run] if run < len(runs) else len(self._seqs)

        start_pos = runs[0]
        end_pos = end_of(first_kept)
        start = self._seqs[start_pos]
        end = self._seqs[end_pos] if end_pos < len(self._seqs) else None
        tokens = self._index.tokens(start_pos, end_pos)
        deleted = self.store.delete_range(self.session_id, start, end)
        dropped = []
        first = 0
        for run in range(1, first_kept + 1):
            if run < first_kept and per_run[run] == per_run[first]:
                continue
            lo, hi = runs[first], end_of(run)
            dropped.append(
                {
                    "seqs": [self._seqs[lo], self._seqs[hi - 1]],
                    "count": deleted if first == 0 and run == first_kept else hi - lo,
                    "reason": per_run[first],
                }
            )
            first = run
        self._emit("evict", tokens=tokens, dropped=dropped, detail={"runs": first_kept})
        self._sync()
        return deleted

    def _evict(self, max_runs: int) -> None:
        self._sync()
        excess = len(self._index.run_starts) - max_runs
        if excess > 0:
            self._drop_runs(excess, "max_runs")

    def _prune(self, policy: RetentionPolicy, now: float | None) -> int:
        self._sync()
        index = self._index
        evicted = evict_runs(
            index.run_starts, index.run_prefix, index.total, self._times, policy, now=now
        )
        return self._drop_runs(len(evicted), [e.reason for e in evicted])

    def prune(self, policy: RetentionPolicy | None = None, *, now: float | None = None) -> int:
        """Apply ``policy`` (default: this memory's ``retention``); return messages deleted.

        The oldest whole runs beyond the policy's bounds are deleted from the store; the
        preamble (system prompts) stays.

        Raises:
            ValidationError: No policy given and the memory has none.
        """
        policy = policy or self.retention
        if policy is None:
            raise ValidationError("prune needs a RetentionPolicy (none given, none configured)")
        with self._lock:
            return self._prune(policy, now)

    async def aprune(
        self, policy: RetentionPolicy | None = None, *, now: float | None = None
    ) -> int:
        """Async twin of :meth:`prune`."""
        return await asyncio.to_thread(self.prune, policy, now=now)

    def clear(self) -> None:
        """Delete the session's messages and state from the store."""
        with self._lock:
            deleted = self.store.delete_session(self.session_id)
            self._reset_cache()
        self._emit(
            "delete",
            dropped=[{"session_id": self.session_id, "messages": deleted, "reason": "clear"}],
            detail={"memory": "conversation"},
        )

    def replace(self, messages: Iterable[Message]) -> None:
        """Clear, then store ``messages`` (validated first: bad input deletes nothing)."""
        items = check_messages(messages)
        with self._lock:
            self.clear()
            self.add_messages(items)

    # -- reading ---------------------------------------------------------------------
    def messages(self) -> list[Message]:
        """Every stored message of the session, in order."""
        return [s.message for s in self.store.read(self.session_id)]

    def stored(self) -> list[StoredMessage]:
        """Every stored message with its seq and token count."""
        return self.store.read(self.session_id)

    def runs(self) -> list[Run]:
        """The session's runs, oldest first (the preamble is in :meth:`preamble`)."""
        return group_runs(self.store.read(self.session_id))[1]

    def preamble(self) -> list[Message]:
        """Messages before the first user message: system prompts, greetings."""
        with self._lock:
            self._sync()
            if not self._seqs:
                return []
            runs = self._index.run_starts
            end = self._seqs[runs[0]] if runs else None
        return [s.message for s in self.store.read(self.session_id, end=end)]

    def token_count(self) -> int:
        """Stored tokens of the whole history."""
        with self._lock:
            self._sync()
            return self._index.total

    def __len__(self) -> int:
        return self.store.count(self.session_id)

    # -- the window ------------------------------------------------------------------
    def window(self, max_tokens: int, *, reserve: int = 0) -> Window:
        """The newest messages that fit ``max_tokens - reserve`` tokens.

        System messages before the first user message are always kept and counted.
        The rest is a suffix of whole runs: it starts on a user message and never
        separates a tool result from the assistant message that called it. A run that
        has its final answer is included whole or not at all. If not even the newest
        run fits and it is still pending (the turn being answered now), the window
        holds the system message(s) and the newest user message only, ``overflow`` is
        ``True``, and a warning is logged (once per memory object) on the
        ``offprompt.conversation`` logger; if it is answered, the window holds no run.

        Raises:
            ValidationError: ``max_tokens <= 0``, ``reserve < 0`` or ``reserve >= max_tokens``.
        """
        budget = check_budget(max_tokens, reserve)
        with self._lock:
            self._sync()
            return self._window(budget, [], 0)

    def _window(
        self,
        budget: int | None,
        extra: list[tuple[Message, int]],
        first_run: int,
    ) -> Window:
        """Window over the cache: pinned, then ``extra`` (e.g. a summary), then runs.

        Only runs at index ``first_run`` or later are candidates. ``budget=None`` means
        the whole view (no budget, so nothing is left out to fit one and nothing logged).
        """
        unbounded = budget is None
        extra_tokens = sum(t for _, t in extra)
        if budget is None:
            budget = self._index.total + extra_tokens
        seqs = self._seqs
        plan = select_window(
            self._index,
            budget,
            newest_answered=self._newest_run_answered,
            extra_tokens=extra_tokens,
            first_run=first_run,
        )
        # The pinned messages and the runs in one read (one round trip on a server).
        ranges = [(seqs[p], seqs[p] + 1) for p in plan.pinned]
        if plan.end > plan.start:
            ranges.append((seqs[plan.start], seqs[plan.end - 1] + 1))
        found = self.store.read_ranges(self.session_id, ranges) if ranges else []
        wanted = {seqs[p] for p in plan.pinned}
        pinned = [s for s in found if s.seq in wanted]
        body: list[StoredMessage] = []
        if plan.end > plan.start:
            lo, hi = seqs[plan.start], seqs[plan.end - 1]
            body = [s for s in found if lo <= s.seq <= hi]
        if plan.overflow and not self._overflow_logged:
            self._overflow_logged = True
            self._drop_logged = True
            logger.warning(
                "session %r: not even the newest run fits in %d tokens; the window holds "
                "the system message(s) and the newest user message only (Window.overflow)",
                self.session_id,
                budget,
            )
        if plan.dropped and not unbounded and not self._drop_logged:
            self._drop_logged = True
            logger.warning(
                "session %r: the window left out %d older message(s) to fit %d tokens "
                "(logged once per session; see Window.dropped and the trace)",
                self.session_id,
                plan.dropped,
                budget,
            )
        window = Window(
            [s.message for s in pinned] + [m for m, _ in extra] + [s.message for s in body],
            tokens=plan.tokens,
            budget=budget,
            dropped=plan.dropped,
            overflow=plan.overflow,
        )
        self._trace_window(plan, pinned, body, extra, first_run)
        return window

    def _newest_run_answered(self) -> bool:
        """Whether the newest run ends with its final answer (caller holds the lock)."""
        last = len(self._seqs) - 1
        runs = self._index.run_starts
        if not runs or last == runs[-1]:
            return False
        return is_final_answer(self.store.read(self.session_id, start=self._seqs[last])[-1].message)

    def _trace_window(
        self,
        plan: WindowPlan,
        pinned: list[StoredMessage],
        body: list[StoredMessage],
        extra: list[tuple[Message, int]],
        first_run: int,
    ) -> None:
        included: list[dict[str, Any]] = [
            {"seq": s.seq, "role": s.message.role, "tokens": s.tokens} for s in pinned
        ]
        included += [{"role": m.role, "tokens": t, "kind": "summary"} for m, t in extra]
        included += [{"seq": s.seq, "role": s.message.role, "tokens": s.tokens} for s in body]
        summarized: dict[str, Any] | None = None
        runs = self._index.run_starts
        if first_run and runs:
            # Runs folded into the summary: represented by it, not dropped for budget.
            start = runs[0]
            end = runs[first_run] if first_run < len(runs) else len(self._seqs)
            summarized = {
                "seqs": [self._seqs[start], self._seqs[end - 1]],
                "count": end - start,
                "reason": "summarized",
            }
        fields = window_trace_fields(
            plan, included, summarized=summarized, before_seq=body[0].seq if body else None
        )
        self._emit("window", **fields)

    # -- async twins -----------------------------------------------------------------
    async def aadd_message(self, message: Message) -> None:
        """Async twin of :meth:`add_message`."""
        await self.aadd_messages([message])

    async def aadd_messages(self, messages: Iterable[Message]) -> None:
        """Async twin of :meth:`add_messages`."""
        items = check_messages(messages)
        await asyncio.to_thread(self._add_messages, items)

    async def amessages(self) -> list[Message]:
        """Async twin of :meth:`messages`."""
        return await asyncio.to_thread(self.messages)

    async def aruns(self) -> list[Run]:
        """Async twin of :meth:`runs`."""
        return await asyncio.to_thread(self.runs)

    async def apreamble(self) -> list[Message]:
        """Async twin of :meth:`preamble`."""
        return await asyncio.to_thread(self.preamble)

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    async def areplace(self, messages: Iterable[Message]) -> None:
        """Async twin of :meth:`replace`."""
        items = check_messages(messages)
        await asyncio.to_thread(self.replace, items)

    async def awindow(self, max_tokens: int, *, reserve: int = 0) -> Window:
        """Async twin of :meth:`window`."""
        check_budget(max_tokens, reserve)
        return await asyncio.to_thread(self.window, max_tokens, reserve=reserve)

    async def atoken_count(self) -> int:
        """Async twin of :meth:`token_count`."""
        return await asyncio.to_thread(self.token_count)
