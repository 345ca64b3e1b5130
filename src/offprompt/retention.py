"""``RetentionPolicy``, ``evict`` and ``prune``: nothing grows without bound unless asked to.

A policy bounds one tier. Every tier hands its items, **oldest first**, to one pure
function, :func:`evict`, so the three bounds mean the same everywhere:

* ``max_age``: the oldest items go while their time is older than ``now - max_age``
  (an item of unknown time stops this: its age cannot be proven);
* ``max_count``: at most that many items stay, the newest;
* ``max_tokens``: the stored tokens stay within it: the oldest items go until the rest
  fits (never a newer item to make room for older ones, so what stays is always the
  newest items).

``max_count`` and ``max_tokens`` never evict the newest item (nor one the caller
protects, such as the namespace just written): an item larger than ``max_tokens`` on
its own stays, alone, until a newer one arrives. Each evicted item carries one reason,
``"max_age"``, ``"max_count"`` or ``"max_tokens"`` (the first of these that applies),
which is what ``evict`` trace events report.

The items of each tier:

* conversation history (per session): whole **runs** (a user message and what follows
  it), timed by their newest message; the preamble (system prompts before the first
  user message) always stays and is not counted. A session whose last
  activity is older than ``max_age`` is deleted with its state (:func:`prune`).
* task memory (per memory and scope): **namespaces**, timed by their last write;
  expired ones are hidden at once and deleted by ``prune``.
* long-term memory (per scope): **fragments**, timed by their last write or recall.

Give a policy to ``ConversationMemory(..., retention=...)``,
``TaskMemory(..., retention=...)`` or ``LongTermMemory(..., retention=...)`` to apply it
on every write (``on_write=True``), or call :func:`prune` / ``memory.prune()`` from a
maintenance job.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from offprompt.errors import ValidationError

if TYPE_CHECKING:
    from offprompt.scope import Scope
    from offprompt.stores.base import ConversationStore, IndexEntry

__all__ = [
    "EvictReason",
    "Eviction",
    "PruneReport",
    "Retained",
    "RetentionPolicy",
    "evict",
    "evict_runs",
    "keep_from",
    "prune",
    "prune_session",
]

#: Why :func:`evict` removed an item (the ``reason`` of ``evict`` trace events).
EvictReason = Literal["max_age", "max_count", "max_tokens"]


@dataclass(frozen=True)
class RetentionPolicy:
    """Bounds on one memory tier; ``None`` leaves that dimension unbounded.

    Args:
        max_age: Seconds (or a ``timedelta``) data may live after its last write.
        max_count: Runs per session (conversations), namespaces (task memory) or
            fragments per scope (long-term memory); the newest stay.
        max_tokens: Stored tokens per session, task memory or long-term scope; the
            oldest items go until the rest fits.
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


@dataclass(frozen=True)
class Retained:
    """One item a policy bounds: a run, a task-memory namespace or a long-term fragment.

    Attributes:
        id: The tier's id of the item (returned in :class:`Eviction`).
        tokens: Tokens it stores.
        time: POSIX time of its last write (or recall), ``None`` if unknown.
    """

    id: str
    tokens: int
    time: float | None


@dataclass(frozen=True)
class Eviction:
    """An item :func:`evict` removed, and why."""

    id: str
    reason: EvictReason


def evict(
    items: Sequence[Retained],
    policy: RetentionPolicy,
    *,
    now: float | None = None,
    protect: Collection[str] = (),
) -> list[Eviction]:
    """What ``policy`` evicts from ``items`` (oldest first), in that order.

    The one eviction rule of every tier (see the module docs): the oldest items go
    while ``max_count`` or ``max_tokens`` is exceeded, skipping the newest item and the
    ``protect`` ids; then, from there on, the oldest go while they are older than
    ``max_age``. With items in time order what stays is the newest ones.

    Args:
        items: The items, oldest first (each tier's order: runs by position, namespaces
            and fragments by time, then id).
        policy: The bounds.
        now: The current POSIX time (tests pin it); the wall clock if omitted.
        protect: Ids that ``max_count`` and ``max_tokens`` never evict (they count).

    Example:
        >>> items = [Retained("a", 10, 1.0), Retained("b", 10, 2.0), Retained("c", 50, 3.0)]
        >>> [(e.id, e.reason) for e in evict(items, RetentionPolicy(max_tokens=40))]
        [('a', 'max_tokens'), ('b', 'max_tokens')]
        >>> [e.id for e in evict(items, RetentionPolicy(max_age=1.5), now=3.0)]
        ['a']
    """
    cutoff = policy.cutoff(now)

    def expired(item: Retained) -> bool:
        return cutoff is not None and item.time is not None and item.time < cutoff

    count = len(items)
    tokens = sum(item.tokens for item in items)
    reasons: dict[int, EvictReason] = {}
    for position, item in enumerate(items):
        over_count = policy.max_count is not None and count > policy.max_count
        over_tokens = policy.max_tokens is not None and tokens > policy.max_tokens
        if not (over_count or over_tokens):
            break
        if position == len(items) - 1 or item.id in protect:
            continue
        reasons[position] = (
            "max_age" if expired(item) else "max_count" if over_count else "max_tokens"
        )
        count -= 1
        tokens -= item.tokens
    # Then age alone, from the oldest item still there.
    for position, item in enumerate(items):
        if position in reasons:
            continue
        if not expired(item):
            break
        reasons[position] = "max_age"
    return [Eviction(items[p].id, reasons[p]) for p in sorted(reasons)]


def keep_from(
    run_pos: Sequence[int],
    run_prefix: Sequence[int],
    total_tokens: int,
    times: Sequence[float | None],
    policy: RetentionPolicy,
    *,
    now: float | None = None,
) -> int:
    """Index of the first run to keep (``len(run_pos)`` drops them all).

    :func:`evict` over a session's runs; the preamble is neither counted nor evicted.

    Args:
        run_pos: Position of each run's first message in the session.
        run_prefix: Tokens stored before each run start (the session's prefix sums).
        total_tokens: Tokens of the whole session.
        times: Append time of every message, by position (``None`` if unknown).
        policy: The bounds.
        now: The current POSIX time (tests pin it).
    """
    return len(evict_runs(run_pos, run_prefix, total_tokens, times, policy, now=now))


def evict_runs(
    run_pos: Sequence[int],
    run_prefix: Sequence[int],
    total_tokens: int,
    times: Sequence[float | None],
    policy: RetentionPolicy,
    *,
    now: float | None = None,
) -> list[Eviction]:
    """:func:`evict` over a session's runs (ids ``"0"``, ``"1"``, ... by run index).

    The evicted runs are always the oldest ones (a prefix); see :func:`keep_from`.
    """
    runs = len(run_pos)
    items = []
    for k in range(runs):
        end = run_pos[k + 1] if k + 1 < runs else len(times)
        newest = max((t for t in times[run_pos[k] : end] if t is not None), default=None)
        upto = run_prefix[k + 1] if k + 1 < runs else total_tokens
        items.append(Retained(str(k), upto - run_prefix[k], newest))
    return evict(items, policy, now=now)


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
    first = keep_from(run_pos, run_prefix, total, times, policy, now=now)
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
