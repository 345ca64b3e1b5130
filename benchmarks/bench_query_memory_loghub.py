"""``query_memory`` on real system logs: rare events of the Loghub 2k-line samples.

For each log in DIR (``X_2k.log`` with its ``X_2k.log_structured.csv``, which gives
every line's parsed event): the log is stored as one output in a ``TaskMemory``; for
every event occurring at most 3 times in it, its template with the ``<*>`` variables
removed is the query; the event is found when one of the 5 best passages holds one of
its lines. Rows: task memory's defaults (BM25 over tiktoken ids, no dense vectors),
the same fused 1:4 with the hashing embedder at 384 dimensions (the previous default)
and at 64, the word analyzer's BM25 (hybrid and alone), the hashing
embedder alone, and 3eb5c89's reads (tiktoken ids, fused 1:3) in the same run. ``--embedder minilm``
adds all-MiniLM-L6-v2 in the dense half (benchmark environment only, see
``bench_longterm_recall.py``). Each row also gives the bytes of its embedded index (the
shard's allocated blocks, no write-ahead log: an in-memory store) per MB of stored text.

    python benchmarks/bench_query_memory_loghub.py DIR   # writes RESULTS_query_memory_loghub.md
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory
from offprompt.vectors import Analyzer, Embedder, HashingEmbedder, QdrantVectorStore

RARE = 3
TOP = 5


def events(csv_path: Path) -> tuple[dict[int, str], dict[str, list[int]]]:
    """Line id -> template, and each rare template's line ids."""
    template: dict[int, str] = {}
    with csv_path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            template[int(row["LineId"])] = row["EventTemplate"]
    counts = Counter(template.values())
    rare: dict[str, list[int]] = {}
    for line, t in template.items():
        if counts[t] <= RARE:
            rare.setdefault(t, []).append(line)
    return template, rare


def query_text(template: str) -> str:
    return re.sub(r"\s+", " ", template.replace("<*>", " ")).strip()


def namespace_of(log: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", log.stem)


def measure(log: Path, memory: TaskMemory, mode: str) -> tuple[int, int]:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    _, rare = events(log.with_name(log.name + "_structured.csv"))
    found = 0
    for template, ids in rare.items():
        hits = memory.query(
            namespace_of(log), query_text(template) or template, top_n=TOP, mode=mode
        )
        wanted = [lines[i - 1] for i in ids if 0 < i <= len(lines)]
        found += any(any(w in h.value for w in wanted) for h in hits.value)
    return found, len(rare)


def index_bytes(store: QdrantVectorStore) -> int:
    """Allocated bytes of the store's embedded shard (its files' blocks, what ``du`` counts)."""
    store.flush()
    directory = getattr(store._core.backend, "directory", None)
    if directory is None:
        return 0
    return sum(p.stat().st_blocks * 512 for p in Path(directory).rglob("*") if p.is_file())


def run(
    logs: list[Path], make_store: Callable[[], QdrantVectorStore], mode: str
) -> tuple[dict[str, tuple[int, int]], float]:
    """Found/total per log, and the index's bytes per MB of stored text."""
    store = make_store()
    with TaskMemory(vector_store=store) as memory:
        stored = 0
        for log in logs:
            text = log.read_text(encoding="utf-8", errors="replace")
            stored += len(text.encode("utf-8"))
            memory.store_artifact(namespace_of(log), TextArtifact(value=text))
        memory.wait_indexed()
        found = {log.stem: measure(log, memory, mode) for log in logs}
        return found, index_bytes(store) / (stored / 1e6)


def legacy_store(embedder: Embedder | None = None) -> QdrantVectorStore:
    """The previous reads: BM25 over tiktoken ids with the previous weights (1:3)."""
    return QdrantVectorStore(embedder=embedder, lexical="tokens", fusion_weights=(1.0, 3.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dir", help="a directory of Loghub X_2k.log and X_2k.log_structured.csv files"
    )
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    args = parser.parse_args()
    logs = sorted(Path(args.dir).glob("*_2k.log"))
    if not logs:
        raise SystemExit(f"no *_2k.log files in {args.dir}")
    variants: list[tuple[str, Callable[[], QdrantVectorStore], str]] = [
        (
            "`TaskMemory()` defaults (BM25 over tiktoken ids, no dense vectors)",
            lambda: QdrantVectorStore(lexical="tokens", dense=False),
            "hybrid",
        ),
        (
            "tiktoken ids, hybrid 1:4 with HashingEmbedder (384 dims, the previous default)",
            lambda: QdrantVectorStore(lexical="tokens"),
            "hybrid",
        ),
        (
            "tiktoken ids, hybrid 1:4 with HashingEmbedder(dimensions=64)",
            lambda: QdrantVectorStore(lexical="tokens", embedder=HashingEmbedder(dimensions=64)),
            "hybrid",
        ),
        (
            'tiktoken ids, mode="sparse" (BM25 alone)',
            lambda: QdrantVectorStore(lexical="tokens"),
            "sparse",
        ),
        ("hybrid 1:4, word BM25 (the analyzer) + HashingEmbedder", QdrantVectorStore, "hybrid"),
        ('mode="sparse" (word BM25 alone)', QdrantVectorStore, "sparse"),
        ('mode="dense" (HashingEmbedder alone)', QdrantVectorStore, "dense"),
        (
            "hybrid 1:4, analyzer without stop words",
            lambda: QdrantVectorStore(analyzer=Analyzer(stop_words=())),
            "hybrid",
        ),
        (
            "hybrid 1:4, `Analyzer(language=None)` (no stems, no stop words)",
            lambda: QdrantVectorStore(analyzer=Analyzer(language=None)),
            "hybrid",
        ),
        (
            "previous analyzer: BM25 over tiktoken ids, hybrid 1:3 (3eb5c89's reads)",
            legacy_store,
            "hybrid",
        ),
    ]
    if args.embedder == "minilm":
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_longterm_recall import minilm

        model = minilm()
        variants.append(
            ("all-MiniLM-L6-v2: hybrid 1:1", lambda: QdrantVectorStore(embedder=model), "hybrid")
        )
    rows = []
    for name, make, mode in variants:
        start = time.perf_counter()
        rows.append((name, run(logs, make, mode)))
        print(f"done {name} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    stems = [log.stem for log in logs]
    lines = [
        f"Data: Loghub dev split, {len(logs)} logs of 2,000 lines, each stored as one output; "
        f"events occurring at most {RARE} times, queried by their template without `<*>`; "
        f"found = one of the {TOP} best passages holds one of the event's lines.",
        "",
        "| reads | overall | index bytes per stored MB | "
        + " | ".join(s.replace("_2k", "") for s in stems)
        + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in stems) + " |",
    ]
    for name, (result, per_mb) in rows:
        found = sum(f for f, _ in result.values())
        total = sum(n for _, n in result.values())
        cells = [f"{result[s][0]}/{result[s][1]}" for s in stems]
        lines.append(
            f"| {name} | {found / total:.3f} ({found}/{total}) | {per_mb / 1e6:.2f} MB | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        f"Load average at the end of the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())}.",
    ]
    text = "\n".join(lines)
    print(text)
    out = Path(__file__).with_name("RESULTS_query_memory_loghub.md")
    out.write_text("# query_memory on real logs (Loghub rare events)\n\n" + text + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
