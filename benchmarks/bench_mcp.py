"""``offprompt mcp proxy`` overhead: a pass-through call through the proxy vs the upstream.

One run, side by side: the test fixture's MCP server (``tests/mcp/upstream_server.py``)
is started twice, once alone and once behind ``offprompt mcp proxy``, each driven by
the MCP SDK's own client over stdio. The small ``echo`` call (its result passes through
unchanged) is timed ``--calls`` times on each, alternating blocks of 25 so that machine
load hits both alike. Then, for scale: one 5 MB ``logs`` call (direct: the client
receives 5 MB; proxy: the client receives the reference once the log is stored) and
``grep_memory`` over it.

    python benchmarks/bench_mcp.py             # 1,000 calls each, writes RESULTS_mcp.md
    python benchmarks/bench_mcp.py --quick     # 200 calls each, prints only
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = [sys.executable, str(ROOT / "tests" / "mcp" / "upstream_server.py")]
BLOCK = 25


def _params(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


async def _timed(session: ClientSession, name: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await session.call_tool(name, arguments)
    elapsed = time.perf_counter() - started
    assert not result.isError, result
    return elapsed


def _children() -> dict[int, str]:
    """This process's child processes (Linux ``/proc``): pid -> command line."""
    found: dict[int, str] = {}
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            found[int(pid)] = cmdline.decode(errors="replace")
    return found


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(calls: int, home: Path) -> dict[str, Any]:
    proxy = [sys.executable, "-m", "offprompt.cli", "--home", str(home), "mcp", "proxy", "--"]
    proxy += UPSTREAM
    arguments = {"text": "ok: a small result that passes through unchanged"}
    async with (
        stdio_client(_params(UPSTREAM), errlog=open(os.devnull, "w")) as (dr, dw),
        ClientSession(dr, dw) as direct,
        stdio_client(_params(proxy), errlog=open(os.devnull, "w")) as (pr, pw),
        ClientSession(pr, pw) as proxied,
    ):
        await direct.initialize()
        await proxied.initialize()
        children = _children()
        proxy_pid = next(pid for pid, cmd in children.items() if " mcp proxy " in cmd)
        upstream_pid = next(pid for pid, cmd in children.items() if " mcp proxy " not in cmd)
        for _ in range(20):  # warm both paths
            await _timed(direct, "echo", arguments)
            await _timed(proxied, "echo", arguments)
        times: dict[str, list[float]] = {"direct": [], "proxy": []}
        cpu = {"proxy": 0.0, "upstream": 0.0}
        for _ in range(calls // BLOCK):
            upstream_before = _cpu_seconds(upstream_pid)
            for _ in range(BLOCK):
                times["direct"].append(await _timed(direct, "echo", arguments))
            cpu["upstream"] += _cpu_seconds(upstream_pid) - upstream_before
            proxy_before = _cpu_seconds(proxy_pid)
            for _ in range(BLOCK):
                times["proxy"].append(await _timed(proxied, "echo", arguments))
            cpu["proxy"] += _cpu_seconds(proxy_pid) - proxy_before

        big_direct = await _timed(direct, "logs", {"megabytes": 5})
        started = time.perf_counter()
        result = await proxied.call_tool("logs", {"megabytes": 5})
        big_proxy = time.perf_counter() - started
        (reference,) = result.meta["offprompt/references"]
        reference_chars = len(result.content[0].text)
        grep = []
        for _ in range(20):
            started = time.perf_counter()
            found = await proxied.call_tool(
                "grep_memory",
                {
                    "artifact_namespace": reference["artifact_namespace"],
                    "pattern": "trace-7f3a9c1e-needle",
                },
            )
            grep.append(time.perf_counter() - started)
            assert "20000:" in found.content[0].text
    return {
        "times": times,
        "cpu": {k: v / len(times["direct"]) for k, v in cpu.items()},
        "big_direct": big_direct,
        "big_proxy": big_proxy,
        "reference_chars": reference_chars,
        "grep": grep,
    }


def report(calls: int, data: dict[str, Any]) -> str:
    direct, proxy = data["times"]["direct"], data["times"]["proxy"]
    ms = 1000.0
    rows = [
        "| path | calls | median | p95 | mean |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, values in (("upstream directly", direct), ("through the proxy", proxy)):
        rows.append(
            f"| {label} | {len(values):,} | {statistics.median(values) * ms:.2f} ms "
            f"| {_pct(values, 0.95) * ms:.2f} ms | {statistics.fmean(values) * ms:.2f} ms |"
        )
    added_median = (statistics.median(proxy) - statistics.median(direct)) * ms
    added_p95 = (_pct(proxy, 0.95) - _pct(direct, 0.95)) * ms
    rows.append(
        f"| **added by the proxy** | | **{added_median:.2f} ms** | **{added_p95:.2f} ms** "
        f"| {(statistics.fmean(proxy) - statistics.fmean(direct)) * ms:.2f} ms |"
    )
    rows.append(
        f"| CPU of the proxy process per call (load-independent) | | "
        f"{data['cpu']['proxy'] * ms:.2f} ms | | (the upstream server's own: "
        f"{data['cpu']['upstream'] * ms:.2f} ms) |"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"Small `echo` result (passes through unchanged), {calls:,} calls per path in "
        f"alternating blocks of {BLOCK}, one run; machine: {os.cpu_count()} cores, "
        f"load average {load:.1f} at the end (other work shares the cores: wall-clock "
        "figures include waiting for a core at each of the two extra hops). Target: under "
        "5 ms added per call.",
        "",
        *rows,
        "",
        "For scale, one 5 MB `logs` result:",
        "",
        "| | time | what the client receives |",
        "| --- | --- | --- |",
        f"| upstream directly | {data['big_direct']:.2f} s | the 5 MB log |",
        f"| through the proxy | {data['big_proxy']:.2f} s | the reference and card "
        f"({data['reference_chars']:,} characters) |",
        f"| `grep_memory` for one id over it (median of 20) | "
        f"{statistics.median(data['grep']) * ms:.1f} ms | the matching line |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls per path, no file")
    parser.add_argument("--calls", type=int, default=None)
    args = parser.parse_args()
    calls = args.calls or (200 if args.quick else 1000)
    with tempfile.TemporaryDirectory() as home:
        data = anyio.run(run, calls, Path(home))
    text = report(calls, data)
    print(text)
    if not args.quick:
        out = Path(__file__).with_name("RESULTS_mcp.md")
        command = "python benchmarks/bench_mcp.py"
        out.write_text(f"# MCP proxy benchmark\n\n`{command}`\n\n{text}\n")


if __name__ == "__main__":
    main()
