"""Seeded synthetic conversations for the window benchmark (ANCHORS.md, benchmark 1).

One system message, then messages that alternate user/assistant (user first), each
20-400 cl100k tokens of English-like prose from a fixed vocabulary with numbers and
identifiers mixed in. Each size is a prefix of the same stream, so sizes are comparable.
"""

from __future__ import annotations

import random
from functools import lru_cache

SEED = 12345
SYSTEM = (
    "You are a helpful assistant. Answer concisely, cite the figures you use, and ask when unsure."
)

_PROSE = (
    "the report shows that revenue grew in the third quarter while costs stayed flat "
    "we should compare this with last year and check the regional numbers before the meeting "
    "customer support tickets dropped after the release of the new onboarding flow "
    "please summarize the main risks and the open questions for the team "
    "latency improved on most endpoints but the search service is still slow under load "
    "the contract renewal depends on pricing the legal review and the security audit "
    "inventory levels in the warehouse are lower than forecast for several products "
    "marketing wants a draft of the announcement and a short list of talking points"
)
_WORDS = _PROSE.split()


@lru_cache(maxsize=1)
def _word_tokens() -> dict[str, int]:
    from offprompt.tokens import load_encoding

    enc = load_encoding("cl100k_base")
    return {w: len(enc.encode_ordinary(" " + w)) for w in set(_WORDS)}


def _token(rng: random.Random) -> tuple[str, int]:
    roll = rng.random()
    if roll < 0.08:
        return str(rng.randint(0, 99_999)), 2
    if roll < 0.11:
        return f"{rng.choice('ABCDEFXYZ')}{rng.randint(100, 999)}-{rng.randint(10, 99)}", 6
    word = rng.choice(_WORDS)
    return word, _word_tokens()[word]


@lru_cache(maxsize=4)
def conversation(n: int, seed: int = SEED) -> tuple[tuple[str, str], ...]:
    """``(role, text)`` pairs: the system message, then ``n`` alternating messages."""
    rng = random.Random(seed)
    out = [("system", SYSTEM)]
    for i in range(n):
        target = rng.randint(22, 366)  # lands on 20-400 real tokens, mean about 200
        words: list[str] = []
        used = 0
        while True:
            word, cost = _token(rng)
            if used + cost > target - 2:  # the capital and the full stop cost about 2
                break
            words.append(word)
            used += cost
        text = " ".join(words).capitalize() + "."
        out.append(("user" if i % 2 == 0 else "assistant", text))
    return tuple(out)
