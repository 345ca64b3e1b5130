"""``query``, ``read``, ``inspect`` and ``show`` against a real task memory in the home
(``HOME/qdrant``, embedded Qdrant), end to end in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from cli.cli_helpers import one_error_line

from offprompt.artifacts import TextArtifact
from offprompt.messages import Message, ToolCall
from offprompt.task_memory import TaskMemory

NEEDLE = "The vault access code is 7-4-1-9-ZEBRA."


def _document() -> str:
    paragraphs = [
        f"Section {i}: quarterly figures for region {i % 7} were stable; shipping volume {i * 13} units."
        for i in range(1500)
    ]
    paragraphs.insert(900, NEEDLE)
    return "\n".join(paragraphs)


def _fill_home(home: Path, tmp_path: Path) -> tuple[str, int]:
    document = _document()
    memory = TaskMemory(path=home / "qdrant")
    try:
        info = memory.process_output(
            "FileReader", "read_report", TextArtifact(value=document, name="report-q3")
        )
    finally:
        memory.vector_store.close()
    session = [
        Message.user("What is the vault code?"),
        Message.assistant(tool_calls=[ToolCall(id="c1", name="read_report", arguments={})]),
        Message.tool(info.value, tool_call_id="c1", name="read_report"),
        Message.assistant("7-4-1-9-ZEBRA"),
    ]
    lines = tmp_path / "vault.jsonl"
    lines.write_text("".join(m.to_json() + "\n" for m in session), encoding="utf-8")
    return str(lines), len(document.encode())


def test_query_read_inspect_and_show_sizes(cli, home: Path, tmp_path: Path) -> None:
    session_file, size = _fill_home(home, tmp_path)

    found = cli("query", "report-q3", "vault access code", "--top", "3")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("1.") and NEEDLE in found.stdout.split("\n2.")[0]

    page = cli("read", "report-q3", "--page", "1")
    assert page.returncode == 0, page.stderr
    assert page.stdout.startswith("Section 0: quarterly figures")
    # Where the page is, in the lines read_memory and read --lines count.
    shown = page.stdout.count("\n") - 1  # (print ends the page with one more)
    assert "page 1 of " in page.stderr and f"(lines 1-{shown:,} of " in page.stderr
    too_far = cli("read", "report-q3", "--page", "999")
    assert too_far.returncode == 1
    assert "page must be between 1 and" in one_error_line(too_far)

    assert cli("import", "--format", "offprompt", session_file).returncode == 0
    listing = json.loads(cli("inspect", "--json").stdout)
    (row,) = listing["namespaces"]
    assert (row["namespace"], row["tool"], row["activity"], row["bytes"]) == (
        "report-q3",
        "FileReader",
        "read_report",
        size,
    )
    assert row["tokens"] > 10_000
    assert listing["sessions"][0]["session"] == "vault"
    table = cli("inspect")  # sizes in powers of 1024, so labelled KiB/MiB, not KB/MB
    assert table.returncode == 0, table.stderr
    assert f"{size / 1024:.1f} KiB" in table.stdout and " KB" not in table.stdout

    shown = cli("show", "vault")
    assert shown.returncode == 0, shown.stderr
    assert (
        f"stored off-prompt: report-q3 ({size / 1024:.1f} KiB, {row['tokens']:,} tokens) from FileReader.read_report"
        in shown.stdout
    )


def test_inspect_namespace_prints_the_card(cli, home: Path, tmp_path: Path) -> None:
    _, size = _fill_home(home, tmp_path)
    card = cli("inspect", "report-q3")
    assert card.returncode == 0, card.stderr
    assert card.stdout.startswith("[stored output] kind: text")
    assert f"{size:,} bytes" in card.stdout and "1,501 lines" in card.stdout
    assert '1: "Section 0: quarterly figures' in card.stdout
    stats = json.loads(cli("inspect", "report-q3", "--json").stdout)
    assert stats["lines"] == 1501 and stats["kind"] == "text"
    missing = cli("inspect", "nope")
    assert missing.returncode == 1 and "unknown namespace 'nope'" in one_error_line(missing)
