"""The reference card: what a stored output holds, in a few hundred tokens.

:class:`OutputStats` describes one namespace (kind, size, lines, tokens, pages, first and
last lines, a JSON outline, which memory tools fit); :func:`render_card` is the one
renderer, used after the reference sentence and by ``TaskMemory.describe``.

Untrusted text is shown as data: every preview line is rendered as a JSON string literal
(quotes and control characters escaped) after its line number, so a stored line that
reads like the reference sentence or like the card's own framing cannot be mistaken for
either (its quotes come out as ``\\"``, and it never starts a line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from offprompt.task_memory.offload import DEFAULT_PAGE_TOKENS

__all__ = ["Kind", "OutputStats", "render_card", "sniff_kind", "tools_for"]

Kind = Literal["text", "json", "ndjson", "csv", "binary", "image"]

#: Characters kept of a preview line (head, tail, grep context) before it is cut.
LINE_PREVIEW_CHARS = 160
#: Lines kept at each end of the output for the card.
PREVIEW_LINES = 3
_CARD_PREFIX = "[stored output]"
_SNIFF_CHARS = 8192
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


class OutputStats(BaseModel):
    """What a stored namespace holds, for the card and for ``TaskMemory.stats``.

    Attributes:
        kind: ``text``, ``json`` (one JSON document), ``ndjson`` (JSON lines), ``csv``,
            ``binary`` (bytes, or text that looks like binary junk) or ``image``.
        bytes: Size of the stored output (UTF-8 for text).
        lines: Newline-separated lines (0 for blobs and empty text).
        tokens: Tokens of the text (o200k by default); an estimate while
            ``tokens_estimated``.
        tokens_estimated: ``tokens`` (and so ``pages``) is extrapolated from a sample;
            exact once the namespace is indexed.
        pages: Pages of ``page_tokens`` tokens that :meth:`TaskMemory.read` and
            ``read_memory`` serve.
        page_tokens: The memory's page unit (``TaskMemory(page_tokens=)``).
        head: The first lines, ``(line number, line cut to a bounded length)``.
        tail: The last lines, same form (empty when ``head`` already shows them all).
        json_outline: For ``json`` / ``ndjson``: the shape (types, keys, array lengths).
        indexed: Chunking, embedding and indexing have finished (``query`` is ready).
        tools: The memory tools that fit this output, best first.
        artifacts: Artifacts stored in the namespace.
    """

    kind: Kind = "text"
    bytes: int = 0
    lines: int = 0
    tokens: int = 0
    tokens_estimated: bool = False
    pages: int = 0
    page_tokens: int = DEFAULT_PAGE_TOKENS
    head: list[tuple[int, str]] = Field(default_factory=list)
    tail: list[tuple[int, str]] = Field(default_factory=list)
    json_outline: str | None = None
    indexed: bool = True
    tools: list[str] = Field(default_factory=list)
    artifacts: int = 1


def tools_for(kind: str) -> list[str]:
    """The memory tools that fit an output of ``kind``, best first."""
    if kind in ("json", "ndjson"):
        return ["json_memory", "grep_memory", "read_memory", "query_memory"]
    if kind in ("binary", "image"):
        return []
    return ["grep_memory", "read_memory", "query_memory", "summarize_memory"]


def sniff_kind(sample: str) -> Kind:
    """A kind guessed from the start of a text (``json`` / ``ndjson`` are confirmed later).

    NUL bytes or many control characters mean ``binary``; an opening ``{`` or ``[``
    means JSON; a few lines with the same number (at least one) of commas or tabs mean
    CSV; anything else is text.
    """
    sample = sample[:_SNIFF_CHARS]
    if not sample.strip():
        return "text"
    controls = len(_CONTROLS.findall(sample))
    if "\x00" in sample or "\ufffd" in sample or controls > len(sample) // 20:
        return "binary"
    if sample.lstrip()[:1] in ("{", "["):
        return "json"
    # The sample's last line may be cut short: judge the complete lines only.
    lines = [line for line in sample.split("\n")[:-1] if line.strip()][:5]
    if len(lines) >= 2:
        for sep in (",", "\t"):
            counts = {line.count(sep) for line in lines}
            if len(counts) == 1 and min(counts) >= 1:
                return "csv"
    return "text"


def _quote(line: str) -> str:
    return json.dumps(line, ensure_ascii=False)


def cut_line(line: str, limit: int = LINE_PREVIEW_CHARS) -> str:
    """``line`` cut to ``limit`` characters, the cut marked with ``…``."""
    if len(line) <= limit or (len(line) == limit + 1 and line.endswith("…")):
        return line
    return f"{line[:limit]}…"


def _count(value: int, estimated: bool) -> str:
    if not estimated:
        return f"{value:,}"
    if value >= 1_000_000:
        return f"~{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"~{value / 1000:.0f}k"
    return f"~{value:,}"


def _render(stats: OutputStats, head: int, tail: int, width: int, outline_lines: int) -> str:
    size = f"{stats.bytes:,} bytes"
    parts = [f"{_CARD_PREFIX} kind: {stats.kind}", size]
    if stats.kind not in ("binary", "image") or stats.lines:
        parts.append(f"{stats.lines:,} lines")
    if stats.tokens or stats.kind not in ("binary", "image"):
        tokens = _count(stats.tokens, stats.tokens_estimated)
        pages = _count(stats.pages, stats.tokens_estimated)
        parts.append(f"{tokens} tokens")
        parts.append(f"{pages} pages of {stats.page_tokens:,} tokens")
    if stats.artifacts > 1:
        parts.append(f"{stats.artifacts} artifacts")
    out = [" | ".join(parts)]
    if stats.tokens_estimated:
        out.append("(token and page counts are estimates until indexing finishes)")
    elif not stats.indexed:
        out.append("(indexing for query_memory is still running)")
    if stats.json_outline and outline_lines:
        lines = stats.json_outline.split("\n")
        shown = lines[:outline_lines]
        if len(lines) > len(shown):
            shown.append(f"… {len(lines) - len(shown)} more outline lines (json_memory outline)")
        out.append("outline:")
        out.extend(f"  {line}" for line in shown)
    heads = stats.head[:head]
    if heads:
        out.append("first lines (as JSON strings):")
        out.extend(f"  {n}: {_quote(cut_line(text, width))}" for n, text in heads)
    tails = [t for t in stats.tail if t[0] > (heads[-1][0] if heads else 0)][-tail:] if tail else []
    if tails:
        out.append("last lines (as JSON strings):")
        out.extend(f"  {n}: {_quote(cut_line(text, width))}" for n, text in tails)
    if stats.tools:
        out.append("tools: " + ", ".join(stats.tools))
    return "\n".join(out)


def render_card(stats: OutputStats, *, max_tokens: int, count: Callable[[str], int]) -> str:
    """The card for ``stats`` in at most ``max_tokens`` tokens (``count`` counts them).

    Fewer preview lines, shorter lines and a shorter outline are tried in turn until the
    card fits; if even the bare summary line does not fit, the result is ``""``.
    """
    if max_tokens <= 0:
        return ""
    attempts = [
        (PREVIEW_LINES, PREVIEW_LINES, LINE_PREVIEW_CHARS, 12),
        (PREVIEW_LINES, PREVIEW_LINES, 100, 8),
        (2, 2, 80, 6),
        (2, 1, 60, 4),
        (1, 1, 40, 2),
        (1, 0, 30, 1),
        (0, 0, 0, 0),
    ]
    for head, tail, width, outline in attempts:
        card = _render(stats, head, tail, width, outline)
        if count(card) <= max_tokens:
            return card
    summary = _render(stats, 0, 0, 0, 0).split("\n")[0]
    return summary if count(summary) <= max_tokens else ""
