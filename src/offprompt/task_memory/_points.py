"""Index points of a lexical-only chunk index: a few consecutive chunks per point.

An index over tool output pays for every point whatever its size: its payload, the
engine's payload indexes (tenant, namespace, kind, record id, scope, generation), its id
tracker entries. On logs that is ~0.6 KB a 512-token chunk, half the raw text again, and
the sparse vector itself repeats each chunk's common terms (timestamps, levels, field
names) that the next chunk repeats too. With no dense vectors (BM25 alone, the default)
nothing limits how much text one point may cover, so :class:`TextArtifactStorage` indexes
:data:`CHUNKS_PER_POINT` consecutive chunks as one point: its sparse vector is the BM25
of their tokens together, its payload the chunks' joint location plus the byte offsets
where its chunks meet (``cuts``) and each chunk's tokens (``tokens_per_chunk``). A search hit
is then narrowed back to the one chunk of its point that best matches the query
(:func:`narrow_hits`), so ``query`` returns chunks of ``chunk_tokens`` as before, each
with its own ``seq``, offsets, tokens and page.

With dense vectors a point stays one chunk: an embedding model reads a bounded context,
and a chunk is what it was sized for.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from offprompt.task_memory.chunking import Chunk
from offprompt.vectors import Hit

__all__ = ["CANDIDATES", "CHUNKS_PER_POINT", "narrow_hits", "point_payload", "points_for"]

#: Chunks per point of a lexical-only index. Measured on ten 20 MB logs
#: (``benchmarks/bench_shared.py``, section 4) and on the Loghub dev logs' rare events
#: (``benchmarks/bench_query_memory_loghub.py``): the index shrinks to about half while
#: the rare events found stay the same.
CHUNKS_PER_POINT = 4
#: Points a search of several-chunk points fetches per result asked for: the chunks they
#: narrow to are reranked (:func:`narrow_hits`) and the best ``top_n`` kept.
CANDIDATES = 2


def points_for(chunks: int, chunks_per_point: int = CHUNKS_PER_POINT) -> int:
    """How many points index one output of ``chunks`` chunks."""
    return -(-chunks // chunks_per_point)


def point_payload(
    chunks: Sequence[Chunk], *, first_seq: int, generation: str, located: bool = True
) -> dict[str, Any]:
    """The payload of the point indexing ``chunks`` (consecutive; ``located``: their text
    is in a raw store, so the payload holds their byte offsets there)."""
    first, last = chunks[0], chunks[-1]
    payload: dict[str, Any] = {
        "seq": first_seq + first.index,
        "generation": generation,
        "start": first.start,
        "end": last.end,
        "tokens": sum(c.tokens for c in chunks),
    }
    if located:
        payload["byte_start"] = first.byte_start
        payload["byte_end"] = last.byte_end
    if len(chunks) > 1:
        payload["cuts"] = [c.byte_end - first.byte_start for c in chunks[:-1]]
        payload["tokens_per_chunk"] = [c.tokens for c in chunks]
    return payload


def narrow_hits(
    hits: Sequence[Hit], query: str, encoder: Any, top_n: int, count_tokens: Any
) -> list[Hit]:
    """The ``top_n`` of ``hits`` (several-chunk points, text already filled in), each
    narrowed to its chunk that best matches ``query``: text, ``seq``, ``start``/``end``,
    ``byte_start``/``byte_end``, ``tokens`` and ``chunk_index`` become that chunk's, and
    ``score`` the chunk's score, so scores fall in the order returned (the search's own
    order breaks ties). Only the hits returned are narrowed: a narrowed chunk's tokens are
    read from the point's ``tokens_per_chunk``, or counted with ``count_tokens``.

    The unit of the score is a line: a log event is one line, and the chunk holding the
    line that covers most of the query is the chunk to show. A line scores the sum of
    the IDF, among all lines of these hits, of the query's terms it holds (a term on
    every line tells them apart least); a chunk scores its best line, then the sum of
    its lines' scores breaks ties; remaining ties go to the earlier chunk. A hit without
    text scores 0.0 and is returned as it is.
    """
    scores, best = _best_chunks(hits, query, encoder)
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))[:top_n]
    for i in order:
        hits[i].score = float(scores[i])
        if i in best:
            _narrow_to(hits[i], *best[i], count_tokens)
    return [hits[i] for i in order]


def _best_chunks(
    hits: Sequence[Hit], query: str, encoder: Any
) -> tuple[list[float], dict[int, tuple[list[bytes], list[int], int]]]:
    """Each hit's score (0.0 without text), and for each hit of several chunks its
    chunks' UTF-8 pieces, their byte bounds and the index of the best (see
    :func:`narrow_hits`)."""
    scores = [0.0] * len(hits)
    best_of: dict[int, tuple[list[bytes], list[int], int]] = {}
    with_text = [(i, h) for i, h in enumerate(hits) if h.text]
    if not with_text:
        return scores, best_of
    wanted = set(encoder.encode_query(query).indices)
    split: list[tuple[int, list[bytes], list[int], list[int]]] = []
    lines: list[str] = []  # every line of every hit, encoded in one call below
    for at, hit in with_text:
        data = hit.text.encode("utf-8")
        bounds = [0, *(int(c) for c in hit.payload.get("cuts") or ()), len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
        counts = []
        for piece in pieces:
            piece_lines = piece.decode("utf-8").splitlines()
            lines += piece_lines
            counts.append(len(piece_lines))
        split.append((at, pieces, bounds, counts))
    found = [wanted.intersection(terms) for terms in _document_terms(encoder, lines)]
    df = Counter(itertools.chain.from_iterable(found))
    idf = {t: math.log(1.0 + (len(lines) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    line_scores = [sum(map(idf.__getitem__, terms)) for terms in found]
    at_line = 0
    for at, pieces, bounds, counts in split:
        keys = []
        for count in counts:
            own = line_scores[at_line : at_line + count] or [0.0]
            at_line += count
            keys.append((max(own), sum(own)))
        best = max(range(len(pieces)), key=lambda k: (keys[k], -k))
        scores[at] = keys[best][0]
        if len(pieces) > 1:
            best_of[at] = (pieces, bounds, best)
    return scores, best_of


def _document_terms(encoder: Any, texts: list[str]) -> list[Any]:
    """Each text's term ids: the built-in encoders give them without BM25 weights (a
    third of a query's time on 10 MB of logs went to weights thrown away here); any
    other encoder through its sparse vectors."""
    terms = getattr(encoder, "document_terms", None)
    if terms is not None:
        return list(terms(texts))
    return [v.indices for v in encoder.encode_documents(texts)]


def _narrow_to(
    hit: Hit, pieces: list[bytes], bounds: list[int], best: int, count_tokens: Any
) -> None:
    text = pieces[best].decode("utf-8")
    before = len(b"".join(pieces[:best]).decode("utf-8"))  # characters before it
    payload = hit.payload
    payload["seq"] = int(payload["seq"]) + best
    payload["chunk_index"] = int(payload["chunk_index"]) + best
    byte_start = int(payload["byte_start"])
    payload["byte_start"] = byte_start + bounds[best]
    payload["byte_end"] = byte_start + bounds[best + 1]
    payload["start"] = int(payload["start"]) + before
    payload["end"] = payload["start"] + len(text)
    counts = payload.pop("tokens_per_chunk", None)  # absent from points indexed before it
    payload["tokens"] = int(counts[best]) if counts else count_tokens(text)
    del payload["cuts"]
    hit.text = text
