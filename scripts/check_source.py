"""Two checks ``make lint`` runs on the library's source (the core and every adapter).

1. **Docstrings.** Every public function and method has a docstring: a ``def`` whose
   name has no leading underscore, at module level or in a public class, in a public
   module (no path part starting with ``_``, ``__init__.py`` aside). Dunder methods,
   ``@overload`` stubs, property setters/deleters and functions nested in functions
   are exempt. An async twin needs one too (one line naming its sync twin is enough).
   A method that overrides a documented method of a base class (a protocol's, or a
   framework's such as ``BaseChatModel.bind_tools``) has that docstring, as ``help()``
   and ``inspect.getdoc`` show it; the check imports the module to see the bases.
2. **Module size.** No source module is over :data:`MAX_LINES` lines, except the ones
   in :data:`OVERSIZED`, each with the reason it is still there. The list may only
   shrink: a module that is no longer over the limit must leave it (the check says so),
   and a new oversized module fails.

Usage: ``python scripts/check_source.py [ROOT ...]`` (default: the directories of
:data:`SOURCES`). Exit code 1 and one line per problem when a check fails.
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
MAX_LINES = 900

#: Modules still over :data:`MAX_LINES`, and why (issue 30 splits them along these seams).
OVERSIZED: dict[str, str] = {}


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
    seen_oversized: set[str] = set()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
            text = path.read_text(encoding="utf-8")
            lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if lines > MAX_LINES:
                if rel in OVERSIZED:
                    seen_oversized.add(rel)
                else:
                    problems.append(
                        f"{rel}: {lines} lines, over the {MAX_LINES}-line limit: split it "
                        "along its seams (one job per module)"
                    )
            if _public_module(path, root):
                for line, name in undocumented(ast.parse(text, filename=rel)):
                    if not _inherits_docstring(_module_name(path), name):
                        problems.append(f"{rel}:{line}: public {name} has no docstring")
    checked = {r.relative_to(REPO).as_posix() for r in roots if r.is_relative_to(REPO)}
    for rel in sorted(set(OVERSIZED) - seen_oversized):
        if any(rel.startswith(c + "/") for c in checked):
            problems.append(
                f"{rel}: no longer over {MAX_LINES} lines (or gone): remove it from "
                "OVERSIZED in scripts/check_source.py"
            )
    return problems


def main(argv: list[str]) -> int:
    """Run both checks; print each problem; 1 if there is any, else 0."""
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
