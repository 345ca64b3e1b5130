"""A small MCP server of our own, run as a subprocess behind ``offprompt mcp proxy``.

Tools: ``logs`` (megabytes of log lines with needles), ``echo`` (small text),
``image`` (a PNG), ``fail`` (a tool error), ``hang`` (never answers), ``die`` (exits
mid-call), ``weather`` (structured output with an output schema), ``garbage`` (writes a
malformed line to stdout before answering). A resource and a prompt too.
"""

from __future__ import annotations

import io
import os
import random
import sys
from typing import TypedDict

import anyio
from mcp.server.fastmcp import FastMCP, Image
from PIL import Image as PILImage

server = FastMCP("fixture-upstream", instructions="a test server with large outputs")

NEEDLES = ("trace-7f3a9c1e-needle", "ERR_DISK_QUOTA_4711")


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


@server.tool()
def fail(message: str = "boom", repeat: int = 1) -> str:
    """Fail with `message` repeated `repeat` times."""
    raise RuntimeError("\n".join([message] * repeat))


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep(3600)
    return "late"


@server.tool()
def die() -> str:
    """Exit in the middle of the call."""
    sys.stderr.write("fixture-upstream: dying now\n")
    sys.stderr.flush()
    os._exit(3)


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
    sys.stdout.write("this is not JSON-RPC\n")
    sys.stdout.flush()
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
