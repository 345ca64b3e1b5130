"""Stored outputs as MCP resources: ``offprompt://outputs/...`` links, templates and reads.

Every stored result also reaches the client as a ``resource_link`` to its output, and
the server of the link (the proxy, ``mcp serve``) answers ``resources/read`` on it with
what the memory tools would give: a page, a range of lines, or a stored image. The
URI names the namespace percent-encoded and nothing else; every read goes through the
memory tools, so it is checked against the process's scope each time (another scope's
output is unknown), bounded like a tool answer, and an expired output says so.

URIs (RFC 6570 templates, as ``resources/templates/list`` gives them)::

    offprompt://outputs/{artifact_namespace}                      page 1, or the image
    offprompt://outputs/{artifact_namespace}/pages/{page}         one page
    offprompt://outputs/{artifact_namespace}/lines/{first}-{last} lines first..last
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

from offprompt.mcp._core import CoreBinding, StoredReference
from offprompt.mcp._sdk import MAJOR, mcp_error
from offprompt.mcp._server import ToolTable, describes_image

__all__ = ["RESOURCE_NOT_FOUND", "URI_PREFIX", "StoredOutputs"]

URI_PREFIX = "offprompt://outputs/"
"""What every stored output's URI starts with."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code the MCP spec gives an unknown resource."""

_INVALID_PARAMS = -32602
_URI = re.compile(
    r"(?P<namespace>[^/]+)(?:/pages/(?P<page>\d+)|/lines/(?P<first>\d+)-(?P<last>\d+))?"
)
_MIME_TYPES = {"json": "application/json", "ndjson": "application/x-ndjson", "csv": "text/csv"}
# A stored output never changes: a client may keep what it read for an hour (2.x wire).
_CACHE_MS = 3_600_000

_TEMPLATES: list[dict[str, Any]] = [
    {
        "uriTemplate": URI_PREFIX + "{artifact_namespace}",
        "name": "offprompt stored output",
        "description": "A tool output stored off-prompt: its first page, or the image.",
    },
    {
        "uriTemplate": URI_PREFIX + "{artifact_namespace}/pages/{page}",
        "name": "offprompt stored output, one page",
        "description": "One page of a stored output (pages end at line ends).",
        "mimeType": "text/plain",
    },
    {
        "uriTemplate": URI_PREFIX + "{artifact_namespace}/lines/{first}-{last}",
        "name": "offprompt stored output, lines",
        "description": "Lines first to last (from 1, included) of a stored output.",
        "mimeType": "text/plain",
    },
]


def output_uri(namespace: str) -> str:
    """The URI of a stored output."""
    return URI_PREFIX + quote(namespace, safe="")


class StoredOutputs:
    """The stored outputs of one process's task memory, as MCP resources.

    Args:
        binding: The core binding (its memory, scope and output bound).
        tools: The process's memory tools; reads go through ``read_memory``.
    """

    def __init__(self, binding: CoreBinding, tools: ToolTable) -> None:
        self.binding = binding
        self.tools = tools

    @staticmethod
    def owns(uri: object) -> bool:
        """Whether ``uri`` names a stored output (answered here, never forwarded)."""
        return isinstance(uri, str) and uri.startswith(URI_PREFIX)

    @staticmethod
    def templates() -> list[dict[str, Any]]:
        """The resource templates of stored outputs (wire dicts)."""
        return [dict(template) for template in _TEMPLATES]

    @staticmethod
    def link(reference: StoredReference) -> dict[str, Any]:
        """The ``resource_link`` block of a stored output, beside its reference."""
        link: dict[str, Any] = {
            "type": "resource_link",
            "uri": output_uri(reference.namespace),
            "name": reference.namespace,
            "description": (
                f"The stored output of {reference.tool}; read it with resources/read "
                "(…/pages/N, …/lines/A-B) or the memory tools."
            ),
            "size": reference.bytes,
        }
        mime_type = _MIME_TYPES.get(reference.kind, "text/plain")
        if reference.kind not in ("image", "binary"):
            link["mimeType"] = mime_type
        return link

    async def read(self, uri: str) -> dict[str, Any]:
        """``resources/read`` of a stored output: a page or lines as text, or the image
        (bounded as a tool answer).

        Raises:
            The SDK's error: :data:`RESOURCE_NOT_FOUND` for an unknown or expired output
            (its message says which), invalid params for a URI of no template.
        """
        match = _URI.fullmatch(uri[len(URI_PREFIX) :])
        if match is None:
            raise mcp_error(_INVALID_PARAMS, f"not a stored output's URI: {uri[:200]!r}")
        namespace = unquote(match["namespace"])
        arguments: dict[str, Any] = {"artifact_namespace": namespace}
        if match["page"] is not None:
            arguments["page"] = int(match["page"])
        elif match["first"] is not None:
            arguments.update(start_line=int(match["first"]), end_line=int(match["last"]))
        answer = await self.tools.call("read_memory", arguments)
        text = answer["content"][0]["text"]
        if answer.get("isError"):
            raise mcp_error(RESOURCE_NOT_FOUND, text.removeprefix("Error: "))
        contents: list[dict[str, Any]] = []
        whole = len(arguments) == 1 and describes_image(text)
        image = await self.binding.aimage(namespace) if whole else None
        if image is not None:
            contents.append({"uri": uri, "mimeType": image.mime_type, "blob": image.base64})
        else:
            contents.append({"uri": uri, "mimeType": "text/plain", "text": text})
        result: dict[str, Any] = {"contents": contents}
        if MAJOR >= 2:  # 2026-07-28's caching fields; the 1.x types have none
            result.update(ttlMs=_CACHE_MS, cacheScope="private")
        return result
