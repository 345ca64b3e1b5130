"""The model-free excerpt of a stored output: what ``summarize`` answers without a summarizer.

Without a language model nothing can be summarized honestly, so :func:`excerpt` says
what it is (its first line: ``Excerpt of artifact_namespace "..." (no model was given,
so not a summary): ...``) and shows what informs most within its token budget:

* **Text** (logs, prose; :func:`lines_excerpt`): the first and last lines and, between
  them, the rare lines and the error lines, each whole and numbered, so ``read_memory``
  and ``grep_memory`` go on from there; a gap says how many lines it leaves out. A
  line's *shape* is the line with every word that holds a digit masked (timestamps,
  ids, addresses, counters), and day and month names: a shape seen at most
  :data:`RARE_COUNT` times is rare. An error line says so by its level (``ERROR``,
  ``[error]``, ``level=warn``, logcat's ``E``) or, with no level, by its words
  (``failed``, ``Exception``, ``timed out``); such words under a lower level
  (``INFO ... FAILED``) make it rank as a warning.
  One line stands for its shape, ``(+N similar)`` counting the others; a line is cut
  (and the cut marked) only when it alone would take more than half the budget.
* **Data** (:func:`structure_excerpt`): for a JSON document, JSON lines, CSV/TSV,
  YAML, a Markdown table or a JSON body after text lines (the structure the card
  found, parsed by the card's code once per view), the rows' count, each field's
  types and profile (numbers: least and greatest; strings: distinct values and the
  most frequent; null, missing and empty counts) and the first rows.

The work is bounded: shapes are found with NumPy over at most :data:`SCAN_BYTES` of the
text (evenly spread windows of a larger one, then said), fields are profiled on at most
:data:`PROFILE_ROWS` rows (evenly spread, then said).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotJsonError, ValidationError
from offprompt.task_memory import json_view
from offprompt.task_memory.budgets import DEFAULT_MAX_OUTPUT_TOKENS, bound_text
from offprompt.task_memory.card import cut_line
from offprompt.task_memory.text_view import TextView
from offprompt.tokens import TokenCodec

if TYPE_CHECKING:
    from offprompt.task_memory._reads import Reader

__all__ = [
    "DEFAULT_EXCERPT_TOKENS",
    "PROFILE_ROWS",
    "RARE_COUNT",
    "SCAN_BYTES",
    "excerpt",
    "lines_excerpt",
    "structure_excerpt",
]

#: Budget of an excerpt when none is given: the memory tools' bound.
DEFAULT_EXCERPT_TOKENS = DEFAULT_MAX_OUTPUT_TOKENS
#: A shape seen at most this many times is rare.
RARE_COUNT = 3
#: Bytes of a text whose shapes are counted; a larger text is read in spread windows.
SCAN_BYTES = 32 << 20
#: Rows of a table whose fields are profiled; a larger table is sampled evenly.
PROFILE_ROWS = 10_000

_WHAT_LINES = "the first and last lines, and the rare and error lines between, numbered"
_DATA = {
    "csv": "CSV data",
    "table": "Markdown table",
    "json": "JSON data",
    "ndjson": "JSON lines",
    "yaml": "YAML data",
}
#: Lines shown first at each end of a text, and at most once the rest is chosen.
_EDGE_LINES = 3
_MORE_EDGE_LINES = 10
_WINDOW_BYTES = 1 << 20
_MASK_BLOCK = 1 << 20
#: Lines weighed for the budget (the best first), and in a row that do not fit, before
#: giving up on the rest.
_MAX_CANDIDATES = 400
_MAX_MISSES = 40
_MAX_FIELDS = 25
_VALUE_CHARS = 40
_TEXT_LINES = 5  # of the text lines before a JSON body

# Day and month names vary like the digits of a timestamp ("[Sun Dec 04 04:47:44 2005]").
_NAMES = np.array(
    [
        (word[0] << 16) | (word[1] << 8) | word[2]
        for word in b"Mon Tue Wed Thu Fri Sat Sun Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
    ],
    dtype=np.int32,
)

_LEVEL_RANK = {
    "fatal": 3, "critical": 3, "crit": 3, "severe": 3, "emerg": 3, "alert": 3, "panic": 3,
    "error": 2, "err": 2, "warning": 1, "warn": 1,
}  # fmt: skip
# A level: a word in capitals, or any case in brackets or after "level=".
_LEVEL = re.compile(
    rb"(?<![\w-])(FATAL|CRITICAL|CRIT|SEVERE|EMERG|ALERT|PANIC|ERROR|ERR|WARNING|WARN"
    rb"|INFO|NOTICE|DEBUG|TRACE|VERBOSE)(?![\w-])"
    rb"|(?i:\[(emerg|alert|crit|error|warn|notice|info|debug)\])"
    rb"|(?i:\blevel=\"?(\w+))"
)
# logcat's threadtime lines, once masked: "# #  # # E Tag: message"
_LOGCAT = re.compile(rb"(?:#[ \t]+){2,}([VDIWEFA])[ \t]")
_LOGCAT_RANK = {b"W": 1, b"E": 2, b"F": 3, b"A": 3}
_WORDS = (
    (3, re.compile(rb"(?i)\b(?:fatal|panic|critical|segfault|out of memory)\b")),
    (
        2,
        re.compile(
            rb"(?i)\w*(?:error|exception)s?\b|\b(?:traceback|fail(?:ed|ure|ures|ing|s)?"
            rb"|abort(?:ed|ing)?|denied|refused|unreachable|corrupt(?:ed)?|killed|crash(?:ed)?"
            rb"|time(?:d out|out|d-out|-out)s?)\b"
        ),
    ),
    (1, re.compile(rb"(?i)\b(?:warn(?:ing|ings|s)?|deprecated)\b")),
)


def excerpt(
    reader: Reader,
    namespace: str,
    *,
    tool: str | None,
    stats: dict[str, Any],
    tokenizer: TokenCodec,
    max_tokens: int | None = None,
) -> TextArtifact:
    """The excerpt of ``namespace`` (see the module docs), at most ``max_tokens`` tokens
    (:data:`DEFAULT_EXCERPT_TOKENS` if None) counted with ``tokenizer``; ``stats`` is the
    namespace's card data and ``tool`` the tool that produced it.

    ``meta`` holds ``tool``, ``excerpt`` (``"lines"`` or ``"structure"``) and ``lines``.

    Raises:
        NotFoundError: Unknown namespace.
        ValidationError: A binary namespace, or a bad ``max_tokens``.
    """
    budget = DEFAULT_EXCERPT_TOKENS if max_tokens is None else max_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValidationError(f"max_tokens must be a positive int, got {max_tokens!r}")
    with reader.indexer.reading():
        view = reader.text(namespace)
        text = None
        if stats.get("kind") in _DATA:
            try:
                kind, value = reader.json(namespace)
            except NotJsonError:
                pass
            else:
                text = structure_excerpt(
                    view, kind, value, stats, namespace, max_tokens=budget, tokenizer=tokenizer
                )
        mode = "structure" if text is not None else "lines"
        if text is None:
            text = lines_excerpt(view, namespace, budget, tokenizer)
    meta = {"tool": tool, "excerpt": mode, "lines": view.lines}
    return TextArtifact(value=text, name=namespace, meta=meta)


def _header(namespace: str, what: str) -> str:
    return f'Excerpt of artifact_namespace "{namespace}" (no model was given, so not a summary): {what}:'


def _fit(text: str, max_tokens: int, tokenizer: TokenCodec) -> str:
    return bound_text(text, max_tokens, tokenizer)


# -- text: the first, last, rare and error lines -----------------------------------------


def _mask_block(block: np.ndarray[Any, np.dtype[np.uint8]]) -> bytes:
    """``block`` with every word (run of non-space bytes) that holds a digit as ``#``."""
    # comparisons, not table lookups: a gather per byte costs several times more
    space = (block == 32) | (block - 9 < 5)  # \t \n \v \f \r
    start = np.empty_like(space)  # a word starts here
    start[0] = not space[0]
    np.greater(space[:-1], space[1:], out=start[1:])
    word = np.cumsum(start, dtype=np.int32)  # the word of each byte, 1-based
    has_digit = np.zeros(int(word[-1]) + 1, dtype=bool)
    has_digit[word[block - 48 < 10]] = True
    masked = has_digit[word]
    masked &= ~space
    out = block.copy()
    out[start & masked] = ord("#")
    masked &= ~start  # a masked word keeps one byte, the "#"
    names = _names(block)
    out[names] = ord("#")
    masked[names + 1] = masked[names + 2] = True
    return bytes(out[~masked].tobytes())


def _names(block: np.ndarray[Any, np.dtype[np.uint8]]) -> np.ndarray[Any, np.dtype[np.intp]]:
    """Where the day and month names of ``block`` start: three letters, alone."""
    letter = (block | 32) - 97 < 26
    size = len(block)
    if size < 3:
        return np.zeros(0, dtype=np.intp)
    three = letter[: size - 2] & letter[1 : size - 1] & letter[2:]
    three[1:] &= ~letter[: size - 3]  # no letter before
    three[: size - 3] &= ~letter[3:]  # nor after
    at = np.flatnonzero(three)
    code = (
        (block[at].astype(np.int32) << 16) | (block[at + 1].astype(np.int32) << 8) | block[at + 2]
    )
    return at[np.isin(code, _NAMES)]


def _masked(data: bytes, start: int, end: int) -> bytes:
    """``data[start:end]`` masked, in blocks cut at line ends (bounded memory)."""
    array = np.frombuffer(data, dtype=np.uint8)
    parts: list[bytes] = []
    pos = start
    while pos < end:
        stop = min(end, pos + _MASK_BLOCK)
        if stop < end:
            cut = data.find(b"\n", stop, min(end, stop + _MASK_BLOCK))
            stop = stop if cut == -1 else cut + 1  # no line end near: one huge line, cut it
        parts.append(_mask_block(array[pos:stop]))
        pos = stop
    return b"".join(parts)


def _windows(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of ``data`` whose shapes are counted: all of it, or spread windows."""
    size = len(data)
    if size <= SCAN_BYTES:
        return [(0, size)]
    count = SCAN_BYTES // _WINDOW_BYTES
    windows = []
    for i in range(count):
        start = 0 if i == 0 else data.find(b"\n", i * size // count) + 1
        if start <= 0:
            break
        end = data.find(b"\n", start + _WINDOW_BYTES)
        windows.append((start, size if end == -1 else end + 1))
    return windows


@dataclass
class _Shapes:
    """How often each shape occurs in the scanned text, and the line it first occurs on."""

    counts: Counter[bytes]
    first: dict[bytes, int]
    scanned: int

    @classmethod
    def scan(cls, view: TextView) -> _Shapes:
        data = view.data
        counts: Counter[bytes] = Counter()
        first: dict[bytes, int] = {}
        scanned = 0
        for start, end in _windows(data):
            lines = _masked(data, start, end).split(b"\n")
            if data.endswith(b"\n", start, end):
                lines.pop()  # after the last line end: no line
            counts.update(lines)
            base = view.line_number(start)
            # reversed, so each shape keeps its first line (a dict built in C, no loop)
            here = dict(
                zip(reversed(lines), range(base + len(lines) - 1, base - 1, -1), strict=True)
            )
            for shape, number in here.items():
                first.setdefault(shape, number)
            scanned += end - start
        return cls(counts, first, scanned)


def _severity(shape: bytes) -> int:
    """0 (none) to 3 (fatal): the line's level if it names one, else its words; a line
    of a lower level (``INFO ... FAILED``, ``INFO parity error corrected``) whose words
    speak of trouble ranks as a warning."""
    level = None
    found = _LEVEL.search(shape)
    if found:
        name = next(g for g in found.groups() if g is not None).decode("ascii").lower()
        level = _LEVEL_RANK.get(name, 0)
    elif logcat := _LOGCAT.match(shape):
        level = _LOGCAT_RANK.get(logcat.group(1), 0)
    words = next((rank for rank, pattern in _WORDS if pattern.search(shape)), 0)
    return words if level is None else level or min(words, 1)


def _spread(numbers: list[int]) -> list[int]:
    """``numbers`` (sorted) reordered so that any first few are spread over all of them."""
    bits = max(1, (len(numbers) - 1).bit_length())
    flipped = [int(f"{i:0{bits}b}"[::-1], 2) for i in range(len(numbers))]
    return [n for _, n in sorted(zip(flipped, numbers, strict=True))]


def _grouped(items: list[tuple[tuple[int, ...], int]]) -> list[int]:
    """Line numbers by their key (ascending), each key's lines spread."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for key, number in sorted(items):
        groups.setdefault(key, []).append(number)
    return [n for key in sorted(groups) for n in _spread(groups[key])]


def _priority(lines: int, shapes: _Shapes) -> list[int]:
    """Line numbers, the best first: the first and the last line, the rare and error
    lines (two rare ones, the most severe and rarest first, to one of each frequent error
    shape, the most severe and frequent first) with the next two lines of each end after
    the first three of them, then one line of every other shape (the rarer first), then
    more of both ends."""
    low, high = _EDGE_LINES, lines - _EDGE_LINES
    rare: list[tuple[tuple[int, ...], int]] = []
    severe: list[tuple[tuple[int, ...], int]] = []
    other: list[tuple[tuple[int, ...], int]] = []
    for shape, count in shapes.counts.items():
        number = shapes.first[shape]
        if not low < number <= high or not shape.strip():
            continue
        rank = _severity(shape)
        if count <= RARE_COUNT:
            rare.append(((-rank, count), number))
        elif rank:
            severe.append(((-rank, -count), number))
        else:
            other.append(((count,), number))
    first, second = _grouped(rare), _grouped(severe)
    mixed: list[int] = []
    while first or second:
        mixed += first[:2] + second[:1]
        first, second = first[2:], second[1:]
    ends = [n for i in range(min(lines, _MORE_EDGE_LINES)) for n in (i + 1, lines - i)]
    ends = list(dict.fromkeys(ends[: 2 * _MORE_EDGE_LINES]))
    edges = 2 * _EDGE_LINES
    return ends[:2] + mixed[:3] + ends[2:edges] + mixed[3:] + _grouped(other) + ends[edges:]


def _gap(left: int) -> str:
    return f"[... {left:,} line{'' if left == 1 else 's'} not shown ...]"


@dataclass(frozen=True)
class _Shown:
    """A line picked for the excerpt: its text (cut if need be), shape and shape's count."""

    text: str
    shape: bytes
    count: int

    def render(self, number: int, first_of_shape: bool) -> str:
        if first_of_shape and self.count > 1:
            return f"{number} (+{self.count - 1:,} similar): {self.text}"
        return f"{number}: {self.text}"


class _LinePicker:
    """The lines of one text, each at most ``cap`` tokens as shown."""

    def __init__(self, view: TextView, tokenizer: TokenCodec, cap: int, shapes: _Shapes) -> None:
        self.view = view
        self.tokenizer = tokenizer
        self.cap = cap
        self.shapes = shapes

    def line(self, number: int) -> _Shown:
        data = self.view.data
        start = self.view.line_start(number)
        end = data.find(b"\n", start)
        size = (len(data) if end == -1 else end) - start
        raw = data[start : start + min(size, max(4096, self.cap * 16))]
        shape = _mask_block(np.frombuffer(raw, dtype=np.uint8)) if raw else b""
        count = self.shapes.counts.get(shape, 1) if len(raw) == size else 1
        text = raw.decode("utf-8", errors="ignore").rstrip("\r")
        prefix = _Shown("", shape, count).render(number, True)  # the longest it gets
        if len(raw) == size and self.tokenizer.count(prefix + text) <= self.cap:
            return _Shown(text, shape, count)
        marker = f"… [line cut: {size:,} bytes in all]"
        tokens = self.tokenizer.encode(text)
        keep = self.cap - self.tokenizer.count(prefix + marker)
        while True:  # the cut text may count differently where it meets the marker
            cut = self.tokenizer.decode(tokens[: max(0, keep)]).rstrip("\ufffd") + marker
            over = self.tokenizer.count(prefix + cut) - self.cap
            if over <= 0 or keep <= 0:
                return _Shown(cut, shape, count)
            keep -= over


def _whole(view: TextView, room: int, tokenizer: TokenCodec) -> str | None:
    """Every line, numbered, when they fit in ``room`` tokens."""
    if len(view.data) > room * 8:
        return None
    lines = view.data.decode("utf-8").split("\n")[: view.lines]
    text = "\n".join(f"{i}: {line.rstrip(chr(13))}" for i, line in enumerate(lines, 1))
    return text if tokenizer.count(text) <= room else None


def lines_excerpt(view: TextView, namespace: str, max_tokens: int, tokenizer: TokenCodec) -> str:
    """The text excerpt of ``view`` (see the module docs) in at most ``max_tokens`` tokens:
    a header, then shown lines as ``number: line`` in order, gaps as
    ``[... 1,204 lines not shown ...]``."""
    header = _header(namespace, _WHAT_LINES)
    room = max_tokens - tokenizer.count(header) - 1
    lines = view.lines
    if room < 16 or lines == 0:
        return _fit(header if lines else f"{header}\n(no lines)", max_tokens, tokenizer)
    whole = _whole(view, room, tokenizer)
    if whole is not None:
        return f"{header}\n{whole}"
    # A text of a few lines is its ends only: no shape to rank (a huge line not to scan).
    shapes = (
        _Shapes.scan(view) if lines > 2 * _EDGE_LINES else _Shapes(Counter(), {}, len(view.data))
    )
    if shapes.scanned < len(view.data):
        note = f"(shapes counted on {shapes.scanned:,} of its {len(view.data):,} bytes, spread)"
        header += "\n" + note
        room -= tokenizer.count(note) + 1
    gap = tokenizer.count(_gap(10_000_000)) + 1
    # a line takes at most half the room, unless it is the only one
    picker = _LinePicker(view, tokenizer, room - gap - 1 if lines == 1 else room // 2, shapes)
    chosen: dict[int, _Shown] = {}  # in the order picked
    used = misses = 0
    for number in _priority(lines, shapes)[:_MAX_CANDIDATES]:
        if room - used < gap + 8 or misses >= _MAX_MISSES:
            break
        if number in chosen:
            continue
        shown = picker.line(number)
        cost = tokenizer.count(shown.render(number, True)) + 1 + gap
        misses = misses + 1 if used + cost > room else 0
        if not misses:
            chosen[number] = shown
            used += cost
    while True:
        text = _render(header, chosen, lines)
        if tokenizer.count(text) <= max_tokens or len(chosen) <= 1:
            return _fit(text, max_tokens, tokenizer)
        chosen.pop(next(reversed(chosen)))  # the last picked goes first


def _render(header: str, chosen: dict[int, _Shown], lines: int) -> str:
    """The shown lines in order, gaps between; the first of a shape counts the others."""
    out = [header]
    last = 0
    named: set[bytes] = set()
    for number in sorted(chosen):
        if number > last + 1:
            out.append(_gap(number - last - 1))
        shown = chosen[number]
        out.append(shown.render(number, shown.shape not in named))
        named.add(shown.shape)
        last = number
    if last < lines:
        out.append(_gap(lines - last))
    return "\n".join(out)


# -- data: fields, row count, first rows -------------------------------------------------

_MISSING = object()
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Table:
    """The rows of a data output: where they are, their fields, how to read a field."""

    path: str  # JMESPath of the rows ("" for the document itself)
    rows: Sequence[Any]
    fields: list[tuple[Any, ...]]  # a field is the keys (or indexes) that lead to it
    more_fields: int
    header_row: bool  # rows[0] names the fields (JSON arrays with a header row)

    @property
    def body(self) -> Sequence[Any]:
        return self.rows[1:] if self.header_row else self.rows

    def name(self, field: tuple[Any, ...]) -> str:
        if self.header_row:
            return str(self.rows[0][field[0]])
        if not field:
            return "value"
        return ".".join(f"[{s}]" if isinstance(s, int) else str(s) for s in field).replace(
            ".[", "["
        )


def _value(row: Any, field: tuple[Any, ...]) -> Any:
    if len(field) == 1 and isinstance(row, dict):  # the common case, fast
        return row.get(field[0], _MISSING)
    for step in field:
        if isinstance(row, list) and isinstance(step, int) and step < len(row):
            row = row[step]
            continue
        if not (isinstance(row, dict) and step in row):
            return _MISSING
        row = row[step]
    return row


def _sample(rows: Sequence[Any]) -> Sequence[Any]:
    if len(rows) <= PROFILE_ROWS:
        return rows
    return [rows[i * len(rows) // PROFILE_ROWS] for i in range(PROFILE_ROWS)]


def _fields(rows: Sequence[Any], names: list[str] | None) -> tuple[list[tuple[Any, ...]], int]:
    """The fields of ``rows`` (a nested object's keys one level down), and how many more."""
    if names is not None:
        return [(i,) for i in range(min(len(names), _MAX_FIELDS))], max(0, len(names) - _MAX_FIELDS)
    sample = _sample(rows)
    keys: dict[Any, None] = {}
    for row in sample:
        if isinstance(row, (dict, list)):
            keys.update(dict.fromkeys(row if isinstance(row, dict) else range(len(row))))
    if not keys:
        return [()], 0  # scalars: the values are the field
    fields: list[tuple[Any, ...]] = []
    for key in list(keys)[:_MAX_FIELDS]:
        inner = [v for v in (_value(r, (key,)) for r in sample) if v is not _MISSING]
        inner = [v for v in inner if v is not None]
        if inner and isinstance(inner[0], dict) and all(isinstance(v, dict) for v in inner):
            subkeys = dict.fromkeys(k for v in inner for k in v)
            fields += [(key, sub) for sub in subkeys] or [(key,)]
        else:
            fields.append((key,))
    more = len(fields) - _MAX_FIELDS + max(0, len(keys) - _MAX_FIELDS)
    return fields[:_MAX_FIELDS], max(0, more)


def _table(kind: str, value: Any) -> _Table | None:
    path, rows = "", value
    if kind in ("json", "yaml") and isinstance(value, dict):
        found = json_view.sample(value)
        if found is None or found[0] == "@":
            return None
        path = found[0].rsplit("[", 1)[0]
        rows = json_view.query(value, path) if path else value
    if not isinstance(rows, list) or not rows:
        return None
    names = json_view.header_row("ndjson" if kind == "ndjson" else "json", rows)
    fields, more = _fields(rows[1:] if names else rows, names)
    return _Table(path, rows, fields, more, names is not None)


def _quote(value: str) -> str:
    return json.dumps(cut_line(value, _VALUE_CHARS), ensure_ascii=False)


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class _Profile:
    """One field's values, counted once: numbers, strings, other kinds, absent ones."""

    numbers: list[float]
    strings: Counter[str]
    others: Counter[str]
    absent: Counter[str]

    @classmethod
    def of(cls, values: list[Any]) -> _Profile:
        profile = cls([], Counter(), Counter(), Counter())
        for v in values:
            if v is _MISSING or v is None or v == "":
                profile.absent[
                    "missing" if v is _MISSING else "null" if v is None else "empty"
                ] += 1
            elif isinstance(v, bool):
                profile.others["true" if v else "false"] += 1
            elif isinstance(v, (int, float)):
                profile.numbers.append(v)
            elif isinstance(v, str):
                profile.strings[v] += 1
            else:
                profile.others["object" if isinstance(v, dict) else "array"] += 1
        return profile

    def text(self, top: int) -> str:
        """``int 1 to 2,000, all distinct``, ``str, 2 distinct: "error" (1,138), "notice"
        (862)``, ``true (20), false (280)``, then ``null in 5, missing in 3``."""
        parts = []
        numbers = self.numbers
        if numbers:
            kind = "int" if all(isinstance(n, int) for n in numbers) else "number"
            unique = len(numbers) > 1 and len(set(numbers)) == len(numbers)
            span = f"{_number(min(numbers))} to {_number(max(numbers))}"
            parts.append(f"{kind} {span}{', all distinct' if unique else ''}")
        if self.strings:
            total = sum(self.strings.values())
            if len(self.strings) == total and total > 1:
                example = _quote(next(iter(self.strings)))
                parts.append(f"str, all {total:,} distinct, e.g. {example}")
            else:
                common = self.strings.most_common(top)
                shown = ": " + ", ".join(f"{_quote(s)} ({n:,})" for s, n in common) if top else ""
                parts.append(f"str, {len(self.strings):,} distinct{shown}")
        if self.others:
            parts.append(", ".join(f"{k} ({n:,})" for k, n in self.others.most_common()))
        if self.absent:
            parts.append(", ".join(f"{k} in {n:,}" for k, n in self.absent.most_common()))
        return "; ".join(parts) or "no values"


class _DataExcerpt:
    """The structure of a parsed output, rendered at a given level of detail."""

    def __init__(
        self, view: TextView, kind: str, value: Any, stats: dict[str, Any], table: _Table | None
    ) -> None:
        self.view = view
        self.kind = kind
        self.stats = stats
        self.table = table
        self.outline = (
            json_view.outline(value, depth=1 if table else 3).split("\n")
            if isinstance(value, dict)
            else []
        )
        sample = _sample(table.body) if table else []
        self.sampled = len(sample)
        self.profiles = {
            f: _Profile.of([_value(r, f) for r in sample]) for f in (table.fields if table else [])
        }

    def example(self) -> str:
        """A JMESPath count ``json_memory`` can run on the rows (by a field with few values)."""
        assert self.table is not None
        path, start = self.table.path, 1 if self.table.header_row else 0
        for field, profile in self.profiles.items():
            if start or not 2 <= len(profile.strings) <= 20:
                continue
            if not all(isinstance(s, str) for s in field):
                continue
            value = profile.strings.most_common(1)[0][0]
            if "'" in value or "\\" in value or len(value) > _VALUE_CHARS:
                continue
            name = ".".join(s if _IDENTIFIER.fullmatch(s) else json.dumps(s) for s in field)
            return f"length({path}[?{name}=='{value}'])"
        return f"{path}[{start}]"

    def lines(self, top: int, fields: int, rows: int, width: int, outline: int) -> list[str]:
        out: list[str] = []
        notices = self.stats.get("notices") or []
        if notices:
            out.append("the output says (as JSON strings): " + ", ".join(map(_quote, notices)))
        text_lines = int(self.stats.get("body_line") or 1) - 1
        if text_lines > 0:
            out.append(f"lines 1-{text_lines} are text, the JSON starts at line {text_lines + 1}:")
            head = self.view.head(min(text_lines, _TEXT_LINES))
            out += [f"{n}: {cut_line(t, width or 40)}" for n, t in head]
        if outline and self.outline:
            shown, left = json_view.breadth_first("\n".join(self.outline), outline)
            out.append("outline:")
            out += [f"  {line}" for line in shown]
            if left:
                out.append(f"  … {left:,} more lines (json_memory without an expression)")
        if self.table is not None:
            out += self._rows(top, fields, rows, width)
        return out

    def _rows(self, top: int, fields: int, rows: int, width: int) -> list[str]:
        table = self.table
        assert table is not None
        body = table.body
        unit = "row" if self.kind in ("csv", "table") else "item"
        where = f'"{table.path}": ' if table.path else ""
        named = (
            " (line 1 is the header)" if self.kind == "csv" and self.stats.get("columns") else ""
        )
        count = _plural(len(table.fields) + table.more_fields, "field")
        out = [
            f"{where}{_plural(len(body), unit)}, {count}{named}; json_memory queries them, "
            f"e.g. {json.dumps(self.example())}"
        ]
        if self.sampled < len(body):
            out.append(
                f"(fields profiled on {self.sampled:,} of the {len(body):,} {unit}s, evenly "
                "spread: the counts, least and greatest are theirs)"
            )
        for field in table.fields[:fields]:
            out.append(f"  {table.name(field)}: {self.profiles[field].text(top)}")
        left = len(table.fields) - min(fields, len(table.fields)) + table.more_fields
        if left:
            out.append(f"  … {_plural(left, 'more field')} (json_memory without an expression)")
        if rows and self.kind == "csv":
            first = 2 if named else 1
            out.append(f"first {unit}s (line {first} on):")
            head = self.view.head(first + rows - 1)[first - 1 :]
            out += [f"  {n}: {cut_line(t, width)}" for n, t in head]
        elif rows:
            start = 1 if table.header_row else 0
            out.append(f"first {unit}s ({table.path}[{start}] on, compact JSON):")
            for row in table.rows[start : start + rows]:
                text = json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=str)
                out.append(f"  {cut_line(text, width)}")
        return out


#: (top values, fields, first rows, characters of a row, outline lines), the richest first.
_DATA_ATTEMPTS = [
    (3, _MAX_FIELDS, 3, 600, 40),
    (3, _MAX_FIELDS, 2, 400, 12),
    (2, _MAX_FIELDS, 1, 300, 8),
    (1, _MAX_FIELDS, 1, 200, 6),
    (1, 12, 1, 160, 4),
    (0, 12, 1, 120, 3),
    (0, 6, 1, 80, 2),
    (0, 3, 0, 60, 1),
    (0, 0, 0, 0, 0),
]


def structure_excerpt(
    view: TextView,
    kind: str,
    value: Any,
    stats: dict[str, Any],
    namespace: str,
    *,
    max_tokens: int,
    tokenizer: TokenCodec,
) -> str | None:
    """The data excerpt of a parsed output (``kind``, ``value`` as ``json_memory`` reads
    it; ``stats`` its card's :class:`~offprompt.task_memory.card.OutputStats` dump) in
    at most ``max_tokens`` tokens: a header, the row count with a ``json_memory``
    expression, a profile per field, the first rows; for an object without arrays its
    outline. None for a scalar document or an empty one."""
    table = _table(kind, value)
    if table is None and not (isinstance(value, dict) and value):
        return None
    first_line = view.data[:4096].split(b"\n", 1)[0]
    label = "TSV data" if kind == "csv" and b"\t" in first_line else _DATA[kind]
    what = f"the structure of its {label}" + (", with the first rows" if table else "")
    header = _header(namespace, what)
    excerpt = _DataExcerpt(view, kind, value, stats, table)
    text = header
    for attempt in _DATA_ATTEMPTS:
        text = "\n".join([header, *excerpt.lines(*attempt)])
        if tokenizer.count(text) <= max_tokens:
            return text
    return _fit(text, max_tokens, tokenizer)
