"""How a long-term :class:`MemoryFragment` maps onto a Qdrant point, and back.

Each fragment is one point of a :class:`~offprompt.vectors.QdrantVectorStore`
namespace; its payload holds what scoring and filtering need::

    fragment_id, importance, is_insight, created_ms, last_accessed_ts,
    forgotten, merged, tokens, meta, mem_tenant / mem_user / mem_agent / mem_session /
    mem_run (each only when that scope field is set)

The flags are integers 0 / 1 (as earlier versions wrote them, so stored memories keep
working); ``tokens`` is the observation's token count, counted once at write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, cast

from offprompt.longterm.fragment import MemoryFragment, Scope
from offprompt.tokens import Tokenizer
from offprompt.vectors import VectorRecord
from offprompt.vectors.sparse import BM25SparseEncoder, BM25WordEncoder, SparseVector

__all__: list[str] = []  # internal to offprompt.longterm

#: Scope field -> payload key (selector semantics: a read filters on the fields it sets).
SCOPE_KEYS = {
    "tenant": "mem_tenant",
    "user": "mem_user",
    "agent": "mem_agent",
    "session": "mem_session",
    "run": "mem_run",
}
#: The payload indexes a long-term memory creates.
INDEXES = {
    "fragment_id": "keyword",
    **{key: "keyword" for key in SCOPE_KEYS.values()},
    "forgotten": "integer",
    "merged": "integer",
    "is_insight": "integer",
    "created_ms": "integer",
    "last_accessed_ts": "float",
}
#: Scope keys a dense search is narrowed by in the engine (``narrow_by`` of
#: :meth:`QdrantVectorStore.search`), the most selective first.
NARROW_ORDER = ("mem_run", "mem_session", "mem_agent", "mem_user", "mem_tenant")


def scope_filter(scope: Scope) -> dict[str, Any]:
    """The payload conditions that select ``scope``'s fragments (its set fields)."""
    return {SCOPE_KEYS[k]: v for k, v in scope.fields().items()}


def to_record(fragment: MemoryFragment, tokens: int, sparse: SparseVector | None) -> VectorRecord:
    """The point of ``fragment`` (``tokens``: its observation's count)."""
    payload: dict[str, Any] = {
        "fragment_id": fragment.id,
        "importance": float(fragment.importance or 0.0),
        "is_insight": int(fragment.is_insight),
        "created_ms": int(fragment.created_at.timestamp() * 1000),
        "last_accessed_ts": fragment.accessed_at.timestamp(),
        "forgotten": 0,
        "merged": 0,
        "tokens": tokens,
        "meta": fragment.meta,
    }
    payload.update(scope_filter(fragment.scope))
    return VectorRecord(
        id=fragment.id,
        text=fragment.observation,
        payload=payload,
        vector=fragment.embedding,
        sparse=sparse,
    )


def to_records(
    fragments: Sequence[MemoryFragment],
    encoder: BM25WordEncoder | BM25SparseEncoder | None,
    tokenizer: Tokenizer,
) -> list[VectorRecord]:
    """The points of ``fragments``; each observation is tokenised once, for the token
    count and (when the store's BM25 encoder shares this tokenizer) its sparse vector."""
    if isinstance(encoder, BM25WordEncoder):
        texts = [f.observation for f in fragments]
        return [
            to_record(f, tokenizer.count(f.observation), sparse)
            for f, sparse in zip(fragments, encoder.encode_documents(texts), strict=True)
        ]
    if encoder is None or cast(object, encoder.tokenizer) is not tokenizer:
        return [to_record(f, tokenizer.count(f.observation), None) for f in fragments]
    ids = [encoder.tokenizer.encode(f.observation) for f in fragments]
    return [
        to_record(f, len(tokens), sparse)
        for f, tokens, sparse in zip(fragments, ids, encoder.encode_id_lists(ids), strict=True)
    ]


def to_fragment(
    record_id: str, text: str, payload: Mapping[str, Any], accessed: datetime | None = None
) -> MemoryFragment:
    """The fragment a point holds (``accessed``: its new access time, if just read)."""
    scope = Scope(**{k: payload[v] for k, v in SCOPE_KEYS.items() if payload.get(v) is not None})
    return MemoryFragment(
        id=record_id,
        observation=text,
        importance=float(payload.get("importance", 0.0)),
        is_insight=bool(payload.get("is_insight", False)),
        last_accessed_at=accessed
        or datetime.fromtimestamp(float(payload["last_accessed_ts"]), tz=timezone.utc),
        scope=scope,
        meta=dict(payload.get("meta") or {}),
    )


def stored_tokens(text: str, payload: Mapping[str, Any], tokenizer: Tokenizer) -> int:
    """A point's token count: the stored one, else counted (points of early versions)."""
    stored = payload.get("tokens")
    if isinstance(stored, int) and not isinstance(stored, bool):
        return stored
    return tokenizer.count(text)
