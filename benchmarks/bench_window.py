"""Benchmark: a 4,000-token recent-history window, offprompt vs the anchors, side by side.

Same seeded conversations (``_conversations.py``: 1 system message, then alternating
user/assistant messages of 20-400 cl100k tokens) of 1k, 10k and 100k messages:

* ``ours_mem``     ``ConversationMemory(InMemoryStore()).window(4000)``
* ``ours_sqlite``  ``ConversationMemory(SQLiteStore(tmp)).window(4000)``
* ``lc_trim``      LangChain ``trim_messages(strategy="last", start_on="human",
                   include_system=True)`` with a tiktoken counter
* ``lli_get``      LlamaIndex ``ChatMemoryBuffer.from_defaults(token_limit=4000).get()``
* ``gt_prune``     Griptape ``ConversationMemory(autoprune=True).add_to_prompt_stack`` as
                   ``PromptTask`` calls it (gpt-4 tokenizer = cl100k, 4,000 input tokens)

Every case runs in its own subprocess with a time limit (quadratic anchors are killed
and shown as "> T s (killed)"). Only the window call is timed; building the memory is
timed separately as append throughput, against the floor of tiktoken-encoding every
message once. Our tokenizer is cl100k with ``message_overhead=0`` so every case counts
the same content tokens and returns the same window.

    python benchmarks/bench_window.py            # 1k, 10k, 100k; writes RESULTS_window.md
    python benchmarks/bench_window.py --quick    # 1k and 10k, short timeouts, no file

A second section, ``--middleware``, times what ``OffpromptMiddleware(max_tokens=4000)``
adds to each model call of an agent (``wrap_model_call`` with a handler that returns at
once, the token-count cache warm as it is from the second call of a thread on), at 1k and
10k messages, side by side in one process with the same middleware planning the way it
did before issue 19 (a throwaway ``InMemoryStore`` + ``ConversationMemory`` per call),
and with the floor of looking up every message's cached count:

    python benchmarks/bench_window.py --middleware   # writes RESULTS_window_middleware.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BUDGET = 4_000
CASES = ["ours_mem", "ours_sqlite", "lc_trim", "lli_get", "gt_prune"]
LABELS = {
    "ours_mem": "offprompt window() InMemoryStore",
    "ours_sqlite": "offprompt window() SQLiteStore",
    "lc_trim": "LangChain trim_messages (tiktoken)",
    "lli_get": "LlamaIndex ChatMemoryBuffer.get()",
    "gt_prune": "Griptape autoprune",
}


def _time(fn: Callable[[], Any], reps: int, budget_s: float) -> tuple[list[float], Any]:
    """Run ``fn`` up to ``reps`` times (at least once) within ``budget_s``; seconds each."""
    times: list[float] = []
    result = None
    started = time.perf_counter()
    while len(times) < reps:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - started > budget_s:
            break
    return times, result


def _describe(messages: list[tuple[str, str]]) -> dict[str, Any]:
    from offprompt.tokens import load_encoding

    enc = load_encoding("cl100k_base")
    body = [(r, t) for r, t in messages if r != "system"]
    return {
        "messages": len(body),
        "tokens": sum(len(enc.encode_ordinary(t)) for _, t in body),
        "system_kept": any(r == "system" for r, _ in messages),
        "first_role": body[0][0] if body else "-",
    }


# -- cases (each runs in a child process) ----------------------------------------------
def case_ours(n: int, reps: int, store_kind: str) -> dict[str, Any]:
    from _conversations import conversation

    from offprompt.conversation import ConversationMemory
    from offprompt.messages import Message
    from offprompt.stores import InMemoryStore, SQLiteStore
    from offprompt.tokens import TiktokenTokenizer, load_encoding

    conv = conversation(n)
    messages = [Message(role=r, content=t) for r, t in conv]
    enc = load_encoding("cl100k_base")
    tokenizer = TiktokenTokenizer("cl100k_base", message_overhead=0)
    out: dict[str, Any] = {}
    # the floor: tiktoken-encode every message once (after a warm-up, as for ours)
    for _, text in conv[:50]:
        len(enc.encode(text))
        tokenizer.count(text)
    t0 = time.perf_counter()
    for _, text in conv:
        len(enc.encode(text))
    out["floor_encode"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        store = InMemoryStore() if store_kind == "mem" else SQLiteStore(Path(tmp) / "bench.db")
        memory = ConversationMemory(store, "bench", tokenizer=tokenizer)
        t0 = time.perf_counter()
        for i in range(0, len(messages), 100):
            memory.add_messages(messages[i : i + 100])
        out["append_batched"] = time.perf_counter() - t0
        if store_kind == "mem":
            single = ConversationMemory(InMemoryStore(), "bench", tokenizer=tokenizer)
            t0 = time.perf_counter()
            for message in messages:
                single.add_message(message)
            out["append_single"] = time.perf_counter() - t0
        # a fresh memory object on the same store: its first window builds the index
        fresh = ConversationMemory(store, "bench", tokenizer=tokenizer)
        t0 = time.perf_counter()
        fresh.window(BUDGET)
        out["cold_window"] = time.perf_counter() - t0
        times, window = _time(lambda: fresh.window(BUDGET), reps, 20)
        out["times"] = times
        out["window"] = _describe([(m.role, m.text) for m in window])
        store.close()
    return out


def case_lc_trim(n: int, reps: int) -> dict[str, Any]:
    from _conversations import conversation
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, trim_messages

    from offprompt.tokens import load_encoding

    enc = load_encoding("cl100k_base")
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    messages = [kinds[r](content=t) for r, t in conversation(n)]

    def counter(msgs: list[Any]) -> int:
        return sum(len(enc.encode(m.content)) for m in msgs)

    def run() -> list[Any]:
        return trim_messages(
            messages,
            max_tokens=BUDGET,
            token_counter=counter,
            strategy="last",
            start_on="human",
            include_system=True,
        )

    times, window = _time(run, reps, 40)
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return {"times": times, "window": _describe([(roles[m.type], m.content) for m in window])}


def case_lli_get(n: int, reps: int) -> dict[str, Any]:
    from _conversations import conversation
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory import ChatMemoryBuffer

    from offprompt.tokens import load_encoding

    enc = load_encoding("cl100k_base")
    buffer = ChatMemoryBuffer.from_defaults(token_limit=BUDGET, tokenizer_fn=enc.encode)
    t0 = time.perf_counter()
    for role, text in conversation(n):
        buffer.put(ChatMessage(role=MessageRole(role), content=text))
    put = time.perf_counter() - t0
    times, window = _time(buffer.get, reps, 40)
    return {
        "times": times,
        "put": put,
        "window": _describe([(m.role.value, m.content or "") for m in window]),
    }


def case_gt_prune(n: int, reps: int) -> dict[str, Any]:
    from _conversations import conversation
    from griptape.artifacts import TextArtifact
    from griptape.common import Message as GtMessage
    from griptape.common import PromptStack, TextMessageContent
    from griptape.drivers.memory.conversation.local import LocalConversationMemoryDriver
    from griptape.drivers.prompt.openai import OpenAiChatPromptDriver
    from griptape.memory.structure import ConversationMemory, Run
    from griptape.tokenizers import OpenAiTokenizer

    conv = conversation(n)
    driver = OpenAiChatPromptDriver(
        model="gpt-4",
        api_key="sk-fake-no-network",
        tokenizer=OpenAiTokenizer(model="gpt-4", max_input_tokens=BUDGET),
    )
    memory = ConversationMemory(
        conversation_memory_driver=LocalConversationMemoryDriver(), autoprune=True
    )
    body = conv[1:]
    t0 = time.perf_counter()
    for i in range(0, len(body) - 1, 2):
        memory.add_run(Run(input=TextArtifact(body[i][1]), output=TextArtifact(body[i + 1][1])))
    add = time.perf_counter() - t0
    system = GtMessage(content=[TextMessageContent(TextArtifact(conv[0][1]))], role="system")

    def run() -> PromptStack:
        stack = PromptStack(messages=[system])
        return memory.add_to_prompt_stack(driver, stack, index=1)

    times, stack = _time(run, reps, 40)
    roles = {"system": "system", "user": "user", "assistant": "assistant"}
    return {
        "times": times,
        "put": add,
        "window": _describe([(roles[m.role], m.to_text()) for m in stack.messages]),
    }


def run_case(name: str, n: int, reps: int) -> dict[str, Any]:
    if name == "ours_mem":
        return case_ours(n, reps, "mem")
    if name == "ours_sqlite":
        return case_ours(n, reps, "sqlite")
    return {"lc_trim": case_lc_trim, "lli_get": case_lli_get, "gt_prune": case_gt_prune}[name](
        n, reps
    )


# -- the middleware's per-call overhead (--middleware) ----------------------------------
def _rebuilding_middleware() -> Any:
    """``OffpromptMiddleware`` with its window planned as before issue 19 (kept verbatim
    here as the reference): a new store and memory per model call."""
    from offprompt_langchain import OffpromptMiddleware

    from offprompt.conversation import ConversationMemory
    from offprompt.stores import InMemoryStore

    class Rebuilding(OffpromptMiddleware):
        def _plan(self, messages: Any, system: Any) -> Any:
            counted = [self._counted(m) for m in messages]
            roles = [m.role for m, _ in counted]
            if "user" not in roles:
                return messages
            store = InMemoryStore()
            store.append("trim", [m for m, _ in counted], [c for _, c in counted])
            window = ConversationMemory(
                store, "trim", tokenizer=self.tokenizer, tracer=self.tracer
            ).window(self.max_tokens, reserve=self._reserve(system))
            return self._select(messages, roles, window, 0)

    return Rebuilding


def case_middleware(n: int, reps: int) -> dict[str, Any]:
    import logging

    from _conversations import conversation
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from offprompt_langchain import OffpromptMiddleware
    from offprompt_langchain.testing import ScriptedChatModel

    from offprompt.task_memory import TaskMemory
    from offprompt.tokens import TiktokenTokenizer

    logging.disable(logging.WARNING)  # the rebuilding reference warns on every call
    conv = conversation(n)
    kinds = {"user": HumanMessage, "assistant": AIMessage}
    messages = [kinds[r](content=t, id=f"m{i}") for i, (r, t) in enumerate(conv[1:])]
    request = ModelRequest(
        model=ScriptedChatModel(script=[]),
        messages=messages,
        system_message=SystemMessage(conv[0][1]),
    )
    tokenizer = TiktokenTokenizer("cl100k_base", message_overhead=0)
    memory = TaskMemory()
    out: dict[str, Any] = {}
    sent: dict[str, list[str | None]] = {}
    for name, cls in (("now", OffpromptMiddleware), ("rebuild", _rebuilding_middleware())):
        middleware = cls(memory, max_tokens=BUDGET, tokenizer=tokenizer)
        kept = middleware.wrap_model_call(request, lambda r: r)  # fills the count cache
        sent[name] = [m.id for m in kept.messages]
        times, _ = _time(lambda mw=middleware: mw.wrap_model_call(request, lambda r: r), reps, 20)
        out[name] = times
        if name == "now":
            times, _ = _time(lambda mw=middleware: [mw._counted(m) for m in messages], reps, 20)
            out["counts"] = times
    memory.close()
    out["same_window"] = sent["now"] == sent["rebuild"]
    out["kept"] = len(sent["now"])
    return out


def middleware_section(sizes: list[int], reps: int) -> str:
    results = {n: case_middleware(n, reps) for n in sizes}
    lines = [
        f"Per model call, median (runs): what OffpromptMiddleware(max_tokens={BUDGET:,}) adds, "
        "cache of token counts warm.",
        "",
        "| case | " + " | ".join(f"N={n:,}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    labels = {
        "now": "select_window over the cached counts (this version)",
        "rebuild": "throwaway InMemoryStore + ConversationMemory per call (before)",
        "counts": "floor: look up every message's cached count",
    }
    for key in ("now", "rebuild", "counts"):
        cells = []
        for n in sizes:
            r = results[n]
            median = statistics.median(r[key])
            ratio = "" if key == "now" else f", {median / statistics.median(r['now']):.1f}x"
            cells.append(f"{fmt(median)} ({len(r[key])}){ratio}")
        lines.append(f"| {labels[key]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Ratios are to this version. Same messages sent by both: "
        + ", ".join(
            f"N={n:,}: {'yes' if results[n]['same_window'] else 'NO'} ({results[n]['kept']} kept)"
            for n in sizes
        )
        + ".",
    ]
    return "\n".join(lines)


# -- the parent: subprocesses, tables ----------------------------------------------------
def _spawn(name: str, n: int, reps: int, timeout: float) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--case", name, "--n", str(n), "--reps", str(reps)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"killed": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def cell(result: dict[str, Any], ours: float | None) -> str:
    if "killed" in result:
        return f"> {result['killed']:.0f} s (killed)"
    if "error" in result:
        return f"error: {result['error'][:60]}"
    median = statistics.median(result["times"])
    ratio = (
        f", {median / ours:,.0f}x"
        if ours and median / ours >= 2
        else (f", {median / ours:.1f}x" if ours else "")
    )
    return f"{fmt(median)} ({len(result['times'])}){ratio}"


def machine() -> str:
    from importlib.metadata import version

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    pkgs = [
        "tiktoken",
        "langchain-core",
        "llama-index-core",
        "griptape",
        "qdrant-client",
        "pydantic",
    ]
    versions = ", ".join(f"{p} {version(p)}" for p in pkgs)
    return (
        f"{platform.platform()}, {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}; "
        f"sqlite {__import__('sqlite3').sqlite_version}; {versions}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="1k and 10k only, short timeouts, no file"
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per anchor case")
    parser.add_argument(
        "--middleware",
        action="store_true",
        help="only the middleware's per-call overhead; writes RESULTS_window_middleware.md",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.n, args.reps)))
        return
    if args.middleware:
        table = middleware_section([1_000, 10_000], 200)
        print(table)
        header = (
            f"# Middleware window overhead (bench_window.py --middleware)\n\n"
            f"Machine: {machine()}\n\nMeasured {time.strftime('%Y-%m-%d')}, load average "
            f"{os.getloadavg()[0]:.1f} (a shared machine: ratios matter, not absolutes).\n\n"
        )
        (HERE / "RESULTS_window_middleware.md").write_text(header + table + "\n")
        print(f"\nwrote {HERE / 'RESULTS_window_middleware.md'}")
        return

    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for n in sizes:
        for name in CASES:
            ours_case = name.startswith("ours")
            reps = 1_000 if ours_case else 5
            limit = max(timeout, 300.0) if ours_case else timeout
            print(f"  {name} n={n:,} ...", file=sys.stderr, flush=True)
            results[name, n] = _spawn(name, n, reps, limit)

    lines = [
        f"Window of {BUDGET:,} cl100k tokens; median (runs), ratio to offprompt InMemoryStore window().",
        "",
    ]
    lines.append("| case | " + " | ".join(f"N={n:,}" for n in sizes) + " |")
    lines.append("|---|" + "---|" * len(sizes))
    for name in CASES:
        row = []
        for n in sizes:
            base = results["ours_mem", n]
            ours = statistics.median(base["times"]) if "times" in base else None
            row.append(cell(results[name, n], None if name == "ours_mem" else ours))
        lines.append(f"| {LABELS[name]} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Window returned (messages excl. system / content tokens / system kept / first role):",
        "",
    ]
    lines.append("| case | " + " | ".join(f"N={n:,}" for n in sizes) + " |")
    lines.append("|---|" + "---|" * len(sizes))
    for name in CASES:
        row = []
        for n in sizes:
            w = results[name, n].get("window")
            row.append(
                f"{w['messages']} / {w['tokens']} / {'yes' if w['system_kept'] else 'NO'} / {w['first_role']}"
                if w
                else "-"
            )
        lines.append(f"| {LABELS[name]} | " + " | ".join(row) + " |")
    lines += [
        "",
        "offprompt details: first window of a fresh memory object (builds the index from the store), and flatness:",
        "",
    ]
    lines.append("| store | " + " | ".join(f"N={n:,}" for n in sizes) + " |")
    lines.append("|---|" + "---|" * len(sizes))
    for name in ("ours_mem", "ours_sqlite"):
        cells = []
        for n in sizes:
            r = results[name, n]
            cells.append(f"cold {fmt(r['cold_window'])}" if "cold_window" in r else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name in ("ours_mem", "ours_sqlite"):
        first, last = results[name, sizes[0]], results[name, sizes[-1]]
        if "times" in first and "times" in last:
            ratio = statistics.median(last["times"]) / statistics.median(first["times"])
            lines.append(
                f"\n{name}: window at N={sizes[-1]:,} is {ratio:.2f}x its time at N={sizes[0]:,} (target: within 3x)."
            )
    lines += [
        "",
        "Append throughput vs the floor (tiktoken-encode every message once, single thread):",
        "",
    ]
    lines.append(
        "| N | floor encode | in-memory, one at a time | in-memory, batches of 100 | SQLite, batches of 100 (one transaction each) |"
    )
    lines.append("|---|---|---|---|---|")
    for n in sizes:
        mem, sql = results["ours_mem", n], results["ours_sqlite", n]
        if "floor_encode" not in mem or "floor_encode" not in sql:
            lines.append(f"| {n:,} | - | - | - | - |")
            continue
        floor = mem["floor_encode"]
        sql_floor = sql["floor_encode"]
        lines.append(
            f"| {n:,} | {fmt(floor)} | {fmt(mem['append_single'])} ({mem['append_single'] / floor:.2f}x) | "
            f"{fmt(mem['append_batched'])} ({mem['append_batched'] / floor:.2f}x) | "
            f"{fmt(sql['append_batched'])} ({sql['append_batched'] / sql_floor:.2f}x) |"
        )
    for name in ("lli_get", "gt_prune"):
        puts = [
            f"N={n:,}: {fmt(results[name, n]['put'])}" for n in sizes if "put" in results[name, n]
        ]
        if puts:
            lines.append(
                f"\n{LABELS[name]} build (put / add_run of all messages, not in the window time): "
                + ", ".join(puts)
            )
    table = "\n".join(lines)
    print(table)
    if not args.quick:
        header = f"# Window benchmark (bench_window.py)\n\nMachine: {machine()}\n\nMeasured {time.strftime('%Y-%m-%d')}.\n\n"
        (HERE / "RESULTS_window.md").write_text(header + table + "\n")
        print(f"\nwrote {HERE / 'RESULTS_window.md'}")


if __name__ == "__main__":
    main()
