"""Window selection: which messages of a history fit a token budget. Pure, no I/O.

A history is described by a :class:`RunIndex` (prefix sums of the stored token counts,
where runs start, which system messages are pinned); :func:`select_window` answers with
positions in it (a :class:`WindowPlan`), by one binary search. Both
:meth:`ConversationMemory.window <offprompt.conversation.ConversationMemory.window>`
(over the index it keeps in step with its store) and the LangChain middleware (over the
messages of one model call) choose their windows here, so they choose alike.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RunIndex", "WindowPlan", "select_window", "window_trace_fields"]

#: What a window holds when not even the newest run fits and it is still pending:
#: ``"question"`` its user message only (:class:`ConversationMemory`), ``"run"`` the
#: whole run, over budget (the middleware: the agent keeps its tool results).
Overflow = Literal["question", "run"]


@dataclass
class RunIndex:
    """Prefix sums and run starts of a history, by position (0 = oldest message).

    Attributes:
        prefix: ``prefix[i]`` is the token count of the first ``i`` messages.
        run_starts: Positions of the user messages (each starts a run).
        run_prefix: ``prefix`` at each run start, for the binary search.
        pinned: Positions of the system messages before the first run.

    Example:
        >>> index = RunIndex.of(["system", "user", "assistant"], [5, 3, 4])
        >>> index.total, index.run_starts, index.pinned
        (12, [1], [0])
    """

    prefix: list[int] = field(default_factory=lambda: [0])
    run_starts: list[int] = field(default_factory=list)
    run_prefix: list[int] = field(default_factory=list)
    pinned: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, roles: Iterable[str], tokens: Iterable[int]) -> RunIndex:
        """The index of messages with these roles and token counts, in order."""
        index = cls()
        for role, count in zip(roles, tokens, strict=True):
            index.append(role, count)
        return index

    def append(self, role: str, tokens: int) -> None:
        """Add the next message of the history."""
        position = len(self.prefix) - 1
        self.prefix.append(self.prefix[-1] + tokens)
        if role == "user":
            self.run_starts.append(position)
            self.run_prefix.append(self.prefix[position])
        elif role == "system" and not self.run_starts:
            self.pinned.append(position)

    def __len__(self) -> int:
        return len(self.prefix) - 1

    @property
    def total(self) -> int:
        """Tokens of the whole history."""
        return self.prefix[-1]

    def tokens(self, start: int, end: int) -> int:
        """Tokens of the messages at positions ``start`` to ``end - 1``."""
        return self.prefix[end] - self.prefix[start]


@dataclass(frozen=True)
class WindowPlan:
    """The positions a window keeps: the pinned messages, then ``start`` to ``end - 1``.

    Attributes:
        pinned: Positions of the pinned system messages (always kept).
        start: First position of the body (a run start); ``start == end``: no body.
        end: One past the last position of the body.
        tokens: Tokens of the kept messages plus ``extra_tokens``.
        budget: The budget the plan was made for.
        dropped: Messages of the history left out.
        overflow: Not even the newest run fit and it is pending (then the body is cut by
            the ``overflow`` rule), or the pinned messages alone are over budget.
    """

    pinned: Sequence[int]
    start: int
    end: int
    tokens: int
    budget: int
    dropped: int
    overflow: bool

    @property
    def body(self) -> range:
        """Positions of the body, oldest first."""
        return range(self.start, self.end)


def select_window(
    index: RunIndex,
    budget: int,
    *,
    newest_answered: Callable[[], bool],
    extra_tokens: int = 0,
    first_run: int = 0,
    overflow: Overflow = "question",
) -> WindowPlan:
    """Choose the newest whole runs that fit ``budget`` with the pinned messages.

    The body is a suffix of whole runs, so it starts on a user message and never
    separates a tool result from the call that asked for it. If not even the newest run
    fits: a pending run is cut by the ``overflow`` rule (``"question"``: its user message
    only; ``"run"``: all of it) and ``overflow`` is set; an answered run is left out
    whole (a question seen without its answer gets answered again).

    Args:
        index: The history.
        budget: Tokens the window may hold.
        newest_answered: Whether the newest run ends with its final answer; called only
            when that run does not fit (the memory reads the store to know).
        extra_tokens: Tokens of generated messages kept after the pinned ones (a summary).
        first_run: Only runs from this index on are candidates (older ones are summarized).
        overflow: The rule for a pending newest run that does not fit.

    Example:
        >>> index = RunIndex.of(["system", "user", "assistant", "user"], [10, 50, 50, 30])
        >>> plan = select_window(index, 60, newest_answered=lambda: False)
        >>> list(plan.pinned), list(plan.body), plan.tokens, plan.dropped
        ([0], [3], 40, 2)
    """
    runs = index.run_starts
    pinned_tokens = sum(index.tokens(p, p + 1) for p in index.pinned)
    remaining = budget - pinned_tokens - extra_tokens
    size = len(index)
    start = end = size
    cut = False
    if first_run < len(runs):
        # The first run start s whose suffix total - prefix[s] fits in remaining.
        k = bisect.bisect_left(index.run_prefix, index.total - remaining, lo=first_run)
        if k < len(runs):
            start = runs[k]
        elif not newest_answered():
            cut = True
            start = runs[-1]
            end = start + 1 if overflow == "question" else size
        else:
            start = size
    too_big = cut or remaining < 0
    return WindowPlan(
        pinned=index.pinned,
        start=start,
        end=end,
        tokens=pinned_tokens + index.tokens(start, end) + extra_tokens,
        budget=budget,
        dropped=size - len(index.pinned) - (end - start),
        overflow=too_big,
    )


def window_trace_fields(
    plan: WindowPlan,
    included: list[dict[str, Any]],
    *,
    summarized: dict[str, Any] | None = None,
    before_seq: int | None = None,
) -> dict[str, Any]:
    """The fields of the ``window`` :class:`~offprompt.trace.TraceEvent` of ``plan``.

    Args:
        plan: The window (its ``dropped`` counts summarized messages too).
        included: One dict per kept message (``seq``, ``role``, ``tokens``).
        summarized: The ``dropped`` entry of the runs folded into a summary, if any.
        before_seq: Seq of the body's first message (where the budget cut).
    """
    dropped: list[dict[str, Any]] = [summarized] if summarized else []
    # O(1): a window never walks the history, so neither does its trace.
    budget_dropped = plan.dropped - (summarized["count"] if summarized else 0)
    if budget_dropped > 0:
        dropped.append(
            {
                "count": budget_dropped,
                "before_seq": before_seq,
                "reason": "overflow" if plan.overflow else "budget",
            }
        )
    return {
        "tokens": plan.tokens,
        "included": included,
        "dropped": dropped,
        "detail": {"budget": plan.budget, "overflow": plan.overflow},
    }
