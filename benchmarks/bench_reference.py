"""Quick measures of the off-prompt v2 storage path (issue 13, engineer B's targets).

- time to reference: ``process_output`` of a 50 MB log output, in memory and ``path=``
  (background indexing; the raw output is durable when it returns);
- literal and regex grep throughput over the stored output (MB/s);
- background indexing throughput (MB/s, HashingEmbedder), from ``process_output`` until
  the first ``query`` (which waits for the namespace's index) returns;
- ``query`` latency (median / p95) on the indexed namespace.

- with ``--single-line-mb N``: an N MB output on one line (time to reference, reference
  tokens, literal grep), the issue's "100 MB single line";
- with ``--old-mb N``: the same N MB indexed by this code (``process_output`` until the
  first ``query`` returns) and ingested by the pre-issue-13 code (``git archive 907ac92``,
  synchronous ``process_output``), each in a fresh subprocess, in the same run.

Run: ``.venv/bin/python benchmarks/bench_reference.py [--mb 50] [--old-mb 5]``. Prints
Markdown tables and the load average. The full side-by-side comparison (deepagents, v1
path) is ``bench_offprompt.py``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

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


PRE_ISSUE_13 = "907ac92"
_INGEST_CHILD = """
import sys, time
sys.path.insert(0, {bench!r})
from bench_reference import _logs
from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory
text = _logs({mb})
memory = TaskMemory()
started = time.perf_counter()
memory.process_output("logs", "call", TextArtifact(text, name="big"))
memory.query("big", "rotation key rejected", top_n=5)  # waits for a background index
print(time.perf_counter() - started)
memory.close()
"""


def _ingest_seconds(mb: int, src: Path | None) -> float:
    """Seconds from ``process_output`` until a ``query`` answers, in a fresh process,
    with this checkout's code or the code under ``src``."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    child = _INGEST_CHILD.format(bench=str(Path(__file__).parent), mb=mb)
    out = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def against_old(mb: int) -> None:
    """This code's background indexing vs the pre-issue-13 synchronous ingest, same MB."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", PRE_ISSUE_13, "src"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as bundle:
            bundle.extractall(tmp, filter="data")
        rows = []
        for label, src in (
            ("this code (background, until query)", None),
            (f"pre-issue-13 {PRE_ISSUE_13} (sync)", Path(tmp) / "src"),
            ("this code (background, until query)", None),
            (f"pre-issue-13 {PRE_ISSUE_13} (sync)", Path(tmp) / "src"),
        ):
            rows.append((label, _ingest_seconds(mb, src)))
    print(f"\n{mb} MB indexed, each in a fresh process (load average {_load()})\n")
    print("| code | seconds | MB/s |\n|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} | {mb / seconds:.2f} |")
    new = statistics.mean(s for label, s in rows if label.startswith("this"))
    old = statistics.mean(s for label, s in rows if label.startswith("pre"))
    print(f"\nthis code / pre-issue-13 time: {new / old:.2f} (mean of two runs each)")


def single_line(mb: int) -> None:
    """An ``mb`` MB output without a newline: reference, its size, one grep."""
    unit = "k=v;" * 250_000  # 1 MB
    text = unit * (mb // 2) + "NEEDLE=K-77421;" + unit * (mb - mb // 2)
    memory = TaskMemory()
    started = time.perf_counter()
    info = memory.process_output("dump", "call", TextArtifact(text, name="one"))
    to_reference = time.perf_counter() - started
    started = time.perf_counter()
    found = memory.grep("one", "K-77421", regex=False)
    grep = time.perf_counter() - started
    assert found.total_matches == 1 and len(found.matches[0].line) < 1_000
    tokens = memory.tokenizer.count(info.value)
    memory.close()
    print(f"\n{len(text) / 1e6:.1f} MB on one line (load average {_load()})\n")
    print("| time to reference (s) | reference tokens | literal grep (s) | line shown (chars) |")
    print("|---|---|---|---|")
    print(f"| {to_reference:.3f} | {tokens} | {grep:.3f} | {len(found.matches[0].line)} |")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--old-mb", type=int, default=0, help="also compare N MB with 907ac92")
    parser.add_argument("--single-line-mb", type=int, default=0, help="also N MB on one line")
    args = parser.parse_args()
    if args.single_line_mb:
        single_line(args.single_line_mb)
    if args.old_mb:
        against_old(args.old_mb)
    if not args.mb:
        return
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
    print(f"{size_mb:.1f} MB log output (load average {_load()} after the run)\n")
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
