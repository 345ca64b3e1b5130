"""A/B: long-term memory writes at N fragments, this checkout against another source tree.

The fragments, batches and reads of ``bench_longterm.py`` (English-like text, seed
12345, 10 users, ``write_batch`` of 1,000 with importance given, then 50 scoped
``read(k=5)``), run alternately in a fresh process per tree and round, so neither
inherits the other's imports or caches. Each run reports wall-clock writes/s, writes
per CPU second of the process (less sensitive to other processes on a shared machine
than the wall clock), the read p95 and the 1-minute load average at its end. Nothing is
written to a results file: the command and its output go into the notes that cite them.

    git worktree add --detach /tmp/baseline 3eb5c89     # the tree to compare with
    python benchmarks/ab_longterm_writes.py /tmp/baseline/src --size 100000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, os, random, sys, time
sys.path.insert(0, sys.argv[2])
from bench_longterm import BATCH, READS, WORDS, _pct, _text
import offprompt
from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import QdrantVectorStore

size = int(sys.argv[1])
rng = random.Random(12345)
store = QdrantVectorStore()
ltm = LongTermMemory(store)
fragments = [
    MemoryFragment(observation=_text(rng), importance=rng.random(), scope=Scope(user=f"user{i % 10}"))
    for i in range(size)
]
wall, cpu = time.perf_counter(), time.process_time()
for i in range(0, size, BATCH):
    ltm.write_batch(fragments[i : i + BATCH])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
latencies = []
for i in range(READS):
    query = " ".join(rng.choice(WORDS) for _ in range(5))
    start = time.perf_counter()
    ltm.read(query, k=5, scope=Scope(user=f"user{i % 10}"))
    latencies.append(time.perf_counter() - start)
store.close()
print(json.dumps({
    "tree": offprompt.__file__, "writes_per_s": size / wall, "writes_per_cpu_s": size / cpu,
    "read_p95_ms": _pct(latencies, 0.95) * 1000, "load": os.getloadavg()[0],
}))
"""


def run(src: Path | None, size: int) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    here = str(Path(__file__).parent)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(size), here],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_src", type=Path, help="the other tree's src/ directory")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {"baseline": [], "this checkout": []}
    for _ in range(args.rounds):
        for name, src in (("baseline", args.baseline_src), ("this checkout", None)):
            result = run(src, args.size)
            rows[name].append(result)
            print(name, json.dumps(result), flush=True)
    for name, results in rows.items():
        wall = statistics.median(r["writes_per_s"] for r in results)
        cpu = statistics.median(r["writes_per_cpu_s"] for r in results)
        p95 = statistics.median(r["read_p95_ms"] for r in results)
        print(f"{name}: {wall:,.0f} writes/s, {cpu:,.0f} writes per CPU s, read p95 {p95:.1f} ms")
    base = statistics.median(r["writes_per_cpu_s"] for r in rows["baseline"])
    ours = statistics.median(r["writes_per_cpu_s"] for r in rows["this checkout"])
    print(f"writes per CPU s, this checkout / baseline: {ours / base:.2f}x")


if __name__ == "__main__":
    main()
