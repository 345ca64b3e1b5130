"""Benchmark: conversations on PostgreSQL, offprompt vs LangChain's Postgres chat history.

One throwaway PostgreSQL 15 cluster (``tests/postgres_testing.py``: initdb + pg_ctl,
``fsync=off``), reached over its unix socket, holds both Postgres cases side by side in
one run; the SQLite case writes a file in a temp dir. The same seeded conversation
(``_conversations.py``: 1 system message, then alternating user/assistant messages of
20-400 cl100k tokens) is appended in batches of 100 until the session holds 10,000 and
then 100,000 messages:

* ``ours_pg``      ``PostgresStore.append(session, batch, tokens)``: one transaction each
* ``ours_sqlite``  ``SQLiteStore.append``: the embedded default, for scale
* ``lc_pg``        langchain-postgres ``PostgresChatMessageHistory.add_messages(batch)``
                   (executemany + commit on one psycopg connection, as documented)
* ``floor_pg``     the floor of this server, appends only: our message bodies (encoded
                   as ``PostgresStore`` does, inside the timing) sent with one bare
                   ``INSERT INTO t (seq, body) SELECT * FROM unnest(...)`` per batch into
                   a table with nothing but a primary key: no session counter, no scope
                   columns, no retry key
* ``floor_pre``    the same statement with the bodies encoded before the clock starts:
                   what the server and the driver alone cost for one row per message
* ``floor_batch``  a layout with one row per batch (``seq``, then the batch's roles,
                   token counts and bodies as arrays, the bodies lz4-compressed by the
                   server), bodies encoded beforehand: the floor of storing a batch as
                   one row instead of one row per message

Appends are timed per batch (token counts are computed once beforehand, outside the
timing: every case gets the messages ready to store). At each size we then time
``ConversationMemory(store=...).window(4000)``: the first call of a fresh memory object
(cold: it reads the session's index) and then repeated calls (warm: one ``version()``
round trip plus the window's bodies), median and p95. LangChain's history has no
window; what a LangChain app reads to make one is ``get_messages()`` (then
``trim_messages``, not timed here), so that is its row.

    python benchmarks/bench_postgres.py            # 10k and 100k; writes RESULTS_postgres.md
    python benchmarks/bench_postgres.py --quick    # 2k and 10k, no file
"""

from __future__ import annotations

import abc
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_window import fmt as _fmt  # noqa: E402  (same units as the window benchmark)

BUDGET = 4_000
BATCH = 100
ANALYSIS = "<!-- analysis: written by hand, kept when the benchmark reruns -->"
LABELS = {
    "ours_pg": "offprompt PostgresStore",
    "ours_sqlite": "offprompt SQLiteStore",
    "lc_pg": "langchain-postgres PostgresChatMessageHistory",
    "floor_pg": "floor A: a bare INSERT ... unnest of the same bodies (appends only)",
    "floor_pre": "floor B: floor A with the bodies encoded beforehand (the server alone)",
    "floor_batch": "floor C: one row per batch (arrays, lz4), bodies encoded beforehand",
}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _timed_reps(fn: Callable[[], Any], reps: int, budget_s: float) -> list[float]:
    """Seconds of each of up to ``reps`` calls of ``fn`` (at least 3) within ``budget_s``."""
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < reps:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 3 and time.perf_counter() - started > budget_s:
            break
    return times


class Case(abc.ABC):
    """One backend: appends a batch, and measures what a prompt needs at a size."""

    name: str

    @abc.abstractmethod
    def append(self, batch: list[Any], tokens: list[int]) -> None: ...

    @abc.abstractmethod
    def read_view(self, reps: int) -> dict[str, Any]: ...

    @abc.abstractmethod
    def close(self) -> None: ...


class OursCase(Case):
    def __init__(self, name: str, store: Any, tokenizer: Any) -> None:
        self.name = name
        self.store = store
        self.tokenizer = tokenizer
        self.session = "bench"

    def append(self, batch: list[Any], tokens: list[int]) -> None:
        self.store.append(self.session, batch, tokens)

    def read_view(self, reps: int) -> dict[str, Any]:
        from offprompt.conversation import ConversationMemory

        fresh = ConversationMemory(self.store, self.session, tokenizer=self.tokenizer)
        t0 = time.perf_counter()
        first = fresh.window(BUDGET)
        cold = time.perf_counter() - t0
        warm = _timed_reps(lambda: fresh.window(BUDGET), reps, budget_s=20)
        return {
            "cold": cold,
            "median": statistics.median(warm),
            "p95": _p95(warm),
            "runs": len(warm),
            "shape": f"{len(first) - 1} msgs / {first.tokens} tokens",
        }

    def close(self) -> None:
        self.store.close()


class LangChainCase(Case):
    name = "lc_pg"

    def __init__(self, dsn: str) -> None:
        import psycopg
        from langchain_postgres import PostgresChatMessageHistory

        self.conn = psycopg.connect(dsn)
        PostgresChatMessageHistory.create_tables(self.conn, "lc_chat_history")
        self.history = PostgresChatMessageHistory(
            "lc_chat_history", str(uuid.uuid4()), sync_connection=self.conn
        )

    def append(self, batch: list[Any], tokens: list[int]) -> None:
        self.history.add_messages(batch)

    def read_view(self, reps: int) -> dict[str, Any]:
        times = _timed_reps(self.history.get_messages, min(reps, 20), budget_s=30)
        return {
            "cold": None,
            "median": statistics.median(times),
            "p95": _p95(times),
            "runs": len(times),
            "shape": "all messages (no window)",
        }

    def close(self) -> None:
        self.conn.close()


class FloorCase(Case):
    """The least an append of these bodies costs on this server (see the docstring)."""

    name = "floor_pg"

    def __init__(self, dsn: str) -> None:
        import psycopg

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("CREATE TABLE floor_messages (seq bigint PRIMARY KEY, body text)")
        self.next = 0

    def append(self, batch: list[Any], tokens: list[int]) -> None:
        from offprompt.stores._blobrefs import externalize

        bodies = [externalize(m)[0] for m in batch]
        seqs = list(range(self.next, self.next + len(bodies)))
        self.conn.execute(
            "INSERT INTO floor_messages (seq, body) SELECT * FROM unnest(%b::bigint[], %b::text[])",
            (seqs, bodies),
        )
        self.next += len(bodies)

    def read_view(self, reps: int) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self.conn.close()


class PreencodedFloorCase(FloorCase):
    """:class:`FloorCase` with the bodies encoded before the clock starts."""

    name = "floor_pre"
    table = "CREATE TABLE floor_pre (seq bigint PRIMARY KEY, body text)"

    def __init__(self, dsn: str, messages: list[Any]) -> None:
        import psycopg

        from offprompt.stores._blobrefs import externalize

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute(self.table)
        self.next = 0
        self.bodies = {id(m): externalize(m)[0] for m in messages}

    def append(self, batch: list[Any], tokens: list[int]) -> None:
        bodies = [self.bodies[id(m)] for m in batch]
        seqs = list(range(self.next, self.next + len(bodies)))
        self.conn.execute(
            "INSERT INTO floor_pre (seq, body) SELECT * FROM unnest(%b::bigint[], %b::text[])",
            (seqs, bodies),
        )
        self.next += len(bodies)


class BatchRowFloorCase(PreencodedFloorCase):
    """One row per batch: the floor of a layout that does not store a row per message."""

    name = "floor_batch"
    table = (
        "CREATE TABLE floor_batch (seq bigint PRIMARY KEY, roles text[], tokens bigint[],"
        " bodies text[] COMPRESSION lz4)"
    )

    def append(self, batch: list[Any], tokens: list[int]) -> None:
        self.conn.execute(
            "INSERT INTO floor_batch VALUES (%s, %b::text[], %b::bigint[], %b::text[])",
            (self.next, [m.role for m in batch], tokens, [self.bodies[id(m)] for m in batch]),
        )
        self.next += len(batch)


def _messages(n: int) -> tuple[list[Any], list[Any], list[int]]:
    """Our messages, the same as LangChain messages, and cl100k token counts."""
    from _conversations import conversation
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from offprompt.messages import Message
    from offprompt.tokens import TiktokenTokenizer

    tokenizer = TiktokenTokenizer("cl100k_base", message_overhead=0)
    pairs = conversation(n)
    ours = [Message(role=role, content=text) for role, text in pairs]
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    theirs = [kinds[role](content=text) for role, text in pairs]
    tokens = [tokenizer.count_message(m) for m in ours]
    return ours, theirs, tokens


def run(sizes: list[int], reps: int) -> dict[str, Any]:
    from postgres_testing import start_cluster

    from offprompt.stores import PostgresStore, SQLiteStore
    from offprompt.tokens import TiktokenTokenizer

    tokenizer = TiktokenTokenizer("cl100k_base", message_overhead=0)
    ours, theirs, tokens = _messages(max(sizes))
    cluster = start_cluster(listen_addresses="")
    tmp = tempfile.TemporaryDirectory()
    results: dict[str, Any] = {"append": {}, "view": {}, "server": "", "load": [os.getloadavg()[0]]}
    try:
        results["server"] = str(cluster.execute("SHOW server_version")[0][0])
        cases: list[Case] = [
            OursCase("ours_pg", PostgresStore(cluster.dsn), tokenizer),
            OursCase("ours_sqlite", SQLiteStore(Path(tmp.name) / "bench.db"), tokenizer),
            LangChainCase(cluster.dsn),
            FloorCase(cluster.dsn),
            PreencodedFloorCase(cluster.dsn, ours),
            BatchRowFloorCase(cluster.dsn, ours),
        ]
        done = 0
        for size in sizes:
            # Interleave the cases batch by batch so that load on the machine hits all alike.
            spent = {case.name: 0.0 for case in cases}
            for start in range(done, size, BATCH):
                end = min(start + BATCH, size)
                for case in cases:
                    batch = (theirs if isinstance(case, LangChainCase) else ours)[start:end]
                    t0 = time.perf_counter()
                    case.append(batch, tokens[start:end])
                    spent[case.name] += time.perf_counter() - t0
            for case in cases:
                results["append"].setdefault(case.name, {})[size] = (size - done) / spent[case.name]
                results["view"].setdefault(case.name, {})[size] = case.read_view(reps)
                print(
                    size,
                    case.name,
                    results["append"][case.name][size],
                    results["view"][case.name][size],
                    flush=True,
                )
            done = size
        for case in cases:
            case.close()
        results["load"].append(os.getloadavg()[0])
    finally:
        cluster.destroy()
        tmp.cleanup()
    return results


def report(results: dict[str, Any], sizes: list[int]) -> str:
    import langchain_postgres
    import psycopg

    def size_label(n: int) -> str:
        return f"N={n:,}"

    lines = [
        "# PostgreSQL benchmark (bench_postgres.py)",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}; PostgreSQL "
        f"{results['server']} (throwaway cluster, fsync=off, unix socket); psycopg "
        f"{psycopg.__version__}, langchain-postgres {langchain_postgres.__version__}",
        "",
        "Load average (1 min) at start / end: "
        + " / ".join(f"{x:.1f}" for x in results["load"])
        + f" on {os.cpu_count()} CPUs.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')}, all cases in one run, batch by batch "
        "interleaved. Command: `python benchmarks/bench_postgres.py`.",
        "",
        f"Append throughput, batches of {BATCH} (messages/s while the session grows to N;"
        " ratio to langchain-postgres):",
        "",
        "| case | " + " | ".join(size_label(n) for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    lc = results["append"]["lc_pg"]
    for name, label in LABELS.items():
        row = results["append"][name]
        cells = [f"{row[n]:,.0f}/s ({row[n] / lc[n]:.1f}x)" for n in sizes]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Reading what the prompt needs: `ConversationMemory(store=...).window({BUDGET})`, "
        "warm median / p95 (runs), cold = first window of a fresh memory object; "
        "langchain-postgres: `get_messages()` (all of them; its app still has to trim):",
        "",
        "| case | " + " | ".join(size_label(n) for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for name, label in LABELS.items():
        if not results["view"][name][sizes[0]]:
            continue  # appends only
        cells = []
        for n in sizes:
            v = results["view"][name][n]
            cell = f"{_fmt(v['median'])} / {_fmt(v['p95'])} ({v['runs']})"
            if v["cold"] is not None:
                cell += f", cold {_fmt(v['cold'])}"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lo, hi = sizes[0], sizes[-1]
    pg = results["view"]["ours_pg"]
    growth = pg[hi]["median"] / pg[lo]["median"]
    append_ratio = min(results["append"]["ours_pg"][n] / lc[n] for n in sizes)
    floors = {
        name: min(results["append"][name][n] / lc[n] for n in sizes)
        for name in ("floor_pg", "floor_pre", "floor_batch")
    }
    lines += [
        "",
        "Window returned at each size: "
        + "; ".join(f"{size_label(n)}: {pg[n]['shape']}" for n in sizes),
        "",
        "Targets:",
        "",
        f"- window() on PostgreSQL flat from {lo:,} to {hi:,} messages (within 3x): "
        f"{growth:.2f}x -> {'met' if growth <= 3 else 'MISSED'}.",
        f"- window() under 5 ms: median {_fmt(pg[hi]['median'])}, p95 {_fmt(pg[hi]['p95'])} "
        f"at {hi:,} -> {'met' if pg[hi]['median'] < 5e-3 else 'MISSED'} (median).",
        f"- appends at least 5x PostgresChatMessageHistory, batches of {BATCH}: "
        f"{append_ratio:.1f}x (lowest over sizes) -> {'met' if append_ratio >= 5 else 'MISSED'}"
        f" (this server's floors: A {floors['floor_pg']:.1f}x, B {floors['floor_pre']:.1f}x,"
        f" C {floors['floor_batch']:.1f}x).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2k and 10k, no results file")
    args = parser.parse_args()
    sizes = [2_000, 10_000] if args.quick else [10_000, 100_000]
    results = run(sizes, reps=200)
    text = report(results, sizes)
    print(text)
    if not args.quick:
        path = HERE / "RESULTS_postgres.md"
        # What follows the marker is written by hand (the analysis) and kept on a rerun.
        kept = ""
        if path.exists() and ANALYSIS in path.read_text(encoding="utf-8"):
            kept = path.read_text(encoding="utf-8").split(ANALYSIS, 1)[1]
        path.write_text(text + "\n" + ANALYSIS + kept, encoding="utf-8")


if __name__ == "__main__":
    main()
