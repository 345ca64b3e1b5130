"""What OffpromptMemoryTool adds to the reference tool: durable, scoped, forgettable,
safe under hostile paths and concurrent writers; and a real tool-runner loop."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create
from anthropic.types.beta import BetaMemoryTool20250818InsertCommand as Insert
from anthropic.types.beta import BetaMemoryTool20250818RenameCommand as Rename
from anthropic.types.beta import BetaMemoryTool20250818ViewCommand as View

from offprompt.forget import forget

try:  # anthropic 2.x speaks httpx2; earlier releases httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]
from offprompt_anthropic import MEMORY_SESSION, MemoryFiles, OffpromptMemoryTool

from offprompt.scope import Scope
from offprompt.stores import InMemoryStore, SQLiteStore


def test_files_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    first = OffpromptMemoryTool(path=db, scope=Scope(user="ada"))
    first.create(Create(command="create", path="/memories/prefs.md", file_text="likes tea\n"))
    first.close()
    again = OffpromptMemoryTool(path=db, scope=Scope(user="ada"))
    assert again.view(View(command="view", path="/memories/prefs.md")).endswith(
        "     1\tlikes tea\n     2\t"
    )
    again.close()


def test_each_scope_has_its_own_tree_and_forget_deletes_only_its_own(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        ada = OffpromptMemoryTool(store=store, scope=Scope(tenant="acme", user="ada"))
        bob = OffpromptMemoryTool(store=store, scope=Scope(tenant="acme", user="bob"))
        ada.create(Create(command="create", path="/memories/notes.md", file_text="ada's secret"))
        bob.create(Create(command="create", path="/memories/notes.md", file_text="bob's note"))
        assert ada.files.files() == {"/memories/notes.md": "ada's secret"}
        assert bob.files.files() == {"/memories/notes.md": "bob's note"}

        report = forget(Scope(user="ada"), stores=[store])
        assert report.complete and report.total == 1, report.lines()
        assert ada.files.files() == {}
        assert bob.files.files() == {"/memories/notes.md": "bob's note"}
        # Nothing of ada's text is left in the database file, not even in free pages.
        store.checkpoint()
        assert b"ada's secret" not in (tmp_path / "m.db").read_bytes()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/memories/../secrets", "would escape /memories directory"),
        ("/memories/a/../../x", "would escape /memories directory"),
        ("/memoriesX/file", "Path must start with /memories"),
        ("memories/file", "Path must start with /memories"),
        ("/etc/passwd", "Path must start with /memories"),
        ("/memories/a\x00b", "NUL"),
        ("/memories/\udcff.txt", "lone surrogate"),
        ("", "Path must start with /memories"),
    ],
)
def test_hostile_paths_are_refused_and_store_nothing(path: str, message: str) -> None:
    files = MemoryFiles(InMemoryStore())
    with pytest.raises(ToolError, match=message):
        files.create(path, "x")
    assert files.files() == {}


def test_dot_segments_resolve_inside_the_root() -> None:
    files = MemoryFiles(InMemoryStore())
    files.create("/memories/a/./b/../c.txt", "x")
    assert files.files() == {"/memories/a/c.txt": "x"}


def test_a_lone_surrogate_in_text_is_refused_and_the_file_is_unchanged() -> None:
    files = MemoryFiles(InMemoryStore())
    files.create("/memories/a.txt", "safe")
    with pytest.raises(ToolError, match="lone surrogate"):
        files.str_replace("/memories/a.txt", "safe", "bad \ud800")
    assert files.files() == {"/memories/a.txt": "safe"}


def test_files_and_directories_do_not_clash() -> None:
    files = MemoryFiles(InMemoryStore())
    files.create("/memories/dir/file.txt", "x")
    with pytest.raises(ToolError, match="is a directory"):
        files.create("/memories/dir", "y")
    with pytest.raises(ToolError, match="is a file, not a directory"):
        files.create("/memories/dir/file.txt/child", "z")
    with pytest.raises(ToolError, match="is not a file"):
        files.str_replace("/memories/dir", "x", "y")
    with pytest.raises(ToolError, match="into itself"):
        files.rename("/memories/dir", "/memories/dir/inner")
    with pytest.raises(ToolError, match="already exists"):
        files.rename("/memories/dir/file.txt", "/memories/dir")
    assert files.files() == {"/memories/dir/file.txt": "x"}


def test_renaming_a_directory_moves_everything_below_it() -> None:
    tool = OffpromptMemoryTool(store=InMemoryStore())
    tool.create(Create(command="create", path="/memories/old/a.txt", file_text="a"))
    tool.create(Create(command="create", path="/memories/old/sub/b.txt", file_text="b"))
    tool.create(Create(command="create", path="/memories/older.txt", file_text="not below old/"))
    tool.rename(Rename(command="rename", old_path="/memories/old", new_path="/memories/new"))
    assert tool.files.files() == {
        "/memories/new/a.txt": "a",
        "/memories/new/sub/b.txt": "b",
        "/memories/older.txt": "not below old/",
    }


def _append_lines(db: str, worker: int, count: int) -> None:
    tool = OffpromptMemoryTool(path=db)
    for i in range(count):
        text = tool.files.files()["/memories/log.md"]
        line = len(text.splitlines())
        tool.insert(
            Insert(
                command="insert",
                path="/memories/log.md",
                insert_line=line,
                insert_text=f"w{worker}-{i}",
            )
        )
    tool.close()


def test_concurrent_writers_in_several_processes_lose_no_update(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    tool = OffpromptMemoryTool(path=db)
    tool.create(Create(command="create", path="/memories/log.md", file_text=""))
    tool.close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_lines, args=(db, w, 20)) for w in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    lines = OffpromptMemoryTool(path=db).files.files()["/memories/log.md"].splitlines()
    # insert_line may be stale when another worker wrote in between (then it lands
    # inside the file), but no worker's line is ever lost or duplicated.
    assert sorted(lines) == sorted(f"w{w}-{i}" for w in range(2) for i in range(20))


def test_the_tree_is_ordinary_offprompt_state() -> None:
    store = InMemoryStore()
    OffpromptMemoryTool(store=store).create(
        Create(command="create", path="/memories/x.md", file_text="hi")
    )
    assert store.state_keys(MEMORY_SESSION) == ["x.md"]
    assert store.get_state(MEMORY_SESSION, "x.md") == {"text": "hi"}


def _scripted_claude(
    replies: list[dict[str, Any]], seen: list[dict[str, Any]]
) -> httpx.MockTransport:
    """The Messages API, scripted (the only fake: no model runs). Records each request."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        reply = replies[len(seen) - 1]
        body = {
            "id": f"msg_{len(seen)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": reply["content"],
            "stop_reason": reply["stop_reason"],
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return httpx.Response(200, json=body)

    return httpx.MockTransport(handler)


def test_a_real_tool_runner_loop_writes_and_reads_offprompt_memory(tmp_path: Path) -> None:
    replies = [
        {
            "stop_reason": "tool_use",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "memory",
                    "input": {
                        "command": "create",
                        "path": "/memories/user.md",
                        "file_text": "Prefers metric units.\n",
                    },
                },
            ],
        },
        {
            "stop_reason": "tool_use",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "memory",
                    "input": {"command": "view", "path": "/memories/user.md"},
                },
                {
                    "type": "tool_use",
                    "id": "t3",
                    "name": "memory",
                    "input": {"command": "view", "path": "/memories/../etc/passwd"},
                },
            ],
        },
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": "Noted."}]},
    ]
    seen: list[dict[str, Any]] = []
    client = Anthropic(
        api_key="test", http_client=httpx.Client(transport=_scripted_claude(replies, seen))
    )
    tool = OffpromptMemoryTool(path=tmp_path / "m.db", scope=Scope(user="ada"))
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=100,
        tools=[tool],
        messages=[{"role": "user", "content": "Remember I like metric units."}],
    )
    final = runner.until_done()
    assert final.content[0].text == "Noted."  # type: ignore[union-attr]
    assert seen[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = {
        block["tool_use_id"]: block
        for message in seen[2]["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    shown = json.dumps(results["t2"]["content"])
    assert "Prefers metric units." in shown
    assert results["t3"].get("is_error") is True
    assert "would escape /memories directory" in json.dumps(results["t3"]["content"])
    assert tool.files.files() == {"/memories/user.md": "Prefers metric units.\n"}
    tool.close()
