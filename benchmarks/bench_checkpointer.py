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


def run_case(case: str, turns: int, workdir: Path) -> dict[str, Any]:
    from langchain_core.messages import messages_to_dict

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
    messages_json = len(json.dumps(messages_to_dict(state), ensure_ascii=False).encode())
    if case == "memory":
        held = sum(len(v[1]) for v in saver.blobs.values())
        held += sum(
            len(c[0][1]) + len(c[1][1])
            for t in saver.storage.values()
            for n in t.values()
            for c in n.values()
        )
        held += sum(len(w[2][1]) for d in saver.writes.values() for w in d.values())
        size = held
    else:
        if closer is not None:
            closer.commit()
        else:
            # Our store runs SQLite in WAL mode: fold the WAL in so the file is the data
            # (SqliteSaver's default rollback journal has nothing pending after commit).
            saver.store.checkpoint()
        size = _disk(files)
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


def _subprocess(case: str, turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OFFPROMPT_HOME": tmp}
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--case", case, "--turns", str(turns), "--dir", tmp],
                capture_output=True,
                text=True,
                timeout=TIME_LIMIT_S + 60,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return {"killed": True}
        if done.returncode != 0:
            raise RuntimeError(f"{case} {turns}: {done.stderr[-2000:]}")
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


def report(results: dict[tuple[str, int], dict[str, Any]], sizes: list[int]) -> str:
    def cell(case: str, turns: int, fn: Any) -> str:
        r = results.get((case, turns))
        if r is None:
            return "-"
        if r.get("killed"):
            return f"> {TIME_LIMIT_S:.0f} s (stopped)"
        return fn(r, results.get(("sqlite", turns)))

    def ratio(ours: float, anchor: dict[str, Any] | None, key: str) -> str:
        if not anchor or anchor.get("killed"):
            return ""
        return f" ({anchor[key] / ours:.1f}x)" if ours else ""

    header = "| case | " + " | ".join(f"{n:,} turns" for n in sizes) + " |\n"
    header += "|---|" + "---|" * len(sizes) + "\n"
    out = [
        "# Checkpointer benchmark (bench_checkpointer.py)",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; {_versions()}",
        "",
        f"Measured {time.strftime('%Y-%m-%d')}. One thread, a real `StateGraph`; a turn = user message,"
        f" tool call, {RESULT_CHARS}-character tool result, answer (4 checkpoints). Each case in its"
        " own subprocess. `(Nx)` = SqliteSaver's value over this one.",
        "",
        "## Bytes after the thread (on disk; InMemorySaver: bytes held) and over the messages as JSON once",
        "",
        header.rstrip("\n"),
    ]
    for case in CASES:
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
            "## Time per `put` (median over the thread / over the last 10% of turns)",
            ("put_median", "put_tail"),
        ),
        (
            "## Time per `get_tuple` (median over the thread / over the last 10% of turns)",
            ("get_median", "get_tail"),
        ),
        (
            "## Time per turn (median of the first / the last 10% of turns)",
            ("turn_first", "turn_last"),
        ),
    ):
        out += ["", title, "", header.rstrip("\n")]
        for case in CASES:
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
    out += [
        "",
        "Messages of the thread as JSON once: "
        + ", ".join(
            f"{n:,} turns {_fmt_b(results[('ours', n)]['messages_json'])}"
            for n in sizes
            if ("ours", n) in results and not results[("ours", n)].get("killed")
        ),
        "",
        "Total wall time of the cases: "
        + _fmt_s(sum(r.get("seconds", 0.0) for r in results.values())),
        "",
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case")
    parser.add_argument("--turns", type=int)
    parser.add_argument("--dir")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.turns, Path(args.dir))))
        return
    sizes = (
        [10, 100] if args.quick else sorted({n for c in CASES for n in SIZES.get(c, DEFAULT_SIZES)})
    )
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for turns in sizes:
        for case in CASES:
            if turns not in SIZES.get(case, DEFAULT_SIZES):
                continue
            results[(case, turns)] = _subprocess(case, turns)
            r = results[(case, turns)]
            print(
                f"{case:>13} {turns:>6} turns: "
                + ("stopped" if r.get("killed") else f"{r['seconds']:.1f} s, {_fmt_b(r['bytes'])}"),
                flush=True,
            )
    text = report(results, sizes)
    print(text)
    if not args.quick:
        (HERE / "RESULTS_checkpointer.md").write_text(text)


if __name__ == "__main__":
    main()
