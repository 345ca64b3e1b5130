"""The proxy's client of its upstream server: JSON-RPC over the stdio pipes, as dicts.

The proxy forwards what it is asked and passes back what it gets, so it needs no
typed client: this one sends requests with ids of its own, matches answers to them,
gives up after a timeout (and tells the upstream with ``notifications/cancelled``),
fails what is in flight once the upstream is gone, answers the upstream's ``ping`` and
refuses its other requests (sampling, roots, elicitation: the proxy forwards none).
It depends on no SDK API, so it is the same for every ``mcp`` version.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from offprompt.errors import NoAnswer, RemoteError

__all__ = ["CONNECTION_CLOSED", "REQUEST_TIMEOUT", "NoAnswer", "RemoteError", "UpstreamClient"]

REQUEST_TIMEOUT = 408
"""Code of the error for a request the upstream did not answer in time (the SDK's)."""

CONNECTION_CLOSED = -32000
"""Code of the error for a request the upstream exited before answering (the SDK's)."""

_METHOD_NOT_FOUND = -32601
_INTERNAL_ERROR = -32603
_CANCEL_SECONDS = 5.0


def _remote_error(error: Any) -> RemoteError:
    """The upstream's JSON-RPC error object as a :class:`RemoteError`; a malformed one
    (no object, a code that is no integer) is still its error, with what it holds."""
    if not isinstance(error, dict):
        return RemoteError(_INTERNAL_ERROR, "" if error is None else str(error))
    code = error.get("code")
    message = error.get("message")
    return RemoteError(
        code if isinstance(code, int) and not isinstance(code, bool) else _INTERNAL_ERROR,
        message if isinstance(message, str) else "" if message is None else json.dumps(message),
        error.get("data"),
    )


class _Waiting:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer: dict[str, Any] | None = None


Incoming = MemoryObjectReceiveStream["dict[str, Any] | Exception"]
Outgoing = MemoryObjectSendStream["dict[str, Any]"]


class UpstreamClient:
    """One JSON-RPC session with the upstream server; :meth:`run` reads its messages.

    Args:
        incoming: The upstream's messages (a malformed one as the exception parsing it
            raised); their end means the upstream is gone.
        outgoing: Where messages to the upstream go.
        on_notification: Called with each notification of the upstream.
    """

    def __init__(
        self,
        incoming: Incoming,
        outgoing: Outgoing,
        on_notification: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        self._incoming = incoming
        self._outgoing = outgoing
        self._on_notification = on_notification
        self._waiting: dict[int, _Waiting] = {}
        self._last_id = 0
        self.gone = anyio.Event()

    async def run(self) -> None:
        """Read the upstream's messages until its stdout ends; then fail what waits."""
        try:
            async for message in self._incoming:
                if isinstance(message, Exception):
                    text = " ".join(str(message).split())[:300]
                    sys.stderr.write(
                        f"offprompt mcp proxy: skipped a message of the upstream: {text}\n"
                    )
                elif "method" in message:
                    if "id" in message:
                        await self._answer(message)
                    else:
                        await self._on_notification(message)
                else:
                    waiting = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
                    if waiting is not None:
                        waiting.answer = message
                        waiting.done.set()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.gone.set()
            for waiting in self._waiting.values():
                waiting.done.set()  # no answer: the upstream exited

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None
    ) -> dict[str, Any]:
        """Send one request; its result.

        Cancelled (the client cancelled, or an outer timeout), it tells the upstream.

        Raises:
            RemoteError: The upstream answered with an error.
            NoAnswer: The upstream did not answer within ``timeout`` seconds
                (:data:`REQUEST_TIMEOUT`; it is then sent ``notifications/cancelled``),
                or exited first (:data:`CONNECTION_CLOSED`).
        """
        self._last_id += 1
        request_id = self._last_id
        waiting = self._waiting[request_id] = _Waiting()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            if self.gone.is_set():
                raise NoAnswer(CONNECTION_CLOSED, "Connection closed")
            try:
                await self._outgoing.send(message)
                with anyio.fail_after(timeout):
                    await waiting.done.wait()
            except TimeoutError:
                await self._cancel(request_id, f"timed out in offprompt mcp proxy ({method})")
                raise NoAnswer(
                    REQUEST_TIMEOUT, f"Timed out while waiting for the answer to {method}"
                ) from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise NoAnswer(CONNECTION_CLOSED, "Connection closed") from None
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._cancel(request_id, "cancelled by the client")
                raise
        finally:
            del self._waiting[request_id]
        answer = waiting.answer
        if answer is None:
            raise NoAnswer(CONNECTION_CLOSED, "Connection closed")
        if "error" in answer:
            raise _remote_error(answer["error"])
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send one notification (dropped once the upstream is gone)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._outgoing.send(message)

    async def _cancel(self, request_id: int, reason: str) -> None:
        if self.gone.is_set():
            return
        with anyio.move_on_after(_CANCEL_SECONDS):
            await self.notify(
                "notifications/cancelled", {"requestId": request_id, "reason": reason}
            )

    async def _answer(self, request: dict[str, Any]) -> None:
        """The upstream's own requests: ``ping`` is answered, the others refused."""
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if request["method"] == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {
                "code": _METHOD_NOT_FOUND,
                "message": f"offprompt mcp proxy does not forward {request['method']!r}",
            }
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._outgoing.send(answer)
