"""Every ```python block of docs/guides/pydantic-ai.md runs offline as it is."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "pydantic-ai.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_block_runs(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / "home"))
    script = tmp_path / f"block_{index}.py"
    script.write_text(BLOCKS[index], encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.strip()  # each example prints its result
