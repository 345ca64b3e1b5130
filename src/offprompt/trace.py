"""A trace of context assembly: what was written, evicted, summarized, offloaded,
queried and windowed, with token costs, scores, and what was dropped and why.

Memories emit :class:`TraceEvent` s to a :class:`Tracer`:

* :class:`InMemoryTracer` - the default; keeps the newest ``maxlen`` events.
* :class:`CallbackTracer` - calls a function per event (adapters forward to LangChain
  callbacks or LlamaIndex instrumentation through it).
* :class:`StoreTracer` - keeps the newest events of a session in the store's state
  (``offprompt.trace``), so ``offprompt show SESSION --trace`` can render them.
* :class:`OpenTelemetryTracer` - one OpenTelemetry GenAI ``gen_ai.memory.client`` span
  per event when ``opentelemetry-api`` is installed (``pip install offprompt[otel]``).
* :class:`MultiTracer` - several of the above.

A tracer must never break the memory: exceptions raised by a tracer are logged and
swallowed by :func:`emit_safely`.
"""

from __future__ import annotations

import json
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
    from offprompt.stores.protocols import StateStore

__all__ = [
    "GENAI_OPERATIONS",
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
    "genai_memory_attributes",
    "read_trace",
]

logger = logging.getLogger("offprompt.trace")

TraceKind = Literal[
    "write", "evict", "summary", "offload", "query", "window", "longterm_read", "delete", "forget"
]
TRACE_KINDS: tuple[str, ...] = (
    "write",
    "evict",
    "summary",
    "offload",
    "query",
    "window",
    "longterm_read",
    "delete",
    "forget",
)
#: State key under which :class:`StoreTracer` keeps a session's recent events.
TRACE_STATE_KEY = "offprompt.trace"


@dataclass(frozen=True)
class TraceEvent:
    """One step of context assembly.

    Attributes:
        kind: ``write``, ``evict``, ``summary``, ``offload``, ``query``, ``window``,
            ``longterm_read``, ``delete`` (a namespace or a session removed on request)
            or ``forget`` (:func:`offprompt.forget.forget`).
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

    def emit(self, event: TraceEvent) -> None:
        """Receive one trace event (a tracer that fails must not break the memory)."""
        ...


def emit_safely(tracer: Tracer | None, event: TraceEvent) -> None:
    """Send ``event`` to ``tracer``; a failing tracer is logged, never propagated."""
    if tracer is None:
        return
    try:
        tracer.emit(event)
    except Exception:
        logger.exception("tracer %r failed on a %s event", tracer, event.kind)


def scope_fields(scope: Scope | None) -> dict[str, str]:
    """The fields the scope sets, ``{name: value}`` (``{}`` for no scope)."""
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
        """Keep ``event``."""
        with self._lock:
            self._events.append(event)

    def events(self, kind: str | None = None) -> list[TraceEvent]:
        """Recorded events, oldest first, optionally of one ``kind``."""
        with self._lock:
            return [e for e in self._events if kind is None or e.kind == kind]

    def clear(self) -> None:
        """Forget every event kept so far."""
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
        """Call the function with ``event``."""
        self.fn(event)


class MultiTracer:
    """Sends every event to each of ``tracers`` (one failing does not stop the others)."""

    def __init__(self, tracers: Iterable[Tracer]) -> None:
        self.tracers = list(tracers)

    def emit(self, event: TraceEvent) -> None:
        """Hand ``event`` to each tracer in turn; one that fails does not stop the others."""
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

    def __init__(self, store: StateStore, *, maxlen: int = 200) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
            raise ValidationError(f"maxlen must be a positive int, got {maxlen!r}")
        self.store = store
        self.maxlen = maxlen
        self._lock = threading.Lock()

    def emit(self, event: TraceEvent) -> None:
        """Add ``event`` to its session's trace in the store, keeping the newest ``maxlen`` (no
        session: ignored).
        """
        if event.session_id is None:
            return
        with self._lock:
            current = self.store.get_state(event.session_id, TRACE_STATE_KEY) or []
            events = [*current, event.to_dict()][-self.maxlen :]
            self.store.set_state(event.session_id, TRACE_STATE_KEY, events)


def read_trace(
    store: StateStore, session_id: str, *, scope: Scope | None = None
) -> list[TraceEvent]:
    """The events a :class:`StoreTracer` kept for ``session_id``, oldest first."""
    kwargs: dict[str, Any] = {} if scope is None else {"scope": scope}
    raw = store.get_state(session_id, TRACE_STATE_KEY, **kwargs) or []
    return [TraceEvent.from_dict(item) for item in raw if isinstance(item, Mapping)]


#: The GenAI memory operation each trace kind is (``gen_ai.operation.name``).
GENAI_OPERATIONS: dict[str, str] = {
    "write": "create_memory",
    "offload": "create_memory",
    "summary": "update_memory",
    "query": "search_memory",
    "longterm_read": "search_memory",
    "window": "search_memory",
    "evict": "delete_memory",
    "delete": "delete_memory",
    "forget": "delete_memory",
}
# Detail values that name or size things (never content): exported as offprompt.* attributes.
_SAFE_DETAIL = frozenset(
    {
        "namespace",
        "tool",
        "activity",
        "stage",
        "mode",
        "memory",
        "top_n",
        "k",
        "pool",
        "candidates",
        "returned",
        "runs",
        "next_seq",
        "chars",
        "status",
        "complete",
        "deleted",
    }
)


def _tier(event: TraceEvent) -> str:
    """Which memory an event came from: ``conversation``, ``task_memory`` or ``longterm``."""
    memory = event.detail.get("memory")
    if memory == "longterm" or event.kind == "longterm_read":
        return "longterm"
    if memory in ("task", "task_memory") or event.kind in ("offload", "query"):
        return "task_memory"
    if event.kind == "evict" and any("namespace" in d for d in event.dropped):
        return "task_memory"  # TaskMemory.prune
    return "conversation"


def genai_memory_attributes(event: TraceEvent, *, capture_content: bool = False) -> dict[str, Any]:
    """The ``gen_ai.memory.client`` span attributes of ``event`` (OpenTelemetry GenAI
    semantic conventions, memory operations; development status).

    ``gen_ai.memory.query.text`` and ``gen_ai.memory.records`` (ids, scores and token
    counts of what was read or written, never its text) only with ``capture_content``.

    Example:
        >>> event = TraceEvent("query", detail={"namespace": "logs", "query": "disk full"},
        ...                    included=[{"id": 3}])
        >>> attrs = genai_memory_attributes(event)
        >>> attrs["gen_ai.operation.name"], attrs["gen_ai.memory.record.count"]
        ('search_memory', 1)
        >>> "gen_ai.memory.query.text" in attrs
        False
    """

    tier = _tier(event)
    attributes: dict[str, Any] = {"gen_ai.operation.name": GENAI_OPERATIONS[event.kind]}
    namespace = event.detail.get("namespace")
    if tier == "longterm":
        attributes["gen_ai.memory.store.id"] = f"longterm:{namespace or 'longterm'}"
    else:
        attributes["gen_ai.memory.store.id"] = tier
    if tier == "task_memory" and isinstance(namespace, str) and event.kind != "forget":
        attributes["gen_ai.memory.record.id"] = namespace  # one stored output is one record
    if event.session_id is not None:
        attributes["gen_ai.conversation.id"] = event.session_id
    if event.kind == "forget":
        count = int(event.detail.get("deleted", 0) or 0)
    elif event.kind in ("evict", "delete"):
        count = sum(int(d.get("messages", 1)) for d in event.dropped)
    elif event.kind == "offload" and event.detail.get("stage") != "index":
        count = 1
    else:
        count = len(event.included)
    attributes["gen_ai.memory.record.count"] = count
    if event.detail.get("stage") == "index":
        attributes["gen_ai.operation.name"] = "update_memory"  # indexing a stored output
        attributes["error.type"] = "index_failed"
    attributes["offprompt.kind"] = event.kind
    attributes["offprompt.tokens"] = event.tokens
    if event.dropped:
        attributes["offprompt.dropped"] = len(event.dropped)
    for key, value in event.scope.items():
        attributes[f"offprompt.scope.{key}"] = value
    for key, value in event.detail.items():
        if key in _SAFE_DETAIL and isinstance(value, (str, int, float, bool)):
            attributes[f"offprompt.{key}"] = value
    if capture_content:
        query = event.detail.get("query")
        if isinstance(query, str):
            attributes["gen_ai.memory.query.text"] = query
        records = event.included or event.dropped
        if records:
            attributes["gen_ai.memory.records"] = json.dumps(records, default=str)
    return attributes


class OpenTelemetryTracer:
    """Trace events as OpenTelemetry GenAI ``gen_ai.memory.client`` spans.

    Each event becomes one span named by its operation (``search_memory``,
    ``create_memory``, ``update_memory``, ``delete_memory``; see
    :data:`GENAI_OPERATIONS`) with the conventions' attributes
    (``gen_ai.memory.store.id``, ``gen_ai.memory.record.id``,
    ``gen_ai.memory.record.count``, ``gen_ai.conversation.id``) plus ``offprompt.*``
    ones (kind, tokens, scope, and detail values that name or count, never content).
    The query text and the records read or written are exported only when
    ``capture_content=True``, as the conventions require of opt-in attributes. Spans
    are of kind ``CLIENT``; an event is emitted when its operation has finished, so a
    span marks the operation's end, not its duration.

    Needs ``opentelemetry-api`` only (``pip install offprompt[otel]``); spans go to
    ``tracer_provider`` or, when omitted, to the application's global provider.

    Args:
        name: The instrumentation scope's name.
        tracer_provider: An OpenTelemetry ``TracerProvider``.
        capture_content: Also export ``gen_ai.memory.query.text`` and
            ``gen_ai.memory.records``.

    Raises:
        OffpromptError: ``opentelemetry-api`` is not installed.
    """

    def __init__(
        self, name: str = "offprompt", *, tracer_provider: Any = None, capture_content: bool = False
    ) -> None:
        try:
            from opentelemetry import trace as otel_trace  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise OffpromptError(
                "OpenTelemetryTracer needs opentelemetry-api: pip install 'offprompt[otel]'"
            ) from None
        from offprompt import __version__

        self._kind = otel_trace.SpanKind.CLIENT
        self._tracer = otel_trace.get_tracer(name, __version__, tracer_provider=tracer_provider)
        self.capture_content = capture_content

    def emit(self, event: TraceEvent) -> None:
        """Export ``event`` as a GenAI ``gen_ai.memory.client`` span (content only when opted in)."""
        attributes = genai_memory_attributes(event, capture_content=self.capture_content)
        start = int(event.at * 1_000_000_000)
        span = self._tracer.start_span(
            attributes["gen_ai.operation.name"],
            kind=self._kind,
            attributes=attributes,
            start_time=start,
        )
        if "error.type" in attributes:
            from opentelemetry.trace import Status, StatusCode  # type: ignore[import-not-found,unused-ignore]

            span.set_status(Status(StatusCode.ERROR, "indexing the stored output failed"))
        span.end()
