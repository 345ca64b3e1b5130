"""Off-prompt v2 benchmark: the reference, exact search and JSON, side by side in one run.

Compared, in this one process, on the same outputs:

* **offprompt v2**: ``OffpromptMiddleware`` over ``TaskMemory()`` (raw output durable
  first, card, background indexing), in memory and with ``path=``;
* **offprompt v1 path**: the same middleware over ``TaskMemory(index="sync",
  preview=False)`` (index before returning, bare sentence);
* **deepagents**: the real ``deepagents`` package's large-result eviction,
  ``FilesystemMiddleware(backend=FilesystemBackend(root_dir=..., virtual_mode=True))``
  (evicts to disk, answers a head/tail stub), and its ``grep`` tool's backend search.

Measured:

1. time to reference (the middleware's ``wrap_tool_call`` on a ToolMessage of 1, 10,
   50, 100 MB) and, for offprompt, the time until ``query`` is ready;
2. o200k tokens of what the model receives instead of the output;
3. 100 exact-string needles (UUIDs, error codes, hex ids) in 10 MB of logs:
   ``grep_memory`` vs ``query_memory`` (recall@5) vs deepagents ``grep``, and the
   characters each lookup returns;
4. JSON tasks on a 20 MB document (a count, a field at a path, a filtered list):
   characters the model receives with ``json_memory`` vs with ``read_memory`` pages;
5. grep throughput (MB/s) over a stored output: ``TaskMemory.grep`` literal and
   regex vs deepagents' backend ``grep``.

``--quick`` shrinks every size (a smoke run, not for the results file). A full run
writes ``benchmarks/RESULTS_offprompt.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepagents.backends import FilesystemBackend
from deepagents.middleware.filesystem import (
    FilesystemMiddleware,
    _format_grep_tool_result,
    _grep_backend,
)
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from offprompt_langchain import OffpromptMiddleware

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import MemoryToolSpec, memory_tool_specs
from offprompt.tokens import default_tokenizer

RESULTS = Path(__file__).with_name("RESULTS_offprompt.md")
MB = 1_000_000
TOKENIZER = default_tokenizer()
SERVICES = ["api", "auth", "billing", "search", "cache", "queue", "db", "edge"]


def make_logs(size: int, seed: int = 0) -> list[str]:
    """Log lines (with their newlines) totalling about ``size`` bytes."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        line = (
            f"2026-11-30T03:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z "
            f"{rng.choice(('INFO', 'INFO', 'INFO', 'WARN', 'DEBUG'))} "
            f"{rng.choice(SERVICES)} req={i} latency_ms={rng.randint(1, 900)} "
            f"status={rng.choice((200, 200, 200, 204, 301, 404))} span={rng.getrandbits(48):012x}\n"
        )
        lines.append(line)
        total += len(line)
        i += 1
    return lines


def tool_request(call_id: str) -> ToolCallRequest:
    call = {"name": "fetch_logs", "args": {}, "id": call_id, "type": "tool_call"}
    return ToolCallRequest(tool_call=call, tool=None, state={"messages": []}, runtime=None)  # type: ignore[arg-type]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


# -- 1 + 2: time to reference, tokens of the reference -------------------------------------


def reference_runs(sizes: list[int], tmp: Path, max_index_mb: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for size_mb in sizes:
        text = "".join(make_logs(size_mb * MB, seed=size_mb))
        index = size_mb <= max_index_mb  # indexing 100 MB takes minutes on 2 shared cores
        for system in ("offprompt v2", "offprompt v1 (sync, bare)", "deepagents eviction"):
            if system.startswith("offprompt v1") and not index:
                continue
            for where in ("memory", "path"):
                if system == "deepagents eviction" and where == "memory":
                    continue  # its in-state backend needs a running graph; it evicts to disk here
                rows.append(_reference_row(system, where, size_mb, text, tmp, wait=index))
                print(f"  {size_mb:>4} MB  {system:<26} {where:<6} {rows[-1]['seconds']:.3f} s")
        del text
        gc.collect()
    return rows


def _reference_row(
    system: str, where: str, size_mb: int, text: str, tmp: Path, *, wait: bool
) -> dict[str, Any]:
    call_id = f"call_{uuid.uuid4().hex[:8]}"
    message = ToolMessage(content=text, tool_call_id=call_id, name="fetch_logs")
    root = tmp / f"{system[:10].replace(' ', '_')}-{where}-{size_mb}-{call_id}"
    memory: TaskMemory | None = None
    if system == "deepagents eviction":
        middleware: Any = FilesystemMiddleware(
            backend=FilesystemBackend(root_dir=root, virtual_mode=True)
        )
    else:
        options: dict[str, Any] = {"path": root} if where == "path" else {}
        if system.startswith("offprompt v1"):
            options.update(index="sync", preview=False)
        memory = TaskMemory(**options)
        middleware = OffpromptMiddleware(memory, min_tokens=500)
    seconds, result = timed(
        lambda: middleware.wrap_tool_call(tool_request(call_id), lambda r: message)
    )
    ready: float | None = None
    if memory is not None:
        if wait:
            extra, indexed = timed(lambda: memory.wait_indexed(timeout=900))
            assert indexed, "indexing did not finish"
            ready = seconds + extra
            namespace = result.artifact["artifact_namespace"]
            assert memory.query(namespace, "status=404 search", top_n=1).value
        memory.close()
    content = str(result.content)
    shutil.rmtree(root, ignore_errors=True)
    return {
        "system": system,
        "where": where,
        "mb": size_mb,
        "seconds": seconds,
        "query_ready": ready,
        "indexed": memory is not None and wait,
        "tokens": TOKENIZER.count(content),
        "chars": len(content),
        "content": content,
    }


# -- 3: needles ---------------------------------------------------------------------------


def needle_runs(size_mb: int, tmp: Path) -> dict[str, Any]:
    rng = random.Random(7)
    lines = make_logs(size_mb * MB, seed=99)
    needles: list[str] = []
    for k in range(100):
        kind = k % 3
        needle = (
            str(uuid.UUID(int=rng.getrandbits(128)))
            if kind == 0
            else f"ERR-{rng.randint(10000, 99999)}-{rng.choice('ABCDEFGH')}"
            if kind == 1
            else f"0x{rng.getrandbits(64):016x}"
        )
        needles.append(needle)
        at = rng.randrange(len(lines))
        lines[at] = lines[at].rstrip("\n") + f" ref={needle}\n"
    text = "".join(lines)
    memory = TaskMemory(index="sync")
    tools = {s.name: s for s in memory_tool_specs(memory)}
    middleware = OffpromptMiddleware(memory, min_tokens=500)
    stored = middleware.wrap_tool_call(
        tool_request("call_needles"),
        lambda r: ToolMessage(content=text, tool_call_id="call_needles", name="fetch_logs"),
    )
    namespace = stored.artifact["artifact_namespace"]
    root = tmp / "deepagents-needles"
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    backend.write("/large_tool_results/call_needles", text)

    def ours(name: str, needle: str) -> tuple[bool, int, float]:
        args = {"artifact_namespace": namespace}
        args.update({"pattern": needle} if name == "grep_memory" else {"query": needle})
        seconds, answer = timed(lambda: tools[name].run(**args))
        return needle in answer, len(answer), seconds

    def theirs(needle: str) -> tuple[bool, int, float]:
        def run() -> str:
            result = _grep_backend(backend, needle, "/large_tool_results", None, 100)
            formatted, _ = _format_grep_tool_result(
                result, "content", needle, backend_had_matches=bool(result.matches)
            )
            return formatted

        seconds, answer = timed(run)
        return needle in answer, len(answer), seconds

    rows = {
        "grep_memory": [ours("grep_memory", n) for n in needles],
        "query_memory (top 5)": [ours("query_memory", n) for n in needles],
        "deepagents grep": [theirs(n) for n in needles],
    }
    summary: dict[str, Any] = {}
    for name, found in rows.items():
        summary[name] = {
            "found": sum(f for f, _, _ in found),
            "chars_median": statistics.median(c for _, c, _ in found),
            "ms_median": 1000 * statistics.median(s for _, _, s in found),
        }
        print(f"  {name:<22} {summary[name]}")
    print("5. grep throughput (over the same stored output)")
    grep = grep_throughput(memory, namespace, backend)
    memory.close()
    shutil.rmtree(root, ignore_errors=True)
    return {"mb": size_mb, "needles": len(needles), "rows": summary, "grep": grep}


# -- 4: JSON ------------------------------------------------------------------------------


def json_runs(size_mb: int) -> dict[str, Any]:
    rng = random.Random(3)
    items: list[dict[str, Any]] = []
    total = 0
    while total < size_mb * MB:
        item = {
            "id": f"job-{len(items):07d}",
            "status": rng.choice(("ok", "ok", "ok", "ok", "failed", "retrying")),
            "owner": {"name": f"user{rng.randint(0, 9999)}", "team": rng.choice(SERVICES)},
            "tags": [rng.choice(("nightly", "adhoc", "gpu", "cpu")) for _ in range(3)],
            "metrics": {"seconds": rng.randint(1, 5000), "retries": rng.randint(0, 5)},
        }
        items.append(item)
        total += len(json.dumps(item)) + 2
    document = json.dumps({"items": items, "next_page": None})
    path_index = len(items) * 2 // 3
    truth = {
        "count": sum(1 for i in items if i["status"] == "failed"),
        "path": items[path_index]["owner"]["name"],
        "filter": [
            i["id"]
            for i in items
            if i["owner"]["team"] == "billing"
            and i["status"] == "failed"
            and i["metrics"]["retries"] == 5
            and i["metrics"]["seconds"] > 4000
        ],
    }
    tasks = {
        "count": "length(items[?status=='failed'])",
        "path": f"items[{path_index}].owner.name",
        "filter": "items[?owner.team=='billing' && status=='failed' && metrics.retries==`5`"
        " && metrics.seconds>`4000`].id",
    }
    # json_memory and read_memory work on the raw text: no need to wait for the index.
    memory = TaskMemory()
    tools = {s.name: s for s in memory_tool_specs(memory)}
    stored = OffpromptMiddleware(memory, min_tokens=500).wrap_tool_call(
        tool_request("call_json"),
        lambda r: ToolMessage(content=document, tool_call_id="call_json", name="list_jobs"),
    )
    namespace = stored.artifact["artifact_namespace"]
    results: dict[str, Any] = {"mb": round(len(document) / MB, 1), "items": len(items), "tasks": {}}
    for task, expression in tasks.items():
        seconds, answer = timed(
            lambda e=expression: tools["json_memory"].run(
                artifact_namespace=namespace, expression=e
            )
        )
        body = answer.split("\n", 1)[1]
        correct = "[... cut" not in body and json.loads(body) == truth[task]
        results["tasks"][task] = {
            "json_memory_chars": len(answer),
            "seconds": seconds,
            "correct": correct,
        }
    # With pages only, a count or a filter needs every page; a path needs the pages up to it.
    target = json.dumps(items[path_index])[:40]
    chars_all, chars_path, pages = _page_through(tools["read_memory"], namespace, target)
    results["pages"] = pages
    for task in tasks:
        results["tasks"][task]["page_chars"] = chars_path if task == "path" else chars_all
    memory.close()
    print(f"  {results}")
    return results


def _page_through(read: MemoryToolSpec, namespace: str, target: str) -> tuple[int, int, int]:
    total, at_target, page, pages = 0, 0, 1, 1
    carry = ""
    while page <= pages:
        text = read.run(artifact_namespace=namespace, page=page)
        header, body = text.split("\n", 1)
        # "Page 3 of about 8084 of ...": an estimate until the last pages are cut
        found = re.match(r"Page \d+ of (?:about )?(\d+) of ", header)
        assert found, header
        pages = int(found.group(1))
        total += len(text)
        if not at_target and target in carry + body:
            at_target = total
        carry = body[-len(target) :]
        page += 1
    return total, at_target, pages


# -- 5: grep throughput (called from needle_runs, on its stored output) -----------------


def grep_throughput(
    memory: TaskMemory, namespace: str, backend: FilesystemBackend
) -> list[dict[str, Any]]:
    size = memory.stats(namespace).bytes
    runs: dict[str, Callable[[], Any]] = {
        "TaskMemory.grep literal": lambda: memory.grep(namespace, "span=000000", regex=False),
        "TaskMemory.grep regex": lambda: memory.grep(
            namespace, r"latency_ms=89\d status=404", regex=True
        ),
        "deepagents backend grep (literal)": lambda: _grep_backend(
            backend, "span=000000", "/large_tool_results", None, 50
        ),
    }
    rows = []
    for name, run in runs.items():
        run()  # warm: files in the page cache, regexes compiled
        best = min(timed(run)[0] for _ in range(5))
        rows.append({"what": name, "seconds": best, "mb_per_s": size / MB / best})
        print(f"  {name:<36} {size / MB / best:8.0f} MB/s")
    return rows


# -- report -------------------------------------------------------------------------------


def report(data: dict[str, Any]) -> str:
    out = [
        "# Off-prompt v2 benchmark (`benchmarks/bench_offprompt.py`)",
        "",
        f"One run, `{data['command']}`, {data['when']}; 2 shared CPU cores. offprompt v2 ="
        ' `OffpromptMiddleware(TaskMemory())`; v1 path = `TaskMemory(index="sync",'
        " preview=False)`; deepagents = the real `deepagents` "
        f"{data['deepagents']} `FilesystemMiddleware` over `FilesystemBackend` (disk), no"
        " ripgrep installed (its Python fallback search).",
        "",
        "## 1-2. Time to reference, and what the model receives",
        "",
        "| size | system | storage | time to reference | query ready | reference tokens |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for row in data["reference"]:
        ready = (
            f"{row['query_ready']:.2f} s" if row["query_ready"] is not None else "n/a (no index)"
        )
        out.append(
            f"| {row['mb']} MB | {row['system']} | {row['where']} | {row['seconds']:.3f} s | {ready} | {row['tokens']} |"
        )
    by = {(r["system"], r["where"], r["mb"]): r for r in data["reference"]}
    largest = max(r["mb"] for r in data["reference"])
    ours, theirs = (
        by.get(("offprompt v2", "path", largest)),
        by.get(("deepagents eviction", "path", largest)),
    )
    if ours and theirs:
        v1 = by.get(("offprompt v1 (sync, bare)", "path", largest))
        out += [
            "",
            f"At {largest} MB with `path=`: offprompt v2 {ours['seconds']:.3f} s vs deepagents"
            f" {theirs['seconds']:.3f} s (ratio {ours['seconds'] / theirs['seconds']:.2f})"
            + (f"; v1 path {v1['seconds']:.2f} s." if v1 else "."),
        ]
    sample = by.get(("offprompt v2", "memory", min(r["mb"] for r in data["reference"])))
    stub = by.get(("deepagents eviction", "path", min(r["mb"] for r in data["reference"])))
    if sample and stub:
        out += [
            "",
            "What the model receives (smallest size), offprompt v2:",
            "",
            "```",
            sample["content"],
            "```",
        ]
        out += ["", "deepagents:", "", "```", stub["content"], "```"]
    needles = data["needles"]
    out += [
        "",
        f"## 3. {needles['needles']} exact-string needles in {needles['mb']} MB of logs",
        "",
        "| lookup | found | chars returned (median) | time (median) |",
        "|---|---:|---:|---:|",
    ]
    for name, row in needles["rows"].items():
        out.append(
            f"| {name} | {row['found']}/{needles['needles']} | {row['chars_median']:.0f} | {row['ms_median']:.1f} ms |"
        )
    js = data["json"]
    out += [
        "",
        f"## 4. JSON tasks on a {js['mb']} MB document ({js['items']:,} items, {js['pages']:,} pages of `read_memory`)",
        "",
        "| task | chars with `json_memory` | answer right | chars with page reads | ratio |",
        "|---|---:|---|---:|---:|",
    ]
    for task, row in js["tasks"].items():
        out.append(
            f"| {task} | {row['json_memory_chars']:,} | {'yes' if row['correct'] else 'NO'} | {row['page_chars']:,} | {row['page_chars'] / row['json_memory_chars']:,.0f}x |"
        )
    out += [
        "",
        f"## 5. grep throughput over the stored {needles['mb']} MB output of section 3",
        "",
        "| search | MB/s |",
        "|---|---:|",
    ]
    for row in needles["grep"]:
        out.append(f"| {row['what']} | {row['mb_per_s']:.0f} |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument(
        "--max-index-mb",
        type=int,
        default=100,
        help="measure the v1 path and the time until query is ready up to this size",
    )
    args = parser.parse_args()
    import deepagents

    sizes = [1, 5] if args.quick else [1, 10, 50, 100]
    data: dict[str, Any] = {
        "command": "python benchmarks/bench_offprompt.py"
        + (" --quick" if args.quick else "")
        + (f" --max-index-mb {args.max_index_mb}" if args.max_index_mb != 100 else ""),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "deepagents": getattr(deepagents, "__version__", "?"),
    }
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        print("1-2. time to reference")
        data["reference"] = reference_runs(sizes, tmp, args.max_index_mb)
        print("3. needles")
        data["needles"] = needle_runs(2 if args.quick else 10, tmp)
        print("4. JSON")
        data["json"] = json_runs(2 if args.quick else 20)
    Path(tempfile.gettempdir(), "bench_offprompt.json").write_text(json.dumps(data, default=str))
    text = report(data)
    print(text)
    if not args.quick:
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
