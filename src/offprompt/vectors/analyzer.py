"""The lexical analyzer every BM25 in offprompt runs: text to the terms it indexes.

One :class:`Analyzer` turns a document at write time and a query at read time into
terms the same way:

1. Unicode normalisation (NFKC: full-width letters, ligatures and compatibility forms
   become their plain letters) and case folding (``str.casefold``: ``"Straße"`` and
   ``"STRASSE"`` both become ``"strasse"``);
2. word tokens, runs of Unicode letters, digits and ``_`` (``\\w+``), not sub-word
   pieces; other characters (punctuation, spaces, lone surrogates) separate words;
3. stop words of the language dropped (``"the"``, ``"what"``, ``"did"``...);
4. the Snowball stemmer of the language (``snowballstemmer``): ``"camping"``,
   ``"camped"`` and ``"camps"`` are one term, ``"camp"``.

A term becomes a sparse-vector index through a 32-bit hash (:func:`term_index`: CRC-32
of its UTF-8 bytes), stable across processes, machines and versions, with no
vocabulary to store. Two different terms can share an index: with ``n`` distinct terms
in a collection about ``n**2 / 2**33`` pairs collide (about one pair at 100,000 terms),
and a collision only merges the two terms' BM25 statistics.

``Analyzer(language=None)`` keeps case folding and word tokens and skips stop words and
stemming (for identifiers, logs in any language); ``stop_words=`` replaces the list.

Example:
    >>> Analyzer().terms("What did Caroline do when she went CAMPING?")
    ['carolin', 'went', 'camp']
    >>> Analyzer(language=None).terms("Stra\u00dfe \ufb01le_7")
    ['strasse', 'file_7']
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Iterable
from typing import Any

from offprompt.errors import ValidationError

__all__ = ["ENGLISH_STOP_WORDS", "Analyzer", "term_index"]

_WORD = re.compile(r"\w+")
#: Stems kept per analyzer (words repeat: a cache hit costs one dict lookup).
_STEM_CACHE = 200_000

#: The Snowball project's English stop word list, with the contractions' pieces that
#: ``\w+`` leaves (``"don't"`` -> ``"don"``, ``"t"``).
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "d",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "ll",
        "let",
        "m",
        "me",
        "more",
        "most",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "re",
        "s",
        "same",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "t",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "ve",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "y",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)

_STOP_WORDS: dict[str, frozenset[str]] = {"english": ENGLISH_STOP_WORDS}


def term_index(term: str) -> int:
    """The sparse-vector index of ``term``: CRC-32 of its UTF-8 bytes, in ``[0, 2**32)``."""
    return zlib.crc32(term.encode("utf-8", "surrogatepass"))


class Analyzer:
    """Text to BM25 terms: NFKC, case folding, ``\\w+`` words, stop words, Snowball stems.

    Args:
        language: A Snowball language (``snowballstemmer.algorithms()``: ``"english"``,
            ``"french"``, ``"german"``...), or ``None`` for no stemming and no stop words.
        stop_words: Words to drop (compared after case folding, before stemming);
            default: the language's list (English has one; other languages none unless
            given). ``()`` keeps every word.
        stem: Stem words (only with a ``language``).
        max_word_chars: Longer words (hashes, base64 runs) are cut to this many
            characters, so one blob cannot make a term per byte.

    Raises:
        ValidationError: An unknown language or a bad size.

    The same analyzer must serve a collection's writes and its reads; :attr:`key` names
    its configuration.
    """

    def __init__(
        self,
        language: str | None = "english",
        *,
        stop_words: Iterable[str] | None = None,
        stem: bool = True,
        max_word_chars: int = 64,
    ) -> None:
        if not isinstance(max_word_chars, int) or max_word_chars < 1:
            raise ValidationError(f"max_word_chars must be an int >= 1, got {max_word_chars!r}")
        self.language = language
        self.max_word_chars = max_word_chars
        self._stemmer: Any = None
        if language is not None:
            import snowballstemmer  # type: ignore[import-untyped,unused-ignore]

            if language not in snowballstemmer.algorithms():
                raise ValidationError(
                    f"Analyzer: unknown language {language!r}; "
                    f"one of {', '.join(snowballstemmer.algorithms())} or None"
                )
            if stem:
                self._stemmer = snowballstemmer.stemmer(language)
        if stop_words is None:
            stops = _STOP_WORDS.get(language or "", frozenset())
        else:
            if isinstance(stop_words, str):
                raise ValidationError("stop_words must be an iterable of words, not one str")
            stops = frozenset(unicodedata.normalize("NFKC", w).casefold() for w in stop_words)
        self.stop_words: frozenset[str] = stops
        # folded word -> (its term, the term's index); ("", 0) for a stop word
        self._terms: dict[str, tuple[str, int]] = {}

    def __repr__(self) -> str:
        return f"Analyzer(language={self.language!r}, stem={self._stemmer is not None}, stop_words={len(self.stop_words)})"

    @property
    def key(self) -> str:
        """A short name of this configuration (language, stemming, stop words)."""
        stops = f"{zlib.crc32(' '.join(sorted(self.stop_words)).encode()):08x}"
        return f"{self.language or 'none'}/{'stem' if self._stemmer else 'nostem'}/{stops}"

    def words(self, text: str) -> list[str]:
        """``text`` normalised, case-folded and cut into ``\\w+`` words (nothing dropped)."""
        if not isinstance(text, str):
            raise ValidationError(f"Analyzer: text must be str, got {type(text).__name__}")
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        return _WORD.findall(text.casefold())

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order, repeats kept (a document's term frequencies)."""
        return [term for term, _ in self._entries(text)]

    def indices(self, text: str) -> list[int]:
        """:func:`term_index` of each of :meth:`terms`, in order."""
        return [index for _, index in self._entries(text)]

    def _entries(self, text: str) -> list[tuple[str, int]]:
        cache = self._terms
        out: list[tuple[str, int]] = []
        append = out.append
        for word in self.words(text):
            entry = cache.get(word)
            if entry is None:
                entry = self._entry(word)
                if len(cache) >= _STEM_CACHE:
                    cache.clear()
                cache[word] = entry
            if entry[0]:
                append(entry)
        return out

    def _entry(self, word: str) -> tuple[str, int]:
        if word in self.stop_words:
            return ("", 0)
        if len(word) > self.max_word_chars:
            word = word[: self.max_word_chars]
        if self._stemmer is not None and not word.isdigit():
            word = str(self._stemmer.stemWord(word))
        return (word, term_index(word))
