"""The package exports exactly its public API (tests/test_imports.py of the main suite
cannot import it: pydantic-ai lives in this virtualenv only)."""

from __future__ import annotations

import inspect

import offprompt_pydantic_ai

EXPORTS = {
    "OFFLOAD_METADATA_KEY",
    "OVERFLOW_TOOL",
    "OffpromptCapability",
    "OffpromptHistory",
    "OffpromptOverflowStore",
    "memory_tools",
}


def test_all_is_exactly_the_public_api() -> None:
    assert len(offprompt_pydantic_ai.__all__) == len(EXPORTS)
    assert set(offprompt_pydantic_ai.__all__) == EXPORTS
    for name in EXPORTS:
        value = getattr(offprompt_pydantic_ai, name)
        assert value is not None
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_no_unexported_name_of_ours_leaks() -> None:
    leaked = {
        name
        for name, value in vars(offprompt_pydantic_ai).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and name not in EXPORTS
    }
    assert leaked == set()
