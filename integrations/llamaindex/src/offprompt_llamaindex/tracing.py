"""``LlamaIndexTracer``: offprompt's context-assembly trace as LlamaIndex instrumentation.

Every :class:`~offprompt.trace.TraceEvent` (write, evict, summary, offload, query,
window, longterm_read) is sent through a LlamaIndex instrumentation dispatcher as an
:class:`OffpromptTraceEvent`. The dispatcher is ``get_dispatcher("offprompt_llamaindex")``
by default, which propagates to the root dispatcher, so any ``BaseEventHandler`` added
with ``get_dispatcher().add_event_handler(...)`` (and observability integrations built
on it) receives the events, with the active span id of the chat or agent call that
caused them.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation import Dispatcher, get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

from offprompt.errors import ValidationError
from offprompt.trace import TraceEvent

__all__ = ["DISPATCHER_NAME", "LlamaIndexTracer", "OffpromptTraceEvent"]

#: The dispatcher offprompt's events go through by default (a child of the root).
DISPATCHER_NAME = "offprompt_llamaindex"


class OffpromptTraceEvent(BaseEvent):
    """One offprompt trace event, as a LlamaIndex instrumentation event.

    Attributes:
        kind: ``write``, ``evict``, ``summary``, ``offload``, ``query``, ``window`` or
            ``longterm_read``.
        data: The :class:`~offprompt.trace.TraceEvent` as a dict (``TraceEvent.to_dict``).
    """

    kind: str
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        return "OffpromptTraceEvent"

    def to_trace_event(self) -> TraceEvent:
        """The offprompt :class:`~offprompt.trace.TraceEvent` this carries."""
        return TraceEvent.from_dict(self.data)


class LlamaIndexTracer:
    """A :class:`~offprompt.trace.Tracer` that emits through a LlamaIndex dispatcher.

    Args:
        dispatcher: The dispatcher to emit through (default: ``get_dispatcher("offprompt_llamaindex")``,
            which propagates to the root dispatcher).

    Attributes:
        dispatcher: The dispatcher in use.

    Example:
        >>> from llama_index.core.instrumentation import get_dispatcher
        >>> from llama_index.core.instrumentation.event_handlers import BaseEventHandler
        >>> from offprompt.conversation import ConversationMemory
        >>> from offprompt.messages import Message
        >>> class Seen(BaseEventHandler):
        ...     kinds: list = []
        ...     def handle(self, event, **kwargs):
        ...         if isinstance(event, OffpromptTraceEvent):
        ...             self.kinds.append(event.kind)
        >>> seen = Seen()
        >>> dispatcher = get_dispatcher("offprompt_doctest")
        >>> dispatcher.add_event_handler(seen)
        >>> ConversationMemory(tracer=LlamaIndexTracer(dispatcher)).add_messages([Message.user("hi")])
        >>> seen.kinds
        ['write']
    """

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        if dispatcher is not None and not isinstance(dispatcher, Dispatcher):
            raise ValidationError(
                f"dispatcher must be a LlamaIndex Dispatcher, got {type(dispatcher).__name__}"
            )
        self.dispatcher = dispatcher if dispatcher is not None else get_dispatcher(DISPATCHER_NAME)

    def __repr__(self) -> str:
        return f"LlamaIndexTracer(dispatcher={self.dispatcher.name!r})"

    @staticmethod
    def _event(event: TraceEvent) -> OffpromptTraceEvent:
        return OffpromptTraceEvent(kind=event.kind, data=event.to_dict())

    def emit(self, event: TraceEvent) -> None:
        """Send ``event`` to the dispatcher's handlers (and its parents')."""
        self.dispatcher.event(self._event(event))

    async def aemit(self, event: TraceEvent) -> None:
        """Async twin of :meth:`emit` (the handlers' ``ahandle``)."""
        await self.dispatcher.aevent(self._event(event))
