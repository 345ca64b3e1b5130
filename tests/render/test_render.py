"""The HTML page and the terminal timeline: content, escaping, references with sizes."""

from __future__ import annotations

import io
import re
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from rich.console import Console

from offprompt.artifacts import BlobArtifact, ImageArtifact, JsonArtifact, TextArtifact
from offprompt.messages import Message, ToolCall
from offprompt.render import NamespaceInfo, find_references, render_html, render_timeline
from offprompt.render.html import FOLD_CHARS
from offprompt.render.references import human_bytes
from offprompt.stores.base import StoredMessage

REF = 'Output of "{tool}" was stored in memory with memory_name "{memory}" and artifact_namespace "{ns}".'


def _png(size: tuple[int, int] = (7, 5)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, "navy").save(buffer, format="PNG")
    return buffer.getvalue()


def _text(console_renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(console_renderable)
    return console.export_text()


def test_find_references_handles_dotted_tools_and_several_per_text() -> None:
    text = (
        "before "
        + REF.format(tool="pkg.Tool.run", memory="TaskMemory", ns="a-1")
        + " middle "
        + REF.format(tool="plain", memory="M", ns="ns ü 2")
    )
    refs = find_references(text)
    assert [(r.tool, r.activity, r.memory, r.namespace) for r in refs] == [
        ("pkg.Tool", "run", "TaskMemory", "a-1"),
        ("plain", "", "M", "ns ü 2"),
    ]
    assert text[refs[0].start : refs[0].end] == refs[0].sentence
    assert find_references('Output of "x.y" was stored in memory with memory_name "m"') == []


def test_namespace_info_from_metadata_and_size_text() -> None:
    info = NamespaceInfo.from_metadata(
        "ns",
        {
            "tool": "Web",
            "activity": "get",
            "bytes": 5 * 1024 * 1024,
            "tokens": 1234567,
            "storage": "text",
            "extra": 1,
        },
    )
    assert info.size_text() == "5.0 MiB, 1,234,567 tokens"
    assert NamespaceInfo.from_metadata("ns", {"bytes": True}).size_text() == "size unknown"


def test_human_bytes_labels_powers_of_1024_as_binary_units() -> None:
    assert [human_bytes(n) for n in (1023, 1536, 5 * 2**20, 3 * 2**30, 2**40)] == [
        "1023 B",
        "1.5 KiB",
        "5.0 MiB",
        "3.0 GiB",
        "1024.0 GiB",
    ]


def _conversation() -> list[Message]:
    return [
        Message.system("Be careful & brief."),
        Message.user(
            ["<img src=x onerror=alert(1)> what is it?", ImageArtifact(value=_png(), name="photo")]
        ),
        Message.assistant(
            tool_calls=[
                ToolCall(id="c/1", name="lookup", arguments={"q": "</pre><script>x</script>"})
            ]
        ),
        Message.tool(
            REF.format(tool="Lookup.search", memory="TaskMemory", ns="big-1"),
            tool_call_id="c/1",
            name="lookup",
        ),
        Message.tool(
            [
                JsonArtifact(value={"k": "<v>"}),
                BlobArtifact(value=b"\x00\x01", mime_type="application/pdf"),
            ],
            tool_call_id="c/1",
        ),
        Message.assistant("x" * (FOLD_CHARS + 10)),
    ]


def test_html_page_has_every_part_escaped_and_self_contained() -> None:
    stored = [StoredMessage("s", seq, m, tokens=10 + seq) for seq, m in enumerate(_conversation())]
    page = render_html(
        stored, title="<s1>", namespaces={"big-1": NamespaceInfo("big-1", bytes=2048, tokens=512)}
    )
    assert page.startswith("<!DOCTYPE html>") and "<title>&lt;s1&gt;</title>" in page
    assert "<script" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt; what is it?" in page
    assert "&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'; img-src data:;" in page
    images = re.findall(
        r'<img src="(data:image/png;base64,[^"]+)" alt="([^"]*)" width="7" height="5">', page
    )
    assert len(images) == 1 and "photo" in page
    assert page.count('class="msg role-') == 6
    assert 'class="msg role-system"' in page and 'class="msg role-tool"' in page
    assert '<div class="tool-call" id="call-c_1" data-tool="lookup">' in page
    assert '<a href="#call-c_1"><span class="name">lookup</span></a>' in page
    assert 'data-namespace="big-1"' in page and "(2.0 KiB, 512 tokens)" in page
    assert "&quot;k&quot;: &quot;&lt;v&gt;&quot;" in page
    assert "binary application/pdf, 2 bytes" in page
    assert "<details" in page and f"({FOLD_CHARS + 10:,} characters)" in page
    assert "#3</span><span>13 tokens" in page and "75 tokens in the prompt" in page


def test_html_reference_without_task_memory_says_so() -> None:
    page = render_html(
        [Message.tool(REF.format(tool="A.b", memory="M", ns="gone"), tool_call_id="z")]
    )
    assert (
        "(not in task memory)" in page
        and 'result of <a href="#call-z"><span class="name">call</span>' in page
    )


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_html_never_lets_message_text_become_markup(text: str) -> None:
    page = render_html(
        [
            Message.user(text),
            Message.assistant(tool_calls=[ToolCall(id=text, name=text, arguments={text: text})]),
        ]
    )
    body = page.split('<main id="messages">', 1)[1]
    # Only our own tags may appear: every "<" in the body starts a tag we wrote.
    tags = set(re.findall(r"<(/?[a-z]+)", body))
    assert tags <= {
        "article",
        "/article",
        "div",
        "/div",
        "span",
        "/span",
        "time",
        "/time",
        "pre",
        "/pre",
        "/main",
        "/body",
        "/html",
    }


def test_timeline_shows_everything_and_never_interprets_markup() -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    messages = [m.model_copy(update={"created_at": when}) for m in _conversation()]
    messages.append(Message.user("[red]not red[/red] and [link=x]y[/link]", created_at=when))
    out = _text(
        render_timeline(
            [StoredMessage("s", i, m, 3) for i, m in enumerate(messages)],
            title="s",
            namespaces={"big-1": NamespaceInfo("big-1", bytes=3 * 1024, tokens=700)},
            max_chars=100,
        )
    )
    assert "#0    03:04:05 SYSTEM  3 tokens" in out
    assert "[image] Image (png, 7x5 pixels" in out
    assert 'calls lookup({"q": "</pre><script>x</script>"})  id c/1' in out
    assert "← result of lookup (c/1)" in out
    assert "stored off-prompt: big-1 (3.0 KiB, 700 tokens) from Lookup.search" in out
    assert "[binary] application/pdf, 2 bytes" in out
    assert f"[{FOLD_CHARS + 10 - 100:,} characters not shown]" in out
    assert "[red]not red[/red] and [link=x]y[/link]" in out


def test_timeline_of_nothing() -> None:
    assert "(no messages)" in _text(render_timeline([]))


def test_timeline_accepts_plain_messages() -> None:
    out = _text(render_timeline([Message.user(TextArtifact(value="plain"))]))
    assert "USER" in out and "plain" in out
