"""The Anthropic SDK's tests of its reference memory tool, run against OffpromptMemoryTool.

Ported from anthropic-sdk-python ``tests/lib/tools/memory_tools/test_filesystem.py``
(``TestBetaLocalFilesystemMemoryTool`` and its async twin) with only the class under
test swapped: the same commands, the same expected texts and errors. A snapshot of the
tree is read from the store (``tool.files.files()``) instead of walking a directory.

Not ported, because they test the local filesystem rather than the tool's contract:
directory modes under a permissive umask, symlinks escaping the root, non-UTF-8 bytes
on disk and CRLF bytes written behind the tool's back (the CRLF behaviour itself is
tested below through the tool). Each store parameter runs every test: a SQLite file,
the in-memory store and a throwaway PostgreSQL server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand as Create,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818DeleteCommand as Delete,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818InsertCommand as Insert,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818RenameCommand as Rename,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818StrReplaceCommand as StrReplace,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818ViewCommand as View,
)
from offprompt_anthropic import AsyncOffpromptMemoryTool, OffpromptMemoryTool

from offprompt.stores import BaseStore, InMemoryStore, SQLiteStore


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[BaseStore]:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        made: BaseStore = SQLiteStore(tmp_path / "memory.db")
    elif request.param == "memory":
        made = InMemoryStore()
    else:
        from offprompt.stores import PostgresStore

        made = PostgresStore(request.getfixturevalue("postgres_dsn"))
    with made:
        yield made


@pytest.fixture
def tool(store: BaseStore) -> OffpromptMemoryTool:
    return OffpromptMemoryTool(store=store)


@pytest.fixture
def atool(store: BaseStore) -> AsyncOffpromptMemoryTool:
    return AsyncOffpromptMemoryTool(store=store)


def snapshot(tool: OffpromptMemoryTool | AsyncOffpromptMemoryTool) -> dict[str, str]:
    return {path.lstrip("/"): text for path, text in tool.files.files().items()}


class TestOffpromptMemoryTool:
    def test_create(self, tool: OffpromptMemoryTool) -> None:
        result = tool.create(
            Create(command="create", file_text="Hello, World!", path="/memories/test_file.txt")
        )
        assert result == "File created successfully at: /memories/test_file.txt"
        assert snapshot(tool) == {"memories/test_file.txt": "Hello, World!"}

    def test_create_nested_directories(self, tool: OffpromptMemoryTool) -> None:
        result = tool.create(
            Create(command="create", file_text="Nested file", path="/memories/deep/nested/file.txt")
        )
        assert result == "File created successfully at: /memories/deep/nested/file.txt"
        assert snapshot(tool) == {"memories/deep/nested/file.txt": "Nested file"}

    def test_create_error_if_file_already_exists(self, tool: OffpromptMemoryTool) -> None:
        tool.create(Create(command="create", file_text="Original", path="/memories/existing.txt"))
        with pytest.raises(ToolError, match="File /memories/existing.txt already exists"):
            tool.create(Create(command="create", file_text="New", path="/memories/existing.txt"))
        assert snapshot(tool) == {"memories/existing.txt": "Original"}

    def test_view_file(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create", file_text="Line 1\nLine 2\nLine 3", path="/memories/view_test.txt"
            )
        )
        result = tool.view(View(command="view", path="/memories/view_test.txt"))
        assert (
            result
            == "Here's the content of /memories/view_test.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
        )

    def test_view_directory(self, tool: OffpromptMemoryTool) -> None:
        tool.create(Create(command="create", file_text="File 1", path="/memories/dir/file1.txt"))
        tool.create(Create(command="create", file_text="File 2", path="/memories/dir/file2.txt"))
        result = tool.view(View(command="view", path="/memories/dir"))
        assert "Here're the files and directories up to 2 levels deep in /memories/dir" in result
        assert "/memories/dir" in result
        assert "/memories/dir/file1.txt" in result
        assert "/memories/dir/file2.txt" in result

    def test_view_file_with_range(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create",
                file_text="Line 1\nLine 2\nLine 3\nLine 4\nLine 5",
                path="/memories/range_test.txt",
            )
        )
        result = tool.view(View(command="view", path="/memories/range_test.txt", view_range=[2, 4]))
        assert (
            result
            == "Here's the content of /memories/range_test.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
        )

    def test_view_error_for_non_existent_file(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(
            ToolError,
            match="The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
        ):
            tool.view(View(command="view", path="/memories/nonexistent.txt"))

    def test_view_error_for_files_with_too_many_lines(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create", file_text="\n".join(["line"] * 1000000), path="/memories/huge.txt"
            )
        )
        with pytest.raises(ToolError, match=r"exceeds maximum line limit of 999,999 lines"):
            tool.view(View(command="view", path="/memories/huge.txt"))

    def test_str_replace(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create",
                file_text="Line 1\nOld Text\nLine 3",
                path="/memories/replace_test.txt",
            )
        )
        result = tool.str_replace(
            StrReplace(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="Old Text",
                new_str="New Text",
            )
        )
        assert (
            result
            == "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3"
        )
        assert snapshot(tool) == {"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"}

    def test_str_replace_error_when_string_not_found(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Hello, World!", path="/memories/replace_test.txt")
        )
        with pytest.raises(
            ToolError,
            match="No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/replace_test.txt.",
        ):
            tool.str_replace(
                StrReplace(
                    command="str_replace",
                    path="/memories/replace_test.txt",
                    old_str="NotFound",
                    new_str="Python",
                )
            )

    def test_str_replace_error_when_string_appears_multiple_times(
        self, tool: OffpromptMemoryTool
    ) -> None:
        tool.create(
            Create(
                command="create",
                file_text="Hello\nMiddle\nHello",
                path="/memories/replace_test.txt",
            )
        )
        with pytest.raises(
            ToolError,
            match=r"No replacement was performed\. Multiple occurrences of old_str `Hello` in lines: 1, 3\. Please ensure it is unique",
        ):
            tool.str_replace(
                StrReplace(
                    command="str_replace",
                    path="/memories/replace_test.txt",
                    old_str="Hello",
                    new_str="Hi",
                )
            )
        assert snapshot(tool) == {"memories/replace_test.txt": "Hello\nMiddle\nHello"}

    def test_str_replace_error_for_non_existent_file(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(
            ToolError,
            match="The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
        ):
            tool.str_replace(
                StrReplace(
                    command="str_replace",
                    path="/memories/nonexistent.txt",
                    old_str="old",
                    new_str="new",
                )
            )

    def test_insert(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt")
        )
        result = tool.insert(
            Insert(
                command="insert",
                path="/memories/insert_test.txt",
                insert_line=1,
                insert_text="Inserted Line",
            )
        )
        assert result == "The file /memories/insert_test.txt has been edited."
        assert snapshot(tool) == {"memories/insert_test.txt": "Line 1\nInserted Line\nLine 2\n"}

    def test_insert_at_beginning_of_file(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt")
        )
        tool.insert(
            Insert(
                command="insert",
                path="/memories/insert_test.txt",
                insert_line=0,
                insert_text="First Line",
            )
        )
        assert snapshot(tool) == {"memories/insert_test.txt": "First Line\nLine 1\nLine 2\n"}

    def test_insert_at_end_of_file(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt")
        )
        tool.insert(
            Insert(
                command="insert",
                path="/memories/insert_test.txt",
                insert_line=2,
                insert_text="Last Line",
            )
        )
        assert snapshot(tool) == {"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"}

    def test_view_preserves_crlf_line_endings(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create", file_text="line1\r\nline2\r\nline3\r\n", path="/memories/crlf.txt"
            )
        )
        result = tool.view(View(command="view", path="/memories/crlf.txt"))
        assert (
            result
            == "Here's the content of /memories/crlf.txt with line numbers:\n     1\tline1\r\n     2\tline2\r\n     3\tline3\r\n     4\t"
        )

    def test_str_replace_preserves_crlf_line_endings(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create", file_text="line1\r\nline2\r\nline3\r\n", path="/memories/crlf.txt"
            )
        )
        tool.str_replace(
            StrReplace(
                command="str_replace", path="/memories/crlf.txt", old_str="line2", new_str="LINE2"
            )
        )
        assert snapshot(tool) == {"memories/crlf.txt": "line1\r\nLINE2\r\nline3\r\n"}

    def test_insert_preserves_crlf_line_endings(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(
                command="create", file_text="line1\r\nline2\r\nline3\r\n", path="/memories/crlf.txt"
            )
        )
        tool.insert(
            Insert(
                command="insert", path="/memories/crlf.txt", insert_line=1, insert_text="Inserted"
            )
        )
        assert snapshot(tool) == {"memories/crlf.txt": "line1\r\nInserted\nline2\r\nline3\r\n"}

    def test_insert_error_for_non_existent_file(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(
            ToolError,
            match="The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
        ):
            tool.insert(
                Insert(
                    command="insert",
                    path="/memories/nonexistent.txt",
                    insert_line=0,
                    insert_text="text",
                )
            )

    def test_insert_error_for_invalid_insert_line(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt")
        )
        with pytest.raises(
            ToolError,
            match=r"Invalid `insert_line` parameter: 10. It should be within the range \[0, 2\]",
        ):
            tool.insert(
                Insert(
                    command="insert",
                    path="/memories/insert_test.txt",
                    insert_line=10,
                    insert_text="text",
                )
            )

    def test_delete(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="To be deleted", path="/memories/delete_me.txt")
        )
        assert (
            tool.delete(Delete(command="delete", path="/memories/delete_me.txt"))
            == "Successfully deleted /memories/delete_me.txt"
        )
        assert snapshot(tool) == {}

    def test_delete_directory(self, tool: OffpromptMemoryTool) -> None:
        tool.create(Create(command="create", file_text="Content", path="/memories/subdir/file.txt"))
        assert (
            tool.delete(Delete(command="delete", path="/memories/subdir"))
            == "Successfully deleted /memories/subdir"
        )
        assert snapshot(tool) == {}

    def test_delete_error_when_file_not_found(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
            tool.delete(Delete(command="delete", path="/memories/nonexistent.txt"))

    def test_delete_not_allow_deleting_memories_directory(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
            tool.delete(Delete(command="delete", path="/memories"))

    def test_rename(self, tool: OffpromptMemoryTool) -> None:
        tool.create(
            Create(command="create", file_text="Original content", path="/memories/old_name.txt")
        )
        result = tool.rename(
            Rename(
                command="rename",
                old_path="/memories/old_name.txt",
                new_path="/memories/new_name.txt",
            )
        )
        assert result == "Successfully renamed /memories/old_name.txt to /memories/new_name.txt"
        assert snapshot(tool) == {"memories/new_name.txt": "Original content"}

    def test_rename_to_nested_path(self, tool: OffpromptMemoryTool) -> None:
        tool.create(Create(command="create", file_text="Content", path="/memories/file.txt"))
        result = tool.rename(
            Rename(
                command="rename",
                old_path="/memories/file.txt",
                new_path="/memories/nested/dir/file.txt",
            )
        )
        assert result == "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"
        assert snapshot(tool) == {"memories/nested/dir/file.txt": "Content"}

    def test_rename_error_when_source_not_found(self, tool: OffpromptMemoryTool) -> None:
        with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
            tool.rename(
                Rename(
                    command="rename",
                    old_path="/memories/nonexistent.txt",
                    new_path="/memories/new.txt",
                )
            )

    def test_rename_error_when_destination_exists(self, tool: OffpromptMemoryTool) -> None:
        tool.create(Create(command="create", file_text="File 1", path="/memories/file1.txt"))
        tool.create(Create(command="create", file_text="File 2", path="/memories/file2.txt"))
        with pytest.raises(ToolError, match="The destination /memories/file2.txt already exists"):
            tool.rename(
                Rename(
                    command="rename", old_path="/memories/file1.txt", new_path="/memories/file2.txt"
                )
            )
        assert snapshot(tool) == {"memories/file1.txt": "File 1", "memories/file2.txt": "File 2"}

    def test_path_validation_reject_paths_not_starting_with_memories(
        self, tool: OffpromptMemoryTool
    ) -> None:
        with pytest.raises(ToolError, match="Path must start with /memories"):
            tool.create(Create(command="create", file_text="Invalid", path="/invalid/path.txt"))

    def test_path_validation_reject_paths_trying_to_escape_memories(
        self, tool: OffpromptMemoryTool
    ) -> None:
        with pytest.raises(
            ToolError, match="Path /memories/../../../etc/passwd would escape /memories directory"
        ):
            tool.create(
                Create(
                    command="create",
                    file_text="Escape attempt",
                    path="/memories/../../../etc/passwd",
                )
            )
        assert snapshot(tool) == {}


class TestAsyncOffpromptMemoryTool:
    async def test_create_view_edit_rename_delete(self, atool: AsyncOffpromptMemoryTool) -> None:
        assert await atool.create(
            Create(command="create", file_text="Hello, World!", path="/memories/test_file.txt")
        ) == ("File created successfully at: /memories/test_file.txt")
        with pytest.raises(ToolError, match="File /memories/test_file.txt already exists"):
            await atool.create(
                Create(command="create", file_text="New", path="/memories/test_file.txt")
            )
        assert await atool.view(View(command="view", path="/memories/test_file.txt")) == (
            "Here's the content of /memories/test_file.txt with line numbers:\n     1\tHello, World!"
        )
        await atool.str_replace(
            StrReplace(
                command="str_replace",
                path="/memories/test_file.txt",
                old_str="World",
                new_str="Claude",
            )
        )
        await atool.insert(
            Insert(
                command="insert",
                path="/memories/test_file.txt",
                insert_line=0,
                insert_text="# Greeting",
            )
        )
        assert snapshot(atool) == {"memories/test_file.txt": "# Greeting\nHello, Claude!\n"}
        assert await atool.rename(
            Rename(
                command="rename", old_path="/memories/test_file.txt", new_path="/memories/a/b.txt"
            )
        ) == ("Successfully renamed /memories/test_file.txt to /memories/a/b.txt")
        listing = await atool.view(View(command="view", path="/memories"))
        assert "/memories/a/" in listing and "/memories/a/b.txt" in listing
        assert (
            await atool.delete(Delete(command="delete", path="/memories/a"))
            == "Successfully deleted /memories/a"
        )
        assert snapshot(atool) == {}

    async def test_errors_are_the_sync_tool_errors(self, atool: AsyncOffpromptMemoryTool) -> None:
        with pytest.raises(
            ToolError,
            match="The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
        ):
            await atool.view(View(command="view", path="/memories/nonexistent.txt"))
        with pytest.raises(
            ToolError, match="Path /memories/../../../etc/passwd would escape /memories directory"
        ):
            await atool.create(
                Create(command="create", file_text="x", path="/memories/../../../etc/passwd")
            )
        with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
            await atool.delete(Delete(command="delete", path="/memories"))

    async def test_clear_all_memory(self, atool: AsyncOffpromptMemoryTool) -> None:
        await atool.create(Create(command="create", file_text="x", path="/memories/a.txt"))
        await atool.create(Create(command="create", file_text="y", path="/memories/d/b.txt"))
        assert await atool.clear_all_memory() == "All memory cleared"
        assert snapshot(atool) == {}
