"""The one place that knows which major version of the ``mcp`` SDK is installed.

The proxy and the memory server speak MCP as wire-format dicts (``"isError"``,
``"inputSchema"``, ``"structuredContent"`` ...: the protocol's own names, the same
whatever the SDK) and use the SDK only for its server loop over stdio. Where the SDK
lines differ, this module bridges them:

* the error a handler raises to answer with a JSON-RPC error (1.x ``McpError(ErrorData)``,
  2.x ``MCPError(code, message)``), see :func:`mcp_error`;
* how request handlers are registered (1.x: ``Server.request_handlers`` keyed by the
  request's class, the handler gets the parsed request and the session through
  ``Server.request_context``; 2.x: ``Server.add_request_handler(method, params_type,
  handler)``, the handler gets ``(ctx, params)``), see :func:`make_server`;
* the protocol version a client asks for in ``initialize``
  (:data:`HANDSHAKE_VERSION`);
* how a wire dict becomes the SDK's JSON-RPC message (1.x: a ``RootModel``; 2.x: a
  plain union), see :func:`to_session_message`, and a notification to the client, see
  :meth:`Peer.notify`;
* the capabilities a server advertises beyond what its handlers imply (1.x never
  advertises ``resources.subscribe``), see :func:`initialization_options`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.message import SessionMessage
from pydantic import TypeAdapter

__all__ = [
    "HANDSHAKE_VERSION",
    "MAJOR",
    "METHODS",
    "SDK_VERSION",
    "Handler",
    "MCPError",
    "Peer",
    "from_session_message",
    "initialization_options",
    "make_server",
    "mcp_error",
    "to_session_message",
]

SDK_VERSION: str = importlib.metadata.version("mcp")
"""The installed SDK's version (``"1.30.0"``, ``"2.3.0"`` ...)."""

MAJOR: int = int(SDK_VERSION.split(".")[0])
"""The installed SDK's major version: 1 or 2."""

if MAJOR >= 2:
    from mcp import MCPError as _Error  # type: ignore[attr-defined,unused-ignore]
    from mcp_types.version import (  # type: ignore[import-not-found,unused-ignore]
        LATEST_HANDSHAKE_VERSION as _HANDSHAKE,
    )
else:
    from mcp import McpError as _Error  # type: ignore[attr-defined,no-redef,unused-ignore]

    _HANDSHAKE = types.LATEST_PROTOCOL_VERSION  # type: ignore[misc,unused-ignore]

MCPError: type[Exception] = _Error
"""The exception the SDK raises for (and turns into) a JSON-RPC error: ``.error.code``,
``.error.message``."""

HANDSHAKE_VERSION: str = str(_HANDSHAKE)
"""The protocol version the installed SDK's own client asks for in ``initialize``."""

# method -> (1.x request class, 2.x params class, result class); same names in both.
METHODS: dict[str, tuple[str, str, str]] = {
    "tools/list": ("ListToolsRequest", "PaginatedRequestParams", "ListToolsResult"),
    "tools/call": ("CallToolRequest", "CallToolRequestParams", "CallToolResult"),
    "resources/list": ("ListResourcesRequest", "PaginatedRequestParams", "ListResourcesResult"),
    "resources/templates/list": (
        "ListResourceTemplatesRequest",
        "PaginatedRequestParams",
        "ListResourceTemplatesResult",
    ),
    "resources/read": ("ReadResourceRequest", "ReadResourceRequestParams", "ReadResourceResult"),
    "prompts/list": ("ListPromptsRequest", "PaginatedRequestParams", "ListPromptsResult"),
    "prompts/get": ("GetPromptRequest", "GetPromptRequestParams", "GetPromptResult"),
    "completion/complete": ("CompleteRequest", "CompleteRequestParams", "CompleteResult"),
    "resources/subscribe": ("SubscribeRequest", "SubscribeRequestParams", "EmptyResult"),
    "resources/unsubscribe": ("UnsubscribeRequest", "UnsubscribeRequestParams", "EmptyResult"),
    "logging/setLevel": ("SetLevelRequest", "SetLevelRequestParams", "EmptyResult"),
}
"""The requests a server of this package answers, by method."""

_MESSAGE: TypeAdapter[Any] = TypeAdapter(types.JSONRPCMessage)
_NOTIFICATION: TypeAdapter[Any] = TypeAdapter(types.ServerNotification)


def mcp_error(code: int, message: str) -> Exception:
    """The SDK's error that, raised in a handler, answers with this JSON-RPC error."""
    if MAJOR >= 2:
        return MCPError(code, message)
    return MCPError(types.ErrorData(code=code, message=message))


class Peer:
    """The client a request came from, as a handler may talk back to it."""

    def __init__(self, session: Any) -> None:
        self._session = session

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        """Send the client one notification given by its wire method and params.

        Raises:
            pydantic.ValidationError: Not a server notification the SDK knows (the
                caller decides whether that matters).
        """
        wire: dict[str, Any] = {"method": method}
        if params is not None:
            wire["params"] = dict(params)
        await self._session.send_notification(_NOTIFICATION.validate_python(wire))


Handler = Callable[[dict[str, Any], Peer], Awaitable[dict[str, Any]]]
"""A request handler: the request's params (wire dict, ``{}`` when absent) and its
client, to the result (wire dict). It raises :func:`mcp_error` to answer with an error."""


def make_server(
    name: str,
    handlers: Mapping[str, Handler],
    *,
    version: str | None = None,
    instructions: str | None = None,
) -> Server[Any, Any]:
    """A low-level SDK server that answers ``handlers``' methods (keys of :data:`METHODS`).

    The SDK checks each request's params against the method's type first (bad params:
    the JSON-RPC error ``-32602``) and derives the server's capabilities from the
    methods handled.
    """
    # 2.x wants a string ("" when unversioned), 1.x takes None for its own default.
    named: dict[str, Any] = {} if version is None else {"version": version}
    server: Server[Any, Any] = Server(name, instructions=instructions, **named)
    for method, handler in handlers.items():
        request_name, params_name, result_name = METHODS[method]
        if MAJOR >= 2:
            params_type = getattr(types, params_name)
            server.add_request_handler(  # type: ignore[attr-defined,unused-ignore]
                method, params_type, _v2_handler(handler)
            )
        else:
            request_type = getattr(types, request_name)
            result_type = getattr(types, result_name)
            server.request_handlers[request_type] = _v1_handler(server, handler, result_type)
    return server


def initialization_options(
    server: Server[Any, Any], mirrored: Mapping[str, Any] | None = None
) -> Any:
    """The options ``server.run`` advertises, with the ``listChanged`` and
    ``resources.subscribe`` flags of ``mirrored`` (a server's wire ``capabilities``) where
    ``server`` has the capability at all.

    A proxy passes on what its upstream notifies, so it claims what the upstream claims.
    """
    mirrored = mirrored or {}

    def flag(capability: str, key: str) -> bool:
        value = mirrored.get(capability)
        return isinstance(value, dict) and bool(value.get(key))

    notifications = NotificationOptions(
        prompts_changed=flag("prompts", "listChanged"),
        resources_changed=flag("resources", "listChanged"),
        tools_changed=flag("tools", "listChanged"),
    )
    options = server.create_initialization_options(notifications)
    resources = options.capabilities.resources
    if resources is not None and flag("resources", "subscribe"):
        resources.subscribe = True
    return options


def _params(params: Any) -> dict[str, Any]:
    return {} if params is None else _wire(params)


def _v1_handler(server: Any, handler: Handler, result_type: Any) -> Any:
    async def handle(request: Any) -> Any:
        peer = Peer(server.request_context.session)
        result = await handler(_params(request.params), peer)
        return types.ServerResult(result_type.model_validate(result))

    return handle


def _v2_handler(handler: Handler) -> Any:
    async def handle(ctx: Any, params: Any) -> dict[str, Any]:
        # The runner checks the dict against the negotiated version's result type.
        return await handler(_params(params), Peer(ctx.session))

    return handle


def to_session_message(message: Mapping[str, Any]) -> SessionMessage:
    """The SDK's transport item for a JSON-RPC message given as a wire dict."""
    return SessionMessage(_MESSAGE.validate_python(dict(message)))


def from_session_message(item: SessionMessage) -> dict[str, Any]:
    """The wire dict of the SDK's transport item."""
    return _wire(item.message)


def _wire(model: Any) -> dict[str, Any]:
    """A model's wire dict (the protocol's field names, unset optional fields left out)."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped
