"""Break-even of storing a tool output off-prompt: card plus one read against the raw output.

What the model pays for one tool output:

* passed through: the output's tokens (``raw``);
* stored: the reference it receives instead (sentence and card, exactly
  :meth:`OffloadPolicy.offload`'s text, what LangChain's ``offprompt_tool``, the
  middleware and the MCP proxy send), plus one memory-tool answer to get a fact back.

"One read" is taken through the real memory tools (:func:`memory_tool_specs`), as the
text the model gets: ``grep_memory`` for a line's key (the token of that line found in
the fewest lines, the way a model greps for an id; the mean over 3 lines spread over the
output) and ``read_memory`` page 1. The *typical read* is the mean of the two: a model
after a fact greps, a model after an overview (a table list, the first rows) reads.

Outputs are real: slices (from the first line) of the Loghub logs and their structured
CSVs (``/work/shared/data/loghub-dev``), JSON turn lists of the LoCoMo conversations
(``/work/shared/data/locomo-dev``), ``find``-style directory listings of packages
installed in this venv, and aligned tables (psql-style rows of the structured CSVs, and
markdown tables of each log's event templates with their counts), cut at about 300 to
5,000 tokens (o200k). For each size the table gives the medians over the outputs and
the share of outputs whose stored cost is at most 0.75x the raw output ("clearly
smaller"). ``--quick`` measures three sizes and prints only.
A full run writes ``benchmarks/RESULTS_break_even.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import DEFAULT_MIN_TOKENS, OffloadPolicy
from offprompt.task_memory.tools import memory_tool_specs

RESULTS = Path(__file__).with_name("RESULTS_break_even.md")
DATA = Path(os.environ.get("OFFPROMPT_DATA", "/work/shared/data"))
LOGHUB = DATA / "loghub-dev"
LOCOMO = DATA / "locomo-dev"
SIZES = (300, 500, 700, 1000, 1200, 1500, 2000, 3000, 5000)
QUICK_SIZES = (500, 1000, 2000)
#: "Clearly smaller": the stored cost is at most this share of the raw output.
CLEARLY = 0.75
#: A call id as OpenAI and Anthropic give them (part of the namespace the model sees).
CALL_ID = "call_Xq3vT9bLm2Rk8WfZpYd4Hs1N"
_KEY = re.compile(r"[A-Za-z0-9_.:/$@-]{4,}")

Source = tuple[list[Any], Callable[[list[Any]], str]]


# -- real outputs, as lists of lines (a slice of k lines is one output) -----------------


def _systems() -> list[str]:
    return sorted(p.name.removesuffix("_2k.log") for p in LOGHUB.glob("*_2k.log"))


def _log(system: str) -> list[str]:
    return (LOGHUB / f"{system}_2k.log").read_text(encoding="utf-8", errors="replace").splitlines()


def _csv_rows(system: str) -> list[dict[str, str]]:
    path = LOGHUB / f"{system}_2k.log_structured.csv"
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        return list(csv.DictReader(f))


def _csv_text(system: str) -> list[str]:
    path = LOGHUB / f"{system}_2k.log_structured.csv"
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _psql(system: str) -> list[str]:
    """The structured rows as a SQL client prints them (no template, no content)."""
    rows = _csv_rows(system)
    columns = [c for c in rows[0] if c not in ("Content", "EventTemplate")]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    head = " | ".join(c.ljust(widths[c]) for c in columns)
    rule = "-+-".join("-" * widths[c] for c in columns)
    body = [" | ".join(r[c].ljust(widths[c]) for c in columns) for r in rows]
    return [head, rule, *body]


def _templates(system: str) -> list[str]:
    """A markdown table of the log's events: id, count, template (most frequent first)."""
    rows = _csv_rows(system)
    counts = Counter(r["EventId"] for r in rows)
    template = {r["EventId"]: r["EventTemplate"] for r in rows}
    lines = ["| EventId | Count | EventTemplate |", "|---|---|---|"]
    lines += [f"| {e} | {n} | {template[e]} |" for e, n in counts.most_common()]
    return lines


def _locomo(path: Path) -> list[dict[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[dict[str, str]] = []
    n = 1
    while f"session_{n}" in data:
        date = data.get(f"session_{n}_date_time", "")
        for turn in data[f"session_{n}"]:
            turns.append(
                {
                    "session": str(n),
                    "date": date,
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "text": turn["text"],
                }
            )
        n += 1
    return turns


def _listing(package: str) -> list[str]:
    """``find <package> -printf '%M %8s %p'`` of an installed package, sorted."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    lines = []
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        st = path.lstat()
        kind = "d" if path.is_dir() else "-"
        mode = kind + "".join(
            ch if st.st_mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx")
        )
        lines.append(f"{mode} {st.st_size:8d} {path.relative_to(root.parent)}")
    return lines


def _lines(items: list[str], head: list[str] | None = None) -> Source:
    return items, lambda part: "\n".join([*(head or []), *part])


def sources() -> Iterator[tuple[str, str, Source]]:
    """(family, name, source) of every output: its units, and how k of them print."""
    for system in _systems():
        yield "log", system, _lines(_log(system))
    for system in _systems():
        text = _csv_text(system)
        yield "csv", system, _lines(text[1:], text[:1])
    for path in sorted(LOCOMO.glob("*.json")):
        turns = _locomo(path)
        yield (
            "json",
            f"locomo-{path.stem}",
            (turns, lambda part: json.dumps(part, indent=2, ensure_ascii=False)),
        )
    for package in ("qdrant_client", "pydantic", "anthropic", "aiohttp", "langchain_core"):
        listing = _listing(package)
        if listing:
            yield "listing", package, _lines(listing)
    for system in _systems():
        table = _psql(system)
        yield "table", f"{system} rows", _lines(table[2:], table[:2])
    for system in _systems():
        table = _templates(system)
        yield "table", f"{system} events", _lines(table[2:], table[:2])


def cut(source: Source, target: int, count: Callable[[str], int]) -> str | None:
    """The longest prefix of ``source`` of at most ``target`` tokens, if within 20% of it
    (``None`` when the source is too short, or one unit overshoots)."""
    units, render = source
    low, high = 0, len(units)  # count(render(units[:low])) <= target, always
    if count(render(units)) <= target:
        low = high
    while low < high - 1:
        mid = (low + high) // 2
        if count(render(units[:mid])) <= target:
            low = mid
        else:
            high = mid
    text = render(units[:low]) if low else ""
    return text if low and count(text) >= 0.8 * target else None


# -- one measurement --------------------------------------------------------------------


def keys(text: str, n: int = 3) -> list[str]:
    """The grep key of ``n`` lines spread over ``text``: each one's rarest token."""
    lines = text.splitlines()
    freq: Counter[str] = Counter()
    for line in lines:
        freq.update(set(_KEY.findall(line)))
    candidates = [i for i, line in enumerate(lines) if _KEY.search(line)]
    if not candidates:
        return []
    picks = [candidates[(len(candidates) * (2 * j + 1)) // (2 * n)] for j in range(n)]
    found = []
    for i in picks:
        tokens = _KEY.findall(lines[i])
        found.append(min(tokens, key=lambda t: (freq[t], -len(t))))
    return found


def measure(text: str) -> dict[str, float]:
    """Tokens of the raw output, of its reference, of a grep and of a page-1 read."""
    memory = TaskMemory(index="sync")
    try:
        count = memory.tokenizer.count
        policy = OffloadPolicy(memory, min_tokens=0)  # store it whatever its size
        out = policy.offload("run_tool", text, call_id=CALL_ID)
        assert out.reference is not None
        namespace = out.reference.namespace
        tools = {spec.name: spec for spec in memory_tool_specs(memory)}
        greps = [
            count(tools["grep_memory"].run(artifact_namespace=namespace, pattern=key))
            for key in keys(text)
        ]
        read = count(tools["read_memory"].run(artifact_namespace=namespace))
        grep = statistics.fmean(greps) if greps else float(read)
        return {
            "raw": count(text),
            "card": count(out.text),
            "grep": grep,
            "read": read,
            "typical": (grep + read) / 2,
        }
    finally:
        memory.close()


def run(sizes: tuple[int, ...]) -> list[dict[str, object]]:
    count = TaskMemory(index="sync").tokenizer.count
    rows: list[dict[str, object]] = []
    for family, name, source in sources():
        for size in sizes:
            text = cut(source, size, count)
            if text is None:
                continue  # this source is shorter than the size
            rows.append({"family": family, "name": name, "size": size, **measure(text)})
    return rows


# -- report ------------------------------------------------------------------------------


def _share(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)} ({100 * sum(values) / len(values):.0f}%)"


def by_size(rows: list[dict[str, object]], sizes: tuple[int, ...]) -> str:
    out = [
        "| size (tokens) | outputs | raw | card | grep | read p.1 | card+grep / raw "
        f"| card+read / raw | card+typical / raw | card+typical <= {CLEARLY}x raw "
        "| card >= raw |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        at = [r for r in rows if r["size"] == size]
        if not at:
            continue

        def med(key: str, at: list[dict[str, object]] = at) -> float:
            return statistics.median(float(r[key]) for r in at)  # type: ignore[arg-type]

        def ratio(read: str, at: list[dict[str, object]] = at) -> float:
            return statistics.median(
                (float(r["card"]) + float(r[read])) / float(r["raw"])  # type: ignore[arg-type]
                for r in at
            )

        clear = [
            float(r["card"]) + float(r["typical"]) <= CLEARLY * float(r["raw"])  # type: ignore[arg-type]
            for r in at
        ]
        over = [float(r["card"]) >= float(r["raw"]) for r in at]  # type: ignore[arg-type]
        out.append(
            f"| {size:,} | {len(at)} | {med('raw'):.0f} | {med('card'):.0f} | {med('grep'):.0f} "
            f"| {med('read'):.0f} | {ratio('grep'):.2f} | {ratio('read'):.2f} "
            f"| {ratio('typical'):.2f} | {_share(clear)} | {_share(over)} |"
        )
    return "\n".join(out)


def by_family(rows: list[dict[str, object]], sizes: tuple[int, ...]) -> str:
    families = sorted({str(r["family"]) for r in rows})
    out = [
        "| family | " + " | ".join(f"{s:,}" for s in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for family in families:
        cells = []
        for size in sizes:
            at = [r for r in rows if r["family"] == family and r["size"] == size]
            cells.append(
                "-"
                if not at
                else f"{statistics.median((float(r['card']) + float(r['typical'])) / float(r['raw']) for r in at):.2f}"  # type: ignore[arg-type]
            )
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def break_even(rows: list[dict[str, object]], sizes: tuple[int, ...], most: float = 0.75) -> int:
    """The smallest size from which, at it and every larger size, at least ``most`` of
    the outputs store clearly below their raw cost (card plus a typical read)."""
    found = sizes[-1]
    for size in reversed(sizes):
        at = [r for r in rows if r["size"] == size]
        clear = [
            float(r["card"]) + float(r["typical"]) <= CLEARLY * float(r["raw"])  # type: ignore[arg-type]
            for r in at
        ]
        if not at or sum(clear) < most * len(clear):
            break
        found = size
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three sizes, print only")
    args = parser.parse_args()
    if not LOGHUB.is_dir() or not LOCOMO.is_dir():
        sys.exit(f"needs the Loghub and LoCoMo dev data under {DATA} (OFFPROMPT_DATA=)")
    sizes = QUICK_SIZES if args.quick else SIZES
    started = datetime.now(timezone.utc)
    rows = run(sizes)
    found = break_even(rows, sizes)
    names = sorted({f"{r['family']}:{r['name']}" for r in rows})
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    report = "\n\n".join(
        [
            f"Run {started:%Y-%m-%d %H:%M} UTC, command `python benchmarks/bench_break_even.py"
            f"{' --quick' if args.quick else ''}`, {platform.machine()} {platform.system()}, "
            f"{os.cpu_count()} cores (load {load} at the end), Python "
            f"{platform.python_version()}; DEFAULT_MIN_TOKENS at the time of the run: "
            f"{DEFAULT_MIN_TOKENS}. Token counts only (o200k): the numbers do not depend "
            f"on the machine's load. {len(names)} outputs: {', '.join(names)}.",
            "What is counted, per output cut to about each size (whole lines from its "
            "start; a source shorter than a size is left out there): **raw**, the output; "
            "**card**, the text `OffloadPolicy.offload` returns for it (reference sentence "
            "and card, `preview_tokens=300`), what LangChain's `offprompt_tool`, the "
            "middleware and the MCP proxy send; **grep**, the `grep_memory` answer for the "
            "rarest token of a line (mean over 3 lines spread over the output); **read "
            "p.1**, the `read_memory` answer with no arguments (page 1, the whole output up "
            "to one page of 936 tokens, with its header); **typical**, the mean of grep and "
            "read p.1. Stored cost = card + one read. Not counted: the model's own call "
            "(its arguments, about 40 tokens), which only raises the break-even.",
            "## Medians by size",
            by_size(rows, sizes),
            "## Median card+typical / raw, by kind of output",
            by_family(rows, sizes),
            f"Break-even (smallest size from which at least 75% of outputs at it and every "
            f"larger size store at <= {CLEARLY}x their raw cost, card + typical read): "
            f"**{found:,} tokens**.",
        ]
    )
    print(report)
    if not args.quick:
        RESULTS.write_text(
            "# Break-even of storing an output off-prompt\n\n" + report + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
