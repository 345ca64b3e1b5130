"""Shared helpers that turn pydantic's errors into offprompt's own, with field names."""

from __future__ import annotations

import json
import logging
import re
import reprlib
import unicodedata
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from offprompt.errors import (
    DeserializationError,
    NamespaceError,
    OffpromptError,
    SerializationError,
    ValidationError,
)

MAX_SESSION_ID_LENGTH = 256

#: How deeply JSON values may nest (objects and arrays, counted from 1 at the top).
#: Deeper input is refused with a clear error instead of a ``RecursionError`` from the
#: parser or from the recursive code that walks it afterwards (artifacts, importers).
MAX_JSON_DEPTH = 100


#: A UTF-16 surrogate code point on its own: what ``"\\ud83d"`` in JSON or
#: ``bytes.decode("utf-8", "surrogateescape")`` leaves in a ``str``. It is not valid
#: Unicode, cannot be encoded to UTF-8, and so cannot be stored, searched or counted.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_error(text: str, *, what: str) -> ValidationError | None:
    """The error to raise if ``text`` holds a lone surrogate, else ``None``.

    offprompt's one rule for lone surrogates, by where the text enters:

    * **Given by the caller** (messages, artifacts, tool calls, metadata, state, session
      ids, importers, the converters ``message_from_*``, stores, the CLI): refused with
      this error, naming where, rather than stored altered or failing later inside a
      store or tokenizer. The caller can fix it.
    * **Arriving inside an agent run** (a tool output going through the offload policy
      in any adapter or the MCP proxy; a message recorded by the LangChain middleware,
      the LlamaIndex memory or the OpenAI Agents session): escaped by
      :func:`escape_in_run`, because refusing would crash a run that works without
      offprompt. Each lone surrogate is stored as its ``\\udXXX`` escape, visibly,
      the message flagged in ``meta["offprompt_escaped_surrogates"]`` and a warning
      logged: altered, never silently.
    """
    if text.isascii():
        return None
    found = _LONE_SURROGATE.search(text)
    if found is None:
        return None
    return ValidationError(
        f"{what} contains a lone surrogate {found.group()!r} at position {found.start()}, "
        "which is not valid Unicode; offprompt stores only valid Unicode text (decode bytes with errors='replace' or "
        "fix the source's \\u escape)",
        what=what,
        position=found.start(),
        value=text,
    )


def check_text(text: str, *, what: str) -> str:
    """``text`` if it is valid Unicode, else raise :func:`lone_surrogate_error`'s error."""
    error = lone_surrogate_error(text, what=what)
    if error is not None:
        raise error
    return text


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string in ``value`` (str, or nested lists/tuples/dicts) holds one."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


#: ``Message.meta`` flag on a message an adapter stored with its lone surrogates escaped.
ESCAPED_SURROGATES_META = "offprompt_escaped_surrogates"


def escape_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate written as its ``\\udXXX`` escape (visible text).

    The escaping of :func:`escape_in_run` (which also logs it): strings inside lists,
    tuples and dicts are rewritten; other values are returned as they are.
    """
    if isinstance(value, str):
        if value.isascii() or not _LONE_SURROGATE.search(value):
            return value
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {escape_lone_surrogates(k): escape_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escape_lone_surrogates(v) for v in value)
    return value


_T = TypeVar("_T")

_logger = logging.getLogger("offprompt")


def escape_in_run(value: _T, *, what: str) -> tuple[_T, bool]:
    """The lone-surrogate rule for text that arrives inside an agent run: escape, log.

    Returns ``value`` with each lone surrogate written as its ``\\udXXX`` escape (see
    :func:`escape_lone_surrogates`) and whether any was; a warning naming ``what`` is
    logged when one was. The callers flag what they store
    (:data:`ESCAPED_SURROGATES_META`). Text given by a caller is refused instead
    (:func:`lone_surrogate_error` says the whole rule).
    """
    if not has_lone_surrogate(value):
        return value, False
    _logger.warning(
        "%s holds lone surrogates (invalid Unicode); offprompt stores it with them "
        "escaped as \\udXXX (meta[%r])",
        what,
        ESCAPED_SURROGATES_META,
    )
    return escape_lone_surrogates(value), True


def _shown(value: Any) -> str:
    try:
        shown = repr(value)
    except RecursionError:  # a deeply nested input: show its outer levels only
        shown = reprlib.repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _problems(model: str, exc: PydanticValidationError) -> list[tuple[str, str | None]]:
    """``(where and what, shortened bad value)`` for each problem of ``exc``.

    A problem raised by an inner offprompt model (``Message.content`` holding a
    ``TextArtifact``) is the inner problem with the outer field path in front: said once,
    with the innermost (most precise) value, not once per level.
    """
    problems: list[tuple[str, str | None]] = []
    for err in exc.errors(include_url=False):
        location = ".".join(str(p) for p in err.get("loc", ()))
        where = f"{model}.{location}" if location else model
        inner = (err.get("ctx") or {}).get("error")
        context = inner.context if isinstance(inner, OffpromptError) else {}
        nested = context.get("problems")
        if nested:
            problems.extend(
                (text if not location or text.startswith(where) else f"{where}: {text}", got)
                for text, got in nested
            )
            continue
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        # A message that names its own field ("TextArtifact.value contains ...") needs no
        # "<root>" path in front of it.
        named = message.startswith((f"{model}.", f"{where}:"))
        text = message if named else f"{where}: {message}"
        got = _shown(context["value"]) if "value" in context else _shown(err.get("input"))
        problems.append((text, got))
    return problems


def describe_pydantic_error(model: str, exc: PydanticValidationError) -> str:
    """One part per problem: ``Message.role: unknown role 'robot'; ... (got 'robot')``.

    Nested models say each problem once, with the field path and one shortened copy of
    the bad value: ``Message.content: TextArtifact.value contains a lone surrogate ...
    (got 'bad \\ud83d here')``.
    """
    return "; ".join(
        text if got is None else f"{text} (got {got})" for text, got in _problems(model, exc)
    )


def validation_error(model: str, exc: PydanticValidationError) -> ValidationError:
    return ValidationError(
        describe_pydantic_error(model, exc), model=model, problems=_problems(model, exc)
    )


def deserialization_error(model: str, exc: PydanticValidationError) -> DeserializationError:
    return DeserializationError(
        describe_pydantic_error(model, exc), model=model, problems=_problems(model, exc)
    )


def _too_deep(what: str) -> str:
    return f"{what} nests deeper than {MAX_JSON_DEPTH} levels, offprompt's limit for JSON"


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests dicts/lists/tuples more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, (dict, list, tuple))
        )
    return False


def check_json_depth(
    value: Any, *, what: str, error: type[OffpromptError] = DeserializationError
) -> None:
    """Raise ``error`` naming :data:`MAX_JSON_DEPTH` if ``value`` nests deeper than that."""
    if json_too_deep(value):
        raise error(
            _too_deep(what),
            what=what,
            limit=MAX_JSON_DEPTH,
        )


def ensure_json(value: Any, *, field: str) -> Any:
    """Return ``value`` normalised through JSON (tuples become lists) or raise.

    NaN and infinity are refused: they are not JSON and most stores reject them, and
    so are values nested deeper than :data:`MAX_JSON_DEPTH` and strings holding a lone
    surrogate (:class:`ValidationError`, see :func:`lone_surrogate_error`).
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        result = json.loads(text)
    except RecursionError:
        result = [value]  # reported as too deep just below
    except (TypeError, ValueError) as exc:
        raise SerializationError(
            f"{field} must be JSON-serialisable, got {type(value).__name__}: {exc}", field=field
        ) from None
    else:
        error = lone_surrogate_error(text, what=f"{field} (as JSON text)")
        if error is not None:
            raise error
    check_json_depth(result, what=field, error=SerializationError)
    return result


def loads_json(text: str | bytes, *, what: str) -> Any:
    """``json.loads`` whose failure names what was being read and where it broke.

    Documents nested deeper than :data:`MAX_JSON_DEPTH` are refused.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise DeserializationError(
            _too_deep(what),
            what=what,
            limit=MAX_JSON_DEPTH,
        ) from None
    except json.JSONDecodeError as exc:
        raise DeserializationError(
            f"malformed JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}",
            what=what,
        ) from None
    except (TypeError, UnicodeDecodeError) as exc:
        raise DeserializationError(f"cannot read {what} as JSON: {exc}", what=what) from None
    check_json_depth(data, what=what)
    return data


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
    if type(session_id) is str and session_id in _VALID_SESSION_IDS:
        return session_id  # checked before: stores call this on every operation
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
    if len(_VALID_SESSION_IDS) >= _VALID_CACHE:
        _VALID_SESSION_IDS.clear()
    _VALID_SESSION_IDS.add(session_id)
    return session_id


#: Session ids that passed :func:`validate_session_id` (exact ``str`` only; bounded).
_VALID_SESSION_IDS: set[str] = set()
_VALID_CACHE = 4096
