"""The SDK seam (``offprompt.mcp._sdk``) resolves the installed SDK's own names.

Runs on whichever ``mcp`` is installed: 1.x in the dev environment, 2.x in the
newest-release one (``make test-latest``).
"""

from __future__ import annotations

import importlib.metadata

import mcp
from mcp import types
from mcp.server.lowlevel import NotificationOptions

from offprompt.mcp import _sdk


def test_the_seam_knows_the_installed_major_version_and_its_error_class():
    version = importlib.metadata.version("mcp")
    assert version == _sdk.SDK_VERSION and int(version.split(".")[0]) == _sdk.MAJOR
    assert _sdk.MAJOR in (1, 2)
    expected = mcp.MCPError if _sdk.MAJOR == 2 else mcp.McpError  # type: ignore[attr-defined]
    assert _sdk.MCPError is expected
    error = _sdk.mcp_error(-32603, "upstream broke")
    assert isinstance(error, expected)
    assert (error.error.code, error.error.message) == (-32603, "upstream broke")  # type: ignore[attr-defined]


def test_the_handshake_version_is_the_one_the_sdk_client_asks_for():
    if _sdk.MAJOR == 2:
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS  # type: ignore[import-not-found]

        assert _sdk.HANDSHAKE_VERSION in HANDSHAKE_PROTOCOL_VERSIONS
    else:
        from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS

        assert _sdk.HANDSHAKE_VERSION == types.LATEST_PROTOCOL_VERSION
        assert _sdk.HANDSHAKE_VERSION in SUPPORTED_PROTOCOL_VERSIONS


async def fake_handler(params, client):  # a handler is never run here
    return {}


def test_every_method_resolves_to_classes_of_the_installed_sdk():
    for request_name, params_name, result_name in _sdk.METHODS.values():
        if _sdk.MAJOR == 1:
            assert isinstance(getattr(types, request_name), type)
        else:
            assert isinstance(getattr(types, params_name), type)
        assert isinstance(getattr(types, result_name), type)


def test_make_server_registers_the_handlers_and_derives_capabilities():
    server = _sdk.make_server(
        "seam",
        {"tools/list": fake_handler, "tools/call": fake_handler, "prompts/list": fake_handler},
        instructions="hi",
    )
    capabilities = server.get_capabilities(NotificationOptions(), {})
    assert capabilities.tools is not None and capabilities.prompts is not None
    assert capabilities.resources is None and capabilities.completions is None
    if _sdk.MAJOR == 1:
        assert types.CallToolRequest in server.request_handlers  # type: ignore[attr-defined]
    else:
        assert server.get_request_handler("tools/call") is not None  # type: ignore[attr-defined]
    assert server.instructions == "hi"


def test_wire_dicts_round_trip_through_the_sdk_message():
    message = {"jsonrpc": "2.0", "id": 3, "result": {"content": [], "isError": True}}
    item = _sdk.to_session_message(message)
    assert _sdk.from_session_message(item) == message
