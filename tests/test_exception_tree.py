"""Issue 19 item 4, kept: every public exception is defined once, in offprompt.errors, and
drawn in its tree; the core and the adapters re-export, never redefine."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import offprompt.errors

PACKAGES = ["offprompt", "offprompt_langchain", "offprompt_llamaindex", "offprompt_demo"]
# Nothing is allowed outside errors.py any more (the MCP proxy's UpstreamError moved).
PENDING: set[str] = set()


def _modules(package: str) -> list[ModuleType]:
    root = importlib.import_module(package)
    names = [package] + [
        info.name
        for info in pkgutil.walk_packages(root.__path__, package + ".")
        if not info.name.endswith("__main__")  # importing it runs the command
    ]
    return [importlib.import_module(name) for name in names]


def public_exceptions_outside_errors() -> set[str]:
    found = set()
    for package in PACKAGES:
        for module in _modules(package):
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                    and module is not offprompt.errors
                    and name in getattr(module, "__all__", [n for n in vars(module) if n[0] != "_"])
                ):
                    found.add(f"{module.__name__}.{name}")
    return found


def test_public_exceptions_are_defined_in_errors_only() -> None:
    assert public_exceptions_outside_errors() <= PENDING


def drawn_tree() -> dict[str, str | None]:
    """Each class drawn in errors.py's tree, with the class drawn as its parent."""
    tree = (offprompt.errors.__doc__ or "").split("Tree::", 1)[1].split("\n\n")[1]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for row in tree.splitlines():
        stripped = row.lstrip(" │├└─")
        column, name = len(row) - len(stripped), stripped.split()[0]
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((column, name))
    return parents


ERRORS = [
    n
    for n in offprompt.errors.__all__
    if isinstance(getattr(offprompt.errors, n), type)
    and issubclass(getattr(offprompt.errors, n), BaseException)
]


def test_the_tree_draws_every_error_under_its_parent() -> None:
    parents = drawn_tree()
    assert set(parents) == set(ERRORS)
    for name in ERRORS:
        cls = getattr(offprompt.errors, name)
        drawn = parents[name]
        if drawn is None:
            assert cls is offprompt.errors.OffpromptError
        else:
            assert issubclass(cls, getattr(offprompt.errors, drawn)), name
            assert drawn in {base.__name__ for base in cls.__bases__}, name
