"""Claude's memory tool (``memory_20250818``) on offprompt storage.

Claude asks the client to ``view``, ``create``, ``str_replace``, ``insert``, ``delete``
and ``rename`` files under ``/memories``. The Anthropic SDK's reference implementation
keeps them as files in a local directory; :class:`OffpromptMemoryTool` keeps them in an
offprompt conversation store instead, so the tree is

* durable: a SQLite file by default, or any store (``PostgresStore`` for several hosts);
* scoped: ``scope=Scope(tenant=..., user=...)`` gives each user a tree of their own,
  and no path can reach another scope's files;
* forgettable: :func:`offprompt.forget.forget` with that scope deletes the tree.

Layout: the tree is an offprompt :class:`~offprompt.files.FileTree` (the one the
deepagents backend shares its path rule with): every file is one JSON state entry
``{"text": ...}`` of the reserved session :data:`MEMORY_SESSION`, keyed by its path
below ``/memories`` (``notes/todo.md``).
Directories are implied by the files under them (an empty directory does not exist).
Every change runs in one store transaction (``BaseStore.transaction``): on SQLite (the
default) two agents editing the same file never lose an update and a process killed
mid-rename leaves the old tree or the new one. ``PostgresStore`` has no such
transaction yet: there each command's writes are atomic one by one, and two hosts
editing the same file at the same moment can lose one of the two edits.

The commands' texts and errors are the SDK reference implementation's
(``BetaLocalFilesystemMemoryTool``), so a model sees the same tool either way. Path
rules are stricter: a path is ``/memories`` or starts with ``/memories/``; ``.`` and
``..`` segments are resolved, and one that would climb above ``/memories`` is refused;
then the file tree's one path rule applies: NUL and other control characters, lone
surrogates and backslashes are refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio.to_thread import run_sync

from offprompt.errors import (
    FileConflictError,
    FileEditError,
    FilePathError,
    NotFoundError,
    RangeError,
    StorageError,
    ValidationError,
)
from offprompt.files import FileTree
from offprompt.scope import Scope
from offprompt.stores import BaseStore, open_store, release_store

__all__ = [
    "MEMORY_SESSION",
    "ROOT",
    "AsyncOffpromptMemoryTool",
    "MemoryFiles",
    "OffpromptMemoryTool",
]

#: The reserved session whose state holds the memory files.
MEMORY_SESSION = "offprompt.claude-memories"
#: The one directory Claude's memory tool may touch.
ROOT = "/memories"
MAX_LINES = 999_999
_LINE_NUMBER_WIDTH = len(str(MAX_LINES))
_VIEW_DEPTH = 2

T = TypeVar("T")


def _format_size(size: int) -> str:
    """``0B``, ``13B``, ``4.0K``, ``1.5M``: the reference implementation's sizes."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(i + first).rjust(_LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)
    )


def relative_path(path: object) -> str:
    """The key of ``path`` below ``/memories`` (``""`` for ``/memories`` itself).

    Raises:
        ToolError: ``path`` is not a string, does not start with ``/memories``, holds a
            NUL or a lone surrogate, or climbs above ``/memories``.
    """
    if not isinstance(path, str):
        raise ToolError(f"Path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise ToolError("Path must not contain a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("Path must be valid Unicode (it holds a lone surrogate)") from None
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise ToolError(f"Path must start with /memories, got: {path}")
    parts: list[str] = []
    for part in path[len(ROOT) :].split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ToolError(f"Path {path} would escape /memories directory")
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


class MemoryFiles:
    """The ``/memories`` tree of one scope in a store: what both tools run on.

    The files are an offprompt :class:`~offprompt.files.FileTree` (session
    :data:`MEMORY_SESSION`); this class resolves the SDK's paths onto it and words its
    results and errors as the SDK's reference implementation does.

    Args:
        store: Where the files live.
        scope: The partition (``Scope(user="u1")``); the store's default partition when
            ``None``.

    Attributes:
        store: The store.
        scope: The partition, or None.
        tree: The file tree itself (paths below ``/memories`` as ``/notes/todo.md``).
    """

    def __init__(self, store: BaseStore, scope: Scope | None = None) -> None:
        self.store = store
        self.scope = scope
        self.tree = FileTree(store, MEMORY_SESSION, scope=scope)

    # ------------------------------------------------------------------ commands

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        """A directory listing (two levels deep) or a file's numbered lines."""
        key = relative_path(path)
        with _worded(path):
            if key and self.tree.is_file("/" + key):
                return self._numbered_file(path, key, view_range)
            files = self.tree.sizes("/" + key)
        if key and not files:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return self._listing(path, key, files)

    def _numbered_file(self, path: str, key: str, view_range: list[int] | None) -> str:
        whole = self.tree.read("/" + key)
        if whole.total_lines > MAX_LINES:
            raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
        lines, first = list(whole.lines), 1
        if view_range and len(view_range) == 2:
            start = max(1, view_range[0]) - 1
            end = len(lines) if view_range[1] == -1 else view_range[1]
            lines, first = lines[start:end], start + 1
        return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, first)

    def _listing(self, path: str, key: str, files: dict[str, int]) -> str:
        base = len(key) + 2 if key else 1  # "/" + key + "/"
        sizes: dict[str, int] = {}  # relative entry ("a", "a/b.txt") -> bytes below it
        dirs: set[str] = set()
        total = 0
        for file, size in files.items():
            total += size
            parts = file[base:].split("/")
            if any(part.startswith(".") for part in parts[:_VIEW_DEPTH]):
                continue  # hidden items are left out, as the reference does
            for depth in range(1, min(len(parts), _VIEW_DEPTH) + 1):
                entry = "/".join(parts[:depth])
                sizes[entry] = sizes.get(entry, 0) + size
                if depth < len(parts):
                    dirs.add(entry)

        def walk(prefix: str) -> Iterator[str]:
            depth = prefix.count("/") + 2 if prefix else 1  # the depth of prefix's children
            names = sorted(
                {
                    e
                    for e in sizes
                    if e.count("/") == depth - 1 and (not prefix or e.startswith(prefix + "/"))
                }
            )
            for entry in names:
                shown = f"{entry}/" if entry in dirs else entry
                yield f"{_format_size(sizes[entry])}\t{path.rstrip('/')}/{shown}"
                if entry in dirs and depth < _VIEW_DEPTH:
                    yield from walk(entry)

        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        return "\n".join([header, f"{_format_size(total)}\t{path}", *walk("")])

    def create(self, path: str, file_text: str) -> str:
        """A new file; an existing file or directory at ``path`` is an error."""
        key = relative_path(path)
        if key == "":
            raise ToolError("Cannot create the /memories directory itself")
        with _worded(path, creating=True):
            self.tree.write("/" + key, file_text, create=True)
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace the one occurrence of ``old_str``; none or several is an error."""
        key = relative_path(path)
        if key == "":
            raise ToolError(f"The path {path} is not a file.")
        with _worded(path):
            try:
                edited = self.tree.str_replace("/" + key, old_str, new_str)
            except FileEditError as exc:
                if exc.context["occurrences"] == 0:
                    raise ToolError(
                        f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
                    ) from None
                raise ToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{', '.join(map(str, exc.context['lines']))}. Please ensure it is unique"
                ) from None
        new_lines = edited.text.split("\n")
        first, last = max(0, edited.line - 2), min(len(new_lines), edited.line + 3)
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + _numbered(new_lines[first:last], first + 1)
        )

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """Insert ``insert_text`` as a line after line ``insert_line`` (0: at the top)."""
        key = relative_path(path)
        if key == "":
            raise ToolError(f"The path {path} is not a file.")
        with _worded(path):
            try:
                self.tree.insert("/" + key, insert_line, insert_text)
            except RangeError as exc:
                raise ToolError(
                    f"Invalid `insert_line` parameter: {insert_line}. "
                    f"It should be within the range [0, {exc.context['lines']}]."
                ) from None
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        """Delete a file, or a directory with everything below it."""
        key = relative_path(path)
        if key == "":
            raise ToolError("Cannot delete the /memories directory itself")
        with _worded(path):
            try:
                self.tree.delete("/" + key)
            except NotFoundError:
                raise ToolError(f"The path {path} does not exist") from None
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        """Move a file or a directory; the destination must not exist."""
        old, new = relative_path(old_path), relative_path(new_path)
        if old == "":
            raise ToolError("Cannot rename the /memories directory itself")
        if new == "":
            raise ToolError(f"The destination {new_path} already exists")
        with _worded(new_path, creating=True):
            try:
                self.tree.rename("/" + old, "/" + new)
            except NotFoundError:
                raise ToolError(f"The path {old_path} does not exist") from None
            except FileConflictError as exc:
                if exc.context["reason"] == "exists":
                    raise ToolError(f"The destination {new_path} already exists") from None
                if exc.context["reason"] == "into_itself":
                    raise ToolError(f"Cannot move {old_path} into itself ({new_path})") from None
                raise
        return f"Successfully renamed {old_path} to {new_path}"

    def clear(self) -> str:
        """Delete every file of this scope's tree."""
        self.tree.clear()
        return "All memory cleared"

    def files(self) -> dict[str, str]:
        """Every file as ``{"/memories/path": text}`` (for inspection and tests)."""
        with _worded(ROOT):
            return {ROOT + path: text for path, text in self.tree.files().items()}


@contextmanager
def _worded(path: str, *, creating: bool = False) -> Iterator[None]:
    """The file tree's errors as the SDK reference implementation words them.

    ``path`` is the path the model gave; ``creating`` says a file is to be made there
    (so a directory in the way is worded as in ``create``).
    """
    try:
        yield
    except FileConflictError as exc:
        reason = exc.context["reason"]
        if reason == "exists":
            raise ToolError(f"File {path} already exists") from None
        if reason == "parent_is_file":
            raise ToolError(
                f"Cannot create {path}: {ROOT}{exc.context['parent']} is a file, not a directory"
            ) from None
        if creating:
            raise ToolError(f"Cannot create {path}: it is a directory") from None
        raise ToolError(f"The path {path} is not a file.") from None
    except FilePathError as exc:
        raise ToolError(f"Path {path} is not allowed: {exc.context['why']}") from None
    except NotFoundError:
        raise ToolError(f"The path {path} does not exist. Please provide a valid path.") from None
    except StorageError as exc:
        damaged = exc.context.get("path")
        if damaged is None:
            raise
        raise ToolError(f"The memory file {ROOT}{damaged} is damaged (not a text entry)") from None
    except ValidationError as exc:
        if exc.context.get("field") in ("text", "new"):
            raise ToolError("File text must be valid Unicode (it holds a lone surrogate)") from None
        raise


class _Owner:
    """What both tools share: the files, and closing the store they opened."""

    files: MemoryFiles
    _owned: bool

    def __init__(
        self,
        *,
        path: str | os.PathLike[str] | None = None,
        store: BaseStore | None = None,
        scope: Scope | None = None,
        cache_control: Any = None,
    ) -> None:
        # the SDK's sync or async base, next in the MRO of both tools
        super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        # A store opened here from ``path`` is released by close(); a given one is not.
        self._owned = store is None
        self.files = MemoryFiles(open_store(store, path=path), scope)

    def close(self) -> None:
        """Release the store if this tool opened it from ``path`` (a given store stays open)."""
        if self._owned:
            self._owned = False
            release_store(self.files.store)


class OffpromptMemoryTool(_Owner, BetaAbstractMemoryTool):
    """Claude's memory tool whose ``/memories`` tree is offprompt storage.

    Pass it to ``client.beta.messages.tool_runner(tools=[OffpromptMemoryTool()], ...)``
    as you would the SDK's ``BetaLocalFilesystemMemoryTool``.

    Args:
        path: A SQLite file (offprompt's default file when neither ``path`` nor
            ``store`` is given).
        store: Any offprompt store (``SQLiteStore``, ``PostgresStore``, ...); the caller
            keeps owning it.
        scope: The user's (or tenant's) partition; ``forget(scope)`` deletes its tree.
        cache_control: Passed to the SDK's tool definition.

    Example:
        >>> import tempfile, pathlib
        >>> from offprompt.scope import Scope
        >>> from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create
        >>> db = pathlib.Path(tempfile.mkdtemp()) / "memory.db"
        >>> tool = OffpromptMemoryTool(path=db, scope=Scope(user="ada"))
        >>> tool.create(Create(command="create", path="/memories/likes.md", file_text="tea"))
        'File created successfully at: /memories/likes.md'
        >>> tool.files.files()
        {'/memories/likes.md': 'tea'}
        >>> tool.close()
    """

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A directory listing or a file's numbered lines."""
        return self.files.view(command.path, command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Create a file."""
        return self.files.create(command.path, command.file_text)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace a unique string in a file."""
        return self.files.str_replace(command.path, command.old_str, command.new_str)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert a line into a file."""
        return self.files.insert(command.path, command.insert_line, command.insert_text)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Delete a file or directory."""
        return self.files.delete(command.path)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Rename or move a file or directory."""
        return self.files.rename(command.old_path, command.new_path)

    def clear_all_memory(self) -> str:
        """Delete every file of this tool's scope."""
        return self.files.clear()


class AsyncOffpromptMemoryTool(_Owner, BetaAsyncAbstractMemoryTool):
    """The async twin of :class:`OffpromptMemoryTool`: store calls run in a worker
    thread, so the event loop never blocks on disk or network. Same arguments."""

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await run_sync(fn, *args)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.view`."""
        return await self._run(self.files.view, command.path, command.view_range)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.create`."""
        return await self._run(self.files.create, command.path, command.file_text)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.str_replace`."""
        return await self._run(
            self.files.str_replace, command.path, command.old_str, command.new_str
        )

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.insert`."""
        return await self._run(
            self.files.insert, command.path, command.insert_line, command.insert_text
        )

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.delete`."""
        return await self._run(self.files.delete, command.path)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.rename`."""
        return await self._run(self.files.rename, command.old_path, command.new_path)

    async def clear_all_memory(self) -> str:
        """Async twin of :meth:`OffpromptMemoryTool.clear_all_memory`."""
        return await self._run(self.files.clear)
