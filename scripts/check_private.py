"""Private names stay where they are defined: the check ``make lint`` runs for it.

Two rules, over the library's source (the core and every adapter):

1. **No underscore name is imported across modules.** ``from m import _x`` fails. A
   private *module* may export public names (``from offprompt.stores._pg_ops import
   insert_rows``), as httpx's ``_models`` exports ``Request``: the underscore on the
   module says "not API", the names inside it are its interface to its neighbours.
2. **No object's private attribute is read from outside it.** ``other._x`` fails unless
   ``other`` is ``self``, ``cls``, the enclosing class by name, ``super()``, or a name bound to the same class in a
   dunder method's parameters (``def __eq__(self, other)``), where reading the twin's
   fields is the method's job.

A line that must break a rule says why in a ``# private-ok: <reason>`` comment, on the
statement or on the comment line right above it: a third-party library's internals
(RE2's matcher), the upgrade path of a layout that predates the public API, or, in a
test, the internals that are the test's subject. An upstream test ported as it is
(``*_ported.py``) is not checked: it reaches its framework's internals as upstream does. Importing a private *module* (``from pkg import _mod``) is
not a private name: the module's public names are what it exports.

Usage: ``python scripts/check_private.py [ROOT ...]``. Exit code 1 and one line per
problem when a rule is broken.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = (
    "src/offprompt",
    *sorted(str(p.relative_to(REPO)) for p in REPO.glob("integrations/*/src")),
)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class _Visitor(ast.NodeVisitor):
    def __init__(self, where: str, lines: list[str]) -> None:
        self.where = where
        self._lines = lines
        self.problems: list[str] = []
        self._twins: list[set[str]] = []  # names bound to the own class, per function
        self._classes: list[str] = []
        self._statements: list[ast.stmt] = []

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            self._statements.append(node)
            try:
                super().visit(node)
            finally:
                self._statements.pop()
        else:
            super().visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if _private(alias.name) and not _is_module(f"{node.module}.{alias.name}"):
                self._problem(
                    node,
                    f"imports private {alias.name!r} from {node.module}",
                )

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._classes.append(node.name)
        self.generic_visit(node)
        self._classes.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        twins = {"self", "cls"}
        if node.name.startswith("__") and node.name.endswith("__"):
            twins |= {arg.arg for arg in node.args.args[1:]}
        self._twins.append(twins)
        self.generic_visit(node)
        self._twins.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr) and not self._allowed(node.value):
            self._problem(node, f"reads private {ast.unparse(node)[:70]!r}")
        self.generic_visit(node)

    def _problem(self, node: ast.expr | ast.stmt, what: str) -> None:
        first, last = node.lineno, getattr(node, "end_lineno", None) or node.lineno
        if self._statements:
            # The statement holding the node (a compound one: its header only), and the
            # comment line right above it.
            statement = self._statements[-1]
            body = getattr(statement, "body", None)
            first = statement.lineno - 1
            if isinstance(body, list) and body:
                last = max(last, body[0].lineno - 1)
            else:
                last = max(last, statement.end_lineno or statement.lineno)
        lines = self._lines[max(first - 1, 0) : last]
        if first >= 1 and not self._lines[first - 1].lstrip().startswith("#"):
            lines = lines[1:]  # the line above is code, not a comment
        if any("private-ok:" in line for line in lines):
            return
        self.problems.append(f"{self.where}:{node.lineno}: {what}")

    def _allowed(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return value.func.id == "super"
        if isinstance(value, ast.Name):
            own = {"self", "cls", *self._classes[-1:]}
            return value.id in own or any(value.id in t for t in self._twins[-1:])
        return False


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of the repository's source."""
    parts = dotted.split(".")
    for root in ("src", *(str(p.relative_to(REPO)) for p in REPO.glob("integrations/*/src"))):
        base = REPO / root / Path(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def problems(roots: tuple[str, ...]) -> Iterator[str]:
    """Every broken rule under ``roots``, one line each."""
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            if path.name.endswith("_ported.py"):
                continue
            source = path.read_text(encoding="utf-8")
            where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            visitor = _Visitor(str(where), source.splitlines())
            visitor.visit(ast.parse(source, str(path)))
            yield from visitor.problems


def main(argv: list[str]) -> int:
    found = list(problems(tuple(argv) or ROOTS))
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"{len(found)} problem(s) (scripts/check_private.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
