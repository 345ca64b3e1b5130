"""BM25-style sparse encoders: over the analyzer's words (the default) or tokenizer ids.

:class:`BM25WordEncoder` (what every store creates) indexes the terms of
:class:`~offprompt.vectors.analyzer.Analyzer`: case-folded words, English stop words
dropped, Snowball stems, each term at its 32-bit hash. :class:`BM25SparseEncoder` is
the encoder of stores written before it (tiktoken ids); a store whose collection holds
those vectors keeps using it, so old data reads back as it was written.

The document side carries BM25's term-frequency saturation and length normalisation,
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))``; the IDF half of BM25 is
left to Qdrant (``Modifier.IDF`` on the sparse vector), so it stays correct as the
collection grows and shrinks. A query is the set of its token ids, each weighted 1.0.

Token ids come from the tiktoken encoding offprompt already uses to count and chunk,
so a chunk's ids are reused rather than tokenised twice. BPE ids are case- and
leading-space-sensitive (``" Paris"`` and ``"paris"`` differ), so a query is expanded
with its lower-cased form and each word with and without a leading space.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, pairwise
from typing import Protocol

import numpy as np

from offprompt.errors import ValidationError
from offprompt.tokens import default_tokenizer
from offprompt.vectors.analyzer import Analyzer

__all__ = [
    "FEEDBACK_WEIGHT",
    "BM25SparseEncoder",
    "BM25WordEncoder",
    "IdTokenizer",
    "SparseEncoder",
    "SparseVector",
    "widen",
]

_WORD = re.compile(r"\w+", re.UNICODE)
#: Query word forms whose token ids :meth:`BM25SparseEncoder.encode_query` keeps.
_FORM_CACHE = 65_536


class IdTokenizer(Protocol):
    """What the sparse encoder needs of a tokenizer: text to integer ids."""

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""
        ...


@dataclass(frozen=True)
class SparseVector:
    """Non-zero dimensions of a sparse vector, indices ascending."""

    indices: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.indices)


def _bm25_spans(
    ids: np.ndarray, stops: Sequence[int], k1: float, b: float, avg_len: float
) -> list[SparseVector]:
    """BM25 document weights of the consecutive documents ``ids[..stops[0]]``, ... (ids < 2**32)."""
    if not len(stops):
        return []
    bounds = np.asarray(stops, dtype=np.int64)
    array = np.asarray(ids[: int(bounds[-1])], dtype=np.int64)
    if array.size and (array.min() < 0 or array.max() >= 1 << 32):
        raise ValidationError("token ids must be in [0, 2**32)")
    lengths = np.diff(bounds, prepend=0)
    rows = np.repeat(np.arange(bounds.size, dtype=np.int64), lengths)
    keys = (rows << 32) | array  # (document, token) pairs, sorted together
    keys.sort()
    first = np.empty(keys.size, dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    tf = np.diff(starts, append=keys.size).astype(np.float64)
    unique = keys[starts]
    row = unique >> 32
    norm = k1 * (1.0 - b + b * lengths[row] / avg_len)
    values = (tf * (k1 + 1.0) / (tf + norm)).tolist()
    indices = (unique & 0xFFFFFFFF).tolist()
    edges = np.searchsorted(row, np.arange(bounds.size + 1)).tolist()
    return [SparseVector(indices=indices[a:z], values=values[a:z]) for a, z in pairwise(edges)]


def _check_bm25(name: str, k1: float, b: float, avg_len: float) -> None:
    if k1 < 0 or not 0.0 <= b <= 1.0 or avg_len <= 0:
        raise ValidationError(
            f"{name}: need k1 >= 0, 0 <= b <= 1, avg_len > 0 (got {k1}, {b}, {avg_len})"
        )


#: The total query weight of pseudo-relevance feedback terms (each query term: 1.0).
FEEDBACK_WEIGHT = 3.0


def widen(
    query: SparseVector, feedback: SparseVector, weight: float = FEEDBACK_WEIGHT
) -> SparseVector:
    """``query`` plus ``feedback``'s dimensions sharing ``weight`` in proportion to their values."""
    total = sum(feedback.values)
    if not len(feedback) or total <= 0 or weight <= 0:
        return query
    weights = dict(zip(query.indices, query.values, strict=True))
    for index, value in zip(feedback.indices, feedback.values, strict=True):
        weights[index] = weights.get(index, 0.0) + weight * value / total
    ordered = sorted(weights)
    return SparseVector(indices=ordered, values=[weights[i] for i in ordered])


class SparseEncoder(Protocol):
    """What a store needs of a sparse encoder: documents and queries to sparse vectors."""

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """One sparse vector per text, for storing."""
        ...

    def encode_query(self, text: str) -> SparseVector:
        """The sparse vector of a query."""
        ...


class BM25WordEncoder:
    """BM25 document weights over the analyzer's terms; IDF comes from Qdrant's modifier.

    Documents and queries go through the same :class:`Analyzer`. A query is the set of
    its terms, each weighted 1.0.

    Args:
        analyzer: The analyzer; ``Analyzer()`` (English) when omitted.
        k1: Term-frequency saturation.
        b: Length normalisation (0 = none, 1 = full).
        avg_len: Expected document length in terms (after stop words).
        feedback_weight: The total query weight of the feedback texts' terms (see
            :meth:`encode_query`); each query term weighs 1.0.

    Example:
        >>> enc = BM25WordEncoder()
        >>> enc.encode_query("Camping trips?").indices == enc.encode_query("camp trip").indices
        True
    """

    #: The name of the sparse vector these weights are stored under.
    vector_name = "words"

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: float = 64.0,
        feedback_weight: float = FEEDBACK_WEIGHT,
    ) -> None:
        _check_bm25("BM25WordEncoder", k1, b, avg_len)
        if not feedback_weight >= 0:
            raise ValidationError(f"feedback_weight must be >= 0, got {feedback_weight!r}")
        self.feedback_weight = float(feedback_weight)
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            raise ValidationError(
                f"analyzer must be an offprompt.vectors.Analyzer, got {type(analyzer).__name__}"
            )
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.k1 = k1
        self.b = b
        self.avg_len = avg_len

    def __repr__(self) -> str:
        return (
            f"BM25WordEncoder({self.analyzer!r}, k1={self.k1}, b={self.b}, avg_len={self.avg_len})"
        )

    def encode_document(self, text: str) -> SparseVector:
        """BM25 document weights of ``text``."""
        return self.encode_documents([text])[0]

    def document_terms(self, texts: Sequence[str]) -> list[list[int]]:
        """The term ids :meth:`encode_documents` would weight, per text (repeats kept):
        what a caller matching terms needs, without computing the weights."""
        return [self.analyzer.indices(text) for text in texts]

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """BM25 document weights of each text (one vectorised pass for all of them)."""
        lists = self.document_terms(texts)
        stops = list(accumulate(len(ids) for ids in lists))
        flat = np.fromiter(
            chain.from_iterable(lists), dtype=np.int64, count=stops[-1] if stops else 0
        )
        return _bm25_spans(flat, stops, self.k1, self.b, self.avg_len)

    def encode_query(self, text: str, *, feedback: Sequence[str] = ()) -> SparseVector:
        """The query's distinct terms, weight 1.0 each, plus the ``feedback`` texts' terms.

        Pseudo-relevance feedback: the terms of the feedback texts (the best hits of a
        first query) share ``feedback_weight`` in proportion to their counts, so a
        fact restated in other words is reached through the names and places of the
        first hit without that hit's words outweighing the question's.
        """
        ordered = sorted(set(self.analyzer.indices(text)))
        query = SparseVector(indices=ordered, values=[1.0] * len(ordered))
        counts: dict[int, float] = {}
        for index in (i for t in feedback for i in self.analyzer.indices(t)):
            counts[index] = counts.get(index, 0.0) + 1.0
        extra = sorted(counts)
        return widen(query, SparseVector(extra, [counts[i] for i in extra]), self.feedback_weight)


class BM25SparseEncoder:
    """BM25 document weights over token ids; IDF comes from Qdrant's modifier.

    The encoder of stores written before :class:`BM25WordEncoder` (their sparse vector
    is named ``"sparse"``); new stores do not use it.

    Args:
        tokenizer: Anything with ``encode(text) -> list[int]``; tiktoken ``o200k_base``
            (offprompt's default tokenizer) when omitted.
        k1: Term-frequency saturation.
        b: Length normalisation (0 = none, 1 = full).
        avg_len: Expected document length in tokens.

    Example:
        >>> enc = BM25SparseEncoder()
        >>> doc = enc.encode_document("error error timeout")
        >>> len(doc.indices) == len(doc.values) > 0
        True
    """

    #: The name of the sparse vector these weights are stored under.
    vector_name = "sparse"

    def __init__(
        self,
        tokenizer: IdTokenizer | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: float = 256.0,
    ) -> None:
        _check_bm25("BM25SparseEncoder", k1, b, avg_len)
        if tokenizer is None:
            tokenizer = default_tokenizer()
        self.tokenizer = tokenizer
        self._form_ids: dict[str, tuple[int, ...]] = {}
        self.k1 = k1
        self.b = b
        self.avg_len = avg_len

    def encode_ids(self, ids: Sequence[int] | np.ndarray) -> SparseVector:
        """BM25 document weights of one document given as token ids."""
        array = np.asarray(ids, dtype=np.int64)
        return self.encode_spans(array, [array.size])[0]

    def encode_spans(
        self, ids: np.ndarray, stops: Sequence[int], *, avg_len: float | None = None
    ) -> list[SparseVector]:
        """BM25 weights of consecutive documents ``ids[0:stops[0]]``, ``ids[stops[0]:stops[1]]``...

        One sort over all of them instead of one per document; numpy releases the GIL
        while it sorts, so this also runs well in a background thread. ``avg_len``
        replaces the encoder's for these documents (a caller that cuts them knows their
        length, see ``TextArtifactStorage``).
        """
        if avg_len is None:
            avg_len = self.avg_len
        _check_bm25("BM25SparseEncoder", self.k1, self.b, avg_len)
        return _bm25_spans(ids, stops, self.k1, self.b, avg_len)

    def encode_document(self, text: str) -> SparseVector:
        """BM25 document weights of ``text``."""
        return self.encode_ids(self.tokenizer.encode(text))

    def document_terms(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids :meth:`encode_documents` would weight, per text (repeats kept)."""
        return [self.tokenizer.encode(text) for text in texts]

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        """BM25 document weights of each text (one :meth:`encode_spans` for all of them)."""
        return self.encode_id_lists(self.document_terms(texts))

    def encode_id_lists(self, documents: Sequence[Sequence[int]]) -> list[SparseVector]:
        """BM25 document weights of documents given as token id lists, in one pass."""
        stops = list(accumulate(len(ids) for ids in documents))
        flat = np.fromiter(
            chain.from_iterable(documents), dtype=np.int64, count=stops[-1] if stops else 0
        )
        return self.encode_spans(flat, stops)

    def encode_query(self, text: str) -> SparseVector:
        """The query's token ids (and those of its case / spacing variants), weight 1.0."""
        ids: set[int] = set(self.tokenizer.encode(text))
        ids.update(self.tokenizer.encode(text.lower()))
        forms: set[str] = set()
        for word in _WORD.findall(text):
            forms.update((word, word.lower(), word.capitalize()))
        cache = self._form_ids
        for form in forms:
            known = cache.get(form)
            if known is None:
                # words repeat across queries (a feedback query holds a whole fragment)
                known = (*self.tokenizer.encode(form), *self.tokenizer.encode(" " + form))
                if len(cache) >= _FORM_CACHE:
                    cache.clear()
                cache[form] = known
            ids.update(known)
        ordered = sorted(ids)
        return SparseVector(indices=ordered, values=[1.0] * len(ordered))
