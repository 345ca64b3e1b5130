"""Shared helpers that turn pydantic's errors into offprompt's own, with field names."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from offprompt.errors import (
    DeserializationError,
    NamespaceError,
    SerializationError,
    ValidationError,
)

MAX_SESSION_ID_LENGTH = 256


def describe_pydantic_error(model: str, exc: PydanticValidationError) -> str:
    """One line per problem: ``Message.role: Input should be 'system', ... (got 'robot')``."""
    parts = []
    for err in exc.errors(include_url=False):
        location = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        given = err.get("input")
        shown = repr(given)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{model}.{location}: {message} (got {shown})")
    return "; ".join(parts)


def validation_error(model: str, exc: PydanticValidationError) -> ValidationError:
    return ValidationError(describe_pydantic_error(model, exc), model=model)


def deserialization_error(model: str, exc: PydanticValidationError) -> DeserializationError:
    return DeserializationError(describe_pydantic_error(model, exc), model=model)


def ensure_json(value: Any, *, field: str) -> Any:
    """Return ``value`` normalised through JSON (tuples become lists) or raise.

    NaN and infinity are refused: they are not JSON and most stores reject them.
    """
    try:
        return json.loads(json.dumps(value, allow_nan=False, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise SerializationError(
            f"{field} must be JSON-serialisable, got {type(value).__name__}: {exc}", field=field
        ) from None


def loads_json(text: str | bytes, *, what: str) -> Any:
    """``json.loads`` whose failure names what was being read and where it broke."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DeserializationError(
            f"malformed JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}",
            what=what,
        ) from None
    except (TypeError, UnicodeDecodeError) as exc:
        raise DeserializationError(f"cannot read {what} as JSON: {exc}", what=what) from None


def validate_session_id(session_id: Any) -> str:
    """Return ``session_id`` if a store may use it, else raise :class:`NamespaceError`.

    The one rule for session ids, wherever they come from (a store call, a
    ``Scope(session=...)``, an adapter's thread or chat-store key): a non-empty string of
    at most 256 characters with no control characters and no lone surrogates (text must
    be valid Unicode to be stored). Everything else (``/``, ``..``, quotes, SQL, any
    unicode) is allowed: stores only ever pass it as a parameter and never build a path
    from it, so a session listed by ``sessions()`` always rebuilds its scope.

    Example:
        >>> validate_session_id("user-42/thread-7")
        'user-42/thread-7'
    """
    if not isinstance(session_id, str):
        raise NamespaceError(
            f"session_id must be a str, got {type(session_id).__name__}", session_id=session_id
        )
    if not session_id:
        raise NamespaceError("session_id must not be empty", session_id=session_id)
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise NamespaceError(
            f"session_id is {len(session_id)} characters long; the limit is "
            f"{MAX_SESSION_ID_LENGTH}",
            session_id=session_id[:64],
        )
    for index, char in enumerate(session_id):
        category = unicodedata.category(char)
        if category == "Cc":
            raise NamespaceError(
                f"session_id contains control character {char!r} at position {index}",
                session_id=session_id,
            )
        if category == "Cs":
            raise NamespaceError(
                f"session_id contains a lone surrogate {char!r} at position {index}; "
                "it is not valid Unicode text",
                session_id=repr(session_id),
            )
    return session_id
