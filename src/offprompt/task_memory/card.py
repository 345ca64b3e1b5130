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

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from offprompt.task_memory.budgets import DEFAULT_PAGE_TOKENS
from offprompt.task_memory.json_view import breadth_first

__all__ = [
    "CONTENT_FIELDS",
    "Kind",
    "OutputStats",
    "csv_fields",
    "csv_shape",
    "render_card",
    "shape_only",
    "sniff_kind",
    "tools_for",
]

Kind = Literal["text", "json", "ndjson", "yaml", "table", "csv", "binary", "image"]

#: Characters kept of a preview line (head, tail, grep context) before it is cut.
LINE_PREVIEW_CHARS = 160
#: Lines kept at each end of the output for the card.
PREVIEW_LINES = 3
_CARD_PREFIX = "[stored output]"
_SNIFF_CHARS = 8192
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
#: Complete lines of the sample a CSV must parse consistently.
_CSV_SAMPLE_LINES = 20
# A field that is only a date and/or time: "2016-09-28 04:30:30", "081109 203615".
_TIMESTAMP = re.compile(r"[\d\s:./TZ+-]*\d{2}[:./-]\d{2}[\d\s:./TZ+-]*")
_NUMBER = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|(\d[\d_,]*)?\.?\d+([eE][-+]?\d+)?)")


class OutputStats(BaseModel):
    """What a stored namespace holds, for the card and for ``TaskMemory.stats``.

    Attributes:
        kind: ``text``, ``json`` (one JSON document, or a JSON body after text lines),
            ``ndjson`` (JSON lines), ``yaml``, ``table`` (a Markdown table), ``csv``,
            ``binary`` (bytes, or text that looks like binary junk) or ``image``.
        body_line: For a JSON body after text lines: the line it starts on (0 when
            the output is JSON from its first line, or not JSON).
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
        json_outline: For ``json`` / ``ndjson`` / ``yaml`` / ``table``: the shape (types, keys, array lengths),
            breadth first.
        sample: For ``json``: a JMESPath expression and the compact JSON it selects (the
            first item of the largest array, else the document), cut; shown instead of
            a pretty-printed document's first lines.
        columns: Column names: a CSV's header row, or the header array of JSON lines of
            arrays (empty when there is none).
        column_count: Columns of a CSV (or of JSON lines of arrays with a header row).
        notices: What the output itself says about being partial or about its totals
            ("line 5: showing 1000 of 9000 rows", "next_range = 'A49:AO61'"), from
            :func:`~offprompt.task_memory.notices.partial_notices`; shown on every
            card that has room for more than its summary line.
        indexed: Chunking, embedding and indexing have finished (``query`` is ready).
        tools: The memory tools that fit this output, best first.
        artifacts: Artifacts stored in the namespace.
    """

    kind: Kind = "text"
    body_line: int = 0
    bytes: int = 0
    lines: int = 0
    tokens: int = 0
    tokens_estimated: bool = False
    pages: int = 0
    page_tokens: int = DEFAULT_PAGE_TOKENS
    head: list[tuple[int, str]] = Field(default_factory=list)
    tail: list[tuple[int, str]] = Field(default_factory=list)
    json_outline: str | None = None
    sample: tuple[str, str] | None = None
    columns: list[str] = Field(default_factory=list)
    column_count: int = 0
    notices: list[str] = Field(default_factory=list)
    indexed: bool = True
    tools: list[str] = Field(default_factory=list)
    artifacts: int = 1


def tools_for(kind: str) -> list[str]:
    """The memory tools that fit an output of ``kind``, best first."""
    if kind in ("json", "ndjson", "yaml", "table"):
        return ["json_memory", "grep_memory", "read_memory", "query_memory"]
    if kind == "csv":  # its rows are JSON objects for json_memory
        return ["grep_memory", "json_memory", "read_memory", "query_memory", "summarize_memory"]
    if kind in ("binary", "image"):
        return []
    return ["grep_memory", "read_memory", "query_memory", "summarize_memory"]


def _complete_lines(sample: str) -> list[str]:
    # The sample's last line may be cut short: judge the complete lines only.
    lines = [line for line in sample.split("\n")[:-1] if line.strip()]
    return lines[:_CSV_SAMPLE_LINES]


def csv_shape(sample: str) -> tuple[int, list[str]] | None:
    """``(columns, header names)`` when the start of a text reads as CSV (or TSV), else
    ``None``; the names are empty when the first row does not look like a header.

    CSV means: at least two records, every record of the sample (up to 20 complete
    lines, quoted fields allowed) with the same number of fields, at least two; and
    more than one timestamp comma: with two fields per record, the first may not be a
    bare date/time (``2016-09-28 04:30:30, Info ...`` is a log line).
    """
    lines = _complete_lines(sample)
    if len(lines) < 2:
        return None
    for delimiter in (",", "\t"):
        if not all(delimiter in line for line in lines):
            continue
        try:
            rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
        except csv.Error:
            continue
        rows = [row for row in rows if row]
        # A quoted field may span lines: the last record of the sample may be cut.
        if len(rows) > 2 and len(rows) < len(lines):
            rows = rows[:-1]
        widths = {len(row) for row in rows}
        if len(rows) < 2 or len(widths) != 1 or min(widths) < 2:
            continue
        if min(widths) == 2 and all(_TIMESTAMP.fullmatch(row[0].strip()) for row in rows):
            continue  # "time, message": a log, not a table
        header = rows[0]
        named = all(cell.strip() and not _NUMBER.fullmatch(cell.strip()) for cell in header)
        return len(header), [cell.strip() for cell in header] if named else []
    return None


def sniff_kind(sample: str) -> Kind:
    """A kind guessed from the start of a text (``json`` / ``ndjson`` are confirmed later).

    NUL bytes or many control characters mean ``binary``; an opening ``{`` or ``[``
    means JSON; :func:`csv_shape` decides CSV; anything else is text.
    """
    sample = sample[:_SNIFF_CHARS]
    if not sample.strip():
        return "text"
    controls = len(_CONTROLS.findall(sample))
    if "\x00" in sample or "\ufffd" in sample or controls > len(sample) // 20:
        return "binary"
    if sample.lstrip()[:1] in ("{", "["):
        return "json"
    return "csv" if csv_shape(sample) is not None else "text"


def csv_fields(sample: str) -> dict[str, Any]:
    """The :class:`OutputStats` fields of a CSV from the start of its text (see
    :func:`csv_shape`): ``column_count`` and ``columns``; empty when it is not CSV."""
    found = csv_shape(sample[:_SNIFF_CHARS])
    return {} if found is None else {"column_count": found[0], "columns": found[1]}


#: The stats fields that hold the output's content; a sensitive output's card has none.
CONTENT_FIELDS: dict[str, Any] = {
    "notices": [],
    "head": [],
    "tail": [],
    "json_outline": None,
    "sample": None,
    "columns": [],
}


def shape_only(stats: dict[str, Any]) -> dict[str, Any]:
    """``stats`` (an :class:`OutputStats` dump) without its content: sizes and shape only."""
    empty = {
        key: list(value) if isinstance(value, list) else value
        for key, value in CONTENT_FIELDS.items()
    }
    return {**stats, **empty}


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


def _outline_lines(outline: str, limit: int) -> list[str]:
    shown, left = breadth_first(outline, limit)
    if left:
        shown.append(f"… {left:,} more outline lines (json_memory outline)")
    return shown


def _summary_line(stats: OutputStats) -> str:
    """The card's first line: kind, size, lines, columns, tokens, pages, artifacts."""
    parts = [f"{_CARD_PREFIX} kind: {stats.kind}", f"{stats.bytes:,} bytes"]
    if stats.kind not in ("binary", "image") or stats.lines:
        parts.append(f"{stats.lines:,} lines")
    if stats.column_count:
        parts.append(f"{stats.column_count:,} columns")
    if stats.tokens or stats.kind not in ("binary", "image"):
        tokens = _count(stats.tokens, stats.tokens_estimated)
        pages = _count(stats.pages, stats.tokens_estimated)
        parts.append(f"{tokens} tokens")
        parts.append(f"{pages} pages of {stats.page_tokens:,} tokens")
    if stats.artifacts > 1:
        parts.append(f"{stats.artifacts} artifacts")
    return " | ".join(parts)


def _preview_lines(stats: OutputStats, head: int, tail: int, width: int) -> list[str]:
    """The card's preview: a JSON document's compact sample, or its first and last lines
    (a table's header line, shown with the columns, left out)."""
    out: list[str] = []
    heads, tails = stats.head[:head], stats.tail
    if stats.sample is not None:
        # A JSON document: its compact sample says more than its first and last lines.
        heads, tails = [], []
        if width:
            expression, text = stats.sample
            out.append(f"sample {expression} (compact JSON):")
            out.append(f"  {cut_line(text, width * 3 // 2)}")
    elif stats.columns:
        heads = [h for h in stats.head if h[0] > 1][:head]  # line 1 is the header shown above
    if heads:
        out.append("first lines (as JSON strings):")
        out.extend(f"  {n}: {_quote(cut_line(text, width))}" for n, text in heads)
    last = heads[-1][0] if heads else (1 if stats.columns else 0)
    tails = [t for t in tails if t[0] > last][-tail:] if tail else []
    if tails:
        out.append("last lines (as JSON strings):")
        out.extend(f"  {n}: {_quote(cut_line(text, width))}" for n, text in tails)
    return out


def _render(stats: OutputStats, head: int, tail: int, width: int, outline_lines: int) -> str:
    out = [_summary_line(stats)]
    if stats.tokens_estimated:
        out.append("(token and page counts are estimates until indexing finishes)")
    elif not stats.indexed:
        out.append("(indexing for query_memory is still running)")
    if stats.notices:
        # Before the outline and the previews: a cut result must never look complete.
        out.append("the output says (paging, totals; as JSON strings):")
        # A notice is short already (the words around its match): quoted whole.
        out.extend(f"  {_quote(cut_line(n, max(width, 130)))}" for n in stats.notices)
    if stats.json_outline and outline_lines:
        where = (
            f" (JSON from line {stats.body_line}; the lines before it are text)"
            if stats.body_line
            else ""
        )
        out.append(f"outline{where}:")
        out.extend(f"  {line}" for line in _outline_lines(stats.json_outline, outline_lines))
    if stats.columns and width:
        names = ", ".join(_quote(name) for name in stats.columns)
        out.append(f"columns: {cut_line(names, width)}")
    out.extend(_preview_lines(stats, head, tail, width))
    if stats.tools:
        out.append("tools: " + ", ".join(stats.tools))
    return "\n".join(out)


# (first lines, last lines, characters of a line) from the richest preview to none.
_PREVIEWS = [
    (PREVIEW_LINES, PREVIEW_LINES, LINE_PREVIEW_CHARS),
    (PREVIEW_LINES, PREVIEW_LINES, 120),
    (PREVIEW_LINES, PREVIEW_LINES, 100),
    (2, 2, 80),
    (2, 1, 60),
    (1, 1, 40),
    (1, 0, 30),
    (0, 0, 0),
]


def _attempts(stats: OutputStats) -> list[tuple[int, int, int, int]]:
    """``(head, tail, width, outline lines)`` to try, best first.

    An outline keeps its top level (the root and every top-level key, up to the 25
    listed) longest: deeper outline lines go first (with a full, then a shorter
    preview), then the preview shrinks, and only then the top level.
    """
    if not stats.json_outline:
        return [(*preview, 0) for preview in _PREVIEWS]
    lines = stats.json_outline.split("\n")
    top = sum(1 for line in lines if len(line) - len(line.lstrip(" ")) <= 2)
    attempts = [(*_PREVIEWS[0], n) for n in (40, 30, 24, 20, 16, 12) if n > top]
    attempts += [(*_PREVIEWS[2], n) for n in (20, 16, 12, 8) if n > top]
    attempts += [(*preview, top) for preview in _PREVIEWS]
    attempts += [(0, 0, 0, n) for n in (8, 4, 2, 1, 0) if n < top]
    return attempts


def render_card(stats: OutputStats, *, max_tokens: int, count: Callable[[str], int]) -> str:
    """The card for ``stats`` in at most ``max_tokens`` tokens (``count`` counts them).

    Fewer preview lines, shorter lines and a shorter outline (its deepest lines first)
    are tried in turn until the card fits; if even the bare summary line does not fit,
    the result is ``""``.
    """
    if max_tokens <= 0:
        return ""
    for head, tail, width, outline in _attempts(stats):
        card = _render(stats, head, tail, width, outline)
        if count(card) <= max_tokens:
            return card
    summary = _render(stats, 0, 0, 0, 0).split("\n")[0]
    return summary if count(summary) <= max_tokens else ""
