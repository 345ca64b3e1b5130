"""The project's Markdown: links resolve inside the repository, and every Python block runs."""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "benchmarks").glob("*.md")),
    *sorted((ROOT / "integrations").glob("*/README.md")),
]
# Pages that leave the repository (the docs site, the adapters' registry pages) link to
# its files by their address on the project's home; those files must exist too.
BLOB = re.compile(r"\]\(https://github\.com/offprompt/offprompt/(?:blob|tree)/main/([^)#\s]+)")
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


@pytest.mark.parametrize(
    "doc",
    [*DOCS, *sorted((ROOT / "docs").rglob("*.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_links_to_the_projects_home_name_files_that_exist(doc: Path) -> None:
    for path in BLOB.findall(doc.read_text(encoding="utf-8")):
        assert (ROOT / path).exists(), f"{doc.relative_to(ROOT)} links to a missing file: {path}"


def test_the_benchmarks_readme_names_every_script() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"]({script.name})" in text, f"benchmarks/README.md does not link {script.name}"


# --- Every ```python block of the README and the documentation site runs (issue 27) ---
#
# The blocks of one page run in order, in one namespace, in an empty working directory
# with its own OFFPROMPT_HOME; top-level ``await`` is allowed. A block that cannot run
# offline (a PostgreSQL server's URL, say) is marked by an HTML comment on the line
# before it, ``<!-- no-run: why -->``; NO_RUN below lists every such block, so adding
# one is a visible change.

SNIPPET_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NO_RUN_MARK = re.compile(r"^<!--\s*no-run:\s*(.+?)\s*-->\s*$")
NO_RUN = {
    "docs/operations/several-machines.md": 1,  # a PostgreSQL server and a Qdrant server
    "docs/guides/strands.md": 2,  # strands-agents, in its own venv (make test-strands)
    "docs/guides/adk.md": 2,  # google-adk: run by integrations/adk/tests/test_guide.py
    # pydantic-ai's pins need a virtualenv of their own (make test-pydantic_ai), where
    # integrations/pydantic_ai/tests/test_guide.py runs all three
    "docs/guides/pydantic-ai.md": 3,
}


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int  # 1-based line of the opening fence
    code: str
    no_run: str | None  # the reason, for a marked block


def snippets(page: Path) -> list[Snippet]:
    """The ```python blocks of a Markdown page, with their no-run marks."""
    found: list[Snippet] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            info = line[3:].strip()
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if info.split(" ")[0] in ("python", "py"):
                before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
                mark = NO_RUN_MARK.match(before)
                found.append(
                    Snippet(page, start + 1, "\n".join(body) + "\n", mark and mark.group(1))
                )
        i += 1
    return found


def test_the_snippet_collector_finds_blocks_and_marks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 1\n```\n\n<!-- no-run: needs a server -->\n```python\nconnect()\n```\n"
        "\n```bash\nls\n```\n\n```text\nnot code\n```\n",
        encoding="utf-8",
    )
    found = snippets(page)
    assert [(s.line, s.code, s.no_run) for s in found] == [
        (3, "x = 1\n", None),
        (8, "connect()\n", "needs a server"),
    ]


def test_no_run_blocks_are_few_and_listed() -> None:
    marked: dict[str, list[str]] = {}
    for page in SNIPPET_PAGES:
        for s in snippets(page):
            if s.no_run is not None:
                marked.setdefault(str(page.relative_to(ROOT)), []).append(
                    f"line {s.line}: {s.no_run}"
                )
    assert {page: len(reasons) for page, reasons in marked.items()} == NO_RUN, marked


@pytest.mark.parametrize(
    "page",
    [p for p in SNIPPET_PAGES if any(s.no_run is None for s in snippets(p))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_python_block_of_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFPROMPT_HOME", str(tmp_path / ".offprompt"))
    # The page runs as a module of its own, so what needs one (a dataclass looks its
    # module up in sys.modules) works as it does in a user's script.
    module = types.ModuleType("__docs__")
    monkeypatch.setitem(sys.modules, "__docs__", module)
    # A page may add an event handler to LlamaIndex's process-wide root dispatcher (the
    # tracing example prints every event): it must not outlive the page's test.
    from llama_index.core.instrumentation import get_dispatcher

    root = get_dispatcher()
    monkeypatch.setattr(root, "event_handlers", list(root.event_handlers))
    namespace: dict[str, object] = module.__dict__
    for s in snippets(page):
        if s.no_run is not None:
            continue
        where = f"{page.relative_to(ROOT)}:{s.line}"
        code = compile(s.code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        try:
            if code.co_flags & inspect.CO_COROUTINE:
                asyncio.run(eval(code, namespace))
            else:
                exec(code, namespace)
        except Exception as exc:
            raise AssertionError(f"the ```python block at {where} failed: {exc!r}") from exc


# --- The README is the front door (issue 27): short, the install table, the quick starts ---


def test_the_readme_is_a_front_door_that_links_every_docs_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, "README.md is the front door: move details to docs/"
    for distribution in (
        "offprompt",
        "offprompt-langchain",
        "offprompt-llamaindex",
        "offprompt-demo",
    ):
        assert f"pip install {distribution}`" in text, distribution
    for extra in ('"offprompt[mcp]"', '"offprompt[postgres]"', '"offprompt-langchain[agents]"'):
        assert f"pip install {extra}" in text, extra
    # the three quick starts: LangChain (history, checkpointer, a wrapped tool), LlamaIndex, migrating
    for name in (
        "OffpromptChatMessageHistory(",
        "checkpointer=OffpromptSaver()",
        "offprompt_tool(",
        "OffpromptMemory.from_defaults(",
        "TaskMemoryToolSpec(",
    ):
        assert name in text, name
    linked = set(BLOB.findall(text))
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")}
    guides = {
        p for p in pages if p.startswith(("docs/guides/", "docs/concepts/", "docs/operations/"))
    }
    assert guides - linked == set(), f"README.md does not link {sorted(guides - linked)}"


def test_the_readme_keeps_the_two_contributor_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Contributing\n\n```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no Contributing section with a bash block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]


def test_user_docs_do_not_speak_of_issue_numbers() -> None:
    for page in SNIPPET_PAGES:
        found = re.findall(r"(?i)\bissue[ -]\d+", page.read_text(encoding="utf-8"))
        assert not found, f"{page.relative_to(ROOT)} speaks of {found}"
