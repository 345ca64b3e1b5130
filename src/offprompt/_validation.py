"""Shared helpers that turn pydantic's errors into offprompt's own, with field names."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from offprompt.errors import DeserializationError, SerializationError, ValidationError


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
