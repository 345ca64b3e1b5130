"""Validation of namespace, tenant, session and collection names.

A leaf module (it imports only `offprompt.errors`), so that `offprompt.scope` and every
store can check names without loading the vector layer.
"""

from __future__ import annotations

import unicodedata

from offprompt.errors import NamespaceError

__all__ = ["MAX_NAME_LENGTH", "validate_namespace"]

MAX_NAME_LENGTH = 200


def validate_namespace(name: object, *, what: str = "namespace") -> str:
    """Return ``name`` if it is a safe namespace, else raise :class:`NamespaceError`.

    A namespace is also a directory name in ``FileBlobStore``, so besides being a
    non-empty string of at most 200 characters it must hold no control character
    (NUL included), no path separator (``/`` or ``\\``) and no ``..``.

    Example:
        >>> validate_namespace("web_search-3f2a")
        'web_search-3f2a'
    """
    if not isinstance(name, str):
        raise NamespaceError(f"{what} must be a str, got {type(name).__name__}", name=repr(name))
    if not name or not name.strip():
        raise NamespaceError(f"{what} must not be empty or whitespace", name=name)
    if len(name) > MAX_NAME_LENGTH:
        raise NamespaceError(
            f"{what} is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}", name=name[:50]
        )
    for char in name:
        if unicodedata.category(char) in ("Cc", "Cs") or char in "\u2028\u2029":
            raise NamespaceError(f"{what} {name!r} contains control character {char!r}", name=name)
        if char in "/\\":
            raise NamespaceError(f"{what} {name!r} contains a path separator {char!r}", name=name)
    if ".." in name or name == ".":
        raise NamespaceError(f"{what} {name!r} must not contain '..' or be '.'", name=name)
    return name
