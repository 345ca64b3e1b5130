"""HashingEmbedder's fast paths against the definition written plainly.

The definition: lower-case the text, take its ``\\w+`` words; every word adds its signed
crc32 feature (weight 1) and, if it has no digit and at most 24 characters, the signed
crc32 features of the character n-grams of ``<word>`` (weight ``ngram_weight``); the
vector is L2-normalised. The embedder splits ASCII text with ``bytes.translate``,
counts words in C and caches n-grams; whatever path a text takes, the vector must be
the definition's.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from offprompt.vectors import HashingEmbedder


def reference(text: str, dim: int, ngram: int = 3, weight: float = 0.5) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float64)
    for word in re.findall(r"\w+", text.lower()):
        h = zlib.crc32(b"w\x00" + word.encode("utf-8"))
        vec[h % dim] += -1.0 if h & 0x80000000 else 1.0
        if ngram and len(word) <= 24 and not re.search(r"\d", word):
            padded = f"<{word}>"
            for i in range(max(1, len(padded) - ngram + 1)):
                g = zlib.crc32(b"c\x00" + padded[i : i + ngram].encode("utf-8"))
                vec[g % dim] += -weight if g & 0x80000000 else weight
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec


TRICKY = [
    "Disk FULL on node-7: id=deadbeef 0x1F",
    "snake_case_word __dunder__ a_1",
    "Straße ÜBER café naïve",  # non-ASCII path
    "٣٤ arabic-indic digits, ² superscript, Ⅻ roman",  # Unicode digits and numerals
    "İstanbul ǅ ﬁx",  # lower() changes length or splits a ligature
    "lone \ud800 surrogate",
    "日本語のテキスト です",
    "x" * 30 + " " + "y" * 24,  # just above / at the n-gram length limit
    "",
    " \t\n!!!",
]


def test_matches_the_definition_on_tricky_texts() -> None:
    for dim, ngram in ((384, 3), (64, 2), (32, 0), (100, 5)):
        got = HashingEmbedder(dim, ngram=ngram).embed_array(TRICKY)
        want = np.array([reference(t, dim, ngram) for t in TRICKY])
        np.testing.assert_allclose(got, want, atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=8))
def test_matches_the_definition_on_any_text(texts: list[str]) -> None:
    embedder = HashingEmbedder(64)
    got = embedder.embed_array(texts)
    want = np.array([reference(t, 64) for t in texts])
    np.testing.assert_allclose(got, want, atol=1e-6)
    # A second call, now served from the n-gram cache, gives the same vectors.
    np.testing.assert_array_equal(embedder.embed_array(texts), got)


def test_a_full_cache_is_cleared_and_vectors_stay_the_same() -> None:
    words = [f"word{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(300)]
    texts = [" ".join(words[i : i + 30]) for i in range(0, 300, 30)]
    small = HashingEmbedder(64, cache_size=10)
    np.testing.assert_allclose(
        small.embed_array(texts), HashingEmbedder(64).embed_array(texts), atol=1e-7
    )
    # private-ok: the embedder cache's bound is the subject
    assert len(small._cache) <= 10
