"""Render a conversation for people: a self-contained HTML page and a terminal timeline.

Both views show the same things: messages with their roles, tool calls with their
arguments, tool results, images, and the off-prompt references a model got instead of
a large tool output (with the stored namespace's size when task memory knows it).
"""

from offprompt.render.html import render_html
from offprompt.render.references import (
    REFERENCE_PATTERN,
    NamespaceInfo,
    OffpromptReference,
    find_references,
)
from offprompt.render.timeline import render_timeline

__all__ = [
    "REFERENCE_PATTERN",
    "NamespaceInfo",
    "OffpromptReference",
    "find_references",
    "render_html",
    "render_timeline",
]
