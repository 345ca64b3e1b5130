"""The project's Markdown links only to files that exist in the repository (issue 19 item 9)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "benchmarks").glob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def relative_links(doc: Path) -> list[str]:
    links = [m.group(1).split("#")[0] for m in LINK.finditer(doc.read_text(encoding="utf-8"))]
    return [link for link in links if link and "://" not in link and not link.startswith("mailto:")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    for link in relative_links(doc):
        target = (doc.parent / link).resolve()
        assert target.is_relative_to(ROOT), f"{doc.name} links outside the repository: {link}"
        assert target.exists(), f"{doc.name} links to a missing file: {link}"


def test_the_benchmarks_readme_names_every_script() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"]({script.name})" in text, f"benchmarks/README.md does not link {script.name}"
