"""``offprompt mcp proxy``: any MCP server's large results stay off the prompt.

The proxy starts the upstream server as a stdio subprocess (its stderr goes to the
proxy's stderr) and serves its tools, resources and prompts to the client over the
proxy's own stdin/stdout, unchanged, plus the memory tools. A tool result's text block
of at least ``min_tokens`` tokens (every block of a ``--sensitive`` tool) is stored in
the home's task memory and replaced by the reference sentence and card; an image,
audio or embedded binary resource larger than about ``min_tokens`` tokens of base64 is
stored as a blob and replaced by a reference with a card (an image by its pixel cost,
so an icon passes); a replaced block keeps its ``annotations`` and ``_meta``, and the
card names an embedded resource's ``uri``. ``structuredContent`` follows the same rule:
a string in it equal to a stored block becomes that block's reference, and a value
still large is stored
too and replaced by a reference object (the listed ``outputSchema`` admits it:
:func:`schema_with_reference`). ``isError``, ``_meta`` and results that needed no
offloading pass through untouched (byte for byte). The stored
references ride in the result's ``_meta["offprompt/references"]``. The upstream's
JSON-RPC error answering ``tools/call`` (any code) becomes a tool error with its message
as the text, under the same policy (a sensitive tool's: its size and reference only).

Faults: a call the upstream does not answer within ``timeout`` seconds (it is then
cancelled upstream), or that the upstream cannot finish because it exited, or whose
answer is longer than ``max_message_bytes``, comes back as a tool error saying so. When
the upstream exits, the proxy answers what is in flight and exits (code 1); when the
client closes stdin or sends SIGTERM, SIGINT or SIGHUP, the proxy closes the upstream's stdin
and stops its whole process group within about a second, then exits (code 0). Progress
notifications go on to the client, cancellations from it on to the upstream.

Around the tools: the upstream's log messages (and ``logging/setLevel``), resource
subscriptions and their updates, and its list-changed notifications pass through, and
the proxy claims the same ``listChanged``/``subscribe`` flags. MCP tasks left the
specification, so the proxy claims no ``tasks`` capability and leaves out of the
listing a tool that can only run as a task.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

import anyio
import jsonschema
import pydantic
from mcp import StdioServerParameters
from mcp.server.lowlevel import Server

from offprompt import __version__
from offprompt.errors import OffpromptError, UpstreamError
from offprompt.mcp._client import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    NoAnswer,
    RemoteError,
    UpstreamClient,
)
from offprompt.mcp._core import CoreBinding, Offloaded, ToolContent, open_task_memory
from offprompt.mcp._outputs import RESOURCE_NOT_FOUND, StoredOutputs
from offprompt.mcp._sdk import HANDSHAKE_VERSION, Handler, Peer, make_server, mcp_error
from offprompt.mcp._server import ToolTable, run_stdio, text_result
from offprompt.mcp._stdio import DEFAULT_MAX_MESSAGE_BYTES, Shutdown, upstream_stdio
from offprompt.scope import Scope
from offprompt.task_memory.offload import failure_text

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
_WAITING_NOTIFICATIONS = 100
_PASSED_NOTIFICATIONS = frozenset(
    {
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    }
)
_INTERNAL_ERROR = -32603


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
    """The client side: the session with the upstream server, and what is in flight."""

    def __init__(self, client: UpstreamClient, timeout: float) -> None:
        self.client = client
        self.gone = client.gone
        self.timeout = timeout
        self.in_flight = 0
        self.idle = anyio.Event()
        self.idle.set()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Forward one request as it is; :class:`RemoteError` (timeout, exit) propagates.

        The request's ``_meta.progressToken`` goes along, so the upstream's progress
        notifications carry the client's token (:class:`_Notifications` passes them
        on). When the client cancels the request, or it times out, the upstream is
        sent ``notifications/cancelled`` for it.
        """
        if self.gone.is_set():
            # The proxy is exiting: what it is asked now dies with the connection.
            await anyio.sleep_forever()
        self.in_flight += 1
        self.idle = anyio.Event() if self.in_flight == 1 else self.idle
        try:
            return await self.client.request(method, params, self.timeout)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()


class _Notifications:
    """What the upstream sends besides answers, passed on to the client: progress (its
    token is the client's own, forwarded with the request), log messages, resource
    updates and list changes. Until the client's first request shows the proxy its
    session, they wait (the latest :data:`_WAITING_NOTIFICATIONS`). The upstream's
    cancellations (they name its own request ids) and unknown methods are dropped.
    """

    def __init__(self) -> None:
        self._client: Peer | None = None
        self._waiting: deque[dict[str, Any]] = deque(maxlen=_WAITING_NOTIFICATIONS)

    async def reached(self, client: Peer) -> None:
        """The client this proxy now talks to (each request shows it): send what waited."""
        self._client = client
        while self._waiting:
            await self._send(self._waiting.popleft())

    async def __call__(self, message: dict[str, Any]) -> None:
        if message.get("method") in _PASSED_NOTIFICATIONS:
            if self._client is None:
                self._waiting.append(message)
            else:
                await self._send(message)
        await anyio.lowlevel.checkpoint()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._client is not None
        params = message.get("params")
        with contextlib.suppress(
            anyio.ClosedResourceError, anyio.BrokenResourceError, pydantic.ValidationError
        ):
            # A malformed notification of the upstream is its own bug: dropped, not fatal.
            await self._client.notify(
                message["method"], params if isinstance(params, dict) else None
            )


class Proxy:
    """The MCP server the client talks to, forwarding to one upstream session.

    Everything is a wire-format dict: what the upstream answers passes through as it
    came (``initialize``: its ``serverInfo``, ``instructions``, ``capabilities``).
    """

    def __init__(
        self,
        upstream: _Upstream,
        binding: CoreBinding,
        init: dict[str, Any],
        notifications: _Notifications,
    ) -> None:
        self.upstream = upstream
        self.notifications = notifications
        self.binding = binding
        self.memory_tools = ToolTable(binding.memory_tools(), images=binding.aimage)
        self.outputs = StoredOutputs(binding, self.memory_tools)
        # The upstream's output schemas, as listed (a swapped structured result must fit).
        self.output_schemas: dict[str, dict[str, Any]] = {}
        info = init.get("serverInfo") or {}
        handlers: dict[str, Handler] = {
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
        }
        capabilities = init.get("capabilities") or {}
        self.capabilities: dict[str, Any] = capabilities
        self.upstream_resources = capabilities.get("resources") is not None
        # Stored outputs are resources: the proxy serves them whatever the upstream has.
        handlers.update(
            {
                "resources/list": self.list_resources,
                "resources/templates/list": self.list_resource_templates,
                "resources/read": self.read_resource,
            }
        )
        if (capabilities.get("resources") or {}).get("subscribe"):
            handlers["resources/subscribe"] = self._subscription("resources/subscribe")
            handlers["resources/unsubscribe"] = self._subscription("resources/unsubscribe")
        forwarded = {
            "prompts": ["prompts/list", "prompts/get"],
            "completions": ["completion/complete"],
            "logging": ["logging/setLevel"],
        }
        for capability, methods in forwarded.items():
            if capabilities.get(capability) is not None:
                handlers.update({method: self._forward(method) for method in methods})
        self.server: Server[Any, Any] = make_server(
            f"offprompt-proxy ({info.get('name', 'upstream')})",
            handlers,
            version=info.get("version"),
            instructions=init.get("instructions"),
        )

    def _forward(self, method: str) -> Handler:
        async def handler(params: dict[str, Any], client: Peer) -> dict[str, Any]:
            try:
                return await self._request(method, params, client)
            except RemoteError as exc:
                # The upstream's own error (or a timeout) goes back as the JSON-RPC error.
                raise mcp_error(exc.code, exc.message) from None

        return handler

    async def _request(self, method: str, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """Forward a request; the upstream's progress on it goes to this client."""
        await self.notifications.reached(client)
        return await self.upstream.request(method, params)

    async def list_resources(self, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """``resources/list``: the upstream's (stored outputs are not listed: they may be
        many, and only their links and templates are meant to reach a client)."""
        if not self.upstream_resources:
            return {"resources": []}
        return await self._forward("resources/list")(params, client)

    async def list_resource_templates(self, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """``resources/templates/list``: the upstream's, then the stored outputs'."""
        listed: dict[str, Any] = {"resourceTemplates": []}
        if self.upstream_resources:
            listed = await self._forward("resources/templates/list")(params, client)
        templates = list(listed.get("resourceTemplates") or [])
        if params.get("cursor") is None:  # the first page
            templates += self.outputs.templates()
        return {**listed, "resourceTemplates": templates}

    async def read_resource(self, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """``resources/read``: a stored output is read here, any other upstream."""
        if self.outputs.owns(params.get("uri")):
            return await self.outputs.read(params["uri"])
        if not self.upstream_resources:
            raise mcp_error(
                RESOURCE_NOT_FOUND, f"unknown resource {str(params.get('uri'))[:200]!r}"
            )
        return await self._forward("resources/read")(params, client)

    def _subscription(self, method: str) -> Handler:
        forward = self._forward(method)

        async def handler(params: dict[str, Any], client: Peer) -> dict[str, Any]:
            if self.outputs.owns(params.get("uri")):
                return {}  # a stored output never changes: nothing to notify
            return await forward(params, client)

        return handler

    async def list_tools(self, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """``tools/list``: the upstream server's tools, then the memory tools."""
        listed = await self._forward("tools/list")(params, client)
        tools = [tool for tool in listed.get("tools") or [] if not _needs_tasks(tool)]
        for index, tool in enumerate(tools):
            if isinstance(tool.get("outputSchema"), dict):
                self.output_schemas[tool["name"]] = tool["outputSchema"]
                tools[index] = {**tool, "outputSchema": schema_with_reference(tool["outputSchema"])}
        clash = sorted({t.get("name") for t in tools} & set(self.memory_tools.tools))
        if clash:
            raise mcp_error(
                _INTERNAL_ERROR,
                f"the upstream server has tools named like the memory tools: {clash}",
            )
        if params.get("cursor") is None:  # the first page
            tools += self.memory_tools.listed()
        return {**listed, "tools": tools}

    async def call_tool(self, params: dict[str, Any], client: Peer) -> dict[str, Any]:
        """``tools/call``: a memory tool is answered here; any other goes upstream and a large
        result is stored off-prompt.
        """
        name = params["name"]
        if name in self.memory_tools:
            return await self.memory_tools.call(name, params.get("arguments") or {})
        try:
            result = await self._request("tools/call", params, client)
        except RemoteError as exc:
            failure = self._failure(name, exc)
            if failure is not None:
                return text_result(failure, is_error=True)
            # The upstream's own error is the tool's output: the offload policy decides
            # (a sensitive tool's error shows its size and reference, never its text).
            result = text_result(exc.message, is_error=True)
        try:
            return await self._offload(name, result)
        except OffpromptError as exc:
            # Nothing of the output reaches the client when it could not be stored.
            return text_result(failure_text(exc), is_error=True)

    def _failure(self, name: str, exc: RemoteError) -> str | None:
        """The proxy's message when the upstream is gone or timed out; ``None`` when the
        error is the upstream's own (whatever its code)."""
        if not isinstance(exc, NoAnswer):
            return None
        if self.upstream.gone.is_set() or exc.code == CONNECTION_CLOSED:
            return (
                f"offprompt mcp proxy: the upstream MCP server exited during the call to "
                f"{name!r}; no result"
            )
        if exc.code == REQUEST_TIMEOUT:
            return (
                f"offprompt mcp proxy: the upstream MCP server did not answer the call to "
                f"{name!r} within {self.upstream.timeout:g} s (--timeout)"
            )
        return None

    async def _offload(self, tool: str, result: dict[str, Any]) -> dict[str, Any]:
        is_error = bool(result.get("isError"))
        content: list[Any] = []
        references: list[dict[str, Any]] = []
        # What each stored block held (its text, or its base64) -> what replaced it.
        replaced: dict[str, Offloaded] = {}
        for block in result.get("content") or []:
            offloaded = await self._offload_block(tool, block, is_error=is_error)
            if offloaded is None or offloaded.reference is None:
                content.append(block)
                continue
            references.append(offloaded.reference.to_artifact())
            content.append(_replacement_block(block, offloaded.text))
            content.append(self.outputs.link(offloaded.reference))
            held = _held_string(block)
            if held is not None:
                replaced[held] = offloaded
        structured = result.get("structuredContent")
        update: dict[str, Any] = {}
        if structured is not None:
            kept, stored = await self._structured(tool, structured, replaced, is_error=is_error)
            if stored is not None and stored.reference is not None:
                artifact = stored.reference.to_artifact()
                if artifact not in references:
                    references.append(artifact)
                    content.append(self.outputs.link(stored.reference))
            if kept is not structured:
                update["structuredContent"] = kept
        if not references:
            return result  # untouched: the client gets the upstream's answer as it came
        meta = dict(result.get("_meta") or {})
        meta[REFERENCES_META_KEY] = references
        update.update({"content": content, "_meta": meta})
        return {**result, **update}

    async def _structured(
        self, tool: str, structured: Any, replaced: dict[str, Offloaded], *, is_error: bool
    ) -> tuple[Any, Offloaded | None]:
        """What the client gets as ``structuredContent``, and what was stored for it.

        The rule of every path to the model: no large value reaches it. First each
        string equal to a stored block (FastMCP repeats a text result as
        ``{"result": text}``; image servers repeat the base64) becomes that block's
        reference; if the result still fits the tool's output schema and is small
        (a sensitive tool's: holds nothing but references), it goes as it is. Else the
        whole value is stored (once: a block that was its JSON text already is) and the
        client gets a :data:`REFERENCE_SCHEMA` object, which the advertised output schema
        admits (:func:`schema_with_reference`).
        """
        texts = {held: offloaded.text for held, offloaded in replaced.items()}
        swapped = _swap(structured, texts) if texts else structured
        serialized = json.dumps(swapped, ensure_ascii=False, separators=(",", ":"))
        if tool in self.binding.sensitive:
            small = _only_strings_of(swapped, set(texts.values()))
        else:
            small = not self.binding.is_large_text(tool, serialized)
        if small and (swapped is structured or self._fits(tool, swapped)):
            return swapped, None
        stored = _stored_as_json(structured, replaced)
        if stored is None:
            whole = json.dumps(structured, ensure_ascii=False)
            stored = await self.binding.aoffload_text(tool, whole, is_error=is_error)
            if stored.reference is None:  # below the threshold after all (an odd schema)
                return structured, None
        assert stored.reference is not None
        return {**stored.reference.to_artifact(), "reference": stored.text}, stored

    def _fits(self, tool: str, value: Any) -> bool:
        """Whether ``value`` satisfies the tool's output schema as the upstream listed it."""
        schema = self.output_schemas.get(tool)
        if schema is None:
            return True
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError:
            return False
        return True

    async def _offload_block(self, tool: str, block: Any, *, is_error: bool) -> Offloaded | None:
        content = _content_of(block)
        if content is None:
            return None  # resource links and unknown blocks pass through
        return await self.binding.aoffload_content(tool, content, is_error=is_error)

    async def wait_gone(self) -> None:
        """Return once the upstream has exited and in-flight calls were answered."""
        await self.upstream.gone.wait()
        with anyio.move_on_after(_DRAIN_SECONDS):
            await self.upstream.idle.wait()
        await anyio.sleep(0.2)  # let the last responses reach stdout


def _needs_tasks(tool: Any) -> bool:
    """Whether a listed tool can only be called as an MCP task.

    Tasks left the MCP specification (the SDK 1.x marks them deprecated, 2.x has none), so
    the proxy does not advertise the ``tasks`` capability; a tool that requires it
    could not be called through the proxy, and a client may reject a listing whose
    tools need a capability the server lacks. Such a tool is left out of the listing.
    """
    execution = tool.get("execution") if isinstance(tool, dict) else None
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


def _content_of(block: Any) -> ToolContent | None:
    """An MCP content block mapped onto the core's kinds (``None``: it passes through).

    ``TextContent`` and an ``EmbeddedResource``'s text are text; ``ImageContent``,
    ``AudioContent`` and an embedded resource's ``blob`` are binary, decoded from base64
    only when the policy stores them.
    """
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        return ToolContent.of_text(block["text"])
    if kind in ("image", "audio") and isinstance(block.get("data"), str):
        return ToolContent.of_base64(block["data"], str(block.get("mimeType")))
    resource = block.get("resource") if kind == "resource" else None
    if isinstance(resource, dict):
        if isinstance(resource.get("text"), str):
            return ToolContent.of_text(resource["text"])
        if isinstance(resource.get("blob"), str):
            mime_type = resource.get("mimeType") or "application/octet-stream"
            return ToolContent.of_base64(resource["blob"], mime_type)
    return None


def _replacement_block(block: dict[str, Any], text: str) -> dict[str, Any]:
    """The block that takes a stored block's place: a text block with its reference, the
    block's ``annotations`` and ``_meta`` kept, and an embedded resource's ``uri`` named
    in the text.

    Always a text block, never an embedded resource holding the card: a client shows
    every text block to the model, while many keep resources aside, and a resource
    whose ``uri`` named the original would claim the card is that resource's content.
    """
    kept: dict[str, Any] = {key: block[key] for key in ("annotations", "_meta") if key in block}
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict) and "uri" in resource:
        text = f"{text}\nIt came as the embedded resource {resource['uri']}."
    return {"type": "text", "text": text, **kept}


def _held_string(block: dict[str, Any]) -> str | None:
    """The string a block carries (text, base64 data or resource), as a structured
    result may repeat it."""
    for key in ("text", "data"):
        if isinstance(block.get(key), str):
            return str(block[key])
    resource = block.get("resource")
    if isinstance(resource, dict):
        for key in ("text", "blob"):
            if isinstance(resource.get(key), str):
                return str(resource[key])
    return None


def _swap(value: Any, texts: dict[str, str]) -> Any:
    if isinstance(value, str):
        return texts.get(value, value)
    if isinstance(value, dict):
        return {key: _swap(item, texts) for key, item in value.items()}
    if isinstance(value, list):
        return [_swap(item, texts) for item in value]
    return value


def _only_strings_of(value: Any, allowed: set[str]) -> bool:
    """Whether every leaf of ``value`` is one of ``allowed`` (containers may be empty)."""
    if isinstance(value, dict):
        return all(_only_strings_of(item, allowed) for item in value.values())
    if isinstance(value, list):
        return all(_only_strings_of(item, allowed) for item in value)
    return isinstance(value, str) and value in allowed


def _stored_as_json(structured: Any, replaced: dict[str, Offloaded]) -> Offloaded | None:
    """The stored block whose text is ``structured`` as JSON (or FastMCP's
    ``{"result": value}`` of it): the structured value is stored already."""
    for held, offloaded in replaced.items():
        if held.lstrip()[:1] not in ("{", "["):
            continue
        try:
            value = json.loads(held)
        except ValueError:
            continue
        if value == structured or structured == {"result": value}:
            return offloaded
    return None


REFERENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "offprompt stored result",
    "description": (
        "The result was large and is stored off-prompt: `reference` says where and what it "
        "holds; the memory tools read it by `artifact_namespace`."
    ),
    "properties": {
        "offprompt": {"const": "stored"},
        "artifact_namespace": {"type": "string"},
        "reference": {"type": "string"},
    },
    "required": ["offprompt", "artifact_namespace", "reference"],
}
"""What ``structuredContent`` holds when the proxy stored it."""


def schema_with_reference(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema that also admits :data:`REFERENCE_SCHEMA`.

    ``anyOf`` the original and the reference; ``$defs`` / ``definitions``, ``$schema``
    and ``$id`` stay at the root, so the original's ``$ref`` pointers still resolve.
    """
    root_keys = ("$defs", "definitions", "$schema", "$id")
    original = {key: value for key, value in schema.items() if key not in root_keys}
    kept = {key: schema[key] for key in root_keys if key in schema}
    return {"type": "object", **kept, "anyOf": [original, REFERENCE_SCHEMA]}


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
    The client leaving is its closing stdin, or SIGTERM, SIGINT or SIGHUP: either way the
    proxy stops the upstream's whole process group within about a second (the
    clients' 2 s between closing stdin and SIGTERM) and returns, and the command
    exits 0.

    Raises:
        UpstreamError: The upstream server could not be started or initialized, or it
            exited while the client was connected.
        OffpromptError: The home's task memory cannot be opened.
    """
    # Exit status on SIGTERM/SIGINT: 0, not 128+signal. The proxy was asked to stop and
    # stopped cleanly. The MCP spec's stdio shutdown (close stdin, SIGTERM, SIGKILL)
    # documents no status, the Python SDK's stdio_client never reads it, and no client
    # convention of 128+signal was found; a nonzero status only gets logged as the
    # server failing. (Before its handlers are set, at start-up, SIGINT still gives 130.)
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
        async with Shutdown().handling() as shutdown, anyio.create_task_group() as group:
            group.start_soon(opening.run)
            gone = await _serve(params, opening, config, shutdown)
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


async def _serve(
    params: StdioServerParameters, opening: _Opening, config: ProxyConfig, shutdown: Shutdown
) -> bool:
    """Serve until one side leaves (a signal: the client); whether the upstream left first.

    A signal cancels the serving, not what follows: the upstream's shutdown, when the
    transport exits.
    """
    died = False
    init_timeout = max(config.timeout, config.init_timeout)
    try:
        transport = upstream_stdio(
            params, errlog=sys.stderr, max_message_bytes=config.max_message_bytes
        )
        async with transport as (up_read, up_write), anyio.create_task_group() as group:
            notifications = _Notifications()
            client = UpstreamClient(up_read, up_write, notifications)
            group.start_soon(client.run)
            with shutdown.cancelling():
                init = await _initialize(client, init_timeout)
                binding = await opening.binding()
                proxy = Proxy(_Upstream(client, config.timeout), binding, init, notifications)
                await run_stdio(proxy.server, until=proxy.wait_gone, mirrored=proxy.capabilities)
            died = client.gone.is_set() and shutdown.requested is None
            opening.start_close()  # no handler runs any more
            group.cancel_scope.cancel()
    except OffpromptError:
        raise
    except Exception as exc:
        raise _translate(_single(exc), params, init_timeout) from None
    return died


async def _initialize(client: UpstreamClient, timeout: float) -> dict[str, Any]:
    """The MCP handshake with the upstream; its ``initialize`` result."""
    request = {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "offprompt-proxy", "version": __version__},
    }
    try:
        init = await client.request("initialize", request, timeout)
    except RemoteError as exc:
        if isinstance(exc, NoAnswer) and exc.code == REQUEST_TIMEOUT:
            raise TimeoutError from None
        if isinstance(exc, NoAnswer):
            raise UpstreamError("the upstream MCP server exited before it initialized") from None
        raise UpstreamError(
            f"the upstream MCP server failed to initialize: {exc.message}"
        ) from None
    await client.notify("notifications/initialized")
    return init
