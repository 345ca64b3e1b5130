"""An upstream that answers ``tools/call`` with a JSON-RPC *error* (not an ``isError``
result), through the real ``offprompt mcp proxy`` over stdio, driven by the SDK's client.

The error is the tool's output: a ``--sensitive`` tool's reaches the client as its
kind, size and reference, never a line of its text (nor of its ``data``), and the memory
tools read it back; an ordinary tool's comes as a tool error (``isError``) with the
error's message, stored like any other when it is large. An error code the SDK also uses
for its own faults (``-32000``, ``408``) or a malformed one is still the upstream's error,
and the proxy goes on serving after each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_testing import OFFPROMPT, connect, text_of, wire

BARE_UPSTREAM = Path(__file__).parent / "jsonrpc_upstream.py"
SECRET = "record malformed: {'password': 'hunter2-s3cr3t'}"
FRAGMENTS = ("hunter2", "s3cr3t", "password", "malformed", "record")
# -32603: internal error; -32000 and 408: the codes the SDK gives its own "connection
# closed" and "timed out"; None and "E42": malformed codes.
CODES: list[Any] = [-32603, -32000, 408, None, "E42"]


def bare_proxy(home: Path, *options: str) -> list[str]:
    return [
        *OFFPROMPT,
        "--home",
        str(home),
        "mcp",
        "proxy",
        *options,
        "--",
        sys.executable,
        str(BARE_UPSTREAM),
    ]


async def test_a_sensitive_tools_jsonrpc_error_stays_off_prompt(home, call_memory) -> None:
    async with connect(bare_proxy(home, "--sensitive", "vault")) as session:
        for code in CODES:
            result = await session.call_tool("vault", {"code": code, "message": SECRET})
            seen = wire(result)
            assert seen["isError"] is True, (code, seen)
            text = text_of(result)
            assert text.startswith("Error: the tool failed; its error (text, "), (code, text)
            everything = json.dumps(seen)
            for fragment in FRAGMENTS:
                assert fragment not in everything, (code, fragment, everything)
            (reference,) = (result.meta or {})["offprompt/references"]
            assert reference["sensitive"] is True and reference["is_error"] is True
            assert reference["bytes"] == len(SECRET.encode())
            assert f"({reference['kind']}, {reference['bytes']:,} bytes, 1 line" in text
            assert f'artifact_namespace "{reference["artifact_namespace"]}"' in text
            stored = await call_memory(session, "read_memory", reference["artifact_namespace"])
            assert SECRET in stored
            # the proxy goes on
            assert text_of(await session.call_tool("ok", {})) == "fine"


@pytest.mark.parametrize("code", CODES)
async def test_an_ordinary_tools_short_jsonrpc_error_is_its_tool_error(home, code) -> None:
    async with connect(bare_proxy(home)) as session:
        result = await session.call_tool("lookup", {"code": code, "message": "disk full"})
        seen = wire(result)
        assert seen["isError"] is True
        assert text_of(result) == "disk full"
        assert not (result.meta or {}).get("offprompt/references")
        assert text_of(await session.call_tool("ok", {})) == "fine"


async def test_an_ordinary_tools_large_jsonrpc_error_is_stored(home, call_memory) -> None:
    lines = [f"frame {i}: at handler_{i} (service.py:{i})" for i in range(2000)]
    message = "quota exceeded for tenant 7\n" + "\n".join(lines)
    async with connect(bare_proxy(home)) as session:
        result = await session.call_tool("lookup", {"code": -32000, "message": message})
        assert wire(result)["isError"] is True
        text = text_of(result)
        assert text.startswith('Error: the tool failed; first line of its error: "quota exceeded')
        assert "frame 1999" not in text
        (reference,) = (result.meta or {})["offprompt/references"]
        assert reference["is_error"] is True and reference["sensitive"] is False
        assert reference["lines"] == 2001
        found = await call_memory(
            session, "grep_memory", reference["artifact_namespace"], pattern="handler_1999"
        )
        assert "service.py:1999" in found
