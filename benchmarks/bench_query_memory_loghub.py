"""``query_memory`` on real system logs: rare events of the Loghub 2k-line samples.

For each log in DIR (``X_2k.log`` with its ``X_2k.log_structured.csv``, which gives
every line's parsed event): the log is stored as one output in a ``TaskMemory``; for
every event occurring at most 3 times in it, its template with the ``<*>`` variables
removed is the query; the event is found when one of the 5 best passages holds one of
its lines. Rows: task memory's defaults (512-token chunks ending at a line end, BM25
over tiktoken ids, no dense vectors), the same fused 1:4 with the hashing embedder at
384 dimensions (the previous default) and at 64, BM25 alone, the word
analyzer, the hashing embedder alone, other chunk sizes, and the chunks of the previous
release (a cut every 512 tokens, inside a line or not) in the same run. The chunk size
is then chosen leave-one-log-out: for each log, the size with the most events found on
the other seven, scored on that log. ``--embedder minilm`` adds all-MiniLM-L6-v2 rows
(the benchmark environment with PyTorch, ``make test-embeddings`` builds it; see
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
from typing import Any

from offprompt.artifacts import BlobArtifact, JsonArtifact, TextArtifact
from offprompt.task_memory import (
    BlobArtifactStorage,
    InMemoryBlobStore,
    TaskMemory,
    TextArtifactStorage,
)
from offprompt.task_memory.storage import CHUNK_BM25_LENGTH
from offprompt.vectors import Analyzer, HashingEmbedder, QdrantVectorStore

RARE = 3
TOP = 5
_WORD = re.compile(r"\w+")


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
    logs: list[Path],
    make_store: Callable[[], QdrantVectorStore],
    mode: str,
    storage: dict[str, Any] | None = None,
) -> tuple[dict[str, tuple[int, int]], float]:
    """Store each log in one memory (``storage``: ``TextArtifactStorage`` arguments);
    found/total per log, and the index's bytes per MB of stored text."""
    store = make_store()
    blobs = InMemoryBlobStore()
    text = TextArtifactStorage(store, raw_store=blobs, **(storage or {}))
    storages = {TextArtifact: text, JsonArtifact: text, BlobArtifact: BlobArtifactStorage(blobs)}
    with TaskMemory(vector_store=store, storages=storages) as memory:
        stored = 0
        for log in logs:
            value = log.read_text(encoding="utf-8", errors="replace")
            stored += len(value.encode("utf-8"))
            memory.store_artifact(namespace_of(log), TextArtifact(value=value))
        memory.wait_indexed()
        found = {log.stem: measure(log, memory, mode) for log in logs}
        return found, index_bytes(store) / (stored / 1e6)


def rank_bm25_run(logs: list[Path], chunk_tokens: int = 512) -> dict[str, tuple[int, int]]:
    """``rank_bm25.BM25Okapi`` over lower-cased ``\\w+`` words of the same passages."""
    from rank_bm25 import BM25Okapi

    from offprompt.task_memory.chunking import iter_chunks
    from offprompt.tokens import default_tokenizer

    encoding = default_tokenizer().encoding
    out: dict[str, tuple[int, int]] = {}
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        passages = [c.text for c in iter_chunks(text, encoding, chunk_tokens=chunk_tokens)]
        bm25 = BM25Okapi([_WORD.findall(p.lower()) for p in passages])
        _, rare = events(log.with_name(log.name + "_structured.csv"))
        found = 0
        for template, ids in rare.items():
            scores = bm25.get_scores(_WORD.findall((query_text(template) or template).lower()))
            best = sorted(range(len(passages)), key=lambda i: -scores[i])[:TOP]
            wanted = [lines[i - 1] for i in ids if 0 < i <= len(lines)]
            found += any(any(w in passages[i] for w in wanted) for i in best)
        out[log.stem] = (found, len(rare))
    return out


def tokens_store(embedder: Any = None) -> QdrantVectorStore:
    """BM25 over tiktoken ids (``TOOL_OUTPUT_LEXICAL``) with dense vectors (``embedder``,
    or the hashing embedder): task memory's previous default, or with a real model."""
    return QdrantVectorStore(embedder=embedder, lexical="tokens")


def default_store() -> QdrantVectorStore:
    """Task memory's default store: BM25 over tiktoken ids, no dense vectors."""
    return QdrantVectorStore(lexical="tokens", dense=False)


def leave_one_log_out(
    by_value: dict[float, dict[str, tuple[int, int]]], stems: list[str], what: str
) -> list[str]:
    """For each log, the value with the most events found on the other logs, scored on it."""
    out = [
        f"{what} chosen leave-one-log-out (the value finding the most events on the other "
        "logs; ties go to the smaller), scored on the log left out:",
        "",
        "| log left out | chosen | found on it |",
        "| --- | --- | --- |",
    ]
    found = total = 0
    for stem in stems:
        if not by_value[next(iter(by_value))][stem][1]:
            continue
        score = {v: sum(r[s][0] for s in stems if s != stem) for v, r in by_value.items()}
        best = max(score, key=lambda v: (score[v], -v))
        f, n = by_value[best][stem]
        found, total = found + f, total + n
        out.append(f"| {stem.replace('_2k', '')} | {best:g} | {f}/{n} |")
    out += ["", f"Leave-one-log-out overall: {found / total:.3f} ({found}/{total})."]
    return out


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
    default = "`TaskMemory()` defaults"
    # (row, store, mode, TextArtifactStorage arguments)
    variants: list[tuple[str, Callable[[], QdrantVectorStore], str, dict[str, Any]]] = [
        (
            f"{default}: 512-token chunks ending at a line end, BM25 over tiktoken ids "
            f"(length {CHUNK_BM25_LENGTH} chunks), no dense vectors",
            default_store,
            "hybrid",
            {},
        ),
        (
            "the same, hybrid 1:4 with HashingEmbedder (384 dims, the previous default)",
            tokens_store,
            "hybrid",
            {},
        ),
        (
            "the same, hybrid 1:4 with HashingEmbedder(dimensions=64)",
            lambda: tokens_store(HashingEmbedder(dimensions=64)),
            "hybrid",
            {},
        ),
        ('tiktoken ids, mode="sparse" (BM25 alone)', tokens_store, "sparse", {}),
        ('mode="dense" (HashingEmbedder alone)', tokens_store, "dense", {}),
        ("hybrid 1:4, word BM25 (the analyzer) + HashingEmbedder", QdrantVectorStore, "hybrid", {}),
        ('mode="sparse" (word BM25 alone)', QdrantVectorStore, "sparse", {}),
        (
            "hybrid 1:4, `Analyzer(language=None)` (no stems, no stop words)",
            lambda: QdrantVectorStore(analyzer=Analyzer(language=None)),
            "hybrid",
            {},
        ),
    ]
    lengths = (0.5, 1, 2, 4, 8)
    variants += [
        (
            f"defaults, BM25 length {n:g} chunks ({int(n * 512)} tokens)",
            default_store,
            "hybrid",
            {"bm25_avg_len": n * 512},
        )
        for n in lengths
        if n != CHUNK_BM25_LENGTH
    ]
    sizes = (256, 384, 512)
    variants += [
        (f"defaults with {size}-token chunks", default_store, "hybrid", {"chunk_tokens": size})
        for size in sizes
        if size != 512
    ]
    variants.append(
        (
            "previous release: a cut every 512 tokens (inside a line or not), BM25 length "
            "256 tokens (the encoder's own), hybrid 1:4",
            tokens_store,
            "hybrid",
            {"align_lines": False, "bm25_avg_len": 256},
        )
    )
    if args.embedder == "minilm":
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_longterm_recall import minilm

        model = minilm()
        variants += [
            (
                "all-MiniLM-L6-v2 + the defaults' BM25, hybrid 1:1 (the store's weights "
                "for a real embedder)",
                lambda: tokens_store(model),
                "hybrid",
                {},
            ),
            (
                "all-MiniLM-L6-v2 + the defaults' BM25, hybrid 1:4",
                lambda: QdrantVectorStore(
                    embedder=model, lexical="tokens", fusion_weights=(1.0, 4.0)
                ),
                "hybrid",
                {},
            ),
            ('all-MiniLM-L6-v2, mode="dense" (alone)', lambda: tokens_store(model), "dense", {}),
        ]
    rows = []
    for name, make, mode, storage in variants:
        start = time.perf_counter()
        rows.append((name, run(logs, make, mode, storage)))
        print(f"done {name} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    rows.append(
        (
            "`rank_bm25.BM25Okapi` over lower-cased `\\w+` words of the same passages",
            (rank_bm25_run(logs), float("nan")),
        )
    )
    by_length: dict[float, dict[str, tuple[int, int]]] = {CHUNK_BM25_LENGTH: rows[0][1][0]}
    by_size: dict[float, dict[str, tuple[int, int]]] = {512: rows[0][1][0]}
    for (_, _, _, storage), (name, (result, _)) in zip(variants, rows, strict=False):
        if name.startswith("defaults, BM25 length"):
            by_length[storage["bm25_avg_len"] / 512] = result
        elif name.startswith("defaults with"):
            by_size[storage["chunk_tokens"]] = result
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
            f"| {name} | {found / total:.3f} ({found}/{total}) | "
            + ("n/a" if per_mb != per_mb else f"{per_mb / 1e6:.2f} MB")
            + " | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        *leave_one_log_out(by_length, stems, "The BM25 length (in 512-token chunks)"),
        "",
        *leave_one_log_out(by_size, stems, "The chunk size (tokens)"),
    ]
    if args.embedder == "minilm":
        lines += [
            "",
            "The all-MiniLM-L6-v2 rows ran in the embeddings environment (`.venv-embed`, "
            "PyTorch on the CPU, `HF_HUB_OFFLINE=1`; `make test-embeddings` builds it).",
        ]
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
