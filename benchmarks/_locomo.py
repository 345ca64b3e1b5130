"""LoCoMo conversations as long-term memory benchmark data (see the data's README).

Each turn is one fragment ``"Speaker (session date): text"`` (plus ``[shares a photo:
caption]``), scoped to its conversation; each question names its evidence turns by
``dia_id``. Evidence ids that name no turn of the conversation (a few are mistyped in
the data) are dropped; a question left with none is skipped and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Turn:
    id: str  # "conversation:dia_id"
    user: str  # the conversation, used as the fragment's scope
    session: int
    text: str


@dataclass(frozen=True)
class Question:
    user: str
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversations:
    turns: list[Turn]
    questions: list[Question]
    skipped: int  # questions without a usable evidence turn


def turn_text(turn: dict[str, object], date: str) -> str:
    text = f"{turn['speaker']} ({date}): {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def load(directory: str | Path) -> Conversations:
    turns: list[Turn] = []
    questions: list[Question] = []
    skipped = 0
    files = sorted(Path(directory).glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise SystemExit(f"no LoCoMo *.json files in {directory}")
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        conv = data.get("sample_id") or path.stem
        conv = str(conv)
        known: set[str] = set()
        n = 1
        while f"session_{n}" in data or f"session_{n}_date_time" in data:
            date = str(data.get(f"session_{n}_date_time", ""))
            for turn in data.get(f"session_{n}") or []:
                dia = str(turn["dia_id"])
                known.add(dia)
                turns.append(Turn(f"{conv}:{dia}", conv, n, turn_text(turn, date)))
            n += 1
        for qa in data["qa"]:
            found = [d for e in qa.get("evidence", []) for d in _DIA.findall(str(e))]
            evidence = tuple(dict.fromkeys(f"{conv}:{d}" for d in found if d in known))
            if not evidence:
                skipped += 1
                continue
            questions.append(Question(conv, str(qa["question"]), evidence, int(qa["category"])))
    return Conversations(turns, questions, skipped)


def session_of(turn_id: str) -> str:
    """``"26:D3:7"`` -> ``"26:D3"``."""
    return turn_id.rsplit(":", 1)[0]


# ------------------------------------------------------------------ measuring

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

Ranker = Callable[[Question, int], list[str]]


@dataclass
class Scores:
    """Per question: (turn@5, turn@10, session@5, session@10), with its conversation and category."""

    rows: list[tuple[str, int, tuple[float, float, float, float]]]

    def mean(
        self,
        *,
        categories: Iterable[int] = (1, 2, 3, 4),
        conv: str | None = None,
        without: str | None = None,
    ) -> tuple[float, float, float, float]:
        cats = set(categories)
        picked = [
            r
            for c, cat, r in self.rows
            if cat in cats and (conv is None or c == conv) and (without is None or c != without)
        ]
        if not picked:
            return (0.0, 0.0, 0.0, 0.0)
        return tuple(sum(r[i] for r in picked) / len(picked) for i in range(4))  # type: ignore[return-value]


def evaluate(data: Conversations, rank: Ranker) -> Scores:
    rows = []
    for q in data.questions:
        wanted = set(q.evidence)
        sessions = {session_of(e) for e in wanted}
        r = []
        for k in (5, 10):
            got = rank(q, k)[:k]
            r.append(
                (
                    len(wanted.intersection(got)) / len(wanted),
                    len(sessions & {session_of(i) for i in got}) / len(sessions),
                )
            )
        rows.append((q.user, q.category, (r[0][0], r[1][0], r[0][1], r[1][1])))
    return Scores(rows)


_TOKEN = re.compile(r"\w+")


def bm25_ranker(data: Conversations) -> Ranker:
    """``rank_bm25.BM25Okapi`` over lower-cased ``\\w+`` words of each conversation's turns."""
    from rank_bm25 import BM25Okapi

    by_conv: dict[str, list[Turn]] = {}
    for t in data.turns:
        by_conv.setdefault(t.user, []).append(t)
    index = {
        c: BM25Okapi([_TOKEN.findall(t.text.lower()) for t in ts]) for c, ts in by_conv.items()
    }

    def rank(q: Question, k: int) -> list[str]:
        scores = index[q.user].get_scores(_TOKEN.findall(q.text.lower()))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [by_conv[q.user][i].id for i in order]

    return rank


def leave_one_out(
    data: Conversations, rows: dict[str, Scores], anchor: Scores
) -> list[tuple[str, str, float, float]]:
    """For each conversation: the row with the best turn@5 ratio to ``anchor`` on the
    other conversations, and that row's turn@5 and ratio on the one left out."""
    out = []
    for conv in sorted({q.user for q in data.questions}, key=lambda c: (len(c), c)):
        base = anchor.mean(without=conv)[0]
        best = max(rows, key=lambda name: rows[name].mean(without=conv)[0] / base)
        held = rows[best].mean(conv=conv)[0]
        out.append((conv, best, held, held / anchor.mean(conv=conv)[0]))
    return out
