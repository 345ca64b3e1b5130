"""Newline-delimited JSON-RPC over pipes, linear in the size of a message.

The SDK's stdio client appends each 64 KB chunk to the pending line and splits the
whole again (``(buffer + chunk).split("\\n")``), so one line of n bytes costs about
n²/64 KB bytes copied and scanned: 5 MB is a fraction of a second, 40 MB half a
minute, 100 MB many minutes (past any sensible timeout). :class:`LineBuffer` keeps a
line's chunks apart and joins them once. It also bounds a line: past ``max_bytes`` it
keeps only the line's head and tail, enough to name the request an oversized answer
belongs to (:func:`oversized_error`), so memory stays bounded whatever the peer sends.

:func:`upstream_stdio` is the SDK's ``stdio_client`` (same process start, same
shutdown sequence) with this reader, on POSIX (on Windows it wraps the SDK's), and its
messages are plain JSON-RPC dicts (what :class:`~offprompt.mcp._client.UpstreamClient`
reads, whatever the SDK version); :class:`StdinLines` and :class:`StdoutPipe` are the
server side's stdin and stdout on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT, get_default_environment

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "LineBuffer",
    "Oversized",
    "StdinLines",
    "StdoutPipe",
    "is_pipe",
    "oversized_error",
    "upstream_stdio",
]

DEFAULT_MAX_MESSAGE_BYTES = 512_000_000
"""Largest message the proxy reads from the upstream (a longer line is answered as an error)."""

_INTERNAL_ERROR = -32603
_READ_CHUNK = 1 << 20
# Of an oversized line, what is kept to find its JSON-RPC id.
_KEEP = 4096
# The id at the start (the Python SDK: {"jsonrpc":"2.0","id":7,"result":...}) or at the
# end (the TypeScript SDK: {"result":...,"jsonrpc":"2.0","id":7}). Inside a JSON string
# every quote is escaped, so a text block cannot fake either.
_HEAD_ID = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*,')
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*\}\s*$')


@dataclass(frozen=True)
class Oversized:
    """A line longer than the bound: its first and last bytes and its length."""

    head: bytes
    tail: bytes
    size: int

    def request_id(self) -> int | str | None:
        """The JSON-RPC id of the message, if its head or tail shows it."""
        found = _HEAD_ID.match(self.head) or _TAIL_ID.search(self.tail)
        if found is None:
            return None
        raw = found.group(1)
        return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


class LineBuffer:
    """Complete lines out of a byte stream's chunks; each byte is copied a bounded
    number of times, and a line of more than ``max_bytes`` comes out as
    :class:`Oversized` without being kept."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._tail = b""
        self._over = False

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines ``chunk`` completes (each with its newline)."""
        lines: list[bytes | Oversized] = []
        start = 0
        while (cut := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start : cut + 1])
            lines.append(self._take())
            start = cut + 1
        if start < len(chunk):
            self._add(chunk[start:] if start else chunk)
        return lines

    def rest(self) -> bytes | Oversized | None:
        """What is left once the stream ended (a last line without newline), if anything."""
        if self._size == 0:
            return None
        return self._take()

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._over:
            self._tail = (self._tail + piece)[-_KEEP:]
            return
        self._parts.append(piece)
        if len(self._head) < _KEEP:
            self._head += piece[: _KEEP - len(self._head)]
        if self.max_bytes is not None and self._size > self.max_bytes:
            # Over the bound: from now on, keep only the line's ends.
            tail: list[bytes] = []
            while self._parts and sum(map(len, tail)) < _KEEP:
                tail.append(self._parts.pop())
            self._tail = b"".join(reversed(tail))[-_KEEP:]
            self._parts, self._over = [], True

    def _take(self) -> bytes | Oversized:
        line: bytes | Oversized
        if self._over:
            line = Oversized(self._head, self._tail, self._size)
        else:
            line = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts, self._size, self._head, self._tail, self._over = [], 0, b"", b"", False
        return line


def oversized_error(line: Oversized, max_bytes: int) -> dict[str, Any] | None:
    """The JSON-RPC error that answers, in the proxy, a message too long to read."""
    request_id = line.request_id()
    if request_id is None:
        return None
    message = (
        f"the upstream MCP server's answer is {line.size / 1e6:,.1f} MB, over the "
        f"proxy's limit of {max_bytes / 1e6:g} MB (--max-message-mb); none of it was kept"
    )
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": _INTERNAL_ERROR, "message": message},
    }


def parse_message(line: bytes | str) -> dict[str, Any]:
    """One JSON-RPC message (a request, notification or answer) as its dict.

    Raises:
        ValueError: The line is not JSON, or not a JSON-RPC 2.0 message.
    """
    message = json.loads(line)
    if (
        not isinstance(message, dict)
        or message.get("jsonrpc") != "2.0"
        or ("method" not in message and "id" not in message)
    ):
        raise ValueError(f"not a JSON-RPC 2.0 message: {str(message)[:200]}")
    return message


def dump_message(message: dict[str, Any]) -> bytes:
    """The line (with its newline) that sends ``message``."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


@contextlib.asynccontextmanager
async def upstream_stdio(
    params: StdioServerParameters,
    *,
    errlog: TextIO = sys.stderr,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[dict[str, Any] | Exception],
        MemoryObjectSendStream[dict[str, Any]],
    ]
]:
    """Start ``params`` as a stdio MCP server; its messages and a stream to send it ones.

    Like the SDK's ``stdio_client`` (its own session and process group; on exit: close
    its stdin, wait, then SIGTERM and SIGKILL the group), with a linear, bounded line
    reader. A malformed line comes out as the exception that parsing it raised; a line
    over ``max_message_bytes`` as the JSON-RPC error of :func:`oversized_error` (or,
    when its id cannot be seen, a :class:`ValueError`).

    Raises:
        OSError: The command cannot be started.
    """
    if sys.platform == "win32":  # pragma: no cover - the SDK's job objects, its reader
        async with _sdk_stdio(params, errlog) as streams:
            yield streams
        return
    env = {**get_default_environment(), **(params.env or {})}
    process = await anyio.open_process(
        [params.command, *params.args],
        env=env,
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    to_session, from_upstream = anyio.create_memory_object_stream[dict[str, Any] | Exception](0)
    to_upstream, from_session = anyio.create_memory_object_stream[dict[str, Any]](0)

    async def deliver(line: bytes | Oversized) -> None:
        if isinstance(line, Oversized):
            answer = oversized_error(line, max_message_bytes)
            if answer is None:
                await to_session.send(
                    ValueError(
                        f"skipped a {line.size:,}-byte message of the upstream MCP server "
                        f"(over the limit of {max_message_bytes:,} bytes, no request id seen)"
                    )
                )
            else:
                await to_session.send(answer)
            return
        if not line.strip():
            return
        try:
            message = parse_message(line)
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ones
            await to_session.send(exc)
            return
        await to_session.send(message)

    async def read() -> None:
        assert process.stdout is not None
        lines = LineBuffer(max_message_bytes)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with to_session:
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        await deliver(line)
                if (last := lines.rest()) is not None:
                    await deliver(last)

    async def write() -> None:
        assert process.stdin is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with from_session:
                async for message in from_session:
                    await process.stdin.send(dump_message(message))

    async with anyio.create_task_group() as group, process:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield from_upstream, to_upstream
        finally:
            with contextlib.suppress(Exception):
                await process.stdin.aclose()  # type: ignore[union-attr]
            try:
                with anyio.fail_after(PROCESS_TERMINATION_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                await _terminate(process)
            for stream in (from_upstream, to_upstream, to_session, from_session):
                await stream.aclose()


@contextlib.asynccontextmanager
async def _sdk_stdio(
    params: StdioServerParameters, errlog: TextIO
) -> AsyncIterator[Any]:  # pragma: no cover - Windows
    """The SDK's ``stdio_client``, its messages as dicts (as :func:`upstream_stdio`)."""
    from mcp.client.stdio import stdio_client

    from offprompt.mcp._sdk import from_session_message, to_session_message

    to_client, incoming = anyio.create_memory_object_stream[dict[str, Any] | Exception](0)
    outgoing, from_client = anyio.create_memory_object_stream[dict[str, Any]](0)

    async def read(source: Any) -> None:
        async with to_client:
            async for item in source:
                await to_client.send(
                    item if isinstance(item, Exception) else from_session_message(item)
                )

    async def write(sink: Any) -> None:
        async with from_client:
            async for message in from_client:
                await sink.send(to_session_message(message))

    async with (
        stdio_client(params, errlog=errlog) as (source, sink),
        anyio.create_task_group() as group,
    ):
        group.start_soon(read, source)
        group.start_soon(write, sink)
        yield incoming, outgoing
        group.cancel_scope.cancel()


async def _terminate(process: Any) -> None:
    from mcp.os.posix.utilities import terminate_posix_process_tree

    await terminate_posix_process_tree(process, PROCESS_TERMINATION_TIMEOUT)


class StdinLines:
    """Lines of standard input, read on the event loop so that shutdown never waits.

    The SDK's default reader blocks a worker thread in ``readline``; when the proxy
    must stop while its client keeps stdin open (the upstream server died), that
    thread would hold the exit until the client wrote again.
    """

    async def __aiter__(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        lines = LineBuffer()
        while chunk := await reader.read(_READ_CHUNK):
            for line in lines.feed(chunk):
                assert isinstance(line, bytes)  # unbounded: never Oversized
                yield line.decode("utf-8", errors="replace")
        last = lines.rest()
        if isinstance(last, bytes) and last.strip():
            yield last.decode("utf-8", errors="replace")


class StdoutPipe:
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


def is_pipe(stream: Any) -> bool:
    """Whether ``stream`` is a pipe or socket (then :class:`StdinLines` etc. apply)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
