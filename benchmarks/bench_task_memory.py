"""Off-prompt task memory benchmark: ingest, query latency, retrieval quality.

Side by side in one run:
  1. ingest MB/s of 1 / 10 / 50 MB tool outputs through ``TaskMemory`` (chunking +
     HashingEmbedder + BM25 + upsert, embedded edge engine) vs the floor of raw upserts
     of exactly the points TaskMemory wrote (same ids, dense and sparse vectors and
     payloads, recorded in an untimed run and prebuilt before the clock starts):
     qdrant-client ``:memory:`` ``upsert`` calls, and qdrant-edge ``EdgeShard.update``
     calls; medians of 5 interleaved runs, ratios as the median of per-run ratios (this
     machine's timings vary by +-20% from run to run); vs
     Griptape ``TaskMemory`` (LocalVectorStoreDriver + a hashing embedding driver, in a
     subprocess with a timeout; chunks prepared outside its timing);
  2. hybrid query latency (median / p95) at 10k and 100k chunks, edge vs qdrant-client
     local mode (the latter only at 10k: ~1 s per filtered query at 100k);
  3. recall@5 of 100 needle facts hidden in a 10 MB synthetic output: hybrid vs dense
     vs sparse.

``--quick`` shrinks every size. A full run writes ``benchmarks/RESULTS_task_memory.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory
from offprompt.vectors import HashingEmbedder, QdrantVectorStore, VectorRecord
from offprompt.vectors._backends import BackendPoint
from offprompt.vectors._edge import edge_config

RESULTS = Path(__file__).with_name("RESULTS_task_memory.md")
WORDS = [
    "request",
    "served",
    "cache",
    "miss",
    "hit",
    "user",
    "session",
    "token",
    "latency",
    "upstream",
    "timeout",
    "retry",
    "database",
    "query",
    "index",
    "shard",
    "replica",
    "leader",
    "follower",
    "commit",
    "rollback",
    "error",
    "warning",
    "info",
    "debug",
    "trace",
    "span",
    "metric",
    "counter",
    "gauge",
    "histogram",
    "bucket",
    "alert",
    "page",
    "incident",
    "deploy",
    "build",
    "release",
    "artifact",
    "container",
    "pod",
    "node",
    "cluster",
    "region",
    "zone",
    "network",
    "packet",
]


def synthetic(mb: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines, size, i = [], 0, 0
    target = int(mb * 1_000_000)
    while size < target:
        line = (
            f"{i:08d} [{rng.choice(['INFO', 'WARN', 'ERROR'])}] "
            + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
            + f" id={rng.getrandbits(32):08x}"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def ingest_once(
    text: str, capture: list[list[BackendPoint]] | None = None, *, index: str = "background"
) -> float:
    """Seconds until ``text`` is stored and fully indexed in a fresh TaskMemory.

    ``index="background"`` (the default) returns the reference at once and indexes in a
    worker, so the time runs until :meth:`TaskMemory.wait_indexed` returns: that is when
    ``query`` is ready. ``index="sync"`` indexes before ``process_output`` returns.
    With ``capture``, the points TaskMemory upserts are recorded there, batch by batch.
    """
    memory = TaskMemory(index=index)  # type: ignore[arg-type]
    backend = memory.vector_store._core.backend
    if capture is not None:
        upsert = backend.upsert

        def recording(points: list[BackendPoint]) -> None:
            capture.append(list(points))
            upsert(points)

        backend.upsert = recording  # type: ignore[method-assign]
    t = time.perf_counter()
    memory.process_output("bench", "ingest", TextArtifact(value=text, name="out"))
    if not memory.wait_indexed(timeout=900):
        raise RuntimeError("indexing did not finish within 900 s")
    seconds = time.perf_counter() - t
    memory.close()
    return seconds


def client_floor(batches: list[list[BackendPoint]]) -> float:
    """Seconds of raw qdrant-client upserts (``:memory:``) of exactly these points.

    The PointStructs (same ids, dense and sparse vectors, payloads) are built before
    the clock starts: the floor is the upsert calls alone.
    """
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "floor",
        vectors_config={"dense": models.VectorParams(size=384, distance=models.Distance.COSINE)},
        sparse_vectors_config={"sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )

    def vectors(p: BackendPoint) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if p.dense is not None:
            out["dense"] = p.dense
        if p.sparse is not None and len(p.sparse):
            out["sparse"] = models.SparseVector(indices=p.sparse.indices, values=p.sparse.values)
        return out

    structs = [
        [models.PointStruct(id=p.id, vector=vectors(p), payload=p.payload) for p in batch]
        for batch in batches
    ]
    t = time.perf_counter()
    for points in structs:
        client.upsert("floor", points)
    seconds = time.perf_counter() - t
    client.close()
    return seconds


def edge_floor(batches: list[list[BackendPoint]]) -> float:
    """Seconds of raw qdrant-edge ``EdgeShard.update`` calls upserting exactly these points.

    Same engine config and payload indexes as offprompt's default store; the
    ``qdrant_edge.Point`` objects and update operations are built before the clock starts.
    """
    import tempfile

    import qdrant_edge as qe

    with tempfile.TemporaryDirectory() as directory:
        # The same engine configuration as TaskMemory's default (ephemeral) store.
        shard = qe.EdgeShard.create(directory, edge_config(384, True, ephemeral=True))
        for key in ("namespace", "kind", "record_id", "generation"):
            shard.update(qe.UpdateOperation.create_field_index(key, qe.KeywordIndexParams()))
        shard.update(
            qe.UpdateOperation.create_field_index("tenant", qe.KeywordIndexParams(is_tenant=True))
        )
        shard.update(qe.UpdateOperation.create_field_index("seq", qe.PayloadSchemaType.Integer))

        def vectors(p: BackendPoint) -> dict[str, Any]:
            out: dict[str, Any] = {}
            if p.dense is not None:
                out["dense"] = p.dense
            if p.sparse is not None and len(p.sparse):
                out["sparse"] = qe.SparseVector(p.sparse.indices, p.sparse.values)
            return out

        operations = [
            qe.UpdateOperation.upsert_points([qe.Point(p.id, vectors(p), p.payload) for p in batch])
            for batch in batches
        ]
        t = time.perf_counter()
        for operation in operations:
            shard.update(operation)
        seconds = time.perf_counter() - t
        shard.close()
    return seconds


def ingest(sizes: list[float], repeats: int) -> list[dict[str, object]]:
    """TaskMemory vs the raw-upsert floors, interleaved ``repeats`` times; medians."""
    rows = []
    ingest_once(synthetic(0.05), None)  # imports, tokenizer and engine warm
    for mb in sizes:
        text = synthetic(mb, seed=int(mb * 10))
        real_mb = len(text.encode()) / 1e6
        batches: list[list[BackendPoint]] = []
        ingest_once(text, batches)  # untimed: records the points for the floors
        # The recorded points (hundreds of MB at 50 MB) would otherwise be re-scanned by
        # every full garbage collection during the timed TaskMemory runs.
        gc.freeze()
        runs: dict[str, list[float]] = {"tm": [], "sync": [], "client": [], "edge": []}
        for _ in range(repeats):
            runs["tm"].append(ingest_once(text))
            runs["sync"].append(ingest_once(text, index="sync"))
            runs["client"].append(client_floor(batches))
            runs["edge"].append(edge_floor(batches))
        tm, sync, client, edge = (
            statistics.median(runs[k]) for k in ("tm", "sync", "client", "edge")
        )
        # Each run's TaskMemory time is divided by the floors measured right after it,
        # so a slow spell of the machine weighs on both sides of a ratio alike.
        vs_client = statistics.median(
            a / b for a, b in zip(runs["tm"], runs["client"], strict=True)
        )
        vs_edge = statistics.median(a / b for a, b in zip(runs["tm"], runs["edge"], strict=True))
        chunks = sum(len(b) for b in batches)
        gc.unfreeze()
        gt = griptape_ingest(
            [str(p.payload["text"]) for b in batches for p in b], timeout=max(60.0, mb * 30)
        )
        rows.append(
            {
                "MB": round(real_mb, 2),
                "chunks": chunks,
                "TaskMemory s": round(tm, 2),
                "TaskMemory MB/s": round(real_mb / tm, 2),
                "index=sync MB/s": round(real_mb / sync, 2),
                "raw qdrant-client upsert s": round(client, 2),
                "TaskMemory / raw client": round(vs_client, 2),
                "raw edge update s": round(edge, 2),
                "TaskMemory / raw edge": round(vs_edge, 2),
                "griptape": gt,
            }
        )
        print(rows[-1], flush=True)
    return rows


INGEST_NOTES = """\
TaskMemory: `process_output` of a synthetic log (line numbers, levels, words, hex ids)
into a fresh in-memory TaskMemory (embedded edge engine, HashingEmbedder 384-d, BM25,
512-token chunks), timed until `wait_indexed()` returns (the reference itself comes
back at once: indexing runs in the background, the default; "TaskMemory s" is when
`query` is ready). `index=sync MB/s`: the same output with `index="sync"`, which
indexes before `process_output` returns (the v1 path). Floors: exactly the points that run upserted (ids, dense and sparse
vectors, payloads incl. the chunk text), recorded in an untimed run, prebuilt, then
upserted in the same batches: `QdrantClient(":memory:").upsert` (the issue's floor) and
`EdgeShard.update` of the same engine config. Times are medians of 5 interleaved runs;
each ratio is the median of per-run ratios, since this machine's speed drifts by about
+-20% between runs. Griptape: one run, chunks given, hashing embedding driver."""


GRIPTAPE = textwrap.dedent(
    """
    import json, sys, time, zlib
    from attrs import define, field
    from griptape.artifacts import ListArtifact, TextArtifact
    from griptape.drivers.embedding import BaseEmbeddingDriver
    from griptape.drivers.vector.local import LocalVectorStoreDriver
    from griptape.memory.task.task_memory import TaskMemory
    from griptape.memory.task.storage import TextArtifactStorage

    @define
    class HashEmbeddingDriver(BaseEmbeddingDriver):
        model: str = field(default="hash", kw_only=True)
        def try_embed_chunk(self, chunk, **kwargs):
            v = [0.0] * 384
            for w in chunk.lower().split():
                h = zlib.crc32(w.encode())
                v[h % 384] += 1.0 if h & 1 else -1.0
            n = sum(x * x for x in v) ** 0.5 or 1.0
            return [x / n for x in v]

    chunks = json.load(sys.stdin)
    driver = LocalVectorStoreDriver(embedding_driver=HashEmbeddingDriver())
    memory = TaskMemory(artifact_storages={TextArtifact: TextArtifactStorage(vector_store_driver=driver)})
    artifact = ListArtifact([TextArtifact(c) for c in chunks])
    t = time.perf_counter()
    memory.store_artifact("out", artifact)
    print(json.dumps({"seconds": time.perf_counter() - t}))
    """
)


def griptape_ingest(chunks: list[str], timeout: float) -> str:
    mb = sum(len(c.encode()) for c in chunks) / 1e6
    try:
        done = subprocess.run(
            [sys.executable, "-c", GRIPTAPE],
            input=json.dumps(chunks),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (killed)"
    if done.returncode != 0:
        return "error: " + done.stderr.strip().splitlines()[-1][:120]
    seconds = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
    return f"{seconds:.2f} s ({mb / seconds:.2f} MB/s)"


def latency(points: int, engines: list[str], runs: int = 50) -> list[dict[str, object]]:
    rows = []
    rng = random.Random(1)
    emb = HashingEmbedder()
    texts = [" ".join(rng.choice(WORDS) for _ in range(60)) + f" item{i}" for i in range(points)]
    vectors = emb.embed_array(texts).tolist()
    for engine in engines:
        store = QdrantVectorStore(engine=engine)  # type: ignore[arg-type]
        records = [
            VectorRecord(id=str(i), text=t, vector=v, payload={"seq": i})
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        t = time.perf_counter()
        for ns in range(10):
            store.upsert(f"ns{ns}", records[ns::10])
        load = time.perf_counter() - t
        queries = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(runs + 1)]
        timings = []
        for q in queries:
            t = time.perf_counter()
            store.search(f"ns{rng.randrange(10)}", q, top_n=5)
            timings.append((time.perf_counter() - t) * 1000)
        timings = timings[1:]
        rows.append(
            {
                "engine": engine,
                "chunks": points,
                "load s": round(load, 1),
                "median ms": round(statistics.median(timings), 2),
                "p95 ms": round(sorted(timings)[int(0.95 * len(timings)) - 1], 2),
            }
        )
        print(rows[-1], flush=True)
        store.close()
    return rows


def recall(mb: float, needles: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    text = synthetic(mb, seed=3)
    lines = text.split("\n")
    names = [
        f"{rng.choice(['orion', 'vega', 'lyra', 'draco', 'cygnus'])}-{i:03d}"
        for i in range(needles)
    ]
    codes = [
        f"{rng.choice(['amber', 'cobalt', 'ivory', 'scarlet'])} {rng.randint(1000, 9999)}"
        for _ in range(needles)
    ]
    for name, code in zip(names, codes, strict=True):
        lines.insert(
            rng.randrange(len(lines)), f"NOTE: the recovery passphrase of vault {name} is '{code}'."
        )
    memory = TaskMemory()
    memory.process_output("bench", "needles", TextArtifact(value="\n".join(lines), name="hay"))
    rows = []
    for mode in ("hybrid", "dense", "sparse"):
        found = 0
        for name, code in zip(names, codes, strict=True):
            hits = memory.query(
                "hay", f"What is the recovery passphrase of vault {name}?", top_n=5, mode=mode
            )
            found += any(code in h.value and name in h.value for h in hits.value)
        rows.append(
            {"mode": mode, "needles": needles, "MB": mb, "recall@5": round(found / needles, 3)}
        )
        print(rows[-1], flush=True)
    return rows


def table(rows: list[dict[str, object]]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    parser.add_argument(
        "--latency-only",
        type=int,
        metavar="N",
        help="only measure query latency at N chunks (edge)",
    )
    parser.add_argument(
        "--ingest-only",
        type=float,
        nargs="+",
        metavar="MB",
        help="only measure ingest at these sizes (MB)",
    )
    args = parser.parse_args()
    if args.latency_only:
        latency(args.latency_only, ["edge"])
        return
    if args.ingest_only:
        print(table(ingest(args.ingest_only, repeats=5)))
        return
    if args.quick:
        ing = ingest([0.5, 2.0], repeats=1)
        lat = latency(2_000, ["edge", "client"], runs=20)
        rec = recall(1.0, 20)
    else:
        ing = ingest([1.0, 10.0, 50.0], repeats=5)
        lat = latency(10_000, ["edge", "client"]) + latency(100_000, ["edge"])
        rec = recall(10.0, 100)
    report = "\n\n".join(
        [
            "## Ingest (TaskMemory vs raw upsert floor vs Griptape)",
            table(ing),
            INGEST_NOTES,
            "## Hybrid query latency (namespace-filtered, top 5)",
            table(lat),
            "## Needle recall@5",
            table(rec),
        ]
    )
    print(report)
    if not args.quick:
        RESULTS.write_text("# Task memory benchmark\n\n" + report + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
