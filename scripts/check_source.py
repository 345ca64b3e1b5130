"""The docstring check ``make lint`` runs on the library's source (the core and every adapter).

Every public function and method has a docstring: a ``def`` whose name has no leading
underscore, at module level or in a public class, in a public module (no path part
starting with ``_``, ``__init__.py`` aside). Dunder methods, ``@overload`` stubs, property
setters/deleters and functions nested in functions are exempt. An async twin needs one too
(one line naming its sync twin is enough). A method that overrides a documented method of a
base class (a protocol's, or a framework's such as ``BaseChatModel.bind_tools``) has that
docstring, as ``help()`` and ``inspect.getdoc`` show it; the check imports the module to see
the bases.

Size is ruff's job: the function caps in ``pyproject.toml`` (``C901``, ``PLR0913``,
``PLR0915``, ``PLR0917``) replaced the module-line cap this script used to hold (issue 43).

Usage: ``python scripts/check_source.py [ROOT ...]`` (default: the directories of
:data:`SOURCES`). Exit code 1 and one line per problem when the check fails.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = (
    "src/offprompt",
    "integrations/langchain/src",
    "integrations/llamaindex/src",
    "integrations/demo/src",
    "integrations/anthropic/src",
    "integrations/openai_agents/src",
    "integrations/pydantic_ai/src",
)


def _public_module(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return not any(p.startswith("_") and p != "__init__.py" for p in parts)


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def _exempt(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    name = node.name
    if name.startswith("_"):
        return True  # private, or a dunder
    return bool(_decorator_names(node) & {"overload", "setter", "deleter"})


def undocumented(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``(line, qualified name)`` of every public def without a docstring."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not _exempt(node) and ast.get_docstring(node) is None:
                yield node.lineno, node.name
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if (
                    isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not _exempt(item)
                    and ast.get_docstring(item) is None
                ):
                    yield item.lineno, f"{node.name}.{item.name}"


def _module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    top = len(parts) - 1 - parts[::-1].index("src")  # the last ``src`` is the import root
    names = parts[top + 1 :]
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _inherits_docstring(module_name: str, qualname: str) -> bool:
    """Whether ``Class.method`` overrides a method that a base class documents."""
    if "." not in qualname:
        return False
    class_name, method = qualname.split(".", 1)
    cls = getattr(importlib.import_module(module_name), class_name, None)
    for base in getattr(cls, "__mro__", ())[1:]:
        attribute = vars(base).get(method)
        if attribute is None:
            continue
        inner = getattr(attribute, "__func__", None) or getattr(attribute, "fget", None)
        if (getattr(inner, "__doc__", None) or getattr(attribute, "__doc__", None) or "").strip():
            return True
    return False


def check(roots: list[Path]) -> list[str]:
    """Every problem found under ``roots``, one line each (empty when all is well)."""
    problems: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if not _public_module(path, root):
                continue
            rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            for line, name in undocumented(tree):
                if not _inherits_docstring(_module_name(path), name):
                    problems.append(f"{rel}:{line}: public {name} has no docstring")
    return problems


def main(argv: list[str]) -> int:
    """Run the check; print each problem; 1 if there is any, else 0."""
    roots = [Path(a).resolve() for a in argv] or [REPO / s for s in SOURCES]
    problems = check(roots)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) (scripts/check_source.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
