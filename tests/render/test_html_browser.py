"""The session page rendered by a real headless Chromium (Debian's ``chromium`` package).

Installed by the Makefile's test setup (``apt-get install -y chromium``). The browser runs
with no network (``--no-proxy-server`` plus a proxy that points nowhere, and the page
itself loads nothing external). Two checks:

* a probe copy of the page (the page's own CSP removed, one script added that writes each
  image's decoded ``naturalWidth`` into a ``data-`` attribute) shows every message, the
  tool call and images that decoded to their real size;
* the page as written, holding ``<script>`` and ``onerror=`` in messages, runs none of
  them: the dumped DOM has no attribute or element they would have created.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from browser_testing import dump_dom
from PIL import Image

from offprompt.artifacts import ImageArtifact
from offprompt.messages import Message, ToolCall
from offprompt.render import NamespaceInfo, render_html
from offprompt.stores.sqlite import SQLiteStore

pytestmark = pytest.mark.browser

PROBE = (
    "<script>window.addEventListener('load', () => {"
    " for (const img of document.images) { img.dataset.decodedWidth = img.naturalWidth; }"
    " document.body.dataset.probed = 'yes'; });</script>"
)
REFERENCE = (
    'Output of "Files.read" was stored in memory with memory_name "TaskMemory" '
    'and artifact_namespace "report-q3".'
)


def _dump_dom(page: Path, profile: Path) -> str:
    return dump_dom(page.resolve().as_uri(), profile)


def _png(color: str, size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def _jpeg(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, "orange").save(buffer, format="JPEG")
    return buffer.getvalue()


def _page(tmp_path: Path) -> str:
    """The page of a session that went through a real SQLite store."""
    messages = [
        Message.system("You read reports."),
        Message.user(
            [
                "Compare these <script>document.body.dataset.pwned='script'</script>",
                ImageArtifact(value=_png("red", (120, 80))),
                ImageArtifact(value=_jpeg((64, 48))),
            ]
        ),
        Message.assistant(
            tool_calls=[ToolCall(id="call_1", name="read_file", arguments={"path": "q3.pdf"})]
        ),
        Message.tool(REFERENCE, tool_call_id="call_1", name="read_file"),
        Message.assistant(
            "<img src=x onerror=\"document.body.dataset.pwned='onerror'\"> Revenue grew 12%."
        ),
    ]
    with SQLiteStore(tmp_path / "memory.db") as store:
        store.append("s", messages, [1] * len(messages))
        stored = store.read("s")
    return render_html(
        stored,
        title="session s",
        namespaces={"report-q3": NamespaceInfo("report-q3", bytes=5_300_000, tokens=1_200_000)},
    )


def test_page_renders_messages_tool_call_and_decoded_images(tmp_path: Path) -> None:
    page = _page(tmp_path)
    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe = probe.replace("</body>", PROBE + "</body>")
    path = tmp_path / "probe.html"
    path.write_text(probe, encoding="utf-8")

    dom = _dump_dom(path, tmp_path / "profile")
    assert 'data-probed="yes"' in dom  # the probe ran after load
    assert dom.count('class="msg role-') == 5
    assert "Revenue grew 12%." in dom and "You read reports." in dom
    assert re.search(r'class="tool-call"[^>]*data-tool="read_file"', dom)
    assert "&quot;path&quot;: &quot;q3.pdf&quot;" in dom or '"path": "q3.pdf"' in dom
    assert 'data-namespace="report-q3"' in dom and "5.1 MiB, 1,200,000 tokens" in dom
    widths = re.findall(r'<img [^>]*data-decoded-width="(\d+)"', dom)
    assert sorted(int(w) for w in widths) == [64, 120]  # both images decoded to their real size
    assert "pwned" not in re.sub(r"&lt;.*?&gt;", "", dom.split("<body", 1)[1].split(">", 1)[0])


def test_script_in_a_message_does_not_run(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(_page(tmp_path), encoding="utf-8")
    dom = _dump_dom(path, tmp_path / "profile")
    body_tag = re.search(r"<body[^>]*>", dom)
    assert body_tag is not None and "pwned" not in body_tag.group(0)
    assert "&lt;script&gt;document.body.dataset.pwned" in dom  # shown as text
    assert not re.search(r"<img src=\"?x", dom)
    assert dom.count("<img ") == 2
