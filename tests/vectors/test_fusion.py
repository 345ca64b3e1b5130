"""The one fusion module: weighted RRF, its calibration and tie handling."""

from __future__ import annotations

import pytest

from offprompt.vectors import _backends
from offprompt.vectors.fusion import RRF_K, fuse, rank_similarity, rrf_max, rrf_term


def test_calibrated_similarity_is_one_for_first_everywhere_and_within_zero_one() -> None:
    fused = dict(fuse([["a", "b", "c"], ["a", "c"]], [1.0, 4.0]))
    assert fused["a"] == pytest.approx(1.0)
    assert all(0 < v <= 1 for v in fused.values())
    assert fused["c"] > fused["b"]  # the heavier ranking decides
    assert rrf_max([1.0, 0.0]) == rrf_term(0, 1.0)  # a zero weight is left out


def test_one_ranking_gives_the_rank_similarity_series() -> None:
    assert [round(s, 4) for _, s in fuse([["x", "y", "z"]], [1.0])] == [1.0, 0.6667, 0.5]
    assert [rank_similarity(p) for p in range(3)] == [RRF_K / (RRF_K + p) for p in range(3)]


def test_tied_scores_share_a_position_only_when_asked() -> None:
    dense = [("a", 0.9), ("b", 0.8)]
    sparse = [("b", 2.0), ("a", 2.0)]  # a BM25 tie: the engine's order is arbitrary
    key = lambda item: item[0]  # noqa: E731
    plain = fuse([dense, sparse], [1.0, 1.0], key=key)
    tied = fuse([dense, sparse], [1.0, 1.0], key=key, score=lambda item: item[1])
    assert plain[0][1] == plain[1][1]  # rank order alone: the tie becomes a draw
    assert [item[0] for item, _ in tied] == ["a", "b"]  # the tie defers to the dense ranking


def test_the_engine_uses_the_same_constant() -> None:
    assert _backends.RRF_K is RRF_K
    with pytest.raises(ValueError, match="weights"):
        fuse([["a"]], [1.0, 1.0])
