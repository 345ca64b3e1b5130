"""Every example in examples/ runs offline and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if not p.name.startswith("_"))


@pytest.mark.timeout(600)  # each example may take its subprocess's 300 s under load
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_example_runs(script: Path, tmp_path: Path) -> None:
    env = dict(os.environ, OFFPROMPT_HOME=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert result.stdout.strip(), "an example should show what it did"
