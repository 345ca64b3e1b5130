"""A/B: task-memory ingest of this checkout against another source tree, same machine.

"No slower than today's ingest" can only be judged side by side: this machine's speed
drifts by +-20% from run to run and by more from day to day. So the two source trees
run alternately, each round in a fresh process per tree (so neither inherits the
other's imports or caches), on the same synthetic log as ``bench_task_memory.py``:

* a warm-up output (0.05 MB) and one untimed run of the size, then
* ``--runs`` timed runs: ``process_output`` of the output into a fresh in-memory
  ``TaskMemory`` (the default options of that tree), until it is fully indexed
  (``wait_indexed()`` where the tree has it; before background indexing existed,
  ``process_output`` itself indexed).

Each tree's time per size is the median of its runs over all rounds; the ratio is the
median of the per-round ratios. Nothing is written to a results file: the command and
its output go into the notes that cite them.

    git worktree add /tmp/baseline 907ac92      # the tree to compare with
    python benchmarks/ab_ingest.py /tmp/baseline/src --sizes 1 10 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
THIS_SRC = HERE.parent / "src"

CHILD = r"""
import json, sys, time
src, mb, runs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, src)
sys.path.insert(1, sys.argv[4])
import offprompt
assert offprompt.__file__.startswith(src), offprompt.__file__
from bench_task_memory import synthetic
from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory

def once(text):
    memory = TaskMemory()
    start = time.perf_counter()
    memory.process_output("bench", "ingest", TextArtifact(value=text, name="out"))
    wait = getattr(memory, "wait_indexed", None)
    if wait is not None and not wait(timeout=900):
        raise SystemExit("indexing did not finish")
    seconds = time.perf_counter() - start
    memory.close()
    return seconds

once(synthetic(0.05))
text = synthetic(mb, seed=int(mb * 10))
once(text)
print(json.dumps([once(text) for _ in range(runs)]))
"""


def timed(src: Path, mb: float, runs: int) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(mb), str(runs), str(HERE)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_src", type=Path, help="the other tree's src/ directory")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1.0, 10.0, 50.0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per round and tree")
    args = parser.parse_args()
    print("| MB | baseline s (MB/s) | this tree s (MB/s) | this / baseline |")
    print("|---|---|---|---|")
    for mb in args.sizes:
        base: list[float] = []
        ours: list[float] = []
        ratios: list[float] = []
        for _ in range(args.rounds):
            b = timed(args.baseline_src.resolve(), mb, args.runs)
            o = timed(THIS_SRC, mb, args.runs)
            base += b
            ours += o
            ratios.append(statistics.median(o) / statistics.median(b))
        mb_base, mb_ours = statistics.median(base), statistics.median(ours)
        print(
            f"| {mb:g} | {mb_base:.3f} ({mb / mb_base:.2f}) | {mb_ours:.3f} ({mb / mb_ours:.2f})"
            f" | {statistics.median(ratios):.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
