"""What an output says about being partial: "showing 1000 of 9000 rows", a next page,
a cursor, ``has_more``, ``truncated``, ``limit``/``offset``.

A card that shows an output's first and last lines makes a cut result look complete
when its notice sits on line 5 or in a nested key. :func:`partial_notices` finds such
notices by one general rule, not by knowing any server:

* in text, the first :data:`HEAD_LINES` and the last :data:`TAIL_LINES` lines that
  speak of a part ("showing", "truncated", "N of M", "more rows", "next page",
  "cursor", "limit 100", ...);
* in JSON, the keys (at any depth up to :data:`MAX_DEPTH`, breadth first) whose name
  speaks of paging or totals (``next_range``, ``nextPageToken``, ``cursor``,
  ``has_more``, ``truncated``, ``total_count``, ``limit``, ``offset``, ``remaining``),
  with their scalar values; arrays are not entered (their items are the data).

A notice is shown as data (the card quotes it); at most :data:`MAX_NOTICES`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from itertools import islice
from typing import Any

__all__ = [
    "HEAD_LINES",
    "MAX_DEPTH",
    "MAX_NOTICES",
    "NOTICE_LINE_CHARS",
    "NOTICE_SCAN_CHARS",
    "TAIL_LINES",
    "partial_notices",
]

#: Lines at the start and at the end of a text output read for notices.
HEAD_LINES = 20
TAIL_LINES = 5
#: JSON depth searched for paging keys, and the most notices a card carries.
MAX_DEPTH = 4
MAX_NOTICES = 5
_MAX_NODES = 2000
_KEYS_PER_OBJECT = 200
_NOTICE_CHARS = 160
#: Characters of each head and tail line searched for a notice.
NOTICE_SCAN_CHARS = 2000
#: Characters of a text line a notice quotes (around the words that make it a notice).
NOTICE_LINE_CHARS = 100

_NUMBER = r"\d[\d,.]*"
_TEXT_NOTICE = re.compile(
    r"\b(?:"
    r"showing|shown|displaying|displayed|truncat\w*|omitted|elided|remaining|partial"
    r"|has[ _-]?more|(?:next|more)[ _-]?(?:page|range|cursor|token|offset|results?|rows?)"
    r"|cursor|page[ _-]?token"
    rf"|{_NUMBER}\s+(?:more|additional|further)\s+\w+"
    rf"|(?:first|top|last|limit(?:ed)?(?:\s+to)?|max(?:imum)?)\s+{_NUMBER}\b"
    rf"|{_NUMBER}\s*(?:of|out\s+of|/)\s*{_NUMBER}\s+(?:rows?|results?|items?|records?|lines?"
    r"|entries|pages?|files?|matches|hits|documents?|objects?)"
    rf"|page\s+{_NUMBER}\s+of\s+{_NUMBER}"
    r")",
    re.IGNORECASE,
)
# Key names (lowercased, without "_", "-" and spaces) that speak of paging or totals.
_KEY_EXACT = frozenset(
    {
        "next", "more", "hasmore", "ismore", "truncated", "istruncated", "partial",
        "incomplete", "limit", "offset", "skip", "page", "pagesize", "perpage", "pages",
        "totalpages", "total", "totalcount", "totalrows", "totalresults", "totalitems",
        "totalsize", "count", "numrows", "rowcount", "resultcount", "remaining",
        "returned", "shown", "omitted", "morerows", "moreresults",
    }
)  # fmt: skip
_KEY_PART = re.compile(
    r"cursor|pagetoken|continuation|^next|next(?:page|link|token|cursor|range|offset|url)"
    r"|truncat|remaining|hasmore|hasnext"
)


def _norm(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key).lower()


def _cut(text: str) -> str:
    return text if len(text) <= _NOTICE_CHARS else text[:_NOTICE_CHARS] + "…"


def _around(line: str, match: re.Match[str]) -> str:
    """``line``, or the part of it around ``match`` when it is long: a notice at the end
    of a long SQL line must show its words, not the line's start."""
    if len(line) <= NOTICE_LINE_CHARS:
        return line
    start = max(0, min(match.start() - NOTICE_LINE_CHARS // 3, len(line) - NOTICE_LINE_CHARS))
    end = start + NOTICE_LINE_CHARS
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def _text_notices(lines: Sequence[tuple[int, str]]) -> list[str]:
    found = []
    for number, line in lines:
        stripped = line.strip()
        match = _TEXT_NOTICE.search(stripped) if stripped else None
        if match is not None:
            found.append(f"line {number}: {_around(stripped, match)}")
    return found


def _paging_key(key: str) -> bool:
    name = _norm(key)
    return name in _KEY_EXACT or bool(_KEY_PART.search(name))


def _json_notices(value: Any) -> list[str]:
    """``path = value`` of the paging keys with scalar values, breadth first.

    Arrays are not entered: their items are the data (a row's own ``count`` is no
    notice), and a page's paging keys sit beside its array.
    """
    found: list[str] = []
    queue: deque[tuple[str, Any, int]] = deque([("", value, 0)])
    seen = 0
    while queue and seen < _MAX_NODES:
        path, node, depth = queue.popleft()
        seen += 1
        if isinstance(node, dict):
            for key, item in islice(node.items(), _KEYS_PER_OBJECT):
                child = f"{path}.{key}" if path else str(key)
                scalar = item is None or isinstance(item, (str, int, float, bool))
                if scalar and _paging_key(str(key)):
                    found.append(f"{child} = {_cut(_scalar(item))}")
                elif depth < MAX_DEPTH and isinstance(item, dict):
                    queue.append((child, item, depth + 1))
    return found


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def partial_notices(
    head: Sequence[tuple[int, str]],
    tail: Sequence[tuple[int, str]] = (),
    value: Any = None,
    *,
    lines_are_json: bool = False,
) -> list[str]:
    """The notices an output gives about being partial (see the module docs), in order:
    text lines of the head, JSON keys of ``value``, text lines of the tail.

    Args:
        head: ``(line number, line)`` of the output's first lines (up to
            :data:`HEAD_LINES` are read).
        tail: The last lines, same form (up to :data:`TAIL_LINES`).
        value: The output's JSON data (a document, the values of JSON lines, or the
            JSON body after a text header), if it has any.
        lines_are_json: The lines are the serialisation of ``value`` (a JSON output):
            only its keys are read, not its lines.

    Example:
        >>> partial_notices([(1, "Query done."), (5, "showing 1000 of 9000 rows")])
        ['line 5: showing 1000 of 9000 rows']
        >>> partial_notices([], value={"rows": [{"a": 1}], "next_range": "A49:AO61"})
        ["next_range = 'A49:AO61'"]
    """
    notices: list[str] = []
    shown = {number for number, _ in head[:HEAD_LINES]}
    if not lines_are_json:
        notices += _text_notices(head[:HEAD_LINES])
    if value is not None:
        notices += _json_notices(value)
    if not lines_are_json:
        notices += _text_notices([t for t in tail[-TAIL_LINES:] if t[0] not in shown])
    return list(dict.fromkeys(notices))[:MAX_NOTICES]
