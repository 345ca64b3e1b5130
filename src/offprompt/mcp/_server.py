"""What the proxy and the memory server share: tool listing and calling, and stdio.

Results are wire-format dicts (the protocol's field names, whatever the SDK version);
:func:`offprompt.mcp._sdk.make_server` registers the handlers (the SDK's decorators
are untyped, and the proxy must not validate or re-shape what it forwards).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from offprompt.artifacts import ImageArtifact
from offprompt.mcp._core import MemoryTool
from offprompt.mcp._sdk import initialization_options
from offprompt.mcp._stdio import StdinLines, StdoutPipe, is_pipe

__all__ = ["ToolTable", "describes_image", "run_stdio", "text_result"]


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A tool result (wire dict) holding one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class ToolTable:
    """Tools served by this process itself (the memory tools, the session tools ...).

    A tool's own answer to a mistake (bad arguments, unknown namespace) is a tool
    result with ``isError``; nothing is raised to the client.
    """

    def __init__(
        self,
        tools: Sequence[MemoryTool],
        *,
        images: Callable[[str], Awaitable[ImageArtifact | None]] | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self._images = images

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def listed(self) -> list[dict[str, Any]]:
        return [
            {
                "name": t.name,
                "description": t.description,
                "inputSchema": t.parameters,
                "annotations": dict(t.annotations),
            }
            for t in self.tools.values()
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one call; an unknown tool is an error result too."""
        tool = self.tools.get(name)
        if tool is None:
            return text_result(f"Error: unknown tool {name[:100]!r}.", is_error=True)
        result = await tool.acall(**arguments)
        answer = text_result(result.text, is_error=result.is_error)
        if name == "read_memory" and not result.is_error and _whole(arguments):
            await self._add_image(answer, arguments.get("artifact_namespace"))
        return answer

    async def _add_image(self, answer: dict[str, Any], namespace: object) -> None:
        """``read_memory`` of a stored image also gives the image (bounded: ``images``)."""
        if self._images is None or not isinstance(namespace, str):
            return
        if not describes_image(answer["content"][0]["text"]):
            return  # text: no look at the memory (its stats would cut every page)
        image = await self._images(namespace)
        if image is None:
            return
        answer["content"].append(
            {"type": "image", "data": image.base64, "mimeType": image.mime_type}
        )
        described = answer["content"][0]["text"]
        if f"{image.width}x{image.height} pixels" not in described:
            answer["content"].append(
                {
                    "type": "text",
                    "text": f"(Shown scaled to {image.width}x{image.height} "
                    f"{image.format.upper()} to fit the answer's budget; the stored image "
                    "is whole.)",
                }
            )


def describes_image(page_text: str) -> bool:
    """Whether a ``read_memory`` answer may be a stored image's description (``Image
    (png, ...)``, after the page header): the cheap test before loading anything."""
    return page_text.partition("\n")[2].startswith("Image (")


def _whole(arguments: dict[str, Any]) -> bool:
    """Whether a ``read_memory`` call asks for the first page (what an image is)."""
    return arguments.get("page") in (None, 1) and arguments.get("start_line") is None


def _stdio() -> tuple[Any, Any]:
    """Event-loop readers and writers for piped stdin/stdout; ``None``: the SDK's own."""
    return (
        StdinLines() if is_pipe(sys.stdin) else None,
        StdoutPipe() if is_pipe(sys.stdout) else None,
    )


async def run_stdio(
    server: Server[Any, Any],
    *,
    until: Callable[[], Awaitable[None]] | None = None,
    mirrored: Mapping[str, Any] | None = None,
) -> None:
    """Serve ``server`` over this process's stdin/stdout.

    Returns when the client closes stdin, or when ``until`` returns (whichever first).
    ``mirrored``: capabilities (wire dict) whose ``listChanged`` and ``subscribe``
    flags the server advertises too (a proxy's upstream's).
    """
    options = initialization_options(server, mirrored)
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
