"""LangGraph store: ``OffpromptStore`` side by side with LangGraph's ``InMemoryStore`` and
``SqliteStore`` at 1k / 10k / 100k items, in one run.

Each store is filled with N items spread over 100 namespaces ``("users", "u<i>",
"memories")`` (batches of 1,000 ``PutOp(..., index=False)``; values ``{"text", "kind", "n"}``, seed
7): the LangGraph stores are built without an index, so no store embeds and the
columns are like for like. ``put embedded`` is one ``OffpromptStore`` put that embeds
``"$"`` with the offline ``HashingEmbedder`` (dense + BM25).
Then each operation is timed 50 times (or for 5 s, at least 3 calls), one call at a
time, and the median is reported:

* ``get``: one item by key;
* ``search ns``: ``search(("users", "u7"), limit=10)``, no query (newest first);
* ``search all``: ``search(("users",), limit=10)``, no query, over every item;
* ``search filter``: ``search(("users",), filter={"kind": "note"}, limit=10)``;
* ``list ns``: ``list_namespaces(prefix=("users",), limit=100)``;
* ``put``: one new item (``put`` of a fresh key, single call, ``index=False``).

Flat means the 100k column is within a small factor of the 1k one.

    python benchmarks/bench_store.py          # 1k, 10k, 100k; writes RESULTS_store.md
    python benchmarks/bench_store.py --quick  # 1k and 10k, prints only
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from offprompt_langchain.store import OffpromptStore

from offprompt.vectors import QdrantVectorStore

NAMESPACES = 100
REPEAT = 50
BUDGET_S = 5.0  # per operation: keeps the slow anchors (seconds per call at 100k) short
WORDS = [
    "user",
    "prefers",
    "window",
    "seat",
    "flight",
    "hotel",
    "breakfast",
    "meeting",
    "deadline",
    "budget",
    "note",
]


def _value(rng: random.Random, i: int) -> dict[str, Any]:
    text = " ".join(rng.choice(WORDS) for _ in range(12))
    return {"text": text, "kind": rng.choice(["note", "fact", "plan"]), "n": i}


def _fill(store: BaseStore, size: int) -> float:
    rng = random.Random(7)
    started = time.perf_counter()
    for start in range(0, size, 1_000):
        store.batch(
            [
                PutOp(
                    ("users", f"u{i % NAMESPACES}", "memories"),
                    f"k{i}",
                    _value(rng, i),
                    index=False,
                )
                for i in range(start, min(start + 1_000, size))
            ]
        )
    return time.perf_counter() - started


def _median_ms(call: Callable[[int], object]) -> float:
    """Median of up to REPEAT calls; stops after BUDGET_S seconds (at least 3 calls)."""
    times: list[float] = []
    deadline = time.perf_counter() + BUDGET_S
    for i in range(REPEAT):
        started = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - started)
        if len(times) >= 3 and time.perf_counter() > deadline:
            break
    return statistics.median(times) * 1_000


def measure(store: BaseStore, size: int) -> dict[str, float]:
    fill = _fill(store, size)
    row = {"fill_s": fill}
    row["get"] = _median_ms(
        lambda i: store.get(("users", f"u{i % NAMESPACES}", "memories"), f"k{i}")
    )
    row["search ns"] = _median_ms(lambda i: store.search(("users", "u7"), limit=10))
    row["search all"] = _median_ms(lambda i: store.search(("users",), limit=10))
    row["search filter"] = _median_ms(
        lambda i: store.search(("users",), filter={"kind": "note"}, limit=10)
    )
    row["list ns"] = _median_ms(lambda i: store.list_namespaces(prefix=("users",), limit=100))
    rng = random.Random(size)
    row["put"] = _median_ms(
        lambda i: store.put(("users", "u3", "memories"), f"new{i}", _value(rng, i), index=False)
    )
    if isinstance(store, OffpromptStore):  # what an embedded put costs on top
        row["put embedded"] = _median_ms(
            lambda i: store.put(("users", "u3", "memories"), f"emb{i}", _value(rng, i))
        )
    assert len(store.search(("users", "u7"), limit=10)) == 10  # the reads really read
    assert len(store.list_namespaces(prefix=("users",), limit=1_000)) == NAMESPACES
    return row


def _stores(tmp: Path, size: int) -> list[tuple[str, Callable[[], Any]]]:
    def offprompt() -> Any:
        return OffpromptStore(QdrantVectorStore(path=str(tmp / f"qdrant-{size}")))

    def sqlite() -> Any:
        cm = SqliteStore.from_conn_string(str(tmp / f"store-{size}.db"))
        store = cm.__enter__()
        store.setup()
        store._bench_cm = cm
        return store

    return [
        ("OffpromptStore", offprompt),
        ("InMemoryStore", InMemoryStore),
        ("SqliteStore", sqlite),
    ]


def _close(store: Any) -> None:
    if isinstance(store, OffpromptStore):
        store.vector_store.close()
    elif hasattr(store, "_bench_cm"):
        store._bench_cm.__exit__(None, None, None)


OPS = ["get", "search ns", "search all", "search filter", "list ns", "put", "put embedded"]


def table(results: dict[int, dict[str, dict[str, float]]]) -> str:
    sizes = sorted(results)
    lines = [
        "| store | op | "
        + " | ".join(f"{s:,} items (ms)" for s in sizes)
        + f" | {sizes[-1] // 1000}k / {sizes[0] // 1000}k |",
        "| --- | --- | " + " | ".join("---:" for _ in sizes) + " | ---: |",
    ]
    names = list(results[sizes[0]])
    for name in names:
        for op in OPS:
            if op not in results[sizes[0]][name]:
                continue
            cells = [results[s][name][op] for s in sizes]
            ratio = cells[-1] / cells[0] if cells[0] else float("nan")
            lines.append(
                f"| {name} | {op} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {ratio:.1f}x |"
            )
    lines.append("")
    lines.append(
        "| store | "
        + " | ".join(f"fill {s:,} (s)" for s in sizes)
        + " |\n| --- | "
        + " | ".join("---:" for _ in sizes)
        + " |"
    )
    for name in names:
        lines.append(
            f"| {name} | " + " | ".join(f"{results[s][name]['fill_s']:.1f}" for s in sizes) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k only, no file")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    results: dict[int, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            results[size] = {}
            for name, make in _stores(Path(tmp), size):
                store = make()
                try:
                    results[size][name] = measure(store, size)
                finally:
                    _close(store)
                print(f"{size:>7,} {name:<15} {results[size][name]}", file=sys.stderr, flush=True)
    text = table(results)
    print(text)
    if not args.quick:
        out = Path(__file__).with_name("RESULTS_store.md")
        out.write_text(
            "# LangGraph store benchmark\n\n"
            "`python benchmarks/bench_store.py` (median of 50 calls each; embedded Qdrant "
            "edge engine on disk, SqliteStore on a file, InMemoryStore in memory; "
            "2 shared cores).\n\n" + text + "\n"
        )


if __name__ == "__main__":
    main()
