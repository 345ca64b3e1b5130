"""A /memories tree written before offprompt.files.FileTree reads the same through it.

The fixture (tests/fixtures/file_tree_v1.json) holds the state entries and the view
answers of the memory tool as it was before the file tree (commit ee0995f).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create
from anthropic.types.beta import BetaMemoryTool20250818ViewCommand as View
from offprompt_anthropic import MEMORY_SESSION, OffpromptMemoryTool

from offprompt.stores import InMemoryStore, SQLiteStore

FIXTURE = Path(__file__).parents[3] / "tests" / "fixtures" / "file_tree_v1.json"


def test_a_tree_written_by_the_old_code_gives_the_same_answers(tmp_path: Path) -> None:
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert fixture["session"] == MEMORY_SESSION
    db = tmp_path / "old.db"
    with SQLiteStore(db) as store:
        for entry in fixture["entries"]:  # the old layout, written as the old code wrote it
            store.set_state(MEMORY_SESSION, entry["key"], entry["value"])
    tool = OffpromptMemoryTool(path=db)
    try:
        for command, answer in fixture["views"].items():
            path, view_range = json.loads(command)
            shown = tool.view(View(command="view", path=path, view_range=view_range))
            assert shown == answer, command
        assert tool.files.files() == {
            f"/memories/{e['key']}": e["value"]["text"] for e in fixture["entries"]
        }
    finally:
        tool.close()


def test_the_file_trees_one_rule_refuses_control_characters_and_backslashes() -> None:
    """The rule the deepagents backend always had; before it, the memory tool let them in."""
    tool = OffpromptMemoryTool(store=InMemoryStore())
    for path, why in [
        ("/memories/a\tb.md", "it contains the control character '\\t'"),
        ("/memories/a\u2028b.md", "it contains the control character '\\u2028'"),
        ("/memories/a\\b.md", "it contains a backslash"),
    ]:
        with pytest.raises(ToolError) as caught:
            tool.create(Create(command="create", path=path, file_text="x"))
        assert str(caught.value) == f"Path {path} is not allowed: {why}"
    assert tool.files.files() == {}
