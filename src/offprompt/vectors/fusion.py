"""Rank fusion: reciprocal rank fusion (RRF), its weighted form and a calibrated score.

One definition for every hybrid ranking offprompt makes: Qdrant's own fusion of a
dense and a BM25 prefetch (:meth:`QdrantVectorStore.search` with ``mode="hybrid"``
passes :data:`RRF_K` and the store's ``fusion_weights`` to the engine), long-term
memory's fusion of two rankings that answer different queries, and the LangGraph
store's ranking of items.

Weighted RRF, Qdrant's formula: an item at 0-based position ``p`` of ranking ``i``
(weight ``w_i``) gets ``1 / ((p + 1) / w_i + RRF_K - 1)``; its fused score is the sum
over the rankings it is in (a ranking of weight ``<= 0`` is left out). With every
weight ``1`` this is plain RRF, ``1 / (RRF_K + p)``.

The **calibrated similarity** divides the fused score by the best one possible (first
in every ranking), so it lies in ``[0, 1]``: ``1.0`` means "ranked first by every
retriever", and the scale depends neither on the query, the collection nor the
embedder. With one ranking it is ``RRF_K / (RRF_K + p)``: 1, 2/3, 1/2, ...

Example:
    >>> [(item, round(score, 3)) for item, score in fuse([["a", "b"], ["b"]], [1.0, 1.0])]
    [('b', 0.833), ('a', 0.5)]
    >>> rank_similarity(1)
    0.6666666666666666
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["RRF_K", "fuse", "rank_similarity", "rrf_max", "rrf_term"]

#: Reciprocal-rank-fusion constant ``k`` in ``weight / (k + rank)``; Qdrant's default is 2,
#: which lets a strong first place in one ranking survive a weak other ranking.
RRF_K = 2

T = TypeVar("T")


def rrf_term(position: int, weight: float = 1.0) -> float:
    """The weighted RRF term of 0-based ``position`` in a ranking of ``weight`` (> 0)."""
    return 1.0 / ((position + 1) / weight + RRF_K - 1)


def rrf_max(weights: Sequence[float]) -> float:
    """The best fused score possible: first in every ranking of positive weight."""
    return sum(rrf_term(0, w) for w in weights if w > 0)


def rank_similarity(position: int) -> float:
    """The calibrated similarity of 0-based ``position`` in a single unweighted ranking."""
    return rrf_term(position) / rrf_term(0)


def fuse(
    rankings: Sequence[Sequence[T]],
    weights: Sequence[float],
    *,
    key: Callable[[T], str] = str,
    score: Callable[[T], float] | None = None,
) -> list[tuple[T, float]]:
    """Fuse ``rankings`` (best first each) by weighted RRF; best first, calibrated.

    Args:
        rankings: One ranking per retriever.
        weights: One weight per ranking (``<= 0``: that ranking is left out).
        key: The identity of an item across rankings (``str(item)`` by default); an
            item found in several rankings is returned as its first occurrence.
        score: The retriever's score of an item, if ties should count: items of equal
            score in one ranking share the position of the first of them, so tied
            matches fuse equally (without it, ranking order alone decides).

    Returns:
        ``(item, calibrated similarity)`` pairs, best first (ties by key).
    """
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    fused: dict[str, float] = {}
    first: dict[str, T] = {}
    for weight, ranking in zip(weights, rankings, strict=True):
        if weight <= 0:
            continue
        position = 0
        for index, item in enumerate(ranking):
            if score is None or index == 0 or score(item) != score(ranking[index - 1]):
                position = index
            k = key(item)
            first.setdefault(k, item)
            fused[k] = fused.get(k, 0.0) + rrf_term(position, weight)
    top = rrf_max(weights)
    order = sorted(fused, key=lambda k: (-fused[k], k))
    return [(first[k], fused[k] / top) for k in order]
