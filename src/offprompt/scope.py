"""``Scope``: who a piece of stored data belongs to, enforced by every store.

A scope names up to five levels - tenant, user, agent, session, run - any of which may
be unset. Stores use it two ways:

* **Partition** (data-plane calls: read, append, search, state): the scope's tenant,
  user, agent and run pick one exact partition; two scopes that differ in any of those
  fields never see each other's data, even with the same session id or namespace. The
  unset scope (``None`` or ``Scope()``) is its own partition, the one every call used
  before scopes existed.
* **Selector** (listings with a scope filter, :func:`offprompt.forget.forget`,
  retention): a scope matches every partition whose fields agree with the fields it
  sets, so ``Scope(user="u1")`` selects u1's data in every tenant.

The filtering always happens inside the store (a SQL ``WHERE``, a Qdrant payload
filter), never by post-filtering results in Python.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from offprompt._validation import describe_pydantic_error, validate_session_id
from offprompt.errors import NamespaceError
from offprompt.names import validate_namespace

__all__ = ["PARTITION_FIELDS", "SCOPE_FIELDS", "Scope", "as_scope"]

#: Every field of a scope, outermost first.
SCOPE_FIELDS = ("tenant", "user", "agent", "session", "run")
#: The fields that pick a storage partition (the session is the store's own key).
PARTITION_FIELDS = ("tenant", "user", "agent", "run")


class Scope(BaseModel):
    """Tenant, user, agent, session and run of stored data; any may be ``None``.

    Tenant, user, agent and run are validated like namespace names: non-empty strings of
    at most 200 characters, without control characters, path separators or ``..``. The
    session follows the session-id rule of every store
    (:func:`~offprompt.stores.validate_session_id`: up to 256 characters, no control
    characters or lone surrogates; ``/`` and ``..`` are allowed).

    Attributes:
        tenant: The customer or organisation.
        user: The end user.
        agent: The agent (or assistant) acting.
        session: The conversation; for conversation stores it must equal the session id.
        run: One run (task) within a session or agent.

    Example:
        >>> scope = Scope(tenant="acme", user="u1")
        >>> scope.partition()
        ('acme', 'u1', '', '')
        >>> scope.matches(Scope(tenant="acme", user="u1", session="s1"))
        True
        >>> Scope().is_empty
        True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    run: str | None = None

    @field_validator("tenant", "user", "agent", "run", mode="before")
    @classmethod
    def _valid(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            return validate_namespace(value, what="scope value")
        except NamespaceError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("session", mode="before")
    @classmethod
    def _valid_session(cls, value: Any) -> Any:
        # The session follows the session-id rule, the one every store applies at write,
        # so a scope rebuilt from stored data (``sessions()``) is always valid.
        if value is None:
            return None
        try:
            return validate_session_id(value)
        except NamespaceError as exc:
            raise ValueError(str(exc)) from None

    def __init__(self, **data: Any) -> None:
        from pydantic import ValidationError as PydanticValidationError

        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise NamespaceError(describe_pydantic_error("Scope", exc)) from None

    @property
    def is_empty(self) -> bool:
        """``True`` when no field is set (selects everything; refused by ``forget``)."""
        return all(getattr(self, f) is None for f in SCOPE_FIELDS)

    def fields(self) -> dict[str, str]:
        """The fields that are set, ``{name: value}``."""
        return {f: v for f in SCOPE_FIELDS if (v := getattr(self, f)) is not None}

    def partition(self) -> tuple[str, str, str, str]:
        """``(tenant, user, agent, run)`` with ``""`` for unset: the storage partition key."""
        return (self.tenant or "", self.user or "", self.agent or "", self.run or "")

    def matches(self, other: Scope) -> bool:
        """``True`` if every field this scope sets has the same value in ``other``."""
        return all(getattr(other, f) == v for f, v in self.fields().items())

    def with_session(self, session_id: str) -> Scope:
        """This scope for ``session_id`` (a set ``session`` must agree with it)."""
        if self.session is not None and self.session != session_id:
            raise NamespaceError(
                f"scope.session {self.session!r} differs from session_id {session_id!r}",
                session_id=session_id,
            )
        if self.session == session_id:
            return self
        return Scope(**{**self.fields(), "session": session_id})  # validated, not copied

    @classmethod
    def from_partition(
        cls, partition: tuple[str, str, str, str], session: str | None = None
    ) -> Scope:
        """The scope of a stored partition key (``""`` means unset)."""
        tenant, user, agent, run = partition
        return cls(
            tenant=tenant or None,
            user=user or None,
            agent=agent or None,
            run=run or None,
            session=session,
        )

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.fields().items()) or "<unscoped>"


def as_scope(scope: Scope | None) -> Scope:
    """``scope``, or the empty scope for ``None``; anything else is an error."""
    if scope is None:
        return _EMPTY
    if not isinstance(scope, Scope):
        raise NamespaceError(f"scope must be an offprompt Scope, got {type(scope).__name__}")
    return scope


_EMPTY = Scope()
