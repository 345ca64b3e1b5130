"""Shared off-prompt benchmark (issue 29): stored outputs that every process can read.

Side by side in one run, on one throwaway PostgreSQL cluster (``tests/postgres_testing.py``,
``fsync=off``, unix socket) and one disk:

1. **Time to reference** (``OffpromptMiddleware.wrap_tool_call`` on a ToolMessage of 1,
   10, 50, 100 MB, as ``bench_offprompt.py`` times it) for offprompt in process
   (``TaskMemory()``), with ``path=`` (the shared SQLite directory) and with
   ``store=PostgresStore(dsn)``, against deepagents' eviction
   (``FilesystemMiddleware``) with ``FilesystemBackend`` (disk, no fsync) and with
   ``StoreBackend`` over LangGraph's ``PostgresStore`` on the same server; plus the
   floor of a bare fsync'd file write of the same bytes. Median of ``--reps`` runs,
   the systems interleaved within each run.
2. **A second process**: a writer process stores a 50 MB output and exits; a reader
   process opens the same memory and times its first and next ``grep_memory`` (vs the
   writer's own two greps); a 10 MB output likewise: the writer's time from storing
   until ``query`` answers vs the reader's time from opening until its first
   ``query_memory`` answers. For ``path=`` and for PostgreSQL.
3. **Concurrent stores**: 4 processes each store ``--outputs`` outputs of 1 MB at once
   (started together at a barrier) vs one process storing all of them: outputs per
   second and p95 time to reference, for ``path=`` and for PostgreSQL.
4. **Bytes**: a fresh process stores ten 20 MB logs with ``path=`` and waits for the
   index; bytes on disk (per top-level entry) and the process's anonymous and
   file-backed resident memory (``/proc/self/smaps_rollup``) vs the raw text.

Every process is a fresh interpreter where it matters (2-4), so nothing is cached
across them but the page cache. ``--quick`` shrinks every size (a smoke run, no file);
a full run writes ``benchmarks/RESULTS_shared.md`` with the load average at its start
and end.

    python benchmarks/bench_shared.py            # writes RESULTS_shared.md
    python benchmarks/bench_shared.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_offprompt import make_logs, timed, tool_request  # noqa: E402

RESULTS = HERE / "RESULTS_shared.md"
ANALYSIS = "<!-- analysis: written by hand, kept when the benchmark reruns -->"
MB = 1_000_000
QUERY = "status=404 search"
OURS = ("offprompt in process", "offprompt path=", "offprompt PostgreSQL")
THEIRS = ("deepagents FilesystemBackend", "deepagents StoreBackend (PostgreSQL)")
FLOOR = "floor: bare fsync'd write"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def logs(mb: float, seed: int) -> str:
    return "".join(make_logs(int(mb * MB), seed=seed))


@contextlib.contextmanager
def open_memory(where: str, root: Path, dsn: str | None) -> Iterator[Any]:
    """The task memory of one process: in process, ``path=`` a shared directory, or on
    PostgreSQL; closed (with the store it opened) on exit."""
    from offprompt.task_memory import TaskMemory

    with contextlib.ExitStack() as stack:
        if where == "memory":
            memory = TaskMemory()
        elif where == "path":
            memory = TaskMemory(path=root)
        else:
            from offprompt.stores import PostgresStore

            store = PostgresStore(dsn)
            stack.callback(store.close)
            memory = TaskMemory(store=store)
        stack.callback(memory.close)
        yield memory


def store_one(memory: Any, text: str) -> tuple[float, str]:
    """Time to reference of ``text`` through the middleware; the namespace it got."""
    from langchain_core.messages import ToolMessage
    from offprompt_langchain import OffpromptMiddleware

    call_id = f"call_{uuid.uuid4().hex[:12]}"
    message = ToolMessage(content=text, tool_call_id=call_id, name="fetch_logs")
    middleware = OffpromptMiddleware(memory, min_tokens=500)
    seconds, result = timed(
        lambda: middleware.wrap_tool_call(tool_request(call_id), lambda r: message)
    )
    return seconds, result.artifact["artifact_namespace"]


# -- 1: time to reference, side by side -----------------------------------------------------


class Systems:
    """The five systems and the floor, each ready to store one output and forget it."""

    def __init__(self, tmp: Path, dsn: str) -> None:
        from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

        self.tmp = tmp
        self.dsn = dsn
        self._lg = contextlib.ExitStack()
        self.lg_store = self._lg.enter_context(LangGraphPostgresStore.from_conn_string(dsn))
        self.lg_store.setup()

    def close(self) -> None:
        self._lg.close()

    def run(self, system: str, text: str) -> float:
        root = self.tmp / f"ref-{uuid.uuid4().hex[:8]}"
        # Every system starts with the previous one's writes on disk: otherwise the one
        # after a 50 MB PostgreSQL or fsync-free write pays for that write's writeback.
        os.sync()
        try:
            if system == FLOOR:
                data = text.encode()
                root.mkdir()
                start = time.perf_counter()
                with open(root / "out", "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                return time.perf_counter() - start
            if system in THEIRS:
                return self._deepagents(system, root, text)
            where = {OURS[0]: "memory", OURS[1]: "path", OURS[2]: "postgres"}[system]
            with open_memory(where, root, self.dsn) as memory:
                seconds, namespace = store_one(memory, text)
                if where == "postgres":
                    memory.delete(namespace)  # keep the server's tables the same size
            return seconds
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _deepagents(self, system: str, root: Path, text: str) -> float:
        from deepagents.backends import FilesystemBackend, StoreBackend
        from deepagents.middleware.filesystem import FilesystemMiddleware
        from langchain_core.messages import ToolMessage

        backend: Any = (
            FilesystemBackend(root_dir=root, virtual_mode=True)
            if system == THEIRS[0]
            else StoreBackend(store=self.lg_store, namespace=lambda rt: ("bench",))
        )
        middleware = FilesystemMiddleware(backend=backend)
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        message = ToolMessage(content=text, tool_call_id=call_id, name="fetch_logs")
        seconds, result = timed(
            lambda: middleware.wrap_tool_call(tool_request(call_id), lambda r: message)
        )
        assert "large_tool_results" in str(result.content), "deepagents did not evict"
        if system == THEIRS[1]:
            for item in self.lg_store.search(("bench",), limit=100):
                self.lg_store.delete(("bench",), item.key)
        return seconds


def reference_runs(systems: Systems, sizes: list[int], reps: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for size in sizes:
        text = logs(size, seed=size)
        times: dict[str, list[float]] = {s: [] for s in (*OURS, *THEIRS, FLOOR)}
        failed: dict[str, str] = {}
        for _ in range(reps):
            for system in times:
                if system in failed:
                    continue
                try:
                    times[system].append(systems.run(system, text))
                except Exception as exc:  # reported in the table, not hidden
                    failed[system] = f"{type(exc).__name__}: {str(exc)[:160]}"
        for system, values in times.items():
            row = {"mb": size, "system": system, "runs": len(values), "error": failed.get(system)}
            if values:
                row.update(median=statistics.median(values), best=min(values))
            rows.append(row)
            shown = f"{row['median']:.3f} s" if values else row["error"]
            print(f"  {size:>4} MB  {system:<40} {shown}", flush=True)
        del text
        gc.collect()
    return rows


# -- children: 2, 3 and 4 run in fresh processes -------------------------------------------


def child(args: dict[str, Any]) -> dict[str, Any]:
    """One measuring process (``--child JSON``); returns what it measured."""
    root = Path(args["root"])
    with contextlib.ExitStack() as stack:
        start_open = time.perf_counter()
        memory = stack.enter_context(open_memory(args["where"], root, args.get("dsn")))
        opened = time.perf_counter() - start_open
        return _measure(args, memory, opened)


def _measure(args: dict[str, Any], memory: Any, opened: float) -> dict[str, Any]:
    from offprompt.task_memory.tools import memory_tool_specs

    role = args["role"]
    root = Path(args["root"])
    out: dict[str, Any] = {"open": opened}
    tools = {s.name: s for s in memory_tool_specs(memory)}

    def grep(namespace: str) -> float:
        seconds, answer = timed(
            lambda: tools["grep_memory"].run(
                artifact_namespace=namespace, pattern="status=404", max_matches=5
            )
        )
        assert "matching line(s)" in answer, answer[:300]
        return seconds

    def query(namespace: str) -> float:
        seconds, answer = timed(
            lambda: tools["query_memory"].run(artifact_namespace=namespace, query=QUERY, top_n=3)
        )
        assert "passage(s) from" in answer, answer[:300]
        return seconds

    if role == "writer":
        text = logs(args["mb"], seed=args["seed"])
        started = time.perf_counter()
        out["reference"], namespace = store_one(memory, text)
        out["namespace"] = namespace
        if args.get("query"):
            query(namespace)  # waits for this process's background index
            out["query_ready"] = time.perf_counter() - started
        else:
            out["grep_first"], out["grep_next"] = grep(namespace), grep(namespace)
    elif role == "reader":
        namespace = args["namespace"]
        if args.get("query"):
            out["query_first"] = query(namespace)
            out["query_from_open"] = opened + out["query_first"]
        else:
            out["grep_first"], out["grep_next"] = grep(namespace), grep(namespace)
    elif role == "concurrent":
        texts = [logs(1, seed=args["seed"] + i) for i in range(args["outputs"])]
        go = Path(args["go"])
        (root.parent / f"ready-{os.getpid()}").touch()
        while not go.exists():
            time.sleep(0.005)
        began = time.time()
        out["references"] = [store_one(memory, t)[0] for t in texts]
        out["began"], out["ended"] = began, time.time()
    elif role == "bytes":
        out.update(bytes_run(memory, root, args["logs"], args["mb"]))
    return out


def anonymous_kb() -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            fields[name] = int(rest.split()[0])
    return {
        "rss": fields.get("Rss", 0),
        "anonymous": fields.get("Anonymous", 0),
        "file": fields.get("Rss", 0) - fields.get("Anonymous", 0),
    }


def disk_bytes(root: Path) -> dict[str, int]:
    """Allocated bytes under ``root`` by top-level entry (st_blocks, what ``du`` counts)."""
    sizes: dict[str, int] = {}
    for entry in root.iterdir():
        files = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
        sizes[entry.name] = sum(p.stat().st_blocks * 512 for p in files)
    return sizes


def bytes_run(memory: Any, root: Path, count: int, mb: float) -> dict[str, Any]:
    gc.collect()
    before = anonymous_kb()
    raw = 0
    started = time.perf_counter()
    for i in range(count):
        text = logs(mb, seed=1000 + i)
        raw += len(text.encode())
        store_one(memory, text)
        del text
    assert memory.wait_indexed(timeout=3600), "indexing did not finish within an hour"
    indexed = time.perf_counter() - started
    gc.collect()
    return {
        "raw": raw,
        "indexed_s": indexed,
        "before_kb": before,
        "after_kb": anonymous_kb(),
        "disk": disk_bytes(root),
    }


def spawn(args: dict[str, Any], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--child", json.dumps(args)],
        env=None if env is None else {**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def collect(process: subprocess.Popen[str], timeout: float = 3600) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=timeout)
    if process.returncode != 0:
        last = [x for x in stderr.splitlines() if x.strip()][-1:] or ["(no stderr)"]
        raise RuntimeError(f"child failed ({process.returncode}): {last[0].strip()}")
    line = [x for x in stdout.splitlines() if x.startswith("RESULT ")][-1]
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def run_child(args: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    return collect(spawn(args, env))


# -- 2: a second process ---------------------------------------------------------------------


def second_process(where: str, tmp: Path, dsn: str, grep_mb: int, query_mb: int) -> dict[str, Any]:
    root = tmp / f"second-{where}"
    base = {"root": str(root), "where": where, "dsn": dsn}
    out: dict[str, Any] = {"where": where, "grep_mb": grep_mb, "query_mb": query_mb}
    try:
        writer = run_child({**base, "role": "writer", "mb": grep_mb, "seed": 50})
        reader = run_child({**base, "role": "reader", "namespace": writer["namespace"]})
        out["writer_grep"] = writer
        out["reader_grep"] = reader
        writer = run_child({**base, "role": "writer", "mb": query_mb, "seed": 10, "query": True})
        reader = run_child(
            {**base, "role": "reader", "namespace": writer["namespace"], "query": True}
        )
        out["writer_query"] = writer
        out["reader_query"] = reader
    except Exception as exc:  # reported in the table, not hidden
        out["error"] = f"{type(exc).__name__}: {str(exc)[-600:]}"
    print(f"  {where}: {json.dumps(out)[:600]}", flush=True)
    return out


# -- 3: concurrent stores --------------------------------------------------------------------


def concurrent(where: str, tmp: Path, dsn: str, processes: int, outputs: int) -> dict[str, Any]:
    root = tmp / f"concurrent-{where}-{processes}"
    root.mkdir(parents=True, exist_ok=True)
    go = root / "go"
    per = outputs if processes > 1 else outputs * 4  # one process stores all four's outputs
    children = [
        spawn(
            {
                "role": "concurrent",
                "root": str(root / "memory"),
                "where": where,
                "dsn": dsn,
                "outputs": per,
                "seed": 100 * i,
                "go": str(go),
            }
        )
        for i in range(processes)
    ]
    out: dict[str, Any] = {"where": where, "processes": processes, "outputs": per * processes}
    try:
        deadline = time.monotonic() + 600
        while len(list(root.glob("ready-*"))) < processes:
            if any(c.poll() is not None for c in children) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        go.touch()
        results = [collect(c) for c in children]
        references = [s for r in results for s in r["references"]]
        elapsed = max(r["ended"] for r in results) - min(r["began"] for r in results)
        out.update(
            outputs_per_s=len(references) / elapsed,
            p95=_p95(references),
            median=statistics.median(references),
            elapsed=elapsed,
        )
    except Exception as exc:  # reported in the table, not hidden
        out["error"] = f"{type(exc).__name__}: {str(exc)[-600:]}"
        for c in children:
            c.kill()
    finally:
        for ready in root.glob("ready-*"):
            ready.unlink()
        go.unlink(missing_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    print(f"  {where} x{processes}: {out}", flush=True)
    return out


# -- report ------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")[:300]


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} s"


def report(data: dict[str, Any]) -> str:
    out = [
        "# Shared off-prompt benchmark (`benchmarks/bench_shared.py`)",
        "",
        f"One run, `{data['command']}`, {data['when']}; 2 shared CPU cores; load average"
        f" {data['load_start']} at the start and {data['load_end']} at the end (other work"
        " ran on the machine: compare the ratios, not the absolute times). PostgreSQL"
        f" {data['server']} (throwaway cluster, fsync=off, unix socket); deepagents"
        f" {data['deepagents']}.",
        "",
        f"## 1. Time to reference (median of {data['reps']} runs, systems interleaved)",
        "",
        "| size | system | median | best | vs deepagents (same storage) |",
        "|---:|---|---:|---:|---:|",
    ]
    by = {(r["system"], r["mb"]): r for r in data["reference"]}
    anchor = {OURS[0]: THEIRS[0], OURS[1]: THEIRS[0], OURS[2]: THEIRS[1], FLOOR: THEIRS[0]}
    for row in data["reference"]:
        if row.get("error") and "median" not in row:
            out.append(f"| {row['mb']} MB | {row['system']} | failed: {_cell(row['error'])} | | |")
            continue
        ref = by.get((anchor.get(row["system"], ""), row["mb"]))
        ratio = f"{row['median'] / ref['median']:.2f}x" if ref and ref.get("median") else ""
        out.append(
            f"| {row['mb']} MB | {row['system']} | {row['median']:.3f} s | {row['best']:.3f} s | {ratio} |"
        )
    out += [
        "",
        "## 2. A second process reads what another stored",
        "",
        "| storage | writer: grep 1st / next | reader: open | reader: grep 1st / next |"
        " writer: store until query answers | reader: open until 1st query answers | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["second"]:
        if "error" in row:
            out.append(f"| {row['where']} | failed: {_cell(row['error'])} | | | | | |")
            continue
        wg, rg, wq, rq = (
            row["writer_grep"],
            row["reader_grep"],
            row["writer_query"],
            row["reader_query"],
        )
        out.append(
            f"| {row['where']} | {_s(wg['grep_first'])} / {_s(wg['grep_next'])}"
            f" | {_s(rg['open'])} | {_s(rg['grep_first'])} / {_s(rg['grep_next'])}"
            f" | {_s(wq['query_ready'])} | {_s(rq['query_from_open'])}"
            f" | {rq['query_from_open'] / wq['query_ready']:.2f}x |"
        )
    second = data["second"][0] if data["second"] else {}
    out += [
        "",
        f"grep on a {second.get('grep_mb', '?')} MB output; query on a"
        f" {second.get('query_mb', '?')} MB output (the reader's time includes opening the"
        " memory and whatever index it builds or catches up from the stored text).",
        "",
        "## 3. Concurrent stores (1 MB outputs)",
        "",
        "| storage | processes | outputs | outputs/s | median | p95 time to reference |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in data["concurrent"]:
        if "error" in row:
            out.append(
                f"| {row['where']} | {row['processes']} | failed: {_cell(row['error'])} | | | |"
            )
            continue
        out.append(
            f"| {row['where']} | {row['processes']} | {row['outputs']} | {row['outputs_per_s']:.1f}"
            f" | {row['median']:.3f} s | {row['p95']:.3f} s |"
        )
    b = data["bytes"]
    out += ["", "## 4. Bytes after storing and indexing with `path=`", ""]
    if "error" in b:
        out.append(f"failed: {_cell(b['error'])}")
    else:
        raw = b["raw"]
        disk = sum(b["disk"].values())
        after, before = b["after_kb"], b["before_kb"]
        out += [
            f"{b['logs']} logs of {b['mb']} MB ({raw / MB:.0f} MB of raw text), stored and indexed"
            f" in {b['indexed_s']:.0f} s by one fresh process.",
            "",
            "| what | MB | x raw text |",
            "|---|---:|---:|",
            f"| on disk, total | {disk / MB:.0f} | {disk / raw:.2f}x |",
        ]
        out += [
            f"| on disk, `{name}` | {size / MB:.0f} | {size / raw:.2f}x |"
            for name, size in sorted(b["disk"].items(), key=lambda kv: -kv[1])
        ]
        out += [
            f"| anonymous memory of the process | {after['anonymous'] * 1024 / MB:.0f} |"
            f" {after['anonymous'] * 1024 / raw:.2f}x |",
            f"| anonymous memory added by the stores (minus {before['anonymous'] * 1024 / MB:.0f}"
            f" MB after opening) | {(after['anonymous'] - before['anonymous']) * 1024 / MB:.0f} |"
            f" {(after['anonymous'] - before['anonymous']) * 1024 / raw:.2f}x |",
            f"| file-backed resident (mapped) | {after['file'] * 1024 / MB:.0f} |"
            f" {after['file'] * 1024 / raw:.2f}x |",
        ]
        two = b.get("arena2_after_kb")
        if two is not None:
            out.append(
                f"| anonymous memory, same run with `MALLOC_ARENA_MAX=2` |"
                f" {two['anonymous'] * 1024 / MB:.0f} | {two['anonymous'] * 1024 / raw:.2f}x |"
            )
    out += ["", "## Targets (issue 29)", "", "| target | measured | met |", "|---|---|---|"]
    out += [f"| {t} | {m} | {ok} |" for t, m, ok in targets(data)]
    return "\n".join(out) + "\n"


def targets(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each target of the issue, what this run measured for it, and whether it is met."""
    rows: list[tuple[str, str, str]] = []
    by = {(r["system"], r["mb"]): r.get("median") for r in data["reference"]}

    def check(target: str, value: float | None, limit: float | None, shown: str) -> None:
        if value is None or limit is None:
            rows.append((target, "not measured (failed or not run)", "NO"))
        else:
            rows.append((target, shown, "yes" if value <= limit else "NO"))

    ours, fs = by.get((OURS[1], 50)), by.get((THEIRS[0], 50))
    check(
        "50 MB, `path=`: <= 1.4x deepagents FilesystemBackend",
        ours / fs if ours and fs else None,
        1.4,
        f"{ours or 0:.3f} s vs {fs or 0:.3f} s: {(ours or 0) / (fs or 1):.2f}x",
    )
    pg, sb = by.get((OURS[2], 50)), by.get((THEIRS[1], 50))
    check("50 MB, PostgreSQL: <= 1.0 s", pg, 1.0, f"{pg or 0:.3f} s")
    check(
        "50 MB, PostgreSQL: <= deepagents StoreBackend on the same server",
        pg / sb if pg and sb else None,
        1.0,
        f"{pg or 0:.3f} s vs {sb or 0:.3f} s: {(pg or 0) / (sb or 1):.2f}x",
    )
    for row in data["second"]:
        if "error" in row:
            rows.append((f"second process ({row['where']})", _cell(row["error"]), "NO"))
            continue
        wg, rg = row["writer_grep"], row["reader_grep"]
        mb = row["grep_mb"]
        check(
            f"first grep in another process, {mb} MB, {row['where']}: <= 0.5 s",
            rg["grep_first"],
            0.5,
            f"{rg['grep_first']:.3f} s",
        )
        rows.append(
            (
                f"later greps in another process as in the storing one ({row['where']})",
                f"{mb / rg['grep_next']:.0f} MB/s vs {mb / wg['grep_next']:.0f} MB/s in the writer",
                "yes" if rg["grep_next"] <= 1.1 * wg["grep_next"] else "NO",
            )
        )
        wq, rq = row["writer_query"], row["reader_query"]
        check(
            f"first query in another process, {row['query_mb']} MB, {row['where']}:"
            " <= 2x the writer's time until query is ready",
            rq["query_from_open"] / wq["query_ready"],
            2.0,
            f"{rq['query_from_open']:.2f} s vs {wq['query_ready']:.2f} s:"
            f" {rq['query_from_open'] / wq['query_ready']:.2f}x",
        )
    b = data["bytes"]
    if "error" in b:
        rows.append(("bytes", _cell(b["error"]), "NO"))
    else:
        disk = sum(b["disk"].values()) / b["raw"]
        anon = b["after_kb"]["anonymous"] * 1024 / b["raw"]
        check("bytes on disk <= 2x the text", disk, 2.0, f"{disk:.2f}x")
        check("anonymous memory <= 1.5x the text", anon, 1.5, f"{anon:.2f}x")
    return rows


@contextlib.contextmanager
def cluster() -> Iterator[Any]:
    from postgres_testing import start_cluster

    server = start_cluster(listen_addresses="")
    try:
        yield server
    finally:
        server.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--reps", type=int, default=3, help="runs per size in section 1")
    parser.add_argument("--outputs", type=int, default=10, help="outputs per process in 3")
    parser.add_argument("--only", default="1234", help="sections to run, e.g. 24")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))), flush=True)
        return
    import deepagents

    # A run stopped with SIGTERM still stops its PostgreSQL cluster (the finally blocks run).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    quick = args.quick
    full = not quick and args.only == "1234"
    data: dict[str, Any] = {
        "command": "python benchmarks/bench_shared.py" + "".join(" " + a for a in sys.argv[1:]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_start": loadavg(),
        "deepagents": getattr(deepagents, "__version__", "?"),
        "reps": args.reps,
        "reference": [],
        "second": [],
        "concurrent": [],
        "bytes": {"error": "not run"},
    }
    print(f"load average {data['load_start']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as name, cluster() as server:
        tmp = Path(name)
        data["server"] = str(server.execute("SHOW server_version")[0][0])
        dsn = server.dsn_for(server.create_database())
        if "1" in args.only:
            print("1. time to reference", flush=True)
            systems = Systems(tmp, dsn)
            try:
                data["reference"] = reference_runs(
                    systems, [1, 5] if quick else [1, 10, 50, 100], args.reps
                )
            finally:
                systems.close()
            save(data, write=full)
        if "2" in args.only:
            print("2. a second process", flush=True)
            data["second"] = [
                second_process(where, tmp, dsn, 5 if quick else 50, 2 if quick else 10)
                for where in ("path", "postgres")
            ]
            save(data, write=full)
        if "3" in args.only:
            print("3. concurrent stores", flush=True)
            outputs = 2 if quick else args.outputs
            data["concurrent"] = [
                concurrent(where, tmp, dsn, processes, outputs)
                for where in ("path", "postgres")
                for processes in (1, 4)
            ]
            save(data, write=full)
        if "4" in args.only:
            print("4. bytes", flush=True)
            count, mb = (3, 2) if quick else (10, 20)
            try:
                job = {"role": "bytes", "where": "path", "logs": count, "mb": mb}
                result = run_child({**job, "root": str(tmp / "bytes")})
                data["bytes"] = {**result, "logs": count, "mb": mb}
                # The same in a process limited to two malloc arenas (glibc): the heap
                # each indexing thread's arena keeps is most of the run-to-run spread.
                two = run_child(
                    {**job, "root": str(tmp / "bytes-arenas")}, env={"MALLOC_ARENA_MAX": "2"}
                )
                data["bytes"]["arena2_after_kb"] = two["after_kb"]
            except Exception as exc:  # reported in the table, not hidden
                data["bytes"] = {"error": f"{type(exc).__name__}: {str(exc)[-600:]}"}
            print(f"  {data['bytes']}", flush=True)
    print(save(data, write=full))


def save(data: dict[str, Any], *, write: bool) -> str:
    """The report of what has run so far; into RESULTS_shared.md when ``write``."""
    data["load_end"] = loadavg()
    Path(tempfile.gettempdir(), "bench_shared.json").write_text(json.dumps(data, default=str))
    text = report(data)
    if write:
        kept = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
        if ANALYSIS in kept:
            text += "\n" + ANALYSIS + kept.split(ANALYSIS, 1)[1]
        RESULTS.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main()
