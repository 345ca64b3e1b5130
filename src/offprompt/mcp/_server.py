"""What the proxy and the memory server share: tool listing and calling, and stdio.

Handlers are put straight into ``Server.request_handlers`` (the SDK's decorators are
untyped, and the proxy must not validate or re-shape what it forwards).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from offprompt.mcp._core import MemoryTool

__all__ = ["ToolTable", "run_stdio", "text_result"]

_READ_CHUNK = 1 << 20


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    """A tool result holding one text block."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], isError=is_error
    )


class ToolTable:
    """Tools served by this process itself (the memory tools, the session tools ...).

    A tool's own answer to a mistake (bad arguments, unknown namespace) is a tool
    result with ``isError``; nothing is raised to the client.
    """

    def __init__(self, tools: Sequence[MemoryTool]) -> None:
        self.tools = {tool.name: tool for tool in tools}

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def listed(self) -> list[types.Tool]:
        return [
            types.Tool(name=t.name, description=t.description, inputSchema=t.parameters)
            for t in self.tools.values()
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run one call; an unknown tool is an error result too."""
        tool = self.tools.get(name)
        if tool is None:
            return text_result(f"Error: unknown tool {name[:100]!r}.", is_error=True)
        result = await tool.acall(**arguments)
        return text_result(result.text, is_error=result.is_error)


class _StdinLines:
    """Lines of standard input, read on the event loop so that shutdown never waits.

    The SDK's default reader blocks a worker thread in ``readline``; when the proxy
    must stop while its client keeps stdin open (the upstream server died), that
    thread would hold the exit until the client wrote again.
    """

    def __init__(self) -> None:
        self._buffer = b""

    async def __aiter__(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        pending: list[bytes] = []
        while True:
            chunk = await reader.read(_READ_CHUNK)
            if not chunk:
                break
            while (cut := chunk.find(b"\n")) >= 0:
                pending.append(chunk[: cut + 1])
                yield b"".join(pending).decode("utf-8", errors="replace")
                pending = []
                chunk = chunk[cut + 1 :]
            if chunk:
                pending.append(chunk)
        if pending and b"".join(pending).strip():
            yield b"".join(pending).decode("utf-8", errors="replace")


class _StdoutPipe:
    """Standard output written on the event loop (the SDK's writer hops to a worker
    thread twice a message, which dominates a pass-through call on a busy machine)."""

    def __init__(self) -> None:
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> asyncio.StreamWriter:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout.buffer
        )
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return self._writer

    async def write(self, text: str) -> None:
        writer = self._writer or await self._open()
        writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._writer is not None:
            await self._writer.drain()


def _is_pipe(stream: Any) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _stdio() -> tuple[Any, Any]:
    """Event-loop readers and writers for piped stdin/stdout; ``None``: the SDK's own."""
    return (
        _StdinLines() if _is_pipe(sys.stdin) else None,
        _StdoutPipe() if _is_pipe(sys.stdout) else None,
    )


async def run_stdio(
    server: Server[Any, Any],
    *,
    until: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve ``server`` over this process's stdin/stdout.

    Returns when the client closes stdin, or when ``until`` returns (whichever first).
    """
    options = server.create_initialization_options(NotificationOptions())
    async with anyio.create_task_group() as group:

        async def serve() -> None:
            stdin, stdout = _stdio()
            async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
                await server.run(read, write, options)
            group.cancel_scope.cancel()

        async def watch() -> None:
            assert until is not None
            await until()
            group.cancel_scope.cancel()

        group.start_soon(serve)
        if until is not None:
            group.start_soon(watch)
