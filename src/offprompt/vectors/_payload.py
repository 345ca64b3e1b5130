"""The payload rules of :class:`~offprompt.vectors.store.QdrantVectorStore`: the keys the
store writes itself, the scope partition keys, and what a filter value may be."""

from __future__ import annotations

import builtins
from typing import Any

from offprompt.errors import ValidationError
from offprompt.vectors.records import FilterValue, Range, VectorRecord

__all__ = [
    "NO_SCOPE",
    "RESERVED_KEYS",
    "SCOPE_PAYLOAD_KEYS",
    "check_filter_value",
    "embed_text",
]

#: Payload keys the store writes itself; callers cannot set or filter on them.
RESERVED_KEYS = frozenset(
    {
        "namespace",
        "tenant",
        "kind",
        "record_id",
        "text",
        "scope_user",
        "scope_agent",
        "scope_session",
        "scope_run",
    }
)
#: Scope field -> payload key of the partition fields below the tenant.
SCOPE_PAYLOAD_KEYS = {
    "user": "scope_user",
    "agent": "scope_agent",
    "session": "scope_session",
    "run": "scope_run",
}
NO_SCOPE = {key: "" for key in SCOPE_PAYLOAD_KEYS.values()}


def embed_text(record: VectorRecord) -> str:
    """The text a record is embedded from: its ``embed_text`` when set, else its text."""
    return record.embed_text if record.embed_text is not None else record.text


def check_filter_value(key: str, value: Any) -> FilterValue:
    """``value`` as a filter value for payload key ``key``, or a :class:`ValidationError`."""
    if isinstance(value, Range):
        return value
    if isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, (list, tuple)):
        items = list(value)
        if not items:
            raise ValidationError(
                f"filter {key!r}: an empty list matches nothing; drop the key or give values"
            )
        if all(isinstance(v, str) for v in items) or all(
            isinstance(v, int) and not isinstance(v, bool) for v in items
        ):
            return items
        raise ValidationError(f"filter {key!r}: a list must hold only str or only int values")
    raise ValidationError(f"filter {key!r}: unsupported value type {builtins.type(value).__name__}")
