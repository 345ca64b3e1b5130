"""How a long-term read ranks: its plan, the fused pool and the time-weighted score.

A read is planned before any I/O (:class:`ReadPlan`): the optional feedback query, the
rankings it fuses (:func:`queries`) and the pool size. The store answers; then
:func:`candidates` fuses the rankings (:mod:`offprompt.vectors.fusion`), :func:`rank`
scores each candidate ``similarity + (1 - decay_rate) ** hours + importance`` and
:func:`read_event` describes the read for the trace. ``LongTermMemory.search`` and
``asearch`` share all of it and differ only in how they call the store. The formula
and the modes are described in :mod:`offprompt.longterm.long_term`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from offprompt.errors import ValidationError
from offprompt.longterm.fragment import MemoryFragment, Scope
from offprompt.longterm.payload import NARROW_ORDER, to_fragment
from offprompt.trace import TraceEvent
from offprompt.vectors import Hit
from offprompt.vectors.fusion import fuse
from offprompt.vectors.store import SearchMode

__all__ = ["ScoredFragment"]


@dataclass(frozen=True)
class Ranked:
    """A candidate of a read with its score parts (``score = similarity + recency + importance``)."""

    score: float
    hit: Hit
    similarity: float
    recency: float
    importance: float


@dataclass(frozen=True)
class ScoredFragment:
    """A fragment returned by :meth:`LongTermMemory.search` with its score's parts.

    ``score == similarity + recency + importance``; what ``similarity`` is depends on
    the read's mode (see :mod:`offprompt.longterm.long_term`): a calibrated fused score
    in ``[0, 1]`` for ``"hybrid"`` and ``"sparse"``, the cosine for ``"dense"``.
    """

    fragment: MemoryFragment
    score: float
    similarity: float
    recency: float
    importance: float


def check_mode(mode: object) -> SearchMode:
    """``mode`` if it names a retrieval mode."""
    if mode == "hybrid" or mode == "dense" or mode == "sparse":
        return mode
    raise ValidationError(f"mode must be 'hybrid', 'dense' or 'sparse', got {mode!r}")


def narrow_by(flt: Mapping[str, Any], retriever: SearchMode) -> str | None:
    """The scope key a dense search is narrowed by (see ``QdrantVectorStore.search``)."""
    if retriever != "dense":
        return None
    return next((key for key in NARROW_ORDER if key in flt), None)


def first_mode(mode: SearchMode) -> SearchMode:
    """The retriever that picks the feedback fragments (BM25 unless dense-only)."""
    return "dense" if mode == "dense" else "sparse"


def queries(
    observation: str, first: Sequence[Hit], mode: SearchMode
) -> list[tuple[str, SearchMode, list[str]]]:
    """The rankings a read fuses: ``(query text, retriever, feedback texts)`` each."""
    feedback = [hit.text for hit in first]
    if mode == "hybrid":
        return [(observation, "dense", []), (observation, "sparse", feedback)]
    if mode == "dense":  # no BM25 to widen: the dense query reads the texts too
        return [("\n".join([observation, *feedback]), mode, [])]
    return [(observation, mode, feedback)]


@dataclass(frozen=True)
class ReadPlan:
    """One read, decided before any I/O; the sync and the async read both follow it.

    Attributes:
        observation: The query.
        k: Fragments to return.
        pool: Candidates each ranking fetches (and the fused pool's size).
        scope: The read's scope, laid over the memory's default one.
        filter: The store filter (scope, flags, insights).
        mode: The retrieval mode (after the sparse-vector fallback).
        include_insights: Whether insights may be returned.
        feedback: First-pass fragments that widen the BM25 query (0: none).
    """

    observation: str
    k: int
    pool: int
    scope: Scope
    filter: dict[str, Any]
    mode: SearchMode
    include_insights: bool
    feedback: int

    def first_query(self) -> dict[str, Any] | None:
        """Keyword arguments of the feedback query (after the query text), if any."""
        if not self.feedback:
            return None
        retriever = first_mode(self.mode)
        return {
            "top_n": self.feedback,
            "filter": self.filter,
            "mode": retriever,
            "narrow_by": narrow_by(self.filter, retriever),
        }

    def queries(self, first: Sequence[Hit]) -> list[tuple[str, dict[str, Any]]]:
        """``(query text, keyword arguments)`` of each ranking to fuse."""
        return [
            (
                text,
                {
                    "top_n": self.pool,
                    "filter": self.filter,
                    "mode": retriever,
                    "narrow_by": narrow_by(self.filter, retriever),
                    "feedback": feedback,
                },
            )
            for text, retriever, feedback in queries(self.observation, first, self.mode)
        ]


def candidates(
    rankings: Sequence[Sequence[Hit]],
    mode: SearchMode,
    pool: int,
    weights: Sequence[float],
) -> list[tuple[Hit, float]]:
    """The pool with each candidate's ``similarity`` (``weights``: of a hybrid read)."""
    if mode == "dense":
        return [(hit, hit.score) for hit in rankings[0]]
    return fuse(rankings, weights if mode == "hybrid" else (1.0,), key=lambda hit: hit.id)[:pool]


def rank(candidates: Sequence[tuple[Hit, float]], now: datetime, decay_rate: float) -> list[Ranked]:
    """Every candidate with its score parts, best first."""
    scored = []
    now_ts = now.timestamp()
    for hit, similarity in candidates:
        hours = max(0.0, (now_ts - float(hit.payload["last_accessed_ts"])) / 3600.0)
        recency = (1.0 - decay_rate) ** hours
        importance = float(hit.payload.get("importance", 0.0))
        scored.append(
            Ranked(similarity + recency + importance, hit, similarity, recency, importance)
        )
    scored.sort(key=lambda t: (-t.score, t.hit.id))
    return scored


def scored_fragments(ranked: Sequence[Ranked], k: int, now: datetime) -> list[ScoredFragment]:
    """The best ``k`` of ``ranked`` as fragments accessed ``now``."""
    return [
        ScoredFragment(
            fragment=to_fragment(r.hit.id, r.hit.text, r.hit.payload, accessed=now),
            score=r.score,
            similarity=r.similarity,
            recency=r.recency,
            importance=r.importance,
        )
        for r in ranked[:k]
    ]


def read_event(
    plan: ReadPlan,
    ranked: Sequence[Ranked],
    *,
    tokens: Callable[[Hit], int],
    namespace: str,
    decay_rate: float,
) -> TraceEvent:
    """The ``longterm_read`` trace event of a read: every candidate's score parts, and
    why the ones not returned were dropped."""
    k = plan.k

    def entry(r: Ranked) -> dict[str, Any]:
        return {
            "id": r.hit.id,
            "score": r.score,
            "similarity": r.similarity,
            "recency": r.recency,
            "importance": r.importance,
            "is_insight": bool(r.hit.payload.get("is_insight")),
            "tokens": tokens(r.hit),
        }

    included = [entry(item) for item in ranked[:k]]
    dropped = [{**entry(item), "reason": f"ranked below the top {k}"} for item in ranked[k:]]
    scores: dict[str, float] = {}
    for item in included:
        for part in ("similarity", "recency", "importance"):
            scores[f"{item['id']}.{part}"] = float(item[part])
    excluded = ["other scopes", "forgotten", "merged"]
    if not plan.include_insights:
        excluded.append("insights")
    return TraceEvent(
        "longterm_read",
        session_id=plan.scope.session,
        scope=plan.scope.fields(),
        tokens=sum(int(item["tokens"]) for item in included),
        scores=scores,
        included=included,
        dropped=dropped,
        detail={
            "query": plan.observation[:200],
            "k": k,
            "pool": plan.pool,
            "candidates": len(ranked),
            "returned": len(included),
            "namespace": namespace,
            "decay_rate": decay_rate,
            "mode": plan.mode,
            "feedback": plan.feedback,
            "filtered_in_store": excluded,
        },
    )
