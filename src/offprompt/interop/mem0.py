"""mem0 memories (``Memory.get_all()``), in and out of offprompt's long-term memory.

mem0 (the ``mem0ai`` package, 1.x/2.x) returns ``{"results": [item, ...]}`` from
``Memory.get_all()``; each item is::

    {"id", "memory", "hash", "metadata", "created_at", "updated_at",
     "user_id"?, "agent_id"?, "run_id"?, "actor_id"?, "role"?, "attributed_to"?,
     "expiration_date"?}

(the optional keys only when mem0 stored them; ``search()`` items add ``score``).

Each item becomes a :class:`~offprompt.longterm.MemoryFragment`:

* ``observation`` ← ``memory``; ``scope`` ← ``Scope(user=user_id, agent=agent_id,
  session=run_id)``, so a long-term read scoped to one user never returns another's.
* the fragment id is a new time-ordered id for ``created_at`` (offprompt's ids encode
  their creation time; mem0's are random UUIDs), and ``last_accessed_at`` ←
  ``updated_at`` (else ``created_at``).
* everything else of the item, mem0's ``id`` and ``hash`` and the exact timestamp
  strings included, is kept in ``meta["mem0"]``, so exporting gives the items back
  unchanged.

Exporting a fragment that did not come from mem0 uses its id, an MD5 ``hash`` of the
observation (as mem0 computes it) and its ``meta`` as ``metadata``. What mem0 items
cannot carry (importance, insight flag, embedding, an access time after ``updated_at``,
other ``meta`` of an imported fragment) is listed in the :class:`ConversionReport`.

Nothing here imports mem0: this is the JSON shape only.

Example:
    >>> from offprompt.longterm import LongTermMemory, Scope
    >>> data = {"results": [
    ...     {"id": "m1", "memory": "Alice prefers window seats", "hash": None,
    ...      "metadata": None, "created_at": "2025-01-02T03:04:05+00:00",
    ...      "updated_at": None, "user_id": "alice"},
    ...     {"id": "m2", "memory": "Bob prefers aisle seats", "hash": None,
    ...      "metadata": None, "created_at": "2025-01-02T03:04:06+00:00",
    ...      "updated_at": None, "user_id": "bob"}]}
    >>> fragments = memories_from_mem0(data)
    >>> fragments[0].scope.user, fragments[0].meta["mem0"]["id"]
    ('alice', 'm1')
    >>> memories_to_mem0(fragments) == data
    True
    >>> ltm = LongTermMemory()
    >>> _ = import_mem0(data, ltm)
    >>> [f.observation for f in ltm.read("seats", scope=Scope(user="alice"))]
    ['Alice prefers window seats']
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from offprompt._validation import ensure_json, loads_json
from offprompt.errors import DeserializationError, OffpromptError, ValidationError
from offprompt.interop.report import ConversionReport
from offprompt.longterm.fragment import MemoryFragment, Scope, new_fragment_id, utc
from offprompt.longterm.long_term import LongTermMemory

__all__ = [
    "MEM0_META_KEY",
    "aimport_mem0",
    "import_mem0",
    "memories_from_mem0",
    "memories_to_mem0",
]

MEM0_META_KEY = "mem0"
"""Key of ``MemoryFragment.meta`` holding the mem0 fields of an imported memory."""

#: mem0 item key -> Scope field.
_SCOPE = {"user_id": "user", "agent_id": "agent", "run_id": "session"}
#: Key order of a mem0 item, as ``get_all()`` and ``search()`` build it (``MemoryItem``
#: fields, then the promoted payload keys).
_ORDER = (
    "id",
    "memory",
    "hash",
    "metadata",
    "score",
    "created_at",
    "updated_at",
    "user_id",
    "agent_id",
    "run_id",
    "actor_id",
    "role",
    "attributed_to",
    "expiration_date",
)
_TEXT_OR_NULL = ("id", "hash", "created_at", "updated_at", "actor_id", "role", "attributed_to")


def _items(data: Any, report: ConversionReport | None) -> list[Any]:
    """The list of items of ``get_all()`` output, a bare list, or JSON text of either."""
    if isinstance(data, (str, bytes, bytearray)):
        data = loads_json(bytes(data) if isinstance(data, bytearray) else data, what="mem0 data")
    if isinstance(data, Mapping):
        if "results" not in data:
            keys = ", ".join(repr(k) for k in list(data)[:5])
            raise DeserializationError(
                "mem0 data must be Memory.get_all() output ({'results': [...]}) or a list "
                f"of memories; got an object with keys {keys or '(none)'}"
            )
        for key in data:
            if key != "results" and report is not None:
                report.lost("mem0 data", repr(key), "only the memories ('results') are imported")
        data = data["results"]
        if not isinstance(data, list):
            raise DeserializationError(
                f"mem0 data 'results' must be a list, got {type(data).__name__}"
            )
    if not isinstance(data, list):
        raise DeserializationError(
            "mem0 data must be Memory.get_all() output ({'results': [...]}), a list of "
            f"memories, or JSON text of either; got {type(data).__name__}"
        )
    return data


def _label(index: int, item: Mapping[str, Any]) -> str:
    mem0_id = item.get("id")
    return f"mem0 memory {index}" + (f" (id {mem0_id!r})" if isinstance(mem0_id, str) else "")


def _time(value: Any, where: str, key: str) -> datetime | None:
    if value is None:
        return None
    try:
        return utc(datetime.fromisoformat(value))
    except ValueError:
        raise DeserializationError(
            f"{where}: {key} {value!r} is not an ISO 8601 date-time", field=key
        ) from None


def _fragment(index: int, item: Any, importance: float | None) -> MemoryFragment:
    if not isinstance(item, Mapping):
        raise DeserializationError(
            f"mem0 memory {index}: expected an object, got {type(item).__name__}"
        )
    where = _label(index, item)
    if "memory" not in item:
        raise DeserializationError(f"{where}: missing 'memory' (the remembered text)")
    observation = item["memory"]
    if not isinstance(observation, str) or not observation.strip():
        raise DeserializationError(
            f"{where}: 'memory' must be a non-empty string, got {observation!r:.60}"
        )
    for key in _TEXT_OR_NULL:
        if item.get(key) is not None and not isinstance(item[key], str):
            raise DeserializationError(
                f"{where}: {key!r} must be a string or null, got {type(item[key]).__name__}"
            )
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise DeserializationError(
            f"{where}: 'metadata' must be an object or null, got {type(metadata).__name__}"
        )
    parts: dict[str, str] = {}
    for key, part in _SCOPE.items():
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise DeserializationError(
                f"{where}: {key!r} must be a non-empty string or null, got {value!r:.60}"
            )
        parts[part] = value
    created = _time(item.get("created_at"), where, "created_at")
    updated = _time(item.get("updated_at"), where, "updated_at")
    # The mem0 fields the fragment has no place for; non-null scope ids live in `scope`.
    kept = {k: v for k, v in item.items() if k != "memory" and not (k in _SCOPE and v is not None)}
    try:
        meta = {MEM0_META_KEY: ensure_json(kept, field="mem0 memory")}
        return MemoryFragment(
            id=new_fragment_id(created) if created is not None else new_fragment_id(),
            observation=observation,
            importance=importance,
            last_accessed_at=updated or created,
            scope=Scope(**parts),
            meta=meta,
        )
    except OffpromptError as exc:
        raise DeserializationError(f"{where}: {exc}") from None


def memories_from_mem0(
    data: Any,
    report: ConversionReport | None = None,
    *,
    importance: float | None = None,
) -> list[MemoryFragment]:
    """mem0 memories as long-term memory fragments, in order.

    Every item is checked before any fragment is returned, so bad input never yields
    a partial result.

    Args:
        data: ``Memory.get_all()`` (or ``search()``) output ``{"results": [...]}``, a
            bare list of items, or JSON text (``str`` / ``bytes``) of either.
        report: Receives what is not imported (e.g. graph ``relations``) and the count.
        importance: Importance given to every fragment (mem0 has none); ``None`` lets
            :class:`~offprompt.longterm.LongTermMemory` score them when written.

    Returns:
        One fragment per item; mem0's fields are in ``meta["mem0"]``.

    Raises:
        DeserializationError: Malformed JSON, the wrong top-level shape, or an item with
            a missing or wrongly typed field (the message names the item's index and id).
        ValidationError: ``importance`` outside ``[0, 1]``.

    Example:
        >>> [f.observation for f in memories_from_mem0('[{"id": "m1", "memory": "likes tea"}]')]
        ['likes tea']
    """
    if importance is not None:
        MemoryFragment(observation="x", importance=importance)  # raises ValidationError
    items = _items(data, report)
    fragments = [_fragment(i, item, importance) for i, item in enumerate(items)]
    if report is not None:
        report.source = report.source or "mem0"
        report.target = report.target or "offprompt.longterm"
        report.converted += len(fragments)
    return fragments


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _native_item(fragment: MemoryFragment) -> dict[str, Any]:
    """The mem0 fields of a fragment that was not imported from mem0."""
    return {
        "id": fragment.id,
        "hash": _md5(fragment.observation),
        "metadata": dict(fragment.meta) or None,
        "created_at": fragment.created_at.isoformat(),
        "updated_at": fragment.accessed_at.isoformat(),
    }


def _report_losses(
    fragment: MemoryFragment, index: int, mem0: Mapping[str, Any], report: ConversionReport
) -> None:
    where = f"fragment {index} ({fragment.id})"
    if fragment.importance is not None:
        report.lost(where, "importance", "mem0 memories have no importance")
    if fragment.is_insight:
        report.lost(where, "is_insight", "mem0 memories have no insight flag")
    if fragment.embedding is not None:
        report.lost(where, "embedding", "get_all() items carry no vector; mem0 re-embeds")
    for part in ("tenant", "run"):  # scope parts mem0 has no id for
        if getattr(fragment.scope, part, None) is not None:
            report.lost(where, f"scope.{part}", "mem0 scopes by user_id, agent_id and run_id only")
    if not mem0:
        return  # a native fragment: its meta went to metadata, its times to the timestamps
    others = sorted(k for k in fragment.meta if k != MEM0_META_KEY)
    if others:
        report.lost(where, f"meta keys {others}", "an imported memory keeps mem0's metadata")
    stamp = mem0.get("updated_at") or mem0.get("created_at")
    recorded = _time(stamp, where, "updated_at") if isinstance(stamp, str) else None
    # A millisecond of slack: stores keep access times as float seconds.
    if recorded is None or (fragment.accessed_at - recorded).total_seconds() > 0.001:
        report.lost(where, "last_accessed_at", "mem0 records no access time")


def memories_to_mem0(
    fragments: Sequence[MemoryFragment], report: ConversionReport | None = None
) -> dict[str, Any]:
    """Fragments as ``Memory.get_all()`` output: ``{"results": [item, ...]}``.

    Fragments imported by :func:`memories_from_mem0` give back their items unchanged
    (``memory`` and the scope ids taken from the fragment, the rest from
    ``meta["mem0"]``).

    Args:
        fragments: The fragments, e.g. ``LongTermMemory.fragments(scope=...)``.
        report: Receives what the items cannot carry, and the count.

    Raises:
        ValidationError: An element is not a ``MemoryFragment``.

    Example:
        >>> from offprompt.longterm import MemoryFragment, Scope
        >>> item = memories_to_mem0([MemoryFragment.build("likes tea", scope=Scope(user="u1"))])["results"][0]
        >>> item["memory"], item["user_id"], item["hash"]
        ('likes tea', 'u1', '333eb7a1a291340c4a5e076606a7774e')
    """
    if isinstance(fragments, MemoryFragment) or not isinstance(fragments, Sequence):
        raise ValidationError("memories_to_mem0 expects a sequence of MemoryFragment")
    results = []
    for index, fragment in enumerate(fragments):
        if not isinstance(fragment, MemoryFragment):
            raise ValidationError(
                f"fragment {index} must be a MemoryFragment, got {type(fragment).__name__}"
            )
        stored = fragment.meta.get(MEM0_META_KEY)
        mem0 = dict(stored) if isinstance(stored, Mapping) else {}
        fields = mem0 or _native_item(fragment)
        fields["memory"] = fragment.observation
        for key, part in _SCOPE.items():
            value = getattr(fragment.scope, part)
            if value is not None:
                fields[key] = value
            elif fields.get(key) is not None:
                del fields[key]  # the scope was widened after the import
        item = {k: fields[k] for k in _ORDER if k in fields}
        item.update((k, v) for k, v in fields.items() if k not in item)
        results.append(item)
        if report is not None:
            _report_losses(fragment, index, mem0, report)
    if report is not None:
        report.source = report.source or "offprompt.longterm"
        report.target = report.target or "mem0"
        report.converted += len(results)
    return {"results": results}


def import_mem0(
    data: Any,
    long_term: LongTermMemory,
    *,
    importance: float | None = None,
    report: ConversionReport | None = None,
) -> list[MemoryFragment]:
    """Read mem0 memories and write them to ``long_term`` in one batch.

    All items are validated before anything is written: bad input leaves the memory
    as it was.

    Args:
        data: See :func:`memories_from_mem0`.
        long_term: The long-term memory to write to.
        importance: See :func:`memories_from_mem0`.
        report: Receives what is not imported.

    Returns:
        The fragments as stored (scored, with the memory's default scope laid over).

    Raises:
        DeserializationError: Bad input (nothing is written).
        ValidationError: ``long_term`` is not a ``LongTermMemory``.

    Example:
        >>> from offprompt.longterm import LongTermMemory
        >>> len(import_mem0([{"id": "m1", "memory": "likes tea", "user_id": "u1"}], LongTermMemory()))
        1
    """
    if not isinstance(long_term, LongTermMemory):
        raise ValidationError(f"long_term must be a LongTermMemory, got {type(long_term).__name__}")
    return long_term.write_batch(memories_from_mem0(data, report, importance=importance))


async def aimport_mem0(
    data: Any,
    long_term: LongTermMemory,
    *,
    importance: float | None = None,
    report: ConversionReport | None = None,
) -> list[MemoryFragment]:
    """Async twin of :func:`import_mem0` (parsing runs in a worker thread)."""
    if not isinstance(long_term, LongTermMemory):
        raise ValidationError(f"long_term must be a LongTermMemory, got {type(long_term).__name__}")
    fragments = await asyncio.to_thread(memories_from_mem0, data, report, importance=importance)
    return await long_term.awrite_batch(fragments)
