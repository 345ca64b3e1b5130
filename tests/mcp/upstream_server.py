"""A small MCP server of our own, run as a subprocess behind ``offprompt mcp proxy``.

Tools: ``logs`` (megabytes of log lines with needles), ``echo`` (small text),
``image`` (a PNG), ``blob`` (an embedded binary resource), ``bad_image`` (an image
that is not base64), ``fail`` (a tool error), ``hang`` (never answers; says on stderr
when cancelled), ``die`` (exits mid-call), ``half_answer`` (writes half of its answer,
then exits), ``weather`` (structured output with an output schema), ``garbage``
(writes a malformed line to stdout before answering), ``slow`` (reports progress). A
resource and a prompt too.
"""

from __future__ import annotations

import base64
import io
import os
import random
import sys
from typing import TypedDict

import anyio
from mcp import types
from PIL import Image as PILImage

try:  # mcp 2.x: FastMCP became MCPServer
    from mcp.server.mcpserver import Context, Image
    from mcp.server.mcpserver import MCPServer as FastMCP
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP, Image  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

server = FastMCP("fixture-upstream", instructions="a test server with large outputs")

NEEDLES = ("trace-7f3a9c1e-needle", "ERR_DISK_QUOTA_4711")

# The pipe to the client, kept before the server starts: while it serves, the 2.x SDK
# points fd 1 at stderr (stray prints miss the wire), and these tools must hit it.
WIRE = os.dup(1) if __name__ == "__main__" else -1


def write_wire(text: str) -> None:
    """Write ``text`` straight to the client's pipe (past the SDK's writer)."""
    data = text.encode()
    while data:
        data = data[os.write(WIRE, data) :]


def log_text(megabytes: float) -> str:
    """Deterministic log lines (about ``megabytes`` MB) with the needles in the middle."""
    rng = random.Random(7)
    target = int(megabytes * 1_000_000)
    lines: list[str] = []
    size = 0
    index = 0
    while size < target:
        index += 1
        if index == 20_000:
            line = f"2026-12-01T08:00:{index % 60:02d}Z ERROR node-3 request {NEEDLES[0]} failed: {NEEDLES[1]}"
        else:
            line = (
                f"2026-12-01T08:{index // 3600 % 60:02d}:{index % 60:02d}Z INFO node-{rng.randrange(9)} "
                f"GET /api/items/{rng.randrange(10**6)} 200 {rng.randrange(1, 900)}ms"
            )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


@server.tool()
def logs(megabytes: float = 5.0) -> str:
    """Return about `megabytes` MB of service logs."""
    return log_text(megabytes)


@server.tool()
def echo(text: str) -> str:
    """Return `text` as it is."""
    return text


@server.tool()
def image(width: int = 256, height: int = 256) -> Image:
    """Return a PNG of noise (incompressible, so it stays large)."""
    picture = PILImage.frombytes(
        "RGB", (width, height), random.Random(1).randbytes(width * height * 3)
    )
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return Image(data=buffer.getvalue(), format="png")


def blob_bytes(kilobytes: int) -> bytes:
    """Deterministic incompressible bytes."""
    return random.Random(2).randbytes(kilobytes * 1024)


@server.tool(structured_output=False)
def blob(kilobytes: int = 64) -> types.EmbeddedResource:
    """Return `kilobytes` KB of binary data as an embedded resource."""
    data = base64.b64encode(blob_bytes(kilobytes)).decode()
    return types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(
            uri="fixture://blob.bin", mimeType="application/octet-stream", blob=data
        ),
    )


@server.tool(structured_output=False)
def bad_image() -> types.ImageContent:
    """Return an image whose data is not base64."""
    return types.ImageContent(type="image", data="not base64! " * 2000, mimeType="image/png")


@server.tool()
def fail(message: str = "boom", repeat: int = 1) -> str:
    """Fail with `message` repeated `repeat` times (a ToolError: 2.x shows the message
    of no other exception to the client)."""
    raise ToolError("\n".join([message] * repeat))


@server.tool()
async def hang() -> str:
    """Never answer."""
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        sys.stderr.write("fixture-upstream: hang was cancelled\n")
        sys.stderr.flush()
        raise
    return "late"


@server.tool()
async def slow(steps: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Report progress `steps` times, then answer."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


@server.tool()
def die() -> str:
    """Exit in the middle of the call."""
    sys.stderr.write("fixture-upstream: dying now\n")
    sys.stderr.flush()
    # private-ok: the stdlib's exit without cleanup (public despite its name)
    os._exit(3)


@server.tool()
def half_answer(megabytes: float = 1.0) -> str:
    """Write the first half of a JSON-RPC answer to stdout, then exit."""
    write_wire('{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"')
    write_wire("x" * int(megabytes * 1_000_000))
    # private-ok: the stdlib's exit without cleanup (public despite its name)
    os._exit(4)


class Weather(TypedDict):
    city: str
    celsius: float
    report: str


@server.tool()
def weather(city: str, report_lines: int = 1) -> Weather:
    """Structured weather for `city`, with a report of `report_lines` lines."""
    report = "\n".join(f"{city}: hour {i} sunny and mild" for i in range(report_lines))
    return {"city": city, "celsius": 21.5, "report": report}


@server.tool()
def garbage(text: str = "still fine") -> str:
    """Write a malformed line to stdout, then answer normally."""
    write_wire("this is not JSON-RPC\n")
    return text


@server.resource("fixture://readme")
def readme() -> str:
    """The fixture's readme."""
    return "fixture readme: call logs to get megabytes of logs"


@server.prompt()
def triage(service: str) -> str:
    """A prompt to triage a service's logs."""
    return f"Find the errors in the logs of {service}."


if __name__ == "__main__":
    if os.environ.get("FIXTURE_PID_FILE"):  # lets a test check that the process is gone
        with open(os.environ["FIXTURE_PID_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
    server.run("stdio")
