"""A conversation as a rich terminal timeline.

One block per message: a header line (sequence number, time, role, name, tokens), the
text (long text shortened in the middle), tool calls with their arguments, tool results
tied to their call, images described, and off-prompt references highlighted with the
stored namespace's size. All message text goes through :class:`rich.text.Text`, never
through console markup, so brackets in a message are shown, not interpreted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ImageArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.messages import Message
from offprompt.render.references import NamespaceInfo, OffpromptReference, split_text
from offprompt.stores.base import StoredMessage

__all__ = ["render_timeline"]

_ROLE_STYLE = {
    "system": "bold magenta",
    "user": "bold blue",
    "assistant": "bold green",
    "tool": "bold yellow",
}


def render_timeline(
    messages: Sequence[Message | StoredMessage],
    *,
    title: str | None = None,
    namespaces: Mapping[str, NamespaceInfo] | None = None,
    max_chars: int = 1200,
) -> RenderableType:
    """Build a printable timeline of ``messages``.

    Args:
        messages: The conversation, in order.
        title: A heading, e.g. the session id.
        namespaces: Sizes of the namespaces that references name (see
            :class:`NamespaceInfo`).
        max_chars: Text parts longer than this are shortened in the middle.

    Returns:
        A rich renderable; print it with ``Console().print(...)``.

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> console = Console(width=60, record=True, file=io.StringIO())
        >>> console.print(render_timeline([Message.user("[bold]hi[/bold]")]))
        >>> "[bold]hi[/bold]" in console.export_text()
        True
    """
    namespaces = namespaces or {}
    tool_names = {
        call.id: call.name
        for item in messages
        for call in (item.message if isinstance(item, StoredMessage) else item).tool_calls
    }
    blocks: list[RenderableType] = []
    if title is not None:
        blocks.append(Rule(Text(title, style="bold")))
    for item in messages:
        blocks.append(_message(item, tool_names, namespaces, max_chars))
    if not messages:
        blocks.append(Text("(no messages)", style="dim"))
    return Group(*blocks)


def _message(
    item: Message | StoredMessage,
    tool_names: Mapping[str, str],
    namespaces: Mapping[str, NamespaceInfo],
    max_chars: int,
) -> RenderableType:
    message = item.message if isinstance(item, StoredMessage) else item
    header = Text()
    if isinstance(item, StoredMessage):
        header.append(f"#{item.seq:<4} ", style="dim")
    header.append(message.created_at.strftime("%H:%M:%S "), style="dim")
    header.append(message.role.upper(), style=_ROLE_STYLE.get(message.role, "bold"))
    if message.name:
        header.append(f" {message.name}", style="italic")
    if isinstance(item, StoredMessage):
        header.append(f"  {item.tokens:,} tokens", style="dim")
    body: list[RenderableType] = []
    if message.role == "tool" and message.tool_call_id is not None:
        name = tool_names.get(message.tool_call_id, message.name or "call")
        body.append(
            Text.assemble(
                ("← result of ", "dim"), (name, "yellow"), (f" ({message.tool_call_id})", "dim")
            )
        )
    for part in message.content:
        body.extend(_part(part, namespaces, max_chars))
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        if len(arguments) > max_chars:
            arguments = arguments[: max_chars // 2] + " … " + arguments[-max_chars // 2 :]
        body.append(
            Text.assemble(
                ("→ calls ", "dim"),
                (call.name, "bold green"),
                (f"({arguments})", ""),
                (f"  id {call.id}", "dim"),
            )
        )
    return Group(header, Padding(Group(*body), (0, 0, 1, 6)))


def _part(
    part: BaseArtifact, namespaces: Mapping[str, NamespaceInfo], max_chars: int
) -> list[RenderableType]:
    if isinstance(part, TextArtifact):
        return [_text(part.value, namespaces, max_chars)]
    if isinstance(part, ImageArtifact):
        return [Text(f"[image] {part.to_text()}", style="cyan")]
    if isinstance(part, BlobArtifact):
        return [
            Text(f"[binary] {part.mime_type or 'data'}, {len(part.value):,} bytes", style="cyan")
        ]
    if isinstance(part, JsonArtifact):
        return [Text(_shorten(json.dumps(part.value, ensure_ascii=False), max_chars))]
    if isinstance(part, ListArtifact):
        return [r for item in part.value for r in _part(item, namespaces, max_chars)]
    return [Text(_shorten(part.to_text(), max_chars))]


def _text(text: str, namespaces: Mapping[str, NamespaceInfo], max_chars: int) -> Text:
    out = Text()
    for piece in split_text(text):
        if isinstance(piece, OffpromptReference):
            info = namespaces.get(piece.namespace)
            size = info.size_text() if info is not None else "not in task memory"
            out.append("⧉ stored off-prompt: ", style="bold yellow")
            out.append(piece.namespace, style="bold")
            out.append(f" ({size}) from {piece.source}", style="yellow")
        else:
            out.append(_shorten(piece, max_chars))
    return out


def _shorten(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]} … [{len(text) - 2 * half:,} characters not shown] … {text[-half:]}"
