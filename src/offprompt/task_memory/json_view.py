"""JSON over a stored output: parse (document or JSON lines), outline, JMESPath query.

A namespace is JSON when its text parses as one JSON document (``json``), or when every
non-empty line parses on its own and there are at least two (``ndjson``: queried as the
list of the line values). ``jmespath`` evaluates expressions: it has no loops or
recursion, so an expression's cost is bounded by the document's size.
"""

from __future__ import annotations

import json
from typing import Any

from offprompt.errors import JsonQueryError, NotJsonError

__all__ = ["outline", "parse_json", "query"]

_KEYS_PER_OBJECT = 25
_OUTLINE_LINES = 60
_SAMPLE_ITEMS = 50


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


def _type(value: Any) -> str:
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
    if isinstance(value, list):
        return f"array[{len(value):,}]"
    return f"object ({len(value):,} keys)"


def _merged_keys(items: list[Any]) -> dict[str, list[Any]]:
    keys: dict[str, list[Any]] = {}
    for item in items[:_SAMPLE_ITEMS]:
        if isinstance(item, dict):
            for key, value in item.items():
                keys.setdefault(key, []).append(value)
    return keys


def _describe(values: list[Any]) -> str:
    kinds = sorted({_type(v).split("[")[0].split(" (")[0] for v in values})
    if len(kinds) == 1:
        return _type(values[0]) if len(values) == 1 else kinds[0]
    return " | ".join(kinds)


def _walk(values: list[Any], depth: int, indent: str, out: list[str]) -> None:
    """Outline the (sampled) ``values`` found at one path."""
    if depth <= 0 or len(out) >= _OUTLINE_LINES:
        return
    objects = [v for v in values if isinstance(v, dict)]
    arrays = [v for v in values if isinstance(v, list)]
    if objects:
        keys = _merged_keys(objects)
        for n, (key, found) in enumerate(keys.items()):
            if n >= _KEYS_PER_OBJECT or len(out) >= _OUTLINE_LINES:
                out.append(f"{indent}… {len(keys) - n} more keys")
                return
            out.append(f"{indent}{json.dumps(key, ensure_ascii=False)}: {_describe(found)}")
            _walk(found, depth - 1, indent + "  ", out)
    if arrays:
        items = [item for array in arrays[:_SAMPLE_ITEMS] for item in array[:_SAMPLE_ITEMS]]
        if items:
            out.append(f"{indent}[*]: {_describe(items)}")
            _walk(items, depth - 1, indent + "  ", out)


def outline(value: Any, *, depth: int = 3, kind: str = "json") -> str:
    """The shape of ``value``: its type, then keys with value types and array lengths,
    ``depth`` levels deep (arrays are outlined from a sample of their items)."""
    head = f"JSON lines: {len(value):,} values" if kind == "ndjson" else _type(value)
    out = [head]
    if kind == "ndjson":
        out.append(f"[*]: {_describe(value[:_SAMPLE_ITEMS])}" if value else "[*]: (none)")
        _walk(value[:_SAMPLE_ITEMS], depth, "  ", out)
    else:
        _walk([value], depth, "  ", out)
    return "\n".join(out[: _OUTLINE_LINES + 1])


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


def require_json(kind: str, namespace: str) -> None:
    """Raise :class:`NotJsonError` unless ``kind`` is ``json`` or ``ndjson``."""
    if kind not in ("json", "ndjson"):
        raise NotJsonError(
            f"namespace {namespace!r} holds {kind}, not JSON: use grep_memory or read_memory",
            namespace=namespace,
        )
