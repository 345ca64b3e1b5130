"""The core knows no framework: statically (every import in ``src/offprompt``) and for real
(a fresh virtualenv with only the core installed imports it and runs its command).

The static walk reads every ``import`` statement, those inside functions too, because a
deferred import of an adapter is still a dependency of the core.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "offprompt"
FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langgraph",
    "llama_index",
    "offprompt_langchain",
    "offprompt_llamaindex",
    "offprompt_demo",
)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def framework_imports(root: Path) -> list[str]:
    """``file:line module`` (relative to ``root``) for every framework or adapter import."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top in FRAMEWORKS or top.startswith(("langchain_", "llama_index")):
                bad.append(f"{path.relative_to(root)}:{line} {module}")
    return bad


def test_the_core_imports_no_framework_anywhere() -> None:
    assert framework_imports(CORE) == []


def test_the_walk_sees_imports_inside_functions(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "def f():\n    from langchain_core.messages import AIMessage\n    import llama_index.core\n",
        encoding="utf-8",
    )
    assert framework_imports(tmp_path) == [
        "mod.py:2 langchain_core.messages",
        "mod.py:3 llama_index.core",
    ]


def _uv() -> str:
    uv = Path(sys.executable).parent / "uv"
    found = str(uv) if uv.exists() else shutil.which("uv")
    if found is None:  # make setup installs uv into the venv
        pytest.fail("uv is not installed next to the test interpreter; run 'make setup'")
    return found


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds a virtualenv and installs the core into it
def test_a_fresh_environment_with_only_the_core_works(tmp_path: Path) -> None:
    """Like smolagents' ``tests/test_import.py``: install the core alone, then use it.

    ``--offline`` installs from uv's cache, which ``make setup`` filled: no network.
    """
    venv = tmp_path / "core-only"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    uv = _uv()
    subprocess.run(
        [uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, env=env
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--offline", "--python", str(python), str(ROOT)],
        check=True,
        env=env,
        timeout=300,
    )
    code = (
        "import importlib.util, sys, offprompt\n"
        "offprompt.TaskMemory, offprompt.ConversationMemory, offprompt.LongTermMemory\n"
        "import offprompt.cli\n"
        "missing = [m for m in ('langchain_core', 'llama_index', 'offprompt_langchain') "
        "if importlib.util.find_spec(m) is not None]\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'llama_index')]\n"
        "print(missing, loaded)"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] []"  # no framework installed, none imported

    command = venv / "bin" / "offprompt"
    helped = subprocess.run(
        [str(command), "--help"], capture_output=True, text=True, env=env, timeout=120
    )
    assert helped.returncode == 0, helped.stderr
    assert "inspect" in helped.stdout and "demo" in helped.stdout

    demo = subprocess.run(
        [str(command), "--home", str(tmp_path / "home"), "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert demo.returncode == 1
    assert demo.stderr.strip().splitlines() == [
        "offprompt: error: offprompt demo is not installed: pip install offprompt-demo "
        "(it brings offprompt-langchain[agents] and offprompt-llamaindex), or run 'make demo'"
    ]

    # PostgresStore is an optional extra: without psycopg the name says what to install.
    pg = subprocess.run(
        [str(command), "--store", "postgresql://u@/db", "inspect"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert pg.returncode == 1 and "pip install 'offprompt[postgres]'" in pg.stderr
    star = subprocess.run(
        [str(python), "-c", "from offprompt.stores import *; print(SQLiteStore.__name__)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert star.stdout.strip() == "SQLiteStore", star.stderr
