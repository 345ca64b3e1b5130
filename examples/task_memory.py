"""Off-prompt task memory, offline: a 5 MB tool output never enters the prompt.

The model sees a one-sentence reference; it can still query the stored output for the
one fact it needs, read it page by page, or get a summary.
"""

from __future__ import annotations

import random
import tempfile
import time

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory


def fake_log(megabytes: float) -> str:
    rng = random.Random(0)
    words = [
        "GET",
        "POST",
        "/api/items",
        "/api/users",
        "200",
        "404",
        "500",
        "cache",
        "hit",
        "miss",
        "latency",
        "ms",
        "retry",
    ]
    lines, size = [], 0
    while size < megabytes * 1_000_000:
        line = f"{len(lines):07d} " + " ".join(rng.choice(words) for _ in range(14))
        lines.append(line)
        size += len(line) + 1
    lines.insert(
        len(lines) // 2, "ALERT backup of database orion-7 failed: disk quota exceeded (code E4471)"
    )
    return "\n".join(lines)


def main() -> None:
    output = fake_log(5)
    with tempfile.TemporaryDirectory() as home:
        memory = TaskMemory(path=home)  # embedded Qdrant + hashing embedder, all local

        started = time.perf_counter()
        reference = memory.process_output(
            "logs", "fetch", TextArtifact(value=output, name="logs-run-42")
        )
        seconds = time.perf_counter() - started
        print(f"stored {len(output) / 1e6:.1f} MB in {seconds:.1f} s")
        print("the model sees:", reference.value)

        hits = memory.query("logs-run-42", "why did the orion-7 backup fail?", top_n=3)
        best = next(line for line in hits.value[0].value.splitlines() if "orion-7" in line)
        print("query ->", best, f"(page {hits.value[0].meta['page']})")
        assert "E4471" in best

        meta = memory.namespace_metadata("logs-run-42")
        page = memory.read("logs-run-42", page=1)
        print(f"page 1 of {page.meta['pages']}: {page.value.splitlines()[0]!r} ...")
        print(
            f"metadata: tool={meta['tool']} activity={meta['activity']} bytes={meta['bytes']} tokens={meta['tokens']}"
        )

        # Reopened from disk, the namespace is still there and queryable.
        memory.vector_store.close()
        again = TaskMemory(path=home)
        assert again.namespaces() == ["logs-run-42"]
        assert (
            "E4471"
            in again.query("logs-run-42", "orion-7 backup failure code", top_n=3).value[0].value
        )
        print("reopened:", again.namespaces())
        again.vector_store.close()


if __name__ == "__main__":
    main()
