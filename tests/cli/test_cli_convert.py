"""``offprompt import`` / ``export`` / ``migrate`` end to end in a subprocess, on files the
real frameworks write (more cases run in-process in ``test_cli_main.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from cli.cli_helpers import write_langchain


def test_langchain_file_imports_shows_and_exports_back_equal(cli, tmp_path: Path) -> None:
    from langchain_core.messages import messages_from_dict, messages_to_dict

    source = tmp_path / "chat.json"
    original = write_langchain(source)

    done = cli("import", "--format", "langchain", str(source))
    assert done.returncode == 0, done.stderr
    assert "imported 5 messages" in done.stdout and "session 'chat'" in done.stdout
    assert "nothing lost" in done.stdout

    shown = cli("show", "chat")
    assert shown.returncode == 0, shown.stderr
    for text in (
        "Weather in Zürich? 🌦 <b>now</b>",
        "calls weather",
        '"city": "Zürich"',
        "rain, 12°C",
        "← result of weather (call_1)",
    ):
        assert text in shown.stdout

    out = tmp_path / "out" / "back.json"
    out.parent.mkdir()
    exported = cli("export", "chat", "--format", "langchain", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "nothing lost" in exported.stdout
    back = messages_from_dict(json.loads(out.read_text(encoding="utf-8")))
    assert messages_to_dict(back) == messages_to_dict(original)
    assert [p.name for p in out.parent.iterdir()] == ["back.json"]  # no temp file left


def test_migrate_reports_what_griptape_cannot_carry(cli, tmp_path: Path) -> None:
    import griptape.memory.structure as gms

    source = tmp_path / "chat.json"
    write_langchain(source)
    out = tmp_path / "memory.json"
    done = cli("migrate", "--from", "langchain", "--to", "griptape", str(source), str(out))
    assert done.returncode == 0, done.stderr
    assert "system message not carried" in done.stdout
    assert "tool_calls not carried" in done.stdout
    assert "tool result not carried" in done.stdout
    memory = gms.ConversationMemory.from_json(out.read_text(encoding="utf-8"))
    assert [(r.input.value, r.output.value) for r in memory.runs] == [
        ("Weather in Zürich? 🌦 <b>now</b>", "Rainy, 12°C.")
    ]
