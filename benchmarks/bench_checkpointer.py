"""Benchmark: LangGraph checkpointers side by side on one growing agent thread.

A real ``StateGraph`` runs a thread turn by turn; a turn is what an agent does for one
question: the user message, an assistant message with one tool call, a 500-character
tool result, the answer (4 checkpoints per turn). Savers, in one run:

* ``ours``        ``OffpromptSaver(path=tmp)`` (SQLite file; messages stored once)
* ``sqlite``      ``langgraph-checkpoint-sqlite``'s ``SqliteSaver`` on a file
* ``sqlite_delta`` ``SqliteSaver`` with the messages channel a ``DeltaChannel``
                  (LangGraph 1.2's opt-in delta storage, snapshot every 100 updates)
* ``memory``      LangGraph's ``InMemorySaver`` (nothing on disk; bytes are what it holds)

Measured per case: time per ``put`` and per ``get_tuple`` (medians over the whole
thread, and over the last 10% of turns), time per turn (first vs last 10% of turns, to
show growth), bytes on disk after the thread, and that size over the bytes of the
thread's messages as JSON stored once (``messages_to_dict``). Every case runs in its own
subprocess with a time limit. Ours also runs 1,000 and 10,000 turns.

    python benchmarks/bench_checkpointer.py            # writes RESULTS_checkpointer.md
    python benchmarks/bench_checkpointer.py --quick    # 10 and 100 turns, no file
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

HERE = Path(__file__).resolve().parent
CASES = ["ours", "sqlite", "sqlite_delta", "memory"]
LABELS = {
    "ours": "OffpromptSaver (SQLite)",
    "sqlite": "SqliteSaver",
    "sqlite_delta": "SqliteSaver + DeltaChannel",
    "memory": "InMemorySaver",
}
SIZES = {"ours": [10, 100, 300, 1_000, 10_000]}
DEFAULT_SIZES = [10, 100, 300]
TIME_LIMIT_S = 240.0
RESULT_CHARS = 500


def batch_add(state: list, writes: list) -> list:
    """``add_messages`` over a batch of writes (the reducer shape ``DeltaChannel`` takes)."""
    return functools.reduce(add_messages, writes, state)


class State(TypedDict):
    messages: Annotated[list, add_messages]


class DeltaState(TypedDict):
    messages: Annotated[list, DeltaChannel(batch_add)]


def _graph(case: str, saver: Any) -> Any:
    def agent(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        n = len(state["messages"])
        if isinstance(last, HumanMessage):
            call = {"name": "search", "args": {"q": last.content}, "id": f"call-{n}"}
            return {"messages": [AIMessage("", tool_calls=[call])]}
        return {"messages": [AIMessage(f"Here is what I found for turn {n // 4}.")]}

    def tools(state: dict[str, Any]) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        text = (f"result for {call['args']['q']}: " + "lorem ipsum " * 50)[:RESULT_CHARS]
        return {"messages": [ToolMessage(text, tool_call_id=call["id"], name="search")]}

    def route(state: dict[str, Any]) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    builder = StateGraph(DeltaState if case == "sqlite_delta" else State)
    builder.add_node("agent", agent).add_node("tools", tools)
    builder.add_edge(START, "agent").add_conditional_edges("agent", route).add_edge(
        "tools", "agent"
    )
    return builder.compile(checkpointer=saver)


def _timed(saver: Any, name: str, sink: list[float]) -> None:
    original = getattr(saver, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - t0)

    setattr(saver, name, wrapper)


def _disk(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def _saver(case: str, workdir: Path) -> tuple[Any, list[Path], Any]:
    files: list[Path] = []
    closer = None
    if case == "ours":
        from offprompt_langchain.checkpoint import OffpromptSaver

        db = workdir / "ours.db"
        saver: Any = OffpromptSaver(path=str(db))
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    elif case in ("sqlite", "sqlite_delta"):
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        db = workdir / f"{case}.db"
        conn = sqlite3.connect(str(db), check_same_thread=False)
        saver = SqliteSaver(conn)
        closer = conn
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")]
    else:
        from langgraph.checkpoint.memory import InMemorySaver

        saver = InMemorySaver()
    return saver, files, closer


def _size(case: str, saver: Any, files: list[Path], closer: Any) -> int:
    if case == "memory":
        held = sum(len(v[1]) for v in saver.blobs.values())
        held += sum(
            len(c[0][1]) + len(c[1][1])
            for t in saver.storage.values()
            for n in t.values()
            for c in n.values()
        )
        held += sum(len(w[2][1]) for d in saver.writes.values() for w in d.values())
        return held
    if closer is not None:
        closer.commit()
    else:
        # Our store runs SQLite in WAL mode: fold the WAL in so the file is the data
        # (SqliteSaver's default rollback journal has nothing pending after commit).
        saver.store.checkpoint()
    return _disk(files)


def _turn_messages(i: int, n: int) -> list[Any]:
    call = {"name": "search", "args": {"q": f"question {i}"}, "id": f"call-{i}"}
    text = (f"result for question {i}: " + "lorem ipsum " * 50)[:RESULT_CHARS]
    return [
        HumanMessage(f"question {i}: what about topic {i % 97}?", id=f"h{i}"),
        AIMessage("", tool_calls=[call], id=f"a{i}"),
        ToolMessage(text, tool_call_id=f"call-{i}", name="search", id=f"t{i}"),
        AIMessage(f"Here is what I found for turn {n}.", id=f"b{i}"),
    ]


def run_direct(case: str, turns: int, workdir: Path) -> dict[str, Any]:
    """The saver calls a graph makes per turn, without the graph: 4 ``put`` (one new
    message each, two small channels alongside), a ``put_writes`` before each, one
    ``get_tuple`` at the start of the turn. For thread sizes where LangGraph's own
    per-step work (``add_messages`` over the whole list) would dominate."""
    from langgraph.checkpoint.base import empty_checkpoint

    saver, files, closer = _saver(case, workdir)
    config: dict[str, Any] = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    messages: list[Any] = []
    versions: dict[str, Any] = {}
    puts: list[float] = []
    gets: list[float] = []
    per_turn: list[float] = []
    puts_at: list[int] = []
    gets_at: list[int] = []
    started = time.perf_counter()
    step = -1
    for i in range(turns):
        puts_at.append(len(puts))
        gets_at.append(len(gets))
        t_turn = time.perf_counter()
        t0 = time.perf_counter()
        saver.get_tuple({"configurable": {"thread_id": "bench"}})
        gets.append(time.perf_counter() - t0)
        for message in _turn_messages(i, i):
            if "checkpoint_id" in config["configurable"]:
                saver.put_writes(
                    config, [("messages", [message]), ("branch:to:x", None)], f"task-{step}"
                )
            messages = [*messages, message]
            step += 1
            new = {
                ch: saver.get_next_version(versions.get(ch), None)
                for ch in ("messages", "branch:to:x", "__start__")
            }
            versions.update(new)
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": messages, "branch:to:x": None}
            checkpoint["channel_versions"] = dict(versions)
            checkpoint["versions_seen"] = {"agent": {"messages": versions["messages"]}}
            t0 = time.perf_counter()
            config = saver.put(
                config, checkpoint, {"source": "loop", "step": step, "parents": {}}, new
            )
            puts.append(time.perf_counter() - t0)
        per_turn.append(time.perf_counter() - t_turn)
        if time.perf_counter() - started > _limit(turns):
            return {"killed": True, "turns_done": i + 1}
    latest = saver.get_tuple({"configurable": {"thread_id": "bench"}})
    assert latest.checkpoint["channel_values"]["messages"] == messages
    size = _size(case, saver, files, closer)
    return _summary(turns, started, (puts, gets, per_turn, puts_at, gets_at), size, messages)


def _summary(
    turns: int,
    started: float,
    timings: tuple[list[float], list[float], list[float], list[int], list[int]],
    size: int,
    messages: list[Any],
) -> dict[str, Any]:
    from langchain_core.messages import messages_to_dict

    puts, gets, per_turn, puts_at, gets_at = timings
    messages_json = len(json.dumps(messages_to_dict(messages), ensure_ascii=False).encode())
    tail = max(1, turns // 10)
    return {
        "turns": turns,
        "seconds": time.perf_counter() - started,
        "put_median": statistics.median(puts),
        "put_tail": statistics.median(puts[puts_at[-tail] :]),
        "get_median": statistics.median(gets),
        "get_tail": statistics.median(gets[gets_at[-tail] :]),
        "turn_first": statistics.median(per_turn[:tail]),
        "turn_last": statistics.median(per_turn[-tail:]),
        "bytes": size,
        "messages_json": messages_json,
    }


def run_case(case: str, turns: int, workdir: Path) -> dict[str, Any]:
    saver, files, closer = _saver(case, workdir)
    puts: list[float] = []
    gets: list[float] = []
    _timed(saver, "put", puts)
    _timed(saver, "get_tuple", gets)
    graph = _graph(case, saver)
    config = {"configurable": {"thread_id": "bench"}}
    per_turn: list[float] = []
    puts_at: list[int] = []
    gets_at: list[int] = []
    started = time.perf_counter()
    for i in range(turns):
        puts_at.append(len(puts))
        gets_at.append(len(gets))
        t0 = time.perf_counter()
        graph.invoke(
            {"messages": [HumanMessage(f"question {i}: what about topic {i % 97}?")]}, config
        )
        per_turn.append(time.perf_counter() - t0)
        if time.perf_counter() - started > TIME_LIMIT_S:
            return {"killed": True, "turns_done": i + 1}
    state = graph.get_state(config).values["messages"]
    assert len(state) == 4 * turns, len(state)
    size = _size(case, saver, files, closer)
    return _summary(turns, started, (puts, gets, per_turn, puts_at, gets_at), size, state)


def _limit(turns: int) -> float:
    # The 10,000-turn thread (ours only) gets the time it needs; the anchors never reach it.
    return TIME_LIMIT_S if turns < 10_000 else 1_500.0


def _subprocess(mode: str, case: str, turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OFFPROMPT_HOME": tmp}
        command = [
            sys.executable,
            __file__,
            "--mode",
            mode,
            "--case",
            case,
            "--turns",
            str(turns),
            "--dir",
            tmp,
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=_limit(turns) + 60, env=env
            )
        except subprocess.TimeoutExpired:
            return {"killed": True}
        if done.returncode != 0:
            raise RuntimeError(f"{mode} {case} {turns}: {done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _fmt_b(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _versions() -> str:
    from importlib.metadata import version

    names = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core"]
    import sqlite3

    return ", ".join(f"{n} {version(n)}" for n in names) + f"; sqlite {sqlite3.sqlite_version}"


def _table(
    results: dict[tuple[str, int], dict[str, Any]], cases: list[str], sizes: list[int]
) -> list[str]:
    def cell(case: str, turns: int, fn: Any) -> str:
        r = results.get((case, turns))
        if r is None:
            return "-"
        if r.get("killed"):
            return f"> {_limit(turns):.0f} s (stopped)"
        return fn(r, results.get(("sqlite", turns)))

    def ratio(ours: float, anchor: dict[str, Any] | None, key: str) -> str:
        if not anchor or anchor.get("killed") or not ours:
            return ""
        return f" ({anchor[key] / ours:.1f}x)"

    header = [
        "| case | " + " | ".join(f"{n:,} turns" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    out = [
        "Bytes after the thread (on disk; InMemorySaver: bytes it holds), and that over the thread's messages as JSON once:",
        "",
        *header,
    ]
    for case in cases:
        out.append(
            f"| {LABELS[case]} | "
            + " | ".join(
                cell(
                    case,
                    n,
                    lambda r, a: (
                        f"{_fmt_b(r['bytes'])} = {r['bytes'] / r['messages_json']:.1f}x msgs"
                        + ratio(r["bytes"], a, "bytes")
                    ),
                )
                for n in sizes
            )
            + " |"
        )
    for title, key in (
        (
            "Time per `put`, median over the thread / over its last 10% of turns:",
            ("put_median", "put_tail"),
        ),
        (
            "Time per `get_tuple`, median over the thread / over its last 10% of turns:",
            ("get_median", "get_tail"),
        ),
        (
            "Time per turn, median of the first / of the last 10% of turns:",
            ("turn_first", "turn_last"),
        ),
    ):
        out += ["", title, "", *header]
        for case in cases:
            out.append(
                f"| {LABELS[case]} | "
                + " | ".join(
                    cell(
                        case,
                        n,
                        lambda r, a, k=key: (
                            f"{_fmt_s(r[k[0]])} / {_fmt_s(r[k[1]])}" + ratio(r[k[1]], a, k[1])
                        ),
                    )
                    for n in sizes
                )
                + " |"
            )
    return out


def report(results: dict[tuple[str, str, int], dict[str, Any]]) -> str:
    out = [
        "# Checkpointer benchmark (bench_checkpointer.py)",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; {_versions()}",
        "",
        f"Measured {time.strftime('%Y-%m-%d')}, all cases in one run, each in its own subprocess. One thread; a turn"
        f" = user message, tool call, {RESULT_CHARS}-character tool result, answer. `(Nx)` = SqliteSaver's"
        " value over this one (bigger is better for us).",
    ]
    for mode, title in (
        ("graph", "## A real `StateGraph` (4 nodes' worth of checkpoints per turn)"),
        ("direct", "## The saver calls alone (4 `put` + 4 `put_writes` + 1 `get_tuple` per turn)"),
    ):
        part = {(c, n): r for (m, c, n), r in results.items() if m == mode}
        if not part:
            continue
        cases = [c for c in CASES if any(k[0] == c for k in part)]
        sizes = sorted({n for _, n in part})
        out += ["", title, "", *_table(part, cases, sizes)]
        json_sizes = sorted(
            {(n, r["messages_json"]) for (c, n), r in part.items() if not r.get("killed")}
        )
        out += [
            "",
            "Messages as JSON once: "
            + ", ".join(f"{n:,} turns {_fmt_b(b)}" for n, b in json_sizes),
        ]
    out += [
        "",
        "Total wall time of the cases: "
        + _fmt_s(sum(r.get("seconds", 0.0) for r in results.values())),
        "",
    ]
    return "\n".join(out)


PLAN = [
    *[("graph", c, n) for n in (10, 100, 300) for c in CASES],
    ("graph", "ours", 1_000),
    *[("direct", c, n) for n in (10, 100, 300) for c in ("ours", "sqlite", "memory")],
    ("direct", "ours", 1_000),
    ("direct", "ours", 10_000),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="graph")
    parser.add_argument("--case")
    parser.add_argument("--turns", type=int)
    parser.add_argument("--dir")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--max-turns", type=int, help="leave out longer threads (run them alone with --case)"
    )
    parser.add_argument("--only-mode", choices=["graph", "direct"])
    parser.add_argument("--out", help="write the report here (default RESULTS_checkpointer.md)")
    args = parser.parse_args()
    if args.case:
        run = run_case if args.mode == "graph" else run_direct
        print(json.dumps(run(args.case, args.turns, Path(args.dir))))
        return
    plan = [p for p in PLAN if p[2] <= 100] if args.quick else PLAN
    if args.max_turns:
        plan = [p for p in plan if p[2] <= args.max_turns]
    if args.only_mode:
        plan = [p for p in plan if p[0] == args.only_mode]
    results: dict[tuple[str, str, int], dict[str, Any]] = {}
    load_before = os.getloadavg()
    for mode, case, turns in plan:
        r = results[(mode, case, turns)] = _subprocess(mode, case, turns)
        done = "stopped" if r.get("killed") else f"{r['seconds']:.1f} s, {_fmt_b(r['bytes'])}"
        print(f"{mode:>6} {case:>13} {turns:>6} turns: {done}", flush=True)
    load_after = os.getloadavg()
    text = report(results) + (
        f"Load average (1, 5, 15 min) on {os.cpu_count()} CPUs: before the run "
        + ", ".join(f"{x:.1f}" for x in load_before)
        + "; after it "
        + ", ".join(f"{x:.1f}" for x in load_after)
        + ".\n"
    )
    print(text)
    if not args.quick:
        (Path(args.out) if args.out else HERE / "RESULTS_checkpointer.md").write_text(text)


if __name__ == "__main__":
    main()
