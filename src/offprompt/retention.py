"""``RetentionPolicy`` and ``prune``: nothing grows without bound unless asked to.

A policy bounds one tier:

* conversation history (per session): ``max_count`` runs, ``max_tokens`` stored tokens,
  runs whose newest message is older than ``max_age``; the oldest **whole runs** go first
  and the preamble (system prompts before the first user message) stays. A session
  whose last activity is older than ``max_age`` is deleted with its state.
* task memory (per memory and scope): ``max_count`` namespaces, ``max_tokens`` stored
  tokens, namespaces not written for ``max_age`` expire (hidden at once, deleted by
  ``prune``).

Give a policy to ``ConversationMemory(..., retention=...)`` or
``TaskMemory(..., retention=...)`` to apply it on every write (``on_write=True``), or
call :func:`prune` / ``memory.prune()`` from a maintenance job.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from offprompt.errors import ValidationError

if TYPE_CHECKING:
    from offprompt.scope import Scope
    from offprompt.stores.base import ConversationStore, IndexEntry

__all__ = ["PruneReport", "RetentionPolicy", "keep_from", "prune", "prune_session"]


@dataclass(frozen=True)
class RetentionPolicy:
    """Bounds on one memory tier; ``None`` leaves that dimension unbounded.

    Args:
        max_age: Seconds (or a ``timedelta``) data may live after its last write.
        max_count: Runs per session (conversations) or namespaces (task memory).
        max_tokens: Stored tokens per session (conversations) or per task memory.
        on_write: Apply the policy after every write of a memory that holds it.

    Example:
        >>> from offprompt.conversation import ConversationMemory
        >>> from offprompt.messages import Message
        >>> memory = ConversationMemory(retention=RetentionPolicy(max_count=2))
        >>> for i in range(5):
        ...     memory.add_messages([Message.user(f"q{i}"), Message.assistant(f"a{i}")])
        >>> [run.user.text for run in memory.runs()]
        ['q3', 'q4']
    """

    max_age: float | timedelta | None = None
    max_count: int | None = None
    max_tokens: int | None = None
    on_write: bool = True
    _age: float | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        age = self.max_age
        if isinstance(age, timedelta):
            age = age.total_seconds()
        if age is not None and (
            isinstance(age, bool) or not isinstance(age, (int, float)) or not age > 0
        ):
            raise ValidationError(f"max_age must be positive seconds, got {self.max_age!r}")
        object.__setattr__(self, "_age", None if age is None else float(age))
        for name in ("max_count", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValidationError(f"{name} must be a positive int or None, got {value!r}")

    @property
    def age_seconds(self) -> float | None:
        """``max_age`` in seconds."""
        return self._age

    def cutoff(self, now: float | None = None) -> float | None:
        """POSIX time before which data has expired, or ``None``."""
        if self._age is None:
            return None
        return (time.time() if now is None else now) - self._age

    @property
    def bounded(self) -> bool:
        """Whether the policy limits anything (``max_age``, ``max_count`` or ``max_tokens`` set)."""
        return self._age is not None or self.max_count is not None or self.max_tokens is not None


def keep_from(
    run_pos: Sequence[int],
    run_prefix: Sequence[int],
    total_tokens: int,
    times: Sequence[float | None],
    policy: RetentionPolicy,
    now: float | None = None,
) -> int:
    """Index of the first run to keep (``len(run_pos)`` drops them all).

    Args:
        run_pos: Position of each run's first message in the session.
        run_prefix: Tokens stored before each run start (the session's prefix sums).
        total_tokens: Tokens of the whole session.
        times: Append time of every message, by position (``None`` if unknown).
        policy: The bounds.
        now: The current POSIX time (tests pin it).
    """
    runs = len(run_pos)
    first = 0
    if policy.max_count is not None:
        first = max(first, runs - policy.max_count)
    if policy.max_tokens is not None and runs:
        # The oldest run start whose suffix fits; the newest run always stays.
        k = bisect.bisect_left(run_prefix, total_tokens - policy.max_tokens)
        first = max(first, min(k, runs - 1))
    cutoff = policy.cutoff(now)
    if cutoff is not None:
        k = first
        while k < runs:
            end = run_pos[k + 1] if k + 1 < runs else len(times)
            newest = max((t for t in times[run_pos[k] : end] if t is not None), default=None)
            if newest is None or newest >= cutoff:
                break
            k += 1
        first = k
    return first


@dataclass
class PruneReport:
    """What :func:`prune` deleted.

    Attributes:
        messages: Messages deleted.
        sessions: Sessions deleted whole (expired).
        namespaces: Task-memory namespaces deleted.
    """

    messages: int = 0
    sessions: int = 0
    namespaces: int = 0

    def __add__(self, other: PruneReport) -> PruneReport:
        return PruneReport(
            self.messages + other.messages,
            self.sessions + other.sessions,
            self.namespaces + other.namespaces,
        )


def _arrays(entries: Sequence[IndexEntry]) -> tuple[list[int], list[int], int, list[Any]]:
    run_pos: list[int] = []
    run_prefix: list[int] = []
    total = 0
    for position, entry in enumerate(entries):
        if entry.role == "user":
            run_pos.append(position)
            run_prefix.append(total)
        total += entry.tokens
    return run_pos, run_prefix, total, [e.appended_at for e in entries]


def prune_session(
    store: ConversationStore,
    session_id: str,
    policy: RetentionPolicy,
    *,
    scope: Scope | None = None,
    now: float | None = None,
) -> int:
    """Apply ``policy`` to one session: delete its oldest whole runs; return messages deleted."""
    kwargs: dict[str, Any] = {} if scope is None else {"scope": scope}
    entries = store.read_index(session_id, **kwargs)
    run_pos, run_prefix, total, times = _arrays(entries)
    first = keep_from(run_pos, run_prefix, total, times, policy, now)
    if first == 0:
        return 0
    start = entries[run_pos[0]].seq
    end = entries[run_pos[first]].seq if first < len(run_pos) else None
    return store.delete_range(session_id, start, end, **kwargs)


def prune(
    store: ConversationStore,
    policy: RetentionPolicy,
    *,
    scope: Scope | None = None,
    now: float | None = None,
) -> PruneReport:
    """Apply ``policy`` to every session of ``store`` that ``scope`` selects.

    Sessions whose last activity is older than ``max_age`` are deleted whole (state
    included); the others lose their oldest runs beyond the bounds.

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> from offprompt.messages import Message
        >>> store = InMemoryStore()
        >>> _ = store.append("s", [Message.user("a"), Message.user("b")], [1, 1])
        >>> prune(store, RetentionPolicy(max_count=1)).messages
        1
    """
    report = PruneReport()
    cutoff = policy.cutoff(now)
    for info in store.sessions(scope=scope) if scope is not None else store.sessions():
        part = info.scope.model_copy(update={"session": None}) if info.scope else None
        kwargs: dict[str, Any] = {} if part is None else {"scope": part}
        if (
            cutoff is not None
            and info.last_activity is not None
            and info.last_activity.timestamp() < cutoff
        ):
            report.messages += store.delete_session(info.session_id, **kwargs)
            report.sessions += 1
            continue
        report.messages += prune_session(store, info.session_id, policy, scope=part, now=now)
    return report
