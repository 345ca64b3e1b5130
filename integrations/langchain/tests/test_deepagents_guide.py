"""Every ```python block of docs/guides/deepagents.md runs offline, as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "deepagents.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def test_the_guide_has_its_examples() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_block_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(BLOCKS[index], f"{GUIDE.name}[{index}]", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.strip()
