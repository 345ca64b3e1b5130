"""Structure in outputs that are not one JSON document: a JSON body after text lines,
YAML, Markdown tables and CSV/TSV, as JSON data ``json_memory`` can query.

Real tools print a header and then their data (``Query executed.\\nshowing 1000
rows\\n[{...}]``), answer in YAML, or draw a Markdown table. :func:`parse_structured`
turns each into ``(kind, value)``, with ``value`` in JSON's data model:

* ``json`` (also JSON lines, ``ndjson``): the text parses as JSON; or its lines from the
  first one opening with ``{`` or ``[`` (within :data:`MAX_PREFIX_LINES`) do, after
  text lines that stay in the stored output for grep and read
  (:func:`structure_of_text` also says the line where the body starts);
* ``yaml``: a YAML mapping or sequence (``yaml.safe_load``; dates become ISO strings,
  other non-JSON values strings); text only qualifies when every line looks like YAML
  (``key: value`` with a key without spaces, ``- item``, indented, comments), and no
  top-level key repeats, so prose and logs (``line 7: ...``, ``INFO: ...``) never do;
* ``table``: a Markdown table (a header row, a ``|---|`` row, then rows), as a list of
  objects keyed by the header;
* ``csv``: rows of a CSV/TSV (the kind the card found) as objects keyed by a named
  header, else as arrays.

Cells of tables and CSV rows that are plain decimal numbers (``42``, ``-1.5``; not
``007``) become numbers, so a query can compare them; every other cell stays a string.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import io
import json
import re
from typing import Any

from offprompt.task_memory.card import csv_shape
from offprompt.task_memory.json_view import parse_json

__all__ = ["MAX_PREFIX_LINES", "parse_structured", "structure_of_text"]

#: Text lines a JSON body may follow.
MAX_PREFIX_LINES = 50
# An unindented YAML line: a key without spaces (``snake_case``, ``camelCase``, dotted,
# quoted), an item, a comment or a document marker; indented lines are the values'.
_YAML_KEY = r"(?:[\w$@][\w.\-/$@]*|\"[^\"]*\"|'[^']*')"
_YAML_LINE = re.compile(rf"(?:\s.*|-(?:\s.*)?|#.*|---.*|\.\.\.|{_YAML_KEY}:(?:\s.*)?)")
_TOP_KEY = re.compile(rf"{_YAML_KEY}:(?:\s|$)")
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TABLE_RULE = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


def parse_structured(text: str, kind: str = "") -> tuple[str, Any] | None:
    """``(kind, value)`` of the structure ``text`` holds (see the module docs), or None.

    Args:
        text: The stored output.
        kind: The card's kind of it; ``csv`` parses it as CSV/TSV rows.
    """
    found = parse_json(text)
    if found is not None:
        return found
    if kind == "csv":
        return _csv_rows(text)
    structure = structure_of_text(text)
    return None if structure is None else (structure[0], structure[1])


def structure_of_text(text: str) -> tuple[str, Any, int] | None:
    """``(kind, value, body line)`` of a text output that is not one JSON document, or
    None: the body line is where a JSON body after text lines starts (1-based), else 0.
    What the card needs, found in one parse."""
    found = _body_start(text)
    if found is not None:
        return "json", found[1], found[0]
    for parse in (_markdown_table, _yaml):
        parsed = parse(text)
        if parsed is not None:
            return parsed[0], parsed[1], 0
    return None


def _body_start(text: str) -> tuple[int, Any] | None:
    """The first line after the first that opens a JSON object or array running to
    the end of ``text``, and that value (decoded in place: the text is not copied)."""
    offset = 0
    for number, line in enumerate(text.split("\n", MAX_PREFIX_LINES)[:MAX_PREFIX_LINES], 1):
        start = offset + len(line) - len(line.lstrip())
        if number > 1 and text[start : start + 1] in ("{", "["):
            try:
                value, end = _DECODER.raw_decode(text, start)
            except ValueError:
                pass
            else:
                if isinstance(value, (dict, list)) and _SPACE.fullmatch(text, end):
                    return number, value
        offset += len(line) + 1
    return None


def _markdown_table(text: str) -> tuple[str, Any] | None:
    lines = [line.strip() for line in text.strip().split("\n")]
    for start in range(min(len(lines) - 1, MAX_PREFIX_LINES)):
        if not (lines[start].startswith("|") and _TABLE_RULE.fullmatch(lines[start + 1])):
            continue
        header = _cells(lines[start])
        rows = []
        for line in lines[start + 2 :]:
            if not line.startswith("|"):
                break
            cells = _cells(line)
            if len(cells) != len(header):
                return None
            rows.append(dict(zip(header, map(_cell, cells), strict=True)))
        if len(header) >= 2 and rows and len(set(header)) == len(header):
            return "table", rows
        return None
    return None


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def _yaml(text: str) -> tuple[str, Any] | None:
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2 or not all(_YAML_LINE.fullmatch(line) for line in lines):
        return None
    import yaml  # type: ignore[import-untyped]

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        value = yaml.load(text, Loader=loader)  # a safe loader: plain data only
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    if not isinstance(value, (dict, list)) or not value:
        return None
    if isinstance(value, dict):
        # YAML keeps the last of repeated keys: "INFO: a\nERROR: b\nINFO: c" is a log.
        top = sum(1 for line in lines if _TOP_KEY.match(line))
        if top != len(value):
            return None
    return "yaml", _as_json(value)


def _as_json(value: Any) -> Any:
    """YAML data in JSON's model: string keys, dates as ISO strings, bytes as base64."""
    if isinstance(value, dict):
        return {_key(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_as_json(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    converted = _as_json(key)
    return converted if isinstance(converted, str) else json.dumps(converted)


def _csv_rows(text: str) -> tuple[str, Any] | None:
    shape = csv_shape(text[:8192])
    if shape is None:
        return None
    first = text.split("\n", 1)[0]
    delimiter = "\t" if "\t" in first and "," not in first else ","
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
    _, names = shape
    if names and len(set(names)) == len(names):
        return "csv", [dict(zip(names, map(_cell, row), strict=False)) for row in rows[1:]]
    return "csv", [[_cell(cell) for cell in row] for row in rows]


def _cell(text: str) -> Any:
    """A table cell as JSON data: a plain decimal number (no leading zero, so ids such
    as ``007`` stay strings) becomes a number, so JMESPath can compare it."""
    if _PLAIN_NUMBER.fullmatch(text):
        number = float(text)
        return (
            int(text)
            if number.is_integer() and "." not in text and "e" not in text.lower()
            else number
        )
    return text
