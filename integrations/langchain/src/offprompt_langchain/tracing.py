"""``OffpromptCallbackTracer``: offprompt's context-assembly trace as LangChain custom events.

Every :class:`~offprompt.trace.TraceEvent` (write, evict, summary, offload, query,
window, longterm_read) becomes a LangChain custom event named ``"offprompt.<kind>"``
whose data is the event's dict. Inside a run (a chain, an agent, a tool) it is
dispatched with ``dispatch_custom_event``, so every callback handler of that run sees it
in ``on_custom_event`` and ``astream_events`` yields it; outside a run it goes to the
handlers given to the tracer.

It was called ``LangChainTracer`` in 0.1.0, the name of LangSmith's tracer in
``langchain_core.tracers``; the old name still works for one release, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event

from offprompt.errors import ValidationError
from offprompt.trace import TraceEvent

__all__ = ["EVENT_PREFIX", "OffpromptCallbackTracer", "event_name"]

logger = logging.getLogger("offprompt.trace")

#: Custom events are named ``f"{EVENT_PREFIX}.{kind}"``.
EVENT_PREFIX = "offprompt"


def event_name(event: TraceEvent) -> str:
    """The LangChain custom-event name of ``event`` (``"offprompt.window"``...)."""
    return f"{EVENT_PREFIX}.{event.kind}"


class OffpromptCallbackTracer:
    """A :class:`~offprompt.trace.Tracer` that forwards events to LangChain callbacks.

    Args:
        handlers: Callback handlers that receive the events emitted outside a run
            (inside one, the run's own handlers receive them instead, so a handler in
            both places is not called twice).

    Attributes:
        handlers: The out-of-run handlers.
        dispatched: Events sent into a run so far.
        delivered: Events handed to ``handlers`` so far.

    Example:
        >>> from langchain_core.callbacks import BaseCallbackHandler
        >>> from offprompt.conversation import ConversationMemory
        >>> from offprompt.messages import Message
        >>> class Seen(BaseCallbackHandler):
        ...     def __init__(self): self.names = []
        ...     def on_custom_event(self, name, data, **kwargs): self.names.append(name)
        >>> seen = Seen()
        >>> memory = ConversationMemory(tracer=OffpromptCallbackTracer(handlers=[seen]))
        >>> memory.add_messages([Message.user("hi")])
        >>> seen.names
        ['offprompt.write']
    """

    def __init__(self, handlers: Sequence[BaseCallbackHandler] = ()) -> None:
        handlers = list(handlers)
        for handler in handlers:
            if not isinstance(handler, BaseCallbackHandler):
                raise ValidationError(
                    f"handlers must be LangChain callback handlers, got {type(handler).__name__}"
                )
        self.handlers = handlers
        self.dispatched = 0
        self.delivered = 0
        self._pending: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"OffpromptCallbackTracer(handlers={len(self.handlers)})"

    def emit(self, event: TraceEvent) -> None:
        """Dispatch ``event`` into the current run, or hand it to ``handlers`` outside one."""
        name, data = event_name(event), event.to_dict()
        try:
            dispatch_custom_event(name, data)
        except RuntimeError:  # no parent run: not inside a runnable
            self._deliver(name, data)
        else:
            self.dispatched += 1

    async def aemit(self, event: TraceEvent) -> None:
        """Async twin of :meth:`emit` (``adispatch_custom_event`` inside a run)."""
        name, data = event_name(event), event.to_dict()
        try:
            await adispatch_custom_event(name, data)
        except RuntimeError:
            for handler in self._targets():
                try:
                    result = handler.on_custom_event(
                        name, data, run_id=uuid.uuid4(), tags=[], metadata={}
                    )
                    if inspect.isawaitable(result):
                        await result
                except Exception:  # the same rule as emit: a handler never breaks the memory
                    if getattr(handler, "raise_error", False):
                        raise
                    logger.exception("callback handler %r failed on %s", handler, name)
                else:
                    self.delivered += 1
        else:
            self.dispatched += 1

    def _targets(self) -> list[BaseCallbackHandler]:
        return [h for h in self.handlers if not h.ignore_custom_event]

    def _deliver(self, name: str, data: dict[str, Any]) -> None:
        for handler in self._targets():
            try:
                result = handler.on_custom_event(
                    name, data, run_id=uuid.uuid4(), tags=[], metadata={}
                )
                if inspect.isawaitable(result):  # an AsyncCallbackHandler
                    self._run(result)
            except Exception:
                if getattr(handler, "raise_error", False):
                    raise
                logger.exception("callback handler %r failed on %s", handler, name)
            else:
                self.delivered += 1

    def _run(self, awaitable: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(_awaited(awaitable))
            return
        task = loop.create_task(_awaited(awaitable))
        self._pending.add(task)  # keep a reference until it finishes
        task.add_done_callback(self._pending.discard)


async def _awaited(awaitable: Any) -> None:
    await awaitable


def __getattr__(name: str) -> Any:
    """The deprecated name ``LangChainTracer`` (one release), with a ``DeprecationWarning``."""
    if name == "LangChainTracer":
        warnings.warn(
            "offprompt_langchain.tracing.LangChainTracer is renamed OffpromptCallbackTracer "
            "(the old name shadows langchain_core.tracers.LangChainTracer); "
            "the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return OffpromptCallbackTracer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
