"""A bare MCP server speaking newline-delimited JSON-RPC on stdio, no SDK: its tools
answer ``tools/call`` with a JSON-RPC *error* (FastMCP turns a tool's exception into an
``isError`` result instead, so the fixture server of tests/mcp never sends one).

Tools: ``vault`` and ``lookup`` answer ``{"error": {"code": code, "message": message,
"data": {"echo": message}}}`` with the call's ``code`` and ``message`` arguments (a
``code`` of ``null`` is sent as it is: a malformed error); ``ok`` answers a result.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_ARGUMENTS = {
    "type": "object",
    "properties": {"code": {}, "message": {}},
    "required": ["message"],
}
TOOLS = [
    {"name": "vault", "description": "Read a record of the vault.", "inputSchema": _ARGUMENTS},
    {"name": "lookup", "description": "Look a record up.", "inputSchema": _ARGUMENTS},
    {"name": "ok", "description": "Answer 'fine'.", "inputSchema": {"type": "object"}},
]


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request."""
    method, params = request["method"], request.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        reply["result"] = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare-jsonrpc-upstream", "version": "1"},
        }
    elif method == "tools/list":
        reply["result"] = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "ok":
        reply["result"] = {"content": [{"type": "text", "text": "fine"}], "isError": False}
    elif method == "tools/call":
        arguments = params.get("arguments") or {}
        message = arguments["message"]
        reply["error"] = {
            "code": arguments.get("code", -32603),
            "message": message,
            "data": {"echo": message},
        }
    elif method == "ping":
        reply["result"] = {}
    else:
        reply["error"] = {"code": -32601, "message": f"no method {method}"}
    return reply


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "method" in message and "id" in message:  # a request (notifications: nothing)
            sys.stdout.write(json.dumps(answer(message)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
