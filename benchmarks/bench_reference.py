"""Quick measures of the off-prompt v2 storage path (issue 13, engineer B's targets).

- time to reference: ``process_output`` of a 50 MB log output, in memory and ``path=``
  (background indexing; the raw output is durable when it returns);
- literal and regex grep throughput over the stored output (MB/s);
- background indexing throughput (MB/s, HashingEmbedder), from ``process_output`` until
  the first ``query`` (which waits for the namespace's index) returns;
- ``query`` latency (median / p95) on the indexed namespace.

Run: ``.venv/bin/python benchmarks/bench_reference.py [--mb 50]``. Prints a Markdown table.
The full side-by-side comparison (deepagents, v1 path) is ``bench_offprompt.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory


def _logs(mb: int) -> str:
    line = "2026-03-14T04:05:{s:02d}Z INFO api[pod-{p:04x}] GET /items/{i} 200 {ms}ms\n"
    out, size, i = [], 0, 0
    while size < mb * 1_000_000:
        piece = line.format(s=i % 60, p=i % 65536, i=i, ms=i % 997)
        out.append(piece)
        size += len(piece)
        i += 1
    out.insert(len(out) * 9 // 10, "CRIT vault-9 rejected the rotation key K-77421 (expired)\n")
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    text = _logs(args.mb)
    size_mb = len(text.encode()) / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, kwargs in (("in memory", {}), ("path=", {"path": tmp})):
            memory = TaskMemory(**kwargs)  # type: ignore[arg-type]
            started = time.perf_counter()
            info = memory.process_output("logs", "call", TextArtifact(text, name="big"))
            to_reference = time.perf_counter() - started
            tokens = memory.tokenizer.count(info.value)
            grep_t = time.perf_counter()
            found = memory.grep("big", "K-77421", regex=False)
            literal = time.perf_counter() - grep_t
            grep_t = time.perf_counter()
            memory.grep("big", r"vault-\d+ rejected")
            regex = time.perf_counter() - grep_t
            assert found.total_matches == 1
            memory.query("big", "rotation key rejected", top_n=5)  # waits for the index
            indexed = time.perf_counter() - started
            memory.wait_indexed("big")  # and the exact page count
            grep_t = time.perf_counter()
            memory.grep("big", "K-77421", regex=False)
            literal_idle = time.perf_counter() - grep_t
            latencies = []
            for q in range(40):
                t = time.perf_counter()
                memory.query("big", f"rotation key rejected vault {q}", top_n=5)
                latencies.append(time.perf_counter() - t)
            latencies.sort()
            chunks = memory.namespace_metadata("big")["chunks"]
            rows.append(
                (
                    label,
                    to_reference,
                    tokens,
                    size_mb / literal,
                    size_mb / regex,
                    size_mb / literal_idle,
                    size_mb / indexed,
                    chunks,
                    statistics.median(latencies) * 1000,
                    latencies[int(len(latencies) * 0.95) - 1] * 1000,
                )
            )
            memory.close()
    print(f"{size_mb:.1f} MB log output\n")
    print(
        "| store | time to reference (s) | reference tokens | literal grep MB/s (while indexing) "
        "| regex grep MB/s (while indexing) | literal grep MB/s (indexed) "
        "| index until query ready MB/s | chunks | query median ms | query p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]:.3f} | {r[2]} | {r[3]:.0f} | {r[4]:.0f} | {r[5]:.0f} | {r[6]:.1f} "
            f"| {r[7]:,} | {r[8]:.1f} | {r[9]:.1f} |"
        )


if __name__ == "__main__":
    main()
