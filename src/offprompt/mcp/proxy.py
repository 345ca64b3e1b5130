"""``offprompt mcp proxy``: any MCP server's large results stay off the prompt.

The proxy starts the upstream server as a stdio subprocess (its stderr goes to the
proxy's stderr) and serves its tools, resources and prompts to the client over the
proxy's own stdin/stdout, unchanged, plus the memory tools. A tool result's text block
of at least ``min_tokens`` tokens (every block of a ``--sensitive`` tool) is stored in
the home's task memory and replaced by the reference sentence and card; an image,
audio or embedded binary resource larger than about ``min_tokens`` tokens of base64 is
stored as a blob and replaced by a reference with a card. ``structuredContent`` passes
through, except that a string in it equal to a stored text block becomes the same
reference (when that still fits the tool's output schema); ``isError``, ``_meta`` and
results that needed no offloading pass through untouched (byte for byte). The stored
references ride in the result's ``_meta["offprompt/references"]``.

Faults: a call the upstream does not answer within ``timeout`` seconds (it is then
cancelled upstream), or that the upstream cannot finish because it exited, or whose
answer is longer than ``max_message_bytes``, comes back as a tool error saying so. When
the upstream exits, the proxy answers what is in flight and exits (code 1); when the
client closes stdin, the proxy closes the upstream's stdin and stops it. Progress
notifications go on to the client, cancellations from it on to the upstream.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

import anyio
import jsonschema
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.shared.message import SessionMessage

from offprompt.errors import OffpromptError, UpstreamError
from offprompt.mcp._core import CoreBinding, Offloaded, open_task_memory
from offprompt.mcp._server import ToolTable, run_stdio, text_result
from offprompt.mcp._stdio import DEFAULT_MAX_MESSAGE_BYTES, upstream_stdio
from offprompt.scope import Scope

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_TIMEOUT",
    "REFERENCES_META_KEY",
    "ProxyConfig",
    "UpstreamError",
    "run_proxy",
]

DEFAULT_TIMEOUT = 300.0
"""Seconds the proxy waits for the upstream server to answer one request."""

INIT_TIMEOUT = 60.0
"""Seconds the upstream server gets to start and answer ``initialize`` (at least)."""

REFERENCES_META_KEY = "offprompt/references"
"""Key, in a tool result's ``_meta``, of the list of stored references."""

# Once the upstream is gone, how long in-flight calls get to send their error.
_DRAIN_SECONDS = 5.0


@dataclass
class ProxyConfig:
    """What ``offprompt mcp proxy`` runs.

    Attributes:
        command: The upstream server's command and arguments.
        home: The offprompt home whose task memory receives large results.
        scope: The partition results are stored in and memory tools read from.
        min_tokens: Text blocks with fewer tokens pass through (``None``: the default).
        sensitive: Tools whose every result is stored.
        timeout: Seconds to wait for each upstream answer (``initialize``: at least
            ``init_timeout``, a server may be slow to start).
        init_timeout: Seconds the upstream gets, at least, to answer ``initialize``.
        max_output_tokens: Bound of every memory-tool output.
        max_message_bytes: Longest message read from the upstream; a longer answer
            comes back as an error (and is not kept), so the proxy's memory is bounded.
        env: Environment of the upstream (``None``: the proxy's own environment).
        cwd: Working directory of the upstream (``None``: the proxy's).
    """

    command: Sequence[str]
    home: Path
    scope: Scope | None = None
    min_tokens: int | None = None
    sensitive: Sequence[str] = ()
    timeout: float = DEFAULT_TIMEOUT
    init_timeout: float = INIT_TIMEOUT
    max_output_tokens: int = 1000
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    env: dict[str, str] | None = None
    cwd: Path | None = None


class _Upstream:
    """The client side: one session with the upstream server, and whether it is alive."""

    def __init__(self, session: ClientSession, gone: anyio.Event, timeout: float) -> None:
        self.session = session
        self.gone = gone
        self.timeout = timedelta(seconds=timeout)
        self.in_flight = 0
        self.idle = anyio.Event()
        self.idle.set()

    async def request(self, request: Any, result_type: type[Any]) -> Any:
        """Forward one request as it is; McpError (timeout, closed) propagates.

        The request's ``_meta.progressToken`` goes along, so the upstream's progress
        notifications carry the client's token (:class:`_Notifications` passes them
        on). When the client cancels the request, or it times out, the upstream is
        sent ``notifications/cancelled`` for it.
        """
        # The parsed request keeps the client's "jsonrpc" and "id" as extra fields.
        request = type(request)(method=request.method, params=request.params)
        self.in_flight += 1
        self.idle = anyio.Event() if self.in_flight == 1 else self.idle
        # The id send_request is about to give it (it takes the next one at once).
        upstream_id = self.session._request_id
        try:
            return await self.session.send_request(
                types.ClientRequest(request),
                result_type,
                request_read_timeout_seconds=self.timeout,
            )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(upstream_id, "cancelled by the client")
            raise
        except McpError as exc:
            if exc.error.code == 408:  # the SDK's REQUEST_TIMEOUT
                await self._cancel(upstream_id, "timed out in offprompt mcp proxy")
            raise
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()

    async def _cancel(self, upstream_id: int, reason: str) -> None:
        if self.gone.is_set():
            return
        notification = types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=upstream_id, reason=reason)
        )
        with anyio.move_on_after(5), contextlib.suppress(Exception):
            await self.session.send_notification(types.ClientNotification(notification))


class _Notifications:
    """What the upstream sends besides answers: progress goes on to the client (its
    token is the client's own, forwarded with the request); a malformed message is
    reported on stderr. Other notifications and the upstream's requests to the client
    (sampling, elicitation, roots) are not forwarded."""

    def __init__(self) -> None:
        self.client: ServerSession | None = None

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            text = " ".join(str(message).split())[:300]
            sys.stderr.write(f"offprompt mcp proxy: skipped a message of the upstream: {text}\n")
            return
        progress = isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ProgressNotification
        )
        if progress and self.client is not None:
            # Rebuilt: the parsed one keeps "jsonrpc" as an extra field, sent twice.
            forwarded = types.ProgressNotification(params=message.root.params)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.client.send_notification(types.ServerNotification(forwarded))
        await anyio.lowlevel.checkpoint()


async def _tap(
    source: MemoryObjectReceiveStream[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    gone: anyio.Event,
) -> None:
    """Pass the upstream's messages on; when its stdout ends, say it is gone."""
    try:
        async with sink:
            async for message in source:
                await sink.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        gone.set()


class Proxy:
    """The MCP server the client talks to, forwarding to one upstream session."""

    def __init__(
        self,
        upstream: _Upstream,
        binding: CoreBinding,
        init: types.InitializeResult,
        notifications: _Notifications,
    ) -> None:
        self.upstream = upstream
        self.notifications = notifications
        self.binding = binding
        self.memory_tools = ToolTable(binding.memory_tools())
        # The upstream's output schemas, as listed (a swapped structured result must fit).
        self.output_schemas: dict[str, dict[str, Any]] = {}
        info = init.serverInfo
        self.server: Server[Any, Any] = Server(
            f"offprompt-proxy ({info.name})",
            version=info.version,
            instructions=init.instructions,
        )
        handlers = self.server.request_handlers
        handlers[types.ListToolsRequest] = self.list_tools
        handlers[types.CallToolRequest] = self.call_tool
        capabilities = init.capabilities
        if capabilities.resources is not None:
            handlers[types.ListResourcesRequest] = self._forward(types.ListResourcesResult)
            handlers[types.ListResourceTemplatesRequest] = self._forward(
                types.ListResourceTemplatesResult
            )
            handlers[types.ReadResourceRequest] = self._forward(types.ReadResourceResult)
        if capabilities.prompts is not None:
            handlers[types.ListPromptsRequest] = self._forward(types.ListPromptsResult)
            handlers[types.GetPromptRequest] = self._forward(types.GetPromptResult)
        if capabilities.completions is not None:
            handlers[types.CompleteRequest] = self._forward(types.CompleteResult)

    def _forward(self, result_type: type[Any]) -> Any:
        async def handler(request: Any) -> types.ServerResult:
            # McpError (the upstream's own error, a timeout) goes back as the JSON-RPC error.
            return types.ServerResult(await self._request(request, result_type))

        return handler

    async def _request(self, request: Any, result_type: type[Any]) -> Any:
        """Forward ``request``; the upstream's progress on it goes to this client."""
        self.notifications.client = self.server.request_context.session
        return await self.upstream.request(request, result_type)

    async def list_tools(self, request: types.ListToolsRequest) -> types.ServerResult:
        listed: types.ListToolsResult = await self._request(request, types.ListToolsResult)
        tools = list(listed.tools)
        for tool in tools:
            if tool.outputSchema is not None:
                self.output_schemas[tool.name] = tool.outputSchema
        clash = sorted({t.name for t in tools} & set(self.memory_tools.tools))
        if clash:
            raise McpError(
                types.ErrorData(
                    code=types.INTERNAL_ERROR,
                    message=f"the upstream server has tools named like the memory tools: {clash}",
                )
            )
        first_page = request.params is None or request.params.cursor is None
        if first_page:
            tools += self.memory_tools.listed()
        return types.ServerResult(listed.model_copy(update={"tools": tools}))

    async def call_tool(self, request: types.CallToolRequest) -> types.ServerResult:
        name = request.params.name
        if name in self.memory_tools:
            return types.ServerResult(
                await self.memory_tools.call(name, request.params.arguments or {})
            )
        try:
            result: types.CallToolResult = await self._request(request, types.CallToolResult)
        except McpError as exc:
            failure = self._failure(name, exc)
            if failure is not None:
                return types.ServerResult(text_result(failure, is_error=True))
            # The upstream's own error is the tool's output: the offload policy decides
            # (a sensitive tool's error shows its size and reference, never its text).
            result = text_result(exc.error.message, is_error=True)
        try:
            return types.ServerResult(await self._offload(name, result))
        except OffpromptError as exc:
            # Nothing of the output reaches the client when it could not be stored.
            return types.ServerResult(
                text_result(
                    f"offprompt mcp proxy: the result of {name!r} could not be stored "
                    f"off-prompt: {exc}",
                    is_error=True,
                )
            )

    def _failure(self, name: str, exc: McpError) -> str | None:
        """The proxy's message when the upstream is gone or timed out; ``None`` when the
        error is the upstream's own."""
        if self.upstream.gone.is_set() or exc.error.code == types.CONNECTION_CLOSED:
            return (
                f"offprompt mcp proxy: the upstream MCP server exited during the call to "
                f"{name!r}; no result"
            )
        if exc.error.code == 408:  # the SDK's REQUEST_TIMEOUT
            return (
                f"offprompt mcp proxy: the upstream MCP server did not answer the call to "
                f"{name!r} within {self.upstream.timeout.total_seconds():g} s (--timeout)"
            )
        return None

    async def _offload(self, tool: str, result: types.CallToolResult) -> types.CallToolResult:
        is_error = bool(result.isError)
        content: list[types.ContentBlock] = []
        references: list[dict[str, Any]] = []
        replaced: dict[str, str] = {}
        for block in result.content:
            offloaded = await self._offload_block(tool, block, is_error=is_error)
            if offloaded is None or offloaded.reference is None:
                content.append(block)
                continue
            references.append(offloaded.reference.to_artifact())
            content.append(types.TextContent(type="text", text=offloaded.text))
            if isinstance(block, types.TextContent):
                replaced[block.text] = offloaded.text
        if not references:
            return result  # untouched: the client gets the upstream's bytes
        meta = dict(result.meta or {})
        meta[REFERENCES_META_KEY] = references
        update: dict[str, Any] = {"content": content, "meta": meta}
        if result.structuredContent is not None and replaced:
            update["structuredContent"] = self._structured(tool, result.structuredContent, replaced)
        return result.model_copy(update=update)

    def _structured(
        self, tool: str, structured: dict[str, Any], replaced: dict[str, str]
    ) -> dict[str, Any]:
        """``structured`` with each string equal to a stored text block replaced by its
        reference, if it still fits the tool's output schema (else ``structured``).

        FastMCP tools that return text repeat it as ``{"result": text}``: passed through,
        the stored output would reach the client anyway.
        """

        def swap(value: Any) -> Any:
            if isinstance(value, str):
                return replaced.get(value, value)
            if isinstance(value, dict):
                return {key: swap(item) for key, item in value.items()}
            if isinstance(value, list):
                return [swap(item) for item in value]
            return value

        swapped: dict[str, Any] = swap(structured)
        schema = self.output_schemas.get(tool)
        if schema is not None:
            try:
                jsonschema.validate(swapped, schema)
            except jsonschema.ValidationError:
                return structured
        return swapped

    async def _offload_block(
        self, tool: str, block: types.ContentBlock, *, is_error: bool
    ) -> Offloaded | None:
        binding = self.binding
        if isinstance(block, types.TextContent):
            return await binding.aoffload_text(tool, block.text, is_error=is_error)
        if isinstance(block, (types.ImageContent, types.AudioContent)):
            return await self._blob(tool, block.data, block.mimeType)
        if isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                return await binding.aoffload_text(tool, resource.text, is_error=is_error)
            return await self._blob(
                tool, resource.blob, resource.mimeType or "application/octet-stream"
            )
        return None  # resource links and unknown blocks pass through

    async def _blob(self, tool: str, data: str, mime_type: str) -> Offloaded | None:
        if not self.binding.is_large_blob(tool, len(data)):
            return None
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise OffpromptError(f"its {mime_type} content is not valid base64") from None
        return await self.binding.aoffload_blob(tool, raw, mime_type)

    async def wait_gone(self) -> None:
        """Return once the upstream has exited and in-flight calls were answered."""
        await self.upstream.gone.wait()
        with anyio.move_on_after(_DRAIN_SECONDS):
            await self.upstream.idle.wait()
        await anyio.sleep(0.2)  # let the last responses reach stdout


def _translate(exc: BaseException, params: StdioServerParameters, timeout: float) -> BaseException:
    if isinstance(exc, TimeoutError):  # before OSError: TimeoutError is one
        return UpstreamError(
            f"the upstream MCP server did not answer initialize within {timeout:g} s"
        )
    if isinstance(exc, OSError):
        return UpstreamError(f"cannot start the upstream MCP server {params.command!r}: {exc}")
    return exc


def _single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def run_proxy(config: ProxyConfig) -> None:
    """Run the proxy until the client or the upstream server goes away.

    The home's task memory opens while the upstream server starts (both take seconds).

    Raises:
        UpstreamError: The upstream server could not be started or initialized, or it
            exited while the client was connected.
        OffpromptError: The home's task memory cannot be opened.
    """
    if not config.command:
        raise UpstreamError("no upstream command: give it after '--'")
    params = StdioServerParameters(
        command=config.command[0],
        args=list(config.command[1:]),
        env=dict(os.environ) if config.env is None else config.env,
        cwd=config.cwd,
    )
    opening = _Opening(config)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(opening.run)
            gone = await _serve(params, opening, config)
    except BaseExceptionGroup as group_error:
        raise _single(group_error) from None
    finally:
        opening.start_close()
        await anyio.to_thread.run_sync(opening.finish_close)
    if gone:
        raise UpstreamError(f"the upstream MCP server exited: {' '.join(config.command)}")


class _Opening:
    """The task memory being opened in a worker thread, and the binding once it is."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.memory: Any = None
        self.error: BaseException | None = None
        self.done = anyio.Event()
        self._closing: threading.Thread | None = None

    async def run(self) -> None:
        try:
            self.memory = await anyio.to_thread.run_sync(
                open_task_memory, self.config.home, self.config.scope
            )
        except Exception as exc:
            self.error = exc
        finally:
            self.done.set()

    def start_close(self) -> None:
        """Close the memory in a thread of its own (while the upstream shuts down)."""
        if self.memory is not None and self._closing is None:
            self._closing = threading.Thread(target=self.memory.close, name="offprompt-close")
            self._closing.start()

    def finish_close(self) -> None:
        if self._closing is not None:
            self._closing.join()

    async def binding(self) -> CoreBinding:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return CoreBinding(
            self.memory,
            min_tokens=self.config.min_tokens,
            sensitive=self.config.sensitive,
            max_output_tokens=self.config.max_output_tokens,
        )


async def _serve(params: StdioServerParameters, opening: _Opening, config: ProxyConfig) -> bool:
    """Serve until one side leaves; whether the upstream left first."""
    gone = anyio.Event()
    died = False
    timeout = config.timeout
    init_timeout = max(timeout, config.init_timeout)
    try:
        transport: Any
        if sys.platform == "win32":  # pragma: no cover - the SDK's job objects, its reader
            from mcp.client.stdio import stdio_client

            transport = stdio_client(params, errlog=sys.stderr)
        else:
            transport = upstream_stdio(
                params, errlog=sys.stderr, max_message_bytes=config.max_message_bytes
            )
        async with transport as (up_read, up_write), anyio.create_task_group() as group:
            sink, tapped = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            group.start_soon(_tap, up_read, sink, gone)
            notifications = _Notifications()
            async with ClientSession(tapped, up_write, message_handler=notifications) as session:
                try:
                    with anyio.fail_after(init_timeout):
                        init = await session.initialize()
                except McpError as exc:
                    raise UpstreamError(
                        f"the upstream MCP server failed to initialize: {exc.error.message}"
                    ) from None
                binding = await opening.binding()
                proxy = Proxy(_Upstream(session, gone, timeout), binding, init, notifications)
                await run_stdio(proxy.server, until=proxy.wait_gone)
                died = gone.is_set()
                opening.start_close()  # no handler runs any more
            group.cancel_scope.cancel()
    except OffpromptError:
        raise
    except Exception as exc:
        raise _translate(_single(exc), params, init_timeout) from None
    return died
