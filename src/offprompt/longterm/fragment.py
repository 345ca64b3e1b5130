"""``MemoryFragment``: the unit of long-term memory (DB-GPT's ``MemoryFragment``).

A fragment is one observation the agent may want to recall later, with what the
retrieval score needs: an importance in ``[0, 1]``, when it was last accessed, whether
it is an insight (distilled from other fragments), and a :class:`~offprompt.scope.Scope`
(tenant / user / agent / session / run; the same ``Scope`` every offprompt store takes)
that reads filter on. ``offprompt.longterm.Scope`` is that class, re-exported.

Ids are time-ordered: a UUIDv7-style string whose first 48 bits are the creation time
in Unix milliseconds, so ``fragment.created_at`` is read from the id itself and ids sort
in creation order (monotonic within a process, also within one millisecond).

Times and injected clocks: a fragment created without an ``id`` or ``last_accessed_at``
(``MemoryFragment(observation=...)``, ``MemoryFragment.build(...)`` without ``now``) has
no *explicit* time (:attr:`MemoryFragment.explicit_time` is False). The first memory
that takes it (short-term or long-term) re-times it with that memory's clock
(:meth:`MemoryFragment.timed_at`: a new id for the clock's "now", accessed "now"), so a
memory with an injected clock never sees a fragment "accessed in the future". Explicit
times are kept as given.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from offprompt._validation import ensure_json, validation_error
from offprompt.errors import ValidationError
from offprompt.scope import Scope

__all__ = [
    "Clock",
    "DiscardedMemoryFragments",
    "MemoryFragment",
    "Scope",
    "fragment_id_time",
    "merge_scopes",
    "new_fragment_id",
    "utc",
]

#: A callable returning "now"; injected into memories so tests control time.
Clock = Callable[[], datetime]

_ID_LOCK = threading.Lock()
_LAST_WALL: list[int] = [0, 0]  # last millisecond, last sequence
_LAST_GIVEN: list[int] = [0, 0]


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (a naive datetime is taken to be UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_fragment_id(now: datetime | None = None) -> str:
    """A new time-ordered fragment id (UUIDv7 layout) for creation time ``now``.

    Within one process ids are strictly increasing, even for several ids in the same
    millisecond (a 12-bit sequence counter, as RFC 9562 method 1 allows).

    Example:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
        >>> fragment_id_time(new_fragment_id(t)) == t
        True
    """
    ms = int(utc(now or _utcnow()).timestamp() * 1000)
    if ms < 0 or ms >= 1 << 48:
        raise ValidationError(f"fragment creation time out of range: {now!r}")
    with _ID_LOCK:
        # wall-clock ids and ids for an explicit time keep separate counters, so both
        # runs stay monotonic (tests and imports create many ids for one instant)
        state = _LAST_WALL if now is None else _LAST_GIVEN
        last_ms, last_seq = state
        if now is None and ms < last_ms:
            ms = last_ms  # the wall clock went back: stay monotonic
        if ms == last_ms and last_seq + 1 < 1 << 12:
            seq = last_seq + 1
        elif ms == last_ms and now is None:
            ms, seq = ms + 1, 0  # 4096 ids in one millisecond: borrow the next one
        else:
            seq = int.from_bytes(os.urandom(2), "big") & 0x3FF  # leaves room to count up
        state[0], state[1] = ms, seq
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


def fragment_id_time(fragment_id: str) -> datetime:
    """The creation time encoded in a fragment id made by :func:`new_fragment_id`.

    Raises:
        ValidationError: ``fragment_id`` is not a version-7 UUID string.
    """
    try:
        parsed = uuid.UUID(fragment_id)
    except (ValueError, AttributeError, TypeError):
        raise ValidationError(f"fragment id {fragment_id!r} is not a UUID") from None
    if parsed.version != 7:
        raise ValidationError(
            f"fragment id {fragment_id!r} is not time-ordered (UUID version {parsed.version}, need 7)"
        )
    ms = parsed.int >> 80
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def merge_scopes(base: Scope, over: Scope | None) -> Scope:
    """``base`` with the set fields of ``over`` laid over it.

    Example:
        >>> merge_scopes(Scope(agent="a1"), Scope(user="u")) == Scope(user="u", agent="a1")
        True
    """
    if over is None or over.is_empty:
        return base
    if base.is_empty:
        return over
    return Scope(**{**base.fields(), **over.fields()})


class MemoryFragment(BaseModel):
    """One remembered observation.

    Attributes:
        id: Time-ordered id (see :func:`new_fragment_id`); ``created_at`` is read from it.
        observation: The remembered text (non-blank).
        embedding: Optional precomputed vector (finite floats); embedded on write if None.
        importance: In ``[0, 1]``; None until a scorer (or the caller) sets it.
        is_insight: True for a fragment distilled from others.
        last_accessed_at: When a read last returned it (UTC); defaults to creation time.
        scope: The :class:`~offprompt.scope.Scope` it belongs to; a dict of its fields
            (``{"user": "u1", "session": "s1"}``) or ``None`` (unscoped) is accepted.
        meta: Extra JSON data kept with it.

    Raises:
        ValidationError: empty observation, NaN/inf or empty embedding, importance
            outside ``[0, 1]``, non-JSON ``meta``, a scope value with ``/``, ``..`` or
            control characters.

    Example:
        >>> f = MemoryFragment(observation="Alice prefers window seats", importance=0.8)
        >>> f.created_at <= f.last_accessed_at
        True
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str = Field(default_factory=new_fragment_id)
    observation: str
    embedding: list[float] | None = None
    importance: float | None = None
    is_insight: bool = False
    last_accessed_at: datetime | None = None
    scope: Scope = Field(default_factory=Scope)
    meta: dict[str, Any] = Field(default_factory=dict)
    _explicit_time: bool = PrivateAttr(default=True)

    def __init__(self, **data: Any) -> None:
        explicit = data.get("id") is not None or data.get("last_accessed_at") is not None
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error("MemoryFragment", exc) from None
        self._explicit_time = explicit

    @property
    def explicit_time(self) -> bool:
        """True when the creator gave an ``id`` or ``last_accessed_at`` (times are kept);
        False when both came from the wall clock at construction (a memory re-times it)."""
        return self._explicit_time

    def timed_at(self, now: datetime, update: dict[str, Any] | None = None) -> MemoryFragment:
        """This fragment created and accessed at ``now`` if it has no explicit time.

        Such a copy gets a new time-ordered id for ``now`` and counts as explicitly
        timed; a fragment with explicit times keeps them. ``update`` (field values, as
        for ``model_copy``) is applied in the same copy; without either, ``self``.

        Example:
            >>> from datetime import datetime, timezone
            >>> t = datetime(2025, 1, 2, tzinfo=timezone.utc)
            >>> f = MemoryFragment(observation="likes tea").timed_at(t)
            >>> f.created_at == f.last_accessed_at == t, f.explicit_time
            (True, True)
        """
        fields = dict(update or {})
        if not self._explicit_time:
            at = utc(now)
            fields.update(id=new_fragment_id(at), last_accessed_at=at)
        if not fields:
            return self
        copy = self.model_copy(update=fields)
        copy._explicit_time = True  # private-ok: its own copy; explicit before, or timed now
        return copy

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except PydanticValidationError as exc:
            raise validation_error("MemoryFragment", exc) from None

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> Any:
        return Scope() if value is None else value

    @field_validator("id")
    @classmethod
    def _time_ordered(cls, value: str) -> str:
        fragment_id_time(value)
        return value

    @field_validator("observation")
    @classmethod
    def _observation(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("observation must not be empty or whitespace")
        return value

    @field_validator("embedding")
    @classmethod
    def _embedding(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("embedding must not be empty")
        for i, x in enumerate(value):
            if not math.isfinite(x):
                raise ValueError(f"embedding[{i}] is {x}; NaN and infinity are not allowed")
        return value

    @field_validator("importance")
    @classmethod
    def _importance(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value) or value < 0 or value > 1:
            raise ValueError(f"importance must be within [0, 1], got {value}")
        return value

    @field_validator("last_accessed_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return utc(value) if value is not None else None

    @field_validator("meta", mode="before")
    @classmethod
    def _meta(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"meta must be a dict, got {type(value).__name__}")
        return ensure_json(value, field="MemoryFragment.meta")

    @model_validator(mode="after")
    def _default_access(self) -> MemoryFragment:
        if self.last_accessed_at is None:
            object.__setattr__(self, "last_accessed_at", self.created_at)
        return self

    @classmethod
    def build(
        cls,
        observation: str,
        *,
        now: datetime | None = None,
        importance: float | None = None,
        is_insight: bool = False,
        scope: Scope | None = None,
        embedding: Sequence[float] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> MemoryFragment:
        """A new fragment created at ``now`` (its id encodes ``now``).

        Without ``now`` the wall clock is used and the fragment has no explicit time, so
        the memory it is written to re-times it with its own clock.

        Example:
            >>> MemoryFragment.build("likes tea", importance=0.4).importance
            0.4
        """
        timed: dict[str, Any] = {}
        if now is not None:
            created = utc(now)
            timed = {"id": new_fragment_id(created), "last_accessed_at": created}
        return cls(
            observation=observation,
            importance=importance,
            is_insight=is_insight,
            scope=scope or Scope(),
            embedding=list(embedding) if embedding is not None else None,
            meta=meta or {},
            **timed,
        )

    @property
    def created_at(self) -> datetime:
        """Creation time, read from the time-ordered id (millisecond precision)."""
        return fragment_id_time(self.id)

    @property
    def accessed_at(self) -> datetime:
        """``last_accessed_at``, never None."""
        return self.last_accessed_at or self.created_at

    def touched(self, now: datetime) -> MemoryFragment:
        """A copy with ``last_accessed_at`` set to ``now``."""
        return self.model_copy(update={"last_accessed_at": utc(now)})


class DiscardedMemoryFragments(BaseModel):
    """What one memory hands on to the next (DB-GPT's ``DiscardedMemoryFragments``).

    Attributes:
        fragments: Fragments leaving the memory (overflow, eviction, merged enhancements).
        insights: Insight fragments extracted on the way (``is_insight=True``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    fragments: list[MemoryFragment] = Field(default_factory=list)
    insights: list[MemoryFragment] = Field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.fragments or self.insights)

    def extend(self, other: DiscardedMemoryFragments | None) -> None:
        """Add ``other``'s fragments and insights to these (``None`` adds nothing)."""
        if other:
            self.fragments.extend(other.fragments)
            self.insights.extend(other.insights)

    @property
    def all(self) -> list[MemoryFragment]:
        """The discarded fragments, then the insights."""
        return [*self.fragments, *self.insights]
