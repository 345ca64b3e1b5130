"""Long-term memory: write throughput and ``read`` latency in the embedded default engine.

For each size N, N fragments (English-like text from a fixed vocabulary, seed 12345,
spread over 10 users) are written with ``LongTermMemory.write_batch`` in batches of
1,000 (importance given, so the timing is embedding + upsert, not the scorer; a second
figure includes the heuristic scorer on one batch). Then 50 ``read(query, k=5,
scope=Scope(user=...))`` calls are timed one by one: the hybrid read (feedback query,
dense and BM25 rankings with the scope filter inside Qdrant), the rescoring and the
access-time update. Interleaved with them in the same loop, the same reads with the
dense ranking filtered on the whole filter in the engine (not narrowed by the scope key,
as before ``narrow_by``), so their ratio holds on a shared machine; the 1-minute load
average at the end of each size is in the last column.

    python benchmarks/bench_longterm.py          # 10k and 100k, writes RESULTS_longterm.md
    python benchmarks/bench_longterm.py --quick  # 1k and 10k, prints only
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import QdrantVectorStore
from offprompt.vectors.store import SearchMode

WORDS = [
    "user",
    "prefers",
    "window",
    "seat",
    "flight",
    "hotel",
    "breakfast",
    "vegetarian",
    "allergy",
    "peanuts",
    "meeting",
    "deadline",
    "project",
    "budget",
    "report",
    "dark",
    "mode",
    "editor",
    "python",
    "tea",
    "coffee",
    "morning",
    "evening",
    "gym",
    "running",
    "music",
    "jazz",
    "sister",
    "brother",
    "birthday",
    "march",
    "april",
    "invoice",
    "server",
    "disk",
    "latency",
    "cache",
    "billing",
    "refund",
    "ticket",
    "priority",
    "weekend",
    "travel",
    "lisbon",
    "oslo",
    "berlin",
]
BATCH = 1_000
READS = 50


def _text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
    words.insert(rng.randint(0, len(words)), str(rng.randint(1, 9999)))
    return " ".join(words)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Unnarrowed(LongTermMemory):
    """The read before ``narrow_by``: the dense ranking filtered on the whole filter."""

    @staticmethod
    def _narrow_by(flt: Mapping[str, Any], retriever: SearchMode) -> str | None:
        return None


def run(size: int) -> dict[str, float]:
    rng = random.Random(12345)
    store = QdrantVectorStore()
    ltm = LongTermMemory(store)
    fragments = [
        MemoryFragment(
            observation=_text(rng), importance=rng.random(), scope=Scope(user=f"user{i % 10}")
        )
        for i in range(size)
    ]
    start = time.perf_counter()
    for i in range(0, size, BATCH):
        ltm.write_batch(fragments[i : i + BATCH])
    write_s = time.perf_counter() - start
    unscored = [
        MemoryFragment(observation=_text(rng), scope=Scope(user="user0")) for _ in range(BATCH)
    ]
    start = time.perf_counter()
    ltm.write_batch(unscored)
    scored_batch_s = time.perf_counter() - start
    unnarrowed = _Unnarrowed(store)
    latencies: list[float] = []
    before: list[float] = []
    for i in range(READS):
        query = " ".join(rng.choice(WORDS) for _ in range(5))
        start = time.perf_counter()
        found = ltm.read(query, k=5, scope=Scope(user=f"user{i % 10}"))
        latencies.append(time.perf_counter() - start)
        assert all(f.scope.user == f"user{i % 10}" for f in found)
        start = time.perf_counter()
        unnarrowed.read(query, k=5, scope=Scope(user=f"user{i % 10}"))
        before.append(time.perf_counter() - start)
    load = os.getloadavg()[0]
    store.close()
    return {
        "size": size,
        "write_s": write_s,
        "write_per_s": size / write_s,
        "scored_per_s": BATCH / scored_batch_s,
        "read_median_ms": statistics.median(latencies) * 1000,
        "read_p95_ms": _pct(latencies, 0.95) * 1000,
        "before_median_ms": statistics.median(before) * 1000,
        "before_p95_ms": _pct(before, 0.95) * 1000,
        "load": load,
    }


def table(rows: list[dict[str, float]], engine: str) -> str:
    lines = [
        f"Engine: {engine} (embedded default), HashingEmbedder 384-d, batches of {BATCH:,}, "
        f"{READS} scoped reads (k=5) per size.",
        "",
        "| fragments | write total | write throughput | with heuristic scoring | read median "
        "| read p95 | unnarrowed median / p95 | p95 ratio | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {int(r['size']):,} | {r['write_s']:.2f} s | {r['write_per_s']:,.0f} /s | "
            f"{r['scored_per_s']:,.0f} /s | {r['read_median_ms']:.2f} ms | {r['read_p95_ms']:.2f} ms "
            f"| {r['before_median_ms']:.2f} / {r['before_p95_ms']:.2f} ms "
            f"| {r['read_p95_ms'] / r['before_p95_ms']:.2f}x | {r['load']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k only; print, do not write")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [10_000, 100_000]
    with QdrantVectorStore() as probe:
        engine = probe.engine
    rows = []
    for size in sizes:
        rows.append(run(size))
        print(f"done {size:,}", file=sys.stderr)
    text = table(rows, engine)
    print(text)
    if not args.quick:
        out = Path(__file__).with_name("RESULTS_longterm.md")
        out.write_text("# Long-term memory benchmark\n\n" + text + "\n")
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
