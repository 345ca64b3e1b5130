"""A conversation as one self-contained HTML page.

The page has no external resources and no script: styles are inline, images are
``data:`` URLs, and a Content-Security-Policy forbids scripts, so a message that holds
``<script>`` shows as text and can never run (every piece of text is HTML-escaped
as well). Messages are styled by role; tool calls show their arguments; tool results
link back to their call; off-prompt references show the stored namespace and its size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ImageArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.messages import Message, ToolCall
from offprompt.render.references import NamespaceInfo, OffpromptReference, split_text
from offprompt.stores.base import StoredMessage

__all__ = ["render_html"]

#: Text parts longer than this are folded into a ``<details>`` element.
FOLD_CHARS = 4000

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_STYLE = """
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --bg:#f6f8fa; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); background:var(--bg); }
header { padding:20px 28px; background:#fff; border-bottom:1px solid var(--line); }
header h1 { margin:0 0 4px; font-size:20px; word-break:break-all; }
header .stats { color:var(--muted); font-size:13px; }
main { max-width:920px; margin:0 auto; padding:20px 16px 60px; }
.msg { background:#fff; border:1px solid var(--line); border-left:5px solid var(--muted); border-radius:8px; margin:14px 0; padding:10px 14px; }
.msg.role-system { border-left-color:#8250df; background:#fbf8ff; }
.msg.role-user { border-left-color:#0969da; }
.msg.role-assistant { border-left-color:#1a7f37; }
.msg.role-tool { border-left-color:#bf8700; background:#fffdf5; }
.meta { display:flex; gap:10px; align-items:baseline; font-size:12px; color:var(--muted); margin-bottom:6px; flex-wrap:wrap; }
.role { font-weight:700; text-transform:uppercase; letter-spacing:.04em; color:var(--fg); }
.text { white-space:pre-wrap; overflow-wrap:anywhere; }
pre { background:var(--bg); border:1px solid var(--line); border-radius:6px; padding:8px 10px; overflow:auto; font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace; white-space:pre-wrap; overflow-wrap:anywhere; margin:6px 0; }
.tool-call { border:1px dashed #1a7f37; border-radius:6px; padding:6px 10px; margin:8px 0; background:#f6fff8; }
.tool-call .name, .result-of .name { font-family:ui-monospace,monospace; font-weight:700; }
.result-of { font-size:12.5px; color:var(--muted); margin-bottom:4px; }
.offprompt-ref { display:block; border:1px solid #bf8700; background:#fff8c5; border-radius:6px; padding:8px 10px; margin:6px 0; }
.offprompt-ref .badge { font-size:11px; font-weight:700; text-transform:uppercase; color:#7d4e00; letter-spacing:.05em; }
.offprompt-ref .ns { font-family:ui-monospace,monospace; font-weight:700; }
.offprompt-ref .size { color:#7d4e00; }
.offprompt-ref .sentence { display:block; color:var(--muted); font-size:12.5px; margin-top:2px; }
figure { margin:8px 0; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:4px; background:#fff; }
figcaption, .blob { font-size:12px; color:var(--muted); }
a { color:#0969da; }
"""


def render_html(
    messages: Sequence[Message | StoredMessage],
    *,
    title: str = "offprompt session",
    namespaces: Mapping[str, NamespaceInfo] | None = None,
) -> str:
    """Render ``messages`` as a complete, self-contained HTML document.

    Args:
        messages: The conversation, in order; :class:`StoredMessage` items also show
            their sequence number and token count.
        title: The page title, e.g. the session id.
        namespaces: What task memory knows about the namespaces the references name;
            a referenced namespace missing here is shown as "not in task memory".

    Returns:
        The HTML document as a string.

    Example:
        >>> page = render_html([Message.user("<b>hi</b>")], title="s1")
        >>> "&lt;b&gt;hi&lt;/b&gt;" in page and "<b>hi</b>" not in page
        True
    """
    namespaces = namespaces or {}
    stored = [m for m in messages if isinstance(m, StoredMessage)]
    plain = [m.message if isinstance(m, StoredMessage) else m for m in messages]
    tool_names = {call.id: call.name for m in plain for call in m.tool_calls}
    stats = [f"{len(plain)} message{'s' if len(plain) != 1 else ''}"]
    if stored:
        stats.append(f"{sum(m.tokens for m in stored):,} tokens in the prompt")
    refs = sum(
        1 for m in plain for p in m.content if isinstance(p, TextArtifact) for _ in _refs(p.value)
    )
    if refs:
        stats.append(f"{refs} off-prompt reference{'s' if refs != 1 else ''}")
    if plain:
        stats.append(f"{_when(plain[0].created_at)} to {_when(plain[-1].created_at)}")
    body = "\n".join(
        _message(item, index, tool_names, namespaces) for index, item in enumerate(messages)
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="offprompt">\n'
        f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f'<header><h1>{escape(title)}</h1><div class="stats">{escape(" · ".join(stats))}</div></header>\n'
        f'<main id="messages">\n{body}\n</main>\n</body>\n</html>\n'
    )


def _refs(text: str) -> list[OffpromptReference]:
    return [p for p in split_text(text) if isinstance(p, OffpromptReference)]


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _message(
    item: Message | StoredMessage,
    index: int,
    tool_names: Mapping[str, str],
    namespaces: Mapping[str, NamespaceInfo],
) -> str:
    message = item.message if isinstance(item, StoredMessage) else item
    meta = [f'<span class="role">{escape(message.role)}</span>']
    if message.name:
        meta.append(f'<span class="name">{escape(message.name)}</span>')
    if isinstance(item, StoredMessage):
        meta.append(f"<span>#{item.seq}</span><span>{item.tokens:,} tokens</span>")
    meta.append(
        f'<time datetime="{escape(message.created_at.isoformat())}">{escape(_when(message.created_at))}</time>'
    )
    parts: list[str] = []
    if message.role == "tool" and message.tool_call_id is not None:
        call_id = message.tool_call_id
        name = tool_names.get(call_id, message.name or "")
        parts.append(
            '<div class="result-of">result of '
            f'<a href="#{escape(_anchor(call_id))}"><span class="name">{escape(name or "call")}</span></a>'
            f" (call {escape(call_id)})</div>"
        )
    parts += [_part(part, namespaces) for part in message.content]
    parts += [_tool_call(call) for call in message.tool_calls]
    return (
        f'<article class="msg role-{escape(message.role)}" id="m{index}" data-role="{escape(message.role)}">\n'
        f'<div class="meta">{"".join(meta)}</div>\n' + "\n".join(parts) + "\n</article>"
    )


def _anchor(call_id: str) -> str:
    return "call-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)


def _tool_call(call: ToolCall) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False, indent=2)
    return (
        f'<div class="tool-call" id="{escape(_anchor(call.id))}" data-tool="{escape(call.name)}">'
        f'calls <span class="name">{escape(call.name)}</span>'
        f' <span class="call-id">id {escape(call.id)}</span>'
        f"<pre>{escape(arguments)}</pre></div>"
    )


def _part(part: BaseArtifact, namespaces: Mapping[str, NamespaceInfo]) -> str:
    if isinstance(part, TextArtifact):
        return _text(part.value, namespaces)
    if isinstance(part, ImageArtifact):
        caption = f"{part.format} {part.width}x{part.height}, {len(part.value):,} bytes"
        if part.name and part.name != part.id:
            caption = f"{part.name} · {caption}"
        return (
            f'<figure><img src="{escape(part.to_data_url())}" alt="{escape(part.to_text())}"'
            f' width="{part.width}" height="{part.height}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
        )
    if isinstance(part, BlobArtifact):
        return f'<div class="blob">binary {escape(part.mime_type or "data")}, {len(part.value):,} bytes</div>'
    if isinstance(part, JsonArtifact):
        return f"<pre>{escape(json.dumps(part.value, ensure_ascii=False, indent=2))}</pre>"
    if isinstance(part, ListArtifact):
        return "\n".join(_part(item, namespaces) for item in part.value)
    return f'<div class="text">{escape(part.to_text())}</div>'


def _text(text: str, namespaces: Mapping[str, NamespaceInfo]) -> str:
    html = []
    for piece in split_text(text):
        if isinstance(piece, OffpromptReference):
            html.append(_reference(piece, namespaces.get(piece.namespace)))
        else:
            html.append(escape(piece))
    inner = "".join(html)
    if len(text) > FOLD_CHARS:
        return (
            f'<details class="text"><summary>{escape(text[:200])}… '
            f"({len(text):,} characters)</summary>{inner}</details>"
        )
    return f'<div class="text">{inner}</div>'


def _reference(ref: OffpromptReference, info: NamespaceInfo | None) -> str:
    size = info.size_text() if info is not None else "not in task memory"
    return (
        f'<span class="offprompt-ref" data-namespace="{escape(ref.namespace)}">'
        '<span class="badge">stored off-prompt</span> '
        f'<span class="ns">{escape(ref.namespace)}</span> '
        f'<span class="size">({escape(size)})</span> '
        f"from <code>{escape(ref.source)}</code> in <code>{escape(ref.memory)}</code>"
        f'<span class="sentence">the model saw: {escape(ref.sentence)}</span></span>'
    )
