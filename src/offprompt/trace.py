"""A trace of context assembly: what was written, evicted, summarized, offloaded,
queried and windowed, with token costs, scores, and what was dropped and why.

Memories emit :class:`TraceEvent` s to a :class:`Tracer`:

* :class:`InMemoryTracer` - the default; keeps the newest ``maxlen`` events.
* :class:`CallbackTracer` - calls a function per event (adapters forward to LangChain
  callbacks or LlamaIndex instrumentation through it).
* :class:`StoreTracer` - keeps the newest events of a session in the store's state
  (``offprompt.trace``), so ``offprompt show SESSION --trace`` can render them.
* :class:`OpenTelemetryTracer` - one span per event when ``opentelemetry-api`` is
  installed (``pip install offprompt[otel]``).
* :class:`MultiTracer` - several of the above.

A tracer must never break the memory: exceptions raised by a tracer are logged and
swallowed by :func:`emit_safely`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from offprompt.errors import OffpromptError, ValidationError

if TYPE_CHECKING:
    from offprompt.scope import Scope
    from offprompt.stores.base import ConversationStore

__all__ = [
    "TRACE_KINDS",
    "TRACE_STATE_KEY",
    "CallbackTracer",
    "InMemoryTracer",
    "MultiTracer",
    "OpenTelemetryTracer",
    "StoreTracer",
    "TraceEvent",
    "Tracer",
    "emit_safely",
    "read_trace",
]

logger = logging.getLogger("offprompt.trace")

TraceKind = Literal["write", "evict", "summary", "offload", "query", "window", "longterm_read"]
TRACE_KINDS: tuple[str, ...] = (
    "write",
    "evict",
    "summary",
    "offload",
    "query",
    "window",
    "longterm_read",
)
#: State key under which :class:`StoreTracer` keeps a session's recent events.
TRACE_STATE_KEY = "offprompt.trace"


@dataclass(frozen=True)
class TraceEvent:
    """One step of context assembly.

    Attributes:
        kind: ``write``, ``evict``, ``summary``, ``offload``, ``query``, ``window`` or
            ``longterm_read``.
        session_id: The session, when there is one.
        scope: The set fields of the :class:`~offprompt.scope.Scope`.
        tokens: Token cost of what the step produced (written, kept, returned).
        scores: Scores by item id where there are any (similarity, recency, importance).
        included: What entered (``{"seq": 4, "role": "user", "tokens": 12}``, a chunk...).
        dropped: What was left out, each with a ``reason``.
        detail: Anything else worth showing (budget, namespace, query text...).
        at: POSIX time of the event.

    Example:
        >>> event = TraceEvent("window", session_id="s", tokens=120)
        >>> TraceEvent.from_dict(event.to_dict()) == event
        True
    """

    kind: str
    session_id: str | None = None
    scope: dict[str, str] = field(default_factory=dict)
    tokens: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    included: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.kind not in TRACE_KINDS:
            raise ValidationError(f"trace kind must be one of {TRACE_KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "session_id": self.session_id,
            "scope": dict(self.scope),
            "tokens": self.tokens,
            "scores": dict(self.scores),
            "included": list(self.included),
            "dropped": list(self.dropped),
            "detail": dict(self.detail),
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceEvent:
        """The event :meth:`to_dict` produced."""
        try:
            return cls(
                kind=str(data["kind"]),
                session_id=data.get("session_id"),
                scope=dict(data.get("scope") or {}),
                tokens=int(data.get("tokens") or 0),
                scores={str(k): float(v) for k, v in (data.get("scores") or {}).items()},
                included=list(data.get("included") or []),
                dropped=list(data.get("dropped") or []),
                detail=dict(data.get("detail") or {}),
                at=float(data.get("at") or 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"not a trace event: {exc}") from None

    def describe(self) -> str:
        """One human line, e.g. ``window: 4 in, 6 dropped (budget), 812 tokens``."""
        parts = [f"{self.kind}:"]
        if self.included:
            parts.append(f"{len(self.included)} in")
        if self.dropped:
            reasons = sorted({str(d.get("reason", "?")) for d in self.dropped})
            parts.append(f"{len(self.dropped)} dropped ({', '.join(reasons)})")
        parts.append(f"{self.tokens} tokens")
        for key in ("namespace", "budget", "query"):
            if key in self.detail:
                parts.append(f"{key}={self.detail[key]}")
        return " ".join(parts)


@runtime_checkable
class Tracer(Protocol):
    """Receives trace events. Must be fast; must not raise (errors are logged)."""

    def emit(self, event: TraceEvent) -> None: ...


def emit_safely(tracer: Tracer | None, event: TraceEvent) -> None:
    """Send ``event`` to ``tracer``; a failing tracer is logged, never propagated."""
    if tracer is None:
        return
    try:
        tracer.emit(event)
    except Exception:
        logger.exception("tracer %r failed on a %s event", tracer, event.kind)


def scope_fields(scope: Scope | None) -> dict[str, str]:
    return {} if scope is None else scope.fields()


class InMemoryTracer:
    """Keeps the newest ``maxlen`` events in memory (the default tracer).

    Example:
        >>> tracer = InMemoryTracer(maxlen=2)
        >>> for kind in ("write", "window", "write"):
        ...     tracer.emit(TraceEvent(kind))
        >>> [e.kind for e in tracer.events()]
        ['window', 'write']
    """

    def __init__(self, maxlen: int = 1000) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
            raise ValidationError(f"maxlen must be a positive int, got {maxlen!r}")
        self._events: deque[TraceEvent] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def emit(self, event: TraceEvent) -> None:
        with self._lock:
            self._events.append(event)

    def events(self, kind: str | None = None) -> list[TraceEvent]:
        """Recorded events, oldest first, optionally of one ``kind``."""
        with self._lock:
            return [e for e in self._events if kind is None or e.kind == kind]

    def clear(self) -> None:
        with self._lock:
            self._events.clear()


class CallbackTracer:
    """Calls ``fn(event)`` for every event: the hook adapters forward through.

    Example:
        >>> seen = []
        >>> CallbackTracer(seen.append).emit(TraceEvent("query"))
        >>> seen[0].kind
        'query'
    """

    def __init__(self, fn: Callable[[TraceEvent], Any]) -> None:
        if not callable(fn):
            raise ValidationError(f"CallbackTracer needs a callable, got {type(fn).__name__}")
        self.fn = fn

    def emit(self, event: TraceEvent) -> None:
        self.fn(event)


class MultiTracer:
    """Sends every event to each of ``tracers`` (one failing does not stop the others)."""

    def __init__(self, tracers: Iterable[Tracer]) -> None:
        self.tracers = list(tracers)

    def emit(self, event: TraceEvent) -> None:
        for tracer in self.tracers:
            emit_safely(tracer, event)


class StoreTracer:
    """Keeps each session's newest ``maxlen`` events in the store state (``offprompt.trace``).

    Events without a session are ignored. Each event is one state write (a bounded
    JSON list), so use it where the trace must outlive the process (the CLI reads it).

    Args:
        store: The conversation store (scoped views keep the trace in their partition).
        maxlen: Events kept per session.
    """

    def __init__(self, store: ConversationStore, *, maxlen: int = 200) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
            raise ValidationError(f"maxlen must be a positive int, got {maxlen!r}")
        self.store = store
        self.maxlen = maxlen
        self._lock = threading.Lock()

    def emit(self, event: TraceEvent) -> None:
        if event.session_id is None:
            return
        with self._lock:
            current = self.store.get_state(event.session_id, TRACE_STATE_KEY) or []
            events = [*current, event.to_dict()][-self.maxlen :]
            self.store.set_state(event.session_id, TRACE_STATE_KEY, events)


def read_trace(
    store: ConversationStore, session_id: str, *, scope: Scope | None = None
) -> list[TraceEvent]:
    """The events a :class:`StoreTracer` kept for ``session_id``, oldest first."""
    kwargs: dict[str, Any] = {} if scope is None else {"scope": scope}
    raw = store.get_state(session_id, TRACE_STATE_KEY, **kwargs) or []
    return [TraceEvent.from_dict(item) for item in raw if isinstance(item, Mapping)]


class OpenTelemetryTracer:
    """One OpenTelemetry span per event (``offprompt.<kind>``), attributes flattened.

    Needs ``opentelemetry-api`` (``pip install offprompt[otel]``); spans go wherever the
    application's tracer provider sends them.

    Raises:
        OffpromptError: ``opentelemetry-api`` is not installed.
    """

    def __init__(self, name: str = "offprompt") -> None:
        try:
            from opentelemetry import trace as otel_trace  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise OffpromptError(
                "OpenTelemetryTracer needs opentelemetry-api: pip install 'offprompt[otel]'"
            ) from None
        self._tracer = otel_trace.get_tracer(name)

    def emit(self, event: TraceEvent) -> None:
        attributes: dict[str, Any] = {
            "offprompt.kind": event.kind,
            "offprompt.tokens": event.tokens,
            "offprompt.included": len(event.included),
            "offprompt.dropped": len(event.dropped),
        }
        if event.session_id is not None:
            attributes["offprompt.session_id"] = event.session_id
        for key, value in event.scope.items():
            attributes[f"offprompt.scope.{key}"] = value
        for key, value in event.detail.items():
            if isinstance(value, (str, int, float, bool)):
                attributes[f"offprompt.{key}"] = value
        with self._tracer.start_as_current_span(f"offprompt.{event.kind}", attributes=attributes):
            pass
