"""LoCoMo conversations as long-term memory benchmark data (see the data's README).

Each turn is one fragment ``"Speaker (session date): text"`` (plus ``[shares a photo:
caption]``), scoped to its conversation; each question names its evidence turns by
``dia_id``. Evidence ids that name no turn of the conversation (a few are mistyped in
the data) are dropped; a question left with none is skipped and counted.
"""

from __future__ import annotations

import json
import re
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
