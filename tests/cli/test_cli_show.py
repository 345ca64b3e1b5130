"""``offprompt show`` end to end: the terminal timeline and the HTML page (the page is
checked in a real browser in ``tests/render/test_html_browser.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from cli.cli_helpers import one_error_line, png

from offprompt.artifacts import ImageArtifact
from offprompt.messages import Message, ToolCall

REFERENCE = (
    'Output of "WebSearch.fetch_page" was stored in memory with memory_name "TaskMemory" '
    'and artifact_namespace "page-42".'
)


def _write_session(path: Path) -> None:
    messages = [
        Message.system("You summarise pages."),
        Message.user(
            [
                "Summarise <script>document.title='pwned'</script>",
                ImageArtifact(value=png("green", (30, 20))),
            ]
        ),
        Message.assistant(
            tool_calls=[
                ToolCall(id="call_7", name="fetch_page", arguments={"url": "https://example.org/ü"})
            ]
        ),
        Message.tool(REFERENCE, tool_call_id="call_7", name="fetch_page"),
        Message.assistant("It is about [bold]markup[/bold]."),
    ]
    path.write_text("".join(m.to_json() + "\n" for m in messages), encoding="utf-8")


def test_show_timeline_and_html(cli, tmp_path: Path) -> None:
    source = tmp_path / "pages.jsonl"
    _write_session(source)
    assert cli("import", "--format", "offprompt", str(source)).returncode == 0

    shown = cli("show", "pages")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "Summarise <script>document.title='pwned'</script>" in out
    assert "[image] Image (png, 30x20 pixels" in out
    assert 'calls fetch_page({"url": "https://example.org/ü"})' in out
    assert "stored off-prompt: page-42 (not in task memory) from WebSearch.fetch_page" in out
    assert "It is about [bold]markup[/bold]." in out  # shown, not interpreted as markup

    page = tmp_path / "pages.html"
    written = cli("show", "pages", "--html", str(page))
    assert written.returncode == 0, written.stderr
    assert "1 images, 1 off-prompt references" in written.stdout
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html  # the page has no script, and the message's is escaped
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in html
    assert re.search(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" ', html)
    assert 'data-namespace="page-42"' in html and 'data-tool="fetch_page"' in html
    assert "http" not in html.replace("https://example.org/ü", "").replace(
        "http-equiv", ""
    )  # nothing external


def test_show_html_to_an_unwritable_path(cli, tmp_path: Path) -> None:
    source = tmp_path / "pages.jsonl"
    _write_session(source)
    assert cli("import", "--format", "offprompt", str(source)).returncode == 0
    done = cli("show", "pages", "--html", str(tmp_path / "missing" / "p.html"))
    assert done.returncode == 1
    assert "directory" in one_error_line(done) and not (tmp_path / "missing").exists()
