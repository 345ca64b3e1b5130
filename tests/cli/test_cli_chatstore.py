"""LlamaIndex chat-store files through ``offprompt import`` / ``export`` / ``migrate`` in a
subprocess, on files made from real LlamaIndex messages (more cases run in-process in ``test_cli_main.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from cli.cli_helpers import one_error_line, write_chatstore


def test_chatstore_with_two_sessions_imports_both_and_exports_one(cli, tmp_path: Path) -> None:
    from llama_index.core.storage.chat_store import SimpleChatStore

    source = tmp_path / "chat_store.json"
    write_chatstore(source)
    done = cli("import", "--format", "llamaindex-chatstore", str(source))
    assert done.returncode == 0, done.stderr
    assert "into session 'alice'" in done.stdout and "into session 'bob'" in done.stdout

    listing = cli("inspect", "--json")
    assert listing.returncode == 0, listing.stderr
    sessions = {row["session"]: row for row in json.loads(listing.stdout)["sessions"]}
    assert sessions["alice"]["messages"] == 2 and sessions["bob"]["messages"] == 4
    assert sessions["bob"]["tokens"] > sessions["alice"]["tokens"] > 0

    out = tmp_path / "bob.json"
    assert cli("export", "bob", "--format", "llamaindex-chatstore", str(out)).returncode == 0
    loaded = SimpleChatStore.from_persist_path(str(out))
    assert loaded.get_keys() == ["bob"]
    bob = loaded.get_messages("bob")
    assert [m.role.value for m in bob] == ["user", "assistant", "user", "assistant"]
    assert type(bob[0].blocks[1]).__name__ == "ImageBlock"
    assert bob[1].content == "A blue rectangle."


def test_migrate_from_several_sessions_to_one_session_format(cli, tmp_path: Path) -> None:
    from llama_index.core.base.llms.types import ChatMessage

    source = tmp_path / "chat_store.json"
    write_chatstore(source)
    out = tmp_path / "alice.json"
    refused = cli(
        "migrate", "--from", "llamaindex-chatstore", "--to", "llamaindex", str(source), str(out)
    )
    assert refused.returncode == 1
    assert "holds 2 sessions ('alice', 'bob')" in one_error_line(refused)
    assert not out.exists()

    picked = cli(
        "migrate",
        "--from",
        "llamaindex-chatstore",
        "--to",
        "llamaindex",
        str(source),
        str(out),
        "--session",
        "alice",
    )
    assert picked.returncode == 0, picked.stderr
    messages = [ChatMessage.model_validate(d) for d in json.loads(out.read_text(encoding="utf-8"))]
    assert [m.content for m in messages] == ["Hi, I am Alice.", "Hello Alice!"]
