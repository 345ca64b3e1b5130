"""``scripts/check_private.py`` (run by ``make lint``): no private name crosses a module,
in the library and in its tests, unless a ``# private-ok:`` comment says why."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "check_private", ROOT / "scripts" / "check_private.py"
)
assert _spec is not None and _spec.loader is not None
check_private = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check_private
_spec.loader.exec_module(check_private)


def test_the_library_and_its_tests_pass() -> None:
    roots = (
        *check_private.ROOTS,
        "tests",
        *(str(p.relative_to(ROOT)) for p in ROOT.glob("integrations/*/tests")),
    )
    assert list(check_private.problems(roots)) == []


def test_each_rule_fails_and_a_stated_reason_passes(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "from json import _default_decoder\n"  # a private name imported
        "class Box:\n"
        "    def __init__(self):\n"
        "        self._inner = 1\n"
        "    def __eq__(self, other):\n"
        "        return self._inner == other._inner\n"  # a twin in a dunder: allowed
        "    def peek(self, other):\n"
        "        return other._inner\n"  # another object's private attribute
        "box = Box()\n"
        "# private-ok: the box's own test\n"
        "seen = box._inner\n"
        "also = (\n"
        "    box._inner  # private-ok: on the statement itself\n"
        ")\n"
        "bare = box._inner\n"
    )
    found = [line.split(": ", 1)[1] for line in check_private.problems((str(tmp_path),))]
    assert found == [
        "imports private '_default_decoder' from json",
        "reads private 'other._inner'",
        "reads private 'box._inner'",
    ]
