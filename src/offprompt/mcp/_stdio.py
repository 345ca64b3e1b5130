"""Newline-delimited JSON-RPC over pipes, linear in the size of a message.

The SDK's stdio client appends each 64 KB chunk to the pending line and splits the
whole again (``(buffer + chunk).split("\\n")``), so one line of n bytes costs about
n²/64 KB bytes copied and scanned: 5 MB is a fraction of a second, 40 MB half a
minute, 100 MB many minutes (past any sensible timeout). :class:`LineBuffer` keeps a
line's chunks apart and joins them once. It also bounds a line: past ``max_bytes`` it
keeps only the line's head and tail, enough to name the request an oversized answer
belongs to (:func:`oversized_error`), so memory stays bounded whatever the peer sends.

:func:`upstream_stdio` is the SDK's ``stdio_client`` (same process start, in a session
and process group of its own) with this reader, on POSIX (on Windows it wraps the
SDK's), and its messages are plain JSON-RPC dicts (what
:class:`~offprompt.mcp._client.UpstreamClient` reads, whatever the SDK version). Its
shutdown fits the 2 s that MCP clients give a server between closing its stdin and
SIGTERM (the SDK's takes up to 4 s): :func:`_stop_group`. :class:`StdinLines` and
:class:`StdoutPipe` are the server side's stdin and stdout on the event loop, and
:class:`Shutdown` turns SIGTERM, SIGINT and SIGHUP into a clean stop.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import re
import signal
import stat
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
from anyio.abc import Process, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "STDIN_GRACE",
    "TERM_GRACE",
    "LineBuffer",
    "Oversized",
    "Shutdown",
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

STDIN_GRACE = 0.5
"""Seconds the upstream gets to exit by itself once its stdin is closed."""

TERM_GRACE = 0.5
"""Seconds its process group gets, after SIGTERM, before SIGKILL."""

# Polling the process group for its end; how long the upstream's stderr, once its group
# is gone, may take to reach ours.
_POLL = 0.02
_STDERR_DRAIN = 0.5


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


def _delivered(
    line: bytes | Oversized, max_message_bytes: int
) -> dict[str, Any] | Exception | None:
    """What the session gets for one line of the upstream's stdout: its message, the
    exception parsing it raised, or for an oversized one the JSON-RPC error of
    :func:`oversized_error` (a :class:`ValueError` when no request id was seen); nothing
    for a blank line."""
    if isinstance(line, Oversized):
        answer = oversized_error(line, max_message_bytes)
        if answer is None:
            return ValueError(
                f"skipped a {line.size:,}-byte message of the upstream MCP server "
                f"(over the limit of {max_message_bytes:,} bytes, no request id seen)"
            )
        return answer
    if not line.strip():
        return None
    try:
        return parse_message(line)
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ones
        return exc


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

    Like the SDK's ``stdio_client`` (its own session and process group), with a linear,
    bounded line reader. A malformed line comes out as the exception that parsing it
    raised; a line over ``max_message_bytes`` as the JSON-RPC error of
    :func:`oversized_error` (or, when its id cannot be seen, a :class:`ValueError`).

    Its stderr goes on to ``errlog`` as it comes, byte for byte (:class:`_StderrPump`),
    except once the proxy stops it: what a server writes while it is being stopped
    (EPIPE and BrokenPipeError tracebacks, mostly) is dropped. On exit, the whole
    process group is stopped and gone within about ``STDIN_GRACE + TERM_GRACE``
    seconds, even when the caller is being cancelled (:func:`_stop_group`); until
    then the upstream's stdout is still read (and dropped), so its writes never meet
    a closed pipe.

    Raises:
        OSError: The command cannot be started.
    """
    if sys.platform == "win32":  # pragma: no cover - the SDK's job objects, its reader
        async with _sdk_stdio(params, errlog) as streams:
            yield streams
        return
    env = {**get_default_environment(), **(params.env or {})}
    stderr = _StderrPump(errlog)
    try:
        process = await anyio.open_process(
            [params.command, *params.args],
            env=env,
            stderr=stderr.write_end,
            cwd=params.cwd,
            start_new_session=True,
        )
    except BaseException:
        stderr.abandon()
        raise
    stderr.start()
    to_session, from_upstream = anyio.create_memory_object_stream[dict[str, Any] | Exception](0)
    to_upstream, from_session = anyio.create_memory_object_stream[dict[str, Any]](0)
    stdout_ended = False  # the upstream closed its stdout (it is leaving by itself)

    async def deliver(line: bytes | Oversized) -> None:
        item = _delivered(line, max_message_bytes)
        if item is not None:
            await to_session.send(item)

    async def read() -> None:
        nonlocal stdout_ended
        assert process.stdout is not None
        lines = LineBuffer(max_message_bytes)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            try:
                async with to_session:
                    async for chunk in process.stdout:
                        for line in lines.feed(chunk):
                            await deliver(line)
                    stdout_ended = True
                    if (last := lines.rest()) is not None:
                        await deliver(last)
                    return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            # Nobody takes its messages any more (shutdown): read and drop them, so that
            # the upstream never writes into a closed pipe (EPIPE) while it is stopped.
            async for _chunk in process.stdout:
                pass

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
            with anyio.CancelScope(shield=True):  # bounded: the graces of _stop_group, the drain
                if not stdout_ended:
                    stderr.quiet()  # stopped by us, not exiting by itself
                await from_upstream.aclose()  # the reader drains from now on
                await _stop_group(process)
                await stderr.finish(_STDERR_DRAIN)
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


async def _stop_group(process: Process) -> None:
    """Stop the upstream and every process of its group, the MCP stdio way, in time.

    Close its stdin and give it :data:`STDIN_GRACE` seconds to exit; then SIGTERM the
    group (also when the upstream exited: a child it started, ``npx``'s ``node`` or a
    worker, may live on), :data:`TERM_GRACE` seconds, SIGKILL, and wait for the group
    to be gone (zombies that only their parent can reap aside). MCP clients give a
    server 2 s between closing its stdin and SIGTERM; the SDK's ``stdio_client``
    waits 2 s for the exit and 2 s after SIGTERM, which made the proxy miss them and
    die with its upstream orphaned.
    """
    pgid = process.pid  # a session of its own: its group's id is its pid
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(STDIN_GRACE):
        await process.wait()
    if _signal_group(pgid, signal.SIGTERM):
        with anyio.move_on_after(TERM_GRACE):
            while _group_alive(pgid):
                await anyio.sleep(_POLL)
        if _signal_group(pgid, getattr(signal, "SIGKILL", signal.SIGTERM)):
            with anyio.move_on_after(TERM_GRACE):
                while _group_alive(pgid):
                    await anyio.sleep(_POLL)
    with anyio.move_on_after(TERM_GRACE):
        await process.wait()  # reaped: no zombie of ours


def _signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the process group; whether there still was one."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its user: what can be signalled was
        return True
    return _group_alive(pgid)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (a zombie does not: orphans are reaped
    by init, which in a container may never do it)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        entries = os.listdir("/proc")
    except OSError:  # no procfs (macOS): a member exists, maybe a zombie
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat_line = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat_line[stat_line.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


class _StderrPump:
    """The upstream's stderr, passed on to ``errlog`` as it comes, byte for byte.

    A thread of its own reads the pipe and writes it out: a client that does not read
    the proxy's stderr stalls the upstream's writes, as when the upstream wrote to
    that stderr itself, never the proxy's event loop. Once :meth:`quiet`, what comes
    is read and dropped (a server being stopped: its EPIPE and KeyboardInterrupt
    tracebacks are no news to a client that is leaving).
    """

    def __init__(self, errlog: TextIO) -> None:
        self._errlog = errlog
        self._read_end, self.write_end = os.pipe()  # not inherited, but by the upstream
        self._quiet = False
        self._thread = threading.Thread(
            target=self._run, name="offprompt-upstream-stderr", daemon=True
        )

    def start(self) -> None:
        """Forward from now on (the upstream started, holding its end)."""
        os.close(self.write_end)
        self._thread.start()

    def abandon(self) -> None:
        """The upstream did not start: close both ends."""
        os.close(self.write_end)
        os.close(self._read_end)

    def quiet(self) -> None:
        self._quiet = True

    async def finish(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, for the last of it to be forwarded (the
        pipe ends when its last writer exits: a process that left the group may keep
        it open; the daemon thread then stays behind, it never holds the exit)."""
        with anyio.move_on_after(timeout):
            while self._thread.is_alive():
                await anyio.sleep(_POLL)

    def _run(self) -> None:
        write = self._writer()
        try:
            while chunk := os.read(self._read_end, 1 << 16):
                if self._quiet:
                    continue
                try:
                    write(chunk)
                except (OSError, ValueError):  # our stderr is closed: drain, drop
                    self._quiet = True
        finally:
            os.close(self._read_end)

    def _writer(self) -> Any:
        try:
            fd = self._errlog.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is one
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

            def write_text(chunk: bytes) -> None:
                self._errlog.write(decoder.decode(chunk))
                self._errlog.flush()

            return write_text

        def write_fd(chunk: bytes) -> None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]

        return write_fd


# SIGHUP too: the terminal or the client's session went away (closing the window a
# client ran in); the default action would leave the upstream's group running.
_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)


class Shutdown:
    """SIGTERM, SIGINT and SIGHUP as a request to stop cleanly.

    What runs in :meth:`cancelling` is cancelled when one of them comes (at once, if
    one came before); what follows it (the upstream's shutdown, closing the memory)
    runs to its end, and a second signal does not cut it short. :meth:`handling` keeps
    the handlers for its duration. Where handlers cannot be set (Windows' event loop,
    a thread other than the main one) the signals keep their default action.
    """

    def __init__(self) -> None:
        self.requested: signal.Signals | None = None
        self._scopes: list[anyio.CancelScope] = []

    def request(self, signum: signal.Signals) -> None:
        """Stop: cancel what runs in :meth:`cancelling`."""
        if self.requested is None:
            self.requested = signum
        for scope in self._scopes:
            scope.cancel()

    @contextlib.contextmanager
    def cancelling(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that a signal cancels."""
        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            if self.requested is not None:
                scope.cancel()
            try:
                yield scope
            finally:
                self._scopes.remove(scope)

    @contextlib.asynccontextmanager
    async def handling(self) -> AsyncIterator[Shutdown]:
        """Handle SIGTERM, SIGINT and SIGHUP (by :meth:`request`) inside the block."""
        async with anyio.create_task_group() as group:
            await group.start(self._watch)
            try:
                yield self
            finally:
                group.cancel_scope.cancel()

    async def _watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with contextlib.ExitStack() as stack:
            try:
                signals = stack.enter_context(anyio.open_signal_receiver(*_STOP_SIGNALS))
            except (NotImplementedError, ValueError, RuntimeError):  # pragma: no cover
                task_status.started()
                await anyio.sleep_forever()
            task_status.started()
            async for signum in signals:
                self.request(signum)


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
