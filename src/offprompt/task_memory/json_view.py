"""JSON over a stored output: parse (document or JSON lines), outline, JMESPath query.

A namespace is JSON when its text parses as one JSON document (``json``), or when every
non-empty line parses on its own and there are at least two (``ndjson``: queried as the
list of the line values). ``jmespath`` evaluates expressions: it has no loops or
recursion, so an expression's cost is bounded by the document's size.
"""

from __future__ import annotations

import json
import re
from typing import Any

from offprompt.errors import JsonQueryError, NotJsonError

__all__ = [
    "JSON_KINDS",
    "breadth_first",
    "header_row",
    "outline",
    "parse_json",
    "query",
    "sample",
    "shape",
]

_KEYS_PER_OBJECT = 25
_OUTLINE_LINES = 60
#: Items of one array (and values of one id-keyed object) the outline looks at.
_SAMPLE_ITEMS = 200
#: Lines built before the breadth-first cut (bounds the work on huge documents).
_MAX_BUILT_LINES = 4000
#: An object with at least this many keys, all of them ids, is outlined as one line.
_MIN_ID_KEYS = 3
#: Characters of the compact JSON sample kept for the card.
SAMPLE_CHARS = 600
_ID_KEY = re.compile(
    r"-?\d+"  # numbers
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"  # UUIDs
    r"|(?=[a-fA-F]*\d)[0-9a-fA-F]{8,}"  # hashes (with a digit, so not a word)
    r"|\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"  # dates
)
_MORE = re.compile(r"… ([\d,]+) more lines \(.*\)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_json(text: str) -> tuple[str, Any] | None:
    """``("json", value)``, ``("ndjson", [values])`` or ``None`` when ``text`` is neither."""
    stripped = text.strip()
    if not stripped or stripped[0] not in '{["-0123456789tfn':
        return None
    try:
        return "json", json.loads(stripped)
    except ValueError:
        pass
    lines = [line for line in stripped.split("\n") if line.strip()]
    if len(lines) < 2:
        return None
    values = []
    for line in lines:
        try:
            values.append(json.loads(line))
        except ValueError:
            return None
    return "ndjson", values


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "array" if isinstance(value, list) else "object"


def _keys(n: int) -> str:
    return "1 key" if n == 1 else f"{n:,} keys"


def _id_keyed(keys: list[str]) -> bool:
    return len(keys) >= _MIN_ID_KEYS and all(_ID_KEY.fullmatch(k) for k in keys)


# A child of an outline node: (label, the values found under it), or (marker line, None).
_Child = tuple[str, list[Any] | None]


def _object_children(objects: list[dict[str, Any]]) -> list[_Child]:
    """The union of the keys of ``objects``, each with how often it occurs when it varies."""
    found: dict[str, list[Any]] = {}
    for obj in objects:
        for key, value in obj.items():
            if key in found or len(found) < _KEYS_PER_OBJECT:
                found.setdefault(key, []).append(value)
    total = (
        len(set().union(*(obj.keys() for obj in objects)))
        if len(objects) > 1
        else (len(objects[0]) if objects else 0)
    )
    children: list[_Child] = []
    for key, values in found.items():
        label = json.dumps(key, ensure_ascii=False)
        if len(values) < len(objects):
            label += f" (in {len(values):,} of {len(objects):,})"
        children.append((label, values))
    if total > len(found):
        children.append((f"… {total - len(found):,} more keys", None))
    return children


def _shape(values: list[Any]) -> tuple[str, list[_Child]]:
    """The description of the (sampled) ``values`` found at one path, and its children."""
    kinds = list(dict.fromkeys(_kind(v) for v in values))
    objects = [v for v in values if isinstance(v, dict)]
    arrays = [v for v in values if isinstance(v, list)]
    if kinds == ["object"]:
        keys = (
            list(objects[0])
            if len(objects) == 1
            else list(dict.fromkeys(k for obj in objects for k in obj))
        )
        if _id_keyed(keys):
            # {"205705993": ..., "205705994": ...}: the keys are data, the values the shape.
            inner = [v for obj in objects for v in list(obj.values())[:_SAMPLE_ITEMS]]
            desc, children = _shape(inner[:_SAMPLE_ITEMS])
            like = json.dumps(keys[0], ensure_ascii=False)
            return f"object ({_keys(len(keys))} like {like}): {desc}", children
        return f"object ({_keys(len(keys))})", _object_children(objects)
    if kinds == ["array"]:
        items = [item for array in arrays[:_SAMPLE_ITEMS] for item in array[:_SAMPLE_ITEMS]]
        items = items[:_SAMPLE_ITEMS]
        size = f"[{len(arrays[0]):,}]" if len(arrays) == 1 else ""
        if not items:
            return f"array{size or '[0]'}", []
        desc, children = _shape(items)
        return f"array{size} of {desc}", children
    if len(kinds) == 1:
        return kinds[0], []
    children = _object_children(objects) if objects else []
    if arrays:
        items = [item for array in arrays[:_SAMPLE_ITEMS] for item in array[:_SAMPLE_ITEMS]]
        if items:
            children.append(("[*]", items[:_SAMPLE_ITEMS]))
    return " | ".join(sorted(kinds)), children


def _build(
    label: str, values: list[Any], depth: int, level: int, out: list[tuple[int, str]]
) -> None:
    if len(out) >= _MAX_BUILT_LINES:
        return
    desc, children = _shape(values)
    out.append((level, f"{label}: {desc}" if label else desc))
    if depth <= 0:
        return
    for child, found in children:
        if found is None:
            out.append((level + 1, child))
        else:
            _build(child, found, depth - 1, level + 1, out)


def breadth_first(outline_text: str, max_lines: int) -> tuple[list[str], int]:
    """At most ``max_lines`` lines of an outline, shallow lines first, kept in tree order.

    A line's depth is its indentation (two spaces a level), so every kept line's parent
    is kept too. Returns the lines and how many were left out.
    """
    lines = outline_text.split("\n")
    left = 0
    found = _MORE.fullmatch(lines[-1])
    if found:  # the outline was cut already: count what it left out
        lines, left = lines[:-1], int(found.group(1).replace(",", ""))
    if len(lines) <= max_lines:
        return lines, left
    depth = [len(line) - len(line.lstrip(" ")) for line in lines]
    keep = sorted(sorted(range(len(lines)), key=lambda i: (depth[i], i))[: max(0, max_lines)])
    return [lines[i] for i in keep], left + len(lines) - len(keep)


def outline(value: Any, *, depth: int = 3, kind: str = "json") -> str:
    """The shape of ``value``, breadth first: its type, every key of the top level (up
    to 25, then a count) before any deeper level, ``depth`` levels deep.

    An object whose keys are all ids (numbers, UUIDs, hashes, dates) is one line
    (``object (17 keys like "205705993"): str``); the items of an array are outlined
    together, as the union of their keys, each with how often it occurs when not in
    every item (from a sample of the first 200 items). At most 60 lines: when cut, the
    deepest lines go first.
    """
    out: list[tuple[int, str]] = []
    if kind == "ndjson":
        values = list(value[:_SAMPLE_ITEMS])
        desc, children = _shape(values) if values else ("(none)", [])
        out.append((0, f"JSON lines: {len(value):,} values of {desc}"))
        for child, found in children if depth > 0 else []:
            if found is None:
                out.append((1, child))
            else:
                _build(child, found, depth - 1, 1, out)
    else:
        _build("", [value], depth, 0, out)
    text = "\n".join("  " * level + line for level, line in out)
    lines, left = breadth_first(text, _OUTLINE_LINES)
    if left:
        lines.append(f"… {left:,} more lines (json_memory with an expression outlines a part)")
    return "\n".join(lines)


def _path(parent: str, key: str) -> str:
    part = key if _IDENTIFIER.fullmatch(key) else json.dumps(key, ensure_ascii=False)
    return f"{parent}.{part}" if parent else part


def sample(value: Any) -> tuple[str, str] | None:
    """A JMESPath expression and the compact JSON of what it selects, for the card: the
    first item of the largest array of objects (or arrays), the shallowest first, else
    the first 8 items of the largest array of scalars, else the whole document.
    ``None`` for a scalar document. The JSON is cut to :data:`SAMPLE_CHARS` characters.
    """
    if not isinstance(value, (dict, list)):
        return None
    # Rank: arrays of containers first, then the shallowest, then the longest.
    best: tuple[tuple[int, int, int], str, list[Any]] | None = None
    queue: list[tuple[str, int, Any]] = [("", 0, value)]
    seen = 0
    while queue and seen < 10_000:
        path, depth, node = queue.pop(0)
        seen += 1
        if isinstance(node, dict):
            queue.extend((_path(path, str(k)), depth + 1, v) for k, v in node.items())
        elif isinstance(node, list) and node:
            rank = (int(isinstance(node[0], (dict, list))), -depth, len(node))
            if best is None or rank > best[0]:
                best = (rank, path, node)
            queue.append((f"{path}[0]", depth + 1, node[0]))
    if best is None:
        expression, chosen = "@", value
    elif best[0][0]:
        expression, chosen = f"{best[1]}[0]", best[2][0]
    else:
        expression, chosen = f"{best[1]}[:8]", best[2][:8]
    text = json.dumps(chosen, ensure_ascii=False, separators=(",", ":"))
    if len(text) > SAMPLE_CHARS:
        text = text[:SAMPLE_CHARS] + "…"
    return expression, text


def header_row(kind: str, value: Any) -> list[str] | None:
    """The column names of JSON lines (or a JSON array) of arrays whose first array is a
    header row (distinct strings, then arrays of the same length), else ``None``."""
    rows = value if kind == "ndjson" or isinstance(value, list) else None
    if not rows or len(rows) < 2 or not isinstance(rows[0], list) or len(rows[0]) < 2:
        return None
    header = rows[0]
    if not all(isinstance(name, str) for name in header) or len(set(header)) < len(header):
        return None
    body = rows[1:_SAMPLE_ITEMS]
    if not all(isinstance(row, list) and len(row) == len(header) for row in body):
        return None
    return list(header)


def shape(kind: str, value: Any) -> dict[str, Any]:
    """The card's JSON fields of a parsed output: ``json_outline``, ``sample`` (see
    :func:`sample`; not for JSON lines, whose first lines show their values) and
    ``columns`` / ``column_count`` (see :func:`header_row`)."""
    columns = header_row(kind, value)
    return {
        "json_outline": outline(value, kind=kind),
        "sample": None if kind == "ndjson" else sample(value),
        "columns": columns or [],
        "column_count": len(columns or []),
    }


def query(value: Any, expression: str) -> Any:
    """``expression`` (JMESPath) evaluated on ``value``.

    Raises:
        JsonQueryError: The expression is empty, does not parse, or fails on the value.
    """
    import jmespath
    from jmespath import exceptions

    if not isinstance(expression, str) or not expression.strip():
        raise JsonQueryError("JMESPath expression must be a non-empty string")
    try:
        compiled = jmespath.compile(expression)
    except exceptions.JMESPathError as exc:
        first = str(exc).strip().split("\n")[0]
        raise JsonQueryError(
            f"invalid JMESPath expression {expression[:80]!r}: {first}", expression=expression
        ) from None
    try:
        return compiled.search(value)
    except exceptions.JMESPathError as exc:
        first = str(exc).strip().split("\n")[0]
        raise JsonQueryError(
            f"JMESPath expression {expression[:80]!r} failed: {first}", expression=expression
        ) from None


#: The kinds of output whose data ``json_memory`` queries: JSON, JSON lines, and the
#: structure of YAML, Markdown tables and CSV (``offprompt.task_memory.structured``).
JSON_KINDS = ("json", "ndjson", "yaml", "table", "csv")


def require_json(kind: str, namespace: str) -> None:
    """Raise :class:`NotJsonError` unless ``kind`` is one of :data:`JSON_KINDS`."""
    if kind not in JSON_KINDS:
        raise NotJsonError(
            f"namespace {namespace!r} holds {kind}, not JSON: use grep_memory or read_memory",
            namespace=namespace,
        )
