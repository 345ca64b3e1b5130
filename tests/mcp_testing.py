"""Helpers of tests/mcp: real processes over stdio (our fixture MCP server,
``offprompt mcp proxy|serve``) driven by the MCP SDK's own client."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

UPSTREAM = Path(__file__).parent / "mcp" / "upstream_server.py"
OFFPROMPT = [sys.executable, "-m", "offprompt.cli"]


def load_upstream() -> ModuleType:
    """The fixture server's module (for its log text and needles), imported by path."""
    spec = importlib.util.spec_from_file_location("mcp_fixture_upstream", UPSTREAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upstream_command() -> list[str]:
    return [sys.executable, str(UPSTREAM)]


def proxy_command(home: Path, *options: str) -> list[str]:
    return [*OFFPROMPT, "--home", str(home), "mcp", "proxy", *options, "--", *upstream_command()]


def serve_command(home: Path, *options: str) -> list[str]:
    return [*OFFPROMPT, "--home", str(home), "mcp", "serve", *options]


@contextlib.asynccontextmanager
async def connect(
    command: Sequence[str], errlog: Any = None, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``command`` run as a stdio server."""
    import os

    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    """The text of a tool result's one text block."""
    assert len(result.content) == 1, result.content
    return str(result.content[0].text)
