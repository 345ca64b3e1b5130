"""The documentation site as a reader gets it (issue 27): built by mkdocs, opened in a real
headless Chromium (Debian's ``chromium``, as ``tests/render/test_html_browser.py`` does).

The site is built once into a temporary folder with ``mkdocs build --strict`` and served
on the loopback interface by ``python -m http.server`` in a subprocess (the search runs in
a web worker that fetches its index, which a ``file://`` page may not do). Chromium gets a
proxy that points nowhere, so nothing outside the loopback can load.
"""

from __future__ import annotations

import html.parser
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from browser_testing import Browser, dump_dom

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
        cwd=site,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        port = re.search(r"port (\d+)", line)
        assert port, f"http.server did not say its port: {line!r}"
        yield f"http://127.0.0.1:{port.group(1)}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_a_page_renders_with_its_navigation_and_code(served: str, tmp_path: Path) -> None:
    dom = dump_dom(f"{served}/guides/langchain/", tmp_path / "profile")
    assert "<h1" in dom and "LangChain</h1>" in re.sub(r"<a [^>]*>.*?</a>", "", dom)
    # the navigation lists every section of the site
    for section in (
        "Getting started",
        "Guides",
        "Concepts",
        "Operations",
        "API reference",
        "Benchmarks",
    ):
        assert section in dom, section
    assert "OffpromptChatMessageHistory" in dom
    assert dom.count('class="highlight"') >= 3  # the code blocks were highlighted


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_the_api_reference_is_generated_from_docstrings(served: str, tmp_path: Path) -> None:
    dom = dump_dom(f"{served}/reference/offprompt/", tmp_path / "profile")
    # a class, its docstring's first line and a method of it, rendered by mkdocstrings
    assert 'id="offprompt.conversation.ConversationMemory"' in dom
    assert 'id="offprompt.conversation.ConversationMemory.window"' in dom
    assert "doc-signature" in dom


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_search_finds_a_page(served: str, tmp_path: Path) -> None:
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(f"{served}/")
        browser.evaluate("document.querySelector('input.md-search__input').focus()")
        browser.type("PostgresStore")
        # the worker builds the index from search_index.json, then Material lists results
        hrefs = browser.wait_for(
            "Array.from(document.querySelectorAll('.md-search-result__item a'))"
            ".map(a => a.getAttribute('href'))",
            timeout=60,
        )
    finally:
        browser.close()
    assert any("operations/postgresql/" in h for h in hrefs), hrefs[:10]


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        for attr in ("href", "src"):
            if values.get(attr) and not (tag == "link" and values.get("rel") == "canonical"):
                self.links.append(str(values[attr]))


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def site_prefix() -> str:
    """The path of ``site_url`` (``/offprompt/``): where absolute links of the site start."""
    url = re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    assert url, "mkdocs.yml has no site_url"
    return urlsplit(url.group(1)).path or "/"


def broken_links(site: Path, prefix: str = "/") -> list[str]:
    """Every internal href/src of the built site whose file or anchor does not exist."""
    parsed = {page: _parse(page) for page in sorted(site.rglob("*.html"))}
    broken = []
    for page, links in parsed.items():
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            path, fragment = urldefrag(unquote(link))
            if path.startswith("/"):  # 404.html links from the site's root
                if not path.startswith(prefix):
                    broken.append(f"{page.relative_to(site)}: {link} (outside {prefix})")
                    continue
                target = (site / path[len(prefix) :]).resolve()
            else:
                target = (page.parent / path).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link} (no such file)")
            elif (
                fragment
                and target.suffix == ".html"
                and fragment not in (parsed.get(target) or _parse(target)).ids
            ):
                broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    return broken


@pytest.mark.timeout(900)
def test_no_internal_link_is_broken(site: Path) -> None:
    assert len(list(site.rglob("*.html"))) >= 20
    broken = broken_links(site, site_prefix())
    assert not broken, "\n".join(broken[:40])


def test_the_link_check_sees_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<a href="missing/">x</a><a href="#nowhere">y</a><a id="here" href="#here">z</a>'
        '<a href="https://example.org/">w</a><a href="/elsewhere/">v</a><a href="/p/index.html">u</a>',
        encoding="utf-8",
    )
    assert broken_links(tmp_path, "/p/") == [
        "index.html: missing/ (no such file)",
        "index.html: #nowhere (no such anchor)",
        "index.html: /elsewhere/ (outside /p/)",
    ]
