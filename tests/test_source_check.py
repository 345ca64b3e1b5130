"""``scripts/check_source.py`` (run by ``make lint``): a docstring on every public def."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_source", ROOT / "scripts" / "check_source.py")
assert _spec is not None and _spec.loader is not None
check_source = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check_source
_spec.loader.exec_module(check_source)


def test_the_library_passes() -> None:
    assert check_source.check([ROOT / s for s in check_source.SOURCES]) == []


def test_a_public_def_without_a_docstring_fails(tmp_path: Path) -> None:
    package = tmp_path / "src" / "pkg_under_check"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package."""\n')
    (package / "_private.py").write_text("def helper():\n    return 1\n")
    (package / "mod.py").write_text(
        "def documented():\n    '''Says what it does.'''\n\n"
        "def bare():\n    return 1\n\n"
        "async def abare():\n    return 1\n\n"
        "def _private():\n    return 1\n\n"
        "class Thing:\n"
        "    def __init__(self):\n        pass\n"
        "    def method(self):\n        return 1\n"
        "    def _hidden(self):\n        return 1\n"
        "    @property\n    def size(self):\n        '''The size.'''\n        return 1\n"
        "    @size.setter\n    def size(self, value):\n        pass\n"
    )
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        problems = check_source.check([package])
    finally:
        sys.path.remove(str(tmp_path / "src"))
    assert [p.split(": public ")[1] for p in problems] == [
        "bare has no docstring",
        "abare has no docstring",
        "Thing.method has no docstring",
    ]


def test_an_override_of_a_documented_method_has_its_docstring(tmp_path: Path) -> None:
    package = tmp_path / "src" / "pkg_inheriting"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package."""\n')
    (package / "mod.py").write_text(
        "class Base:\n    def run(self):\n        '''Run it.'''\n\n"
        "class Child(Base):\n    def run(self):\n        return 1\n"
        "    def extra(self):\n        return 2\n"
    )
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        problems = check_source.check([package])
    finally:
        sys.path.remove(str(tmp_path / "src"))
    assert [p.split(": public ")[1] for p in problems] == ["Child.extra has no docstring"]
