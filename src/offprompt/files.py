"""``FileTree``: a tree of text files keyed by POSIX path, over a store's state API.

Claude's memory tool (``offprompt_anthropic``) keeps its ``/memories`` tree here, and
deepagents' backend (``offprompt_langchain``) follows the same path rule, listing and
subtree selection. One rule for every path, checked once by :func:`check_path`:

* a ``str`` that starts with ``/`` (the tree's root);
* no empty, ``.`` or ``..`` segment (adapters that accept such paths, as the
  Anthropic SDK resolves ``..``, resolve them at their edge first);
* no control character (NUL and the other C0/C1 controls, U+2028 and U+2029), no
  lone surrogate, no backslash.

Layout: each file is one JSON state entry ``{"text": ...}`` of one session, keyed by
its path without the leading ``/`` (``notes/todo.md``). Directories are implied by the
files below them: an empty directory does not exist. Every change runs in one store
transaction (``transaction()``): on SQLite two writers in two processes never lose an
update, and a process killed mid-rename leaves the old tree or the new one.

Commands return frozen records and raise :class:`~offprompt.errors.OffpromptError`
subclasses (:class:`~offprompt.errors.FilePathError`,
:class:`~offprompt.errors.FileConflictError`, :class:`~offprompt.errors.FileEditError`,
:class:`~offprompt.errors.NotFoundError`, :class:`~offprompt.errors.RangeError`); each
adapter words them as its framework does.

Example:
    >>> from offprompt.stores import InMemoryStore
    >>> tree = FileTree(InMemoryStore(), "notes")
    >>> tree.write("/todo.md", "buy tea\\nwrite docs\\n", create=True).created
    True
    >>> tree.read("/todo.md", offset=1, limit=1).lines
    ('write docs',)
    >>> [(e.path, e.is_dir) for e in tree.list_dir("/")]
    [('/todo.md', False)]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from offprompt.errors import (
    FileConflictError,
    FileEditError,
    FilePathError,
    NotFoundError,
    RangeError,
    StorageError,
    ValidationError,
)
from offprompt.scope import Scope
from offprompt.stores.protocols import StateStore

__all__ = [
    "FileDeleted",
    "FileEdited",
    "FileEntry",
    "FileRead",
    "FileRenamed",
    "FileTree",
    "FileWritten",
    "check_path",
    "children",
    "subtree",
]


# -- the path rule ----------------------------------------------------------------------


def _refuse(path: object, why: str) -> FilePathError:
    return FilePathError(f"path {path!r} is not allowed: {why}", path=path, why=why)


def check_path(path: object, *, directory: bool = False) -> str:
    """``path`` if the tree accepts it as a file (or, with ``directory``, a directory).

    A directory may end with ``/``, and ``/`` is the root; a file may not end with
    ``/``. The path comes back unchanged: nothing is resolved or rewritten.

    Raises:
        FilePathError: Not a str, not absolute, or holding an empty / ``.`` / ``..``
            segment, a control character, a lone surrogate or a backslash
            (``context["why"]`` says which).
    """
    if not isinstance(path, str):
        raise _refuse(path, f"it must be a str, got {type(path).__name__}")
    if not path.startswith("/"):
        raise _refuse(path, "it must be absolute (start with '/')")
    for char in path:
        category = unicodedata.category(char)
        if category == "Cs":
            raise _refuse(path, f"it contains the lone surrogate {char!r}")
        if category == "Cc" or char in "\u2028\u2029":
            raise _refuse(path, f"it contains the control character {char!r}")
    if "\\" in path:
        raise _refuse(path, "it contains a backslash")
    body = path[1:]
    if not directory and path.endswith("/"):
        raise _refuse(path, "it names a directory (it ends with '/')")
    if directory:
        body = body.removesuffix("/")
        if not body:
            return "/"
    for segment in body.split("/"):
        if segment in ("", ".", ".."):
            shown = "an empty" if not segment else f"a {segment!r}"
            raise _refuse(path, f"it has {shown} segment")
    return path


def _directory(path: str) -> str:
    """A checked directory path without its trailing ``/`` (``/`` for the root)."""
    return check_path(path, directory=True).removesuffix("/") or "/"


def _prefix(directory: str) -> str:
    return "/" if directory == "/" else directory + "/"


def subtree(paths: Iterable[str], path: str) -> list[str]:
    """Of the file ``paths``, ``path`` itself and every one below it (sorted).

    Raises:
        FilePathError: ``path`` breaks the rule of :func:`check_path`.
    """
    base = _directory(path)
    prefix = _prefix(base)
    return sorted(p for p in paths if p == base or p.startswith(prefix))


def children(paths: Iterable[str], directory: str) -> tuple[list[str], list[str]]:
    """The files directly in ``directory`` and its subdirectories (``/a/``), both sorted.

    Directories are implied by the file ``paths`` below them.

    Raises:
        FilePathError: ``directory`` breaks the rule of :func:`check_path`.
    """
    prefix = _prefix(_directory(directory))
    files: list[str] = []
    subdirs: set[str] = set()
    for path in paths:
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        if "/" in relative:
            subdirs.add(prefix + relative.split("/", 1)[0] + "/")
        elif relative:
            files.append(path)
    return sorted(files), sorted(subdirs)


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileRead:
    """A window of a file's lines.

    Attributes:
        path: The file.
        lines: The lines of the window (``\\n``-separated, without the ``\\n``).
        start: The 0-based index of the window's first line.
        total_lines: How many lines the whole file has (``text.split("\\n")``).
        text: The whole file.
    """

    path: str
    lines: tuple[str, ...]
    start: int
    total_lines: int
    text: str


@dataclass(frozen=True)
class FileWritten:
    """A file written: ``created`` is False when it replaced one that was there."""

    path: str
    created: bool


@dataclass(frozen=True)
class FileEdited:
    """A file changed in place.

    Attributes:
        path: The file.
        text: Its new content.
        occurrences: How many occurrences were replaced (1 for an insert).
        line: The 0-based index of the first line changed.
    """

    path: str
    text: str
    occurrences: int
    line: int


@dataclass(frozen=True)
class FileDeleted:
    """The files a delete removed (one, or a directory's whole subtree)."""

    path: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class FileRenamed:
    """A rename: each ``(old, new)`` file moved."""

    old_path: str
    new_path: str
    moves: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FileEntry:
    """One entry of a listing: a file, or a directory with the bytes below it."""

    path: str
    is_dir: bool
    size: int


# -- the tree -----------------------------------------------------------------------------


def _check_text(text: object, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a str, got {type(text).__name__}", field=what)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"{what} must be valid Unicode (it holds a lone surrogate)", field=what
        ) from None
    return text


class FileTree:
    """Text files keyed by POSIX path in one session of a store's state.

    Args:
        store: Where the files live (any offprompt store: its state API).
        session: The session whose state holds the tree (each file one key).
        scope: The partition (``Scope(user="u1")``); the store's default one when None.

    Attributes:
        store: The store.
        session: The session of the tree.
        scope: The partition, or None.
    """

    def __init__(self, store: StateStore, session: str, *, scope: Scope | None = None) -> None:
        if not isinstance(session, str) or not session:
            raise ValidationError(f"session must be a non-empty str, got {session!r}")
        self.store = store
        self.session = session
        self.scope = scope
        self._kw: dict[str, Any] = {} if scope is None else {"scope": scope}

    def __repr__(self) -> str:
        return f"FileTree({self.store!r}, {self.session!r}, scope={self.scope!r})"

    # -- storage ---------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[None]:
        """The store's transaction: the calls made inside are one unit where it can."""
        return self.store.transaction()

    def _keys(self, prefix: str = "") -> list[str]:
        return self.store.state_keys(self.session, prefix, **self._kw)

    def _get(self, path: str) -> str | None:
        value = self.store.get_state(self.session, path[1:], **self._kw)
        if value is None:
            return None
        if not isinstance(value, dict) or not isinstance(value.get("text"), str):
            raise StorageError(f"the file {path} is damaged (not a text entry)", path=path)
        return str(value["text"])

    def _put(self, path: str, text: str) -> None:
        self.store.set_state(self.session, path[1:], {"text": text}, **self._kw)

    def _drop(self, path: str) -> None:
        self.store.delete_state(self.session, path[1:], **self._kw)

    def _below(self, directory: str) -> list[str]:
        """Every file below ``directory`` (every file for the root)."""
        return ["/" + key for key in self._keys(_prefix(directory)[1:])]

    # -- questions -------------------------------------------------------------------

    def paths(self, under: str = "/") -> list[str]:
        """Every file path at or below ``under``, sorted.

        Raises:
            FilePathError: A path the rule refuses.
        """
        base = _directory(under)
        if base != "/" and self._get(base) is not None:
            return [base]
        return self._below(base)

    def is_file(self, path: str) -> bool:
        """Whether a file is at ``path`` (the root is a directory, never a file)."""
        base = _directory(path)
        return base != "/" and self._get(base) is not None

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is the root or has files below it."""
        base = _directory(path)
        return base == "/" or bool(self._below(base))

    def size(self, path: str) -> int:
        """The UTF-8 bytes of the file at ``path``.

        Raises:
            NotFoundError: No file is there.
        """
        return len(self._existing(check_path(path)).encode("utf-8"))

    def sizes(self, under: str = "/") -> dict[str, int]:
        """``{path: UTF-8 bytes}`` of every file at or below ``under``.

        Stored paths are listed as they are, even one an older release let in that
        the rule now refuses (it can still be deleted with its directory).

        Raises:
            FilePathError: ``under`` breaks the rule.
        """
        return {p: len(t.encode("utf-8")) for p, t in self._texts(self.paths(under)).items()}

    def list_dir(self, path: str = "/") -> list[FileEntry]:
        """The files and subdirectories directly in ``path``, sorted by path.

        A subdirectory's ``size`` is the bytes of every file below it.

        Raises:
            FilePathError: A path the rule refuses.
            NotFoundError: ``path`` is neither the root nor a directory (a file
                cannot be listed).
        """
        base = _directory(path)
        below = self._below(base)
        if base != "/" and not below:
            raise NotFoundError(f"no directory {base} in the tree", path=base)
        sizes = {p: len(t.encode("utf-8")) for p, t in self._texts(below).items()}
        files, dirs = children(sizes, base)
        entries = [FileEntry(p, False, sizes[p]) for p in files]
        entries += [
            FileEntry(d, True, sum(s for p, s in sizes.items() if p.startswith(d))) for d in dirs
        ]
        return sorted(entries, key=lambda e: e.path)

    def glob(self, pattern: str, under: str = "/") -> list[str]:
        """Files below ``under`` whose path relative to it matches ``pattern``.

        ``*`` and ``?`` match within one segment, ``**`` any number of segments,
        ``[...]`` a character class.

        Raises:
            FilePathError: ``under`` breaks the rule.
            ValidationError: ``pattern`` is not a non-empty str.
        """
        if not isinstance(pattern, str) or not pattern:
            raise ValidationError(f"pattern must be a non-empty str, got {pattern!r}")
        base = _directory(under)
        matcher = _glob_regex(pattern.lstrip("/"))
        cut = len(_prefix(base))
        return [p for p in self._below(base) if matcher.fullmatch(p[cut:])]

    # -- reading ---------------------------------------------------------------------

    def _existing(self, path: str) -> str:
        """The text of file ``path`` (checked); a directory or nothing is an error."""
        text = None if path == "/" else self._get(path)
        if text is None:
            if path == "/" or self._below(path):
                raise FileConflictError(
                    f"{path} is a directory, not a file", path=path, reason="is_directory"
                )
            raise NotFoundError(f"no file {path} in the tree", path=path)
        return text

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileRead:
        """Lines ``offset`` (0-based) to ``offset + limit`` of the file at ``path``.

        An offset past the end gives no lines (``total_lines`` says how many there are).

        Raises:
            FilePathError: A path the rule refuses.
            FileConflictError: ``path`` is a directory (``reason="is_directory"``).
            NotFoundError: Nothing is at ``path``.
            RangeError: A negative ``offset`` or ``limit``.
        """
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise RangeError(f"offset must be an int >= 0, got {offset!r}", offset=offset)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise RangeError(f"limit must be an int >= 0 or None, got {limit!r}", limit=limit)
        path = check_path(path)
        text = self._existing(path)
        lines = text.split("\n")
        stop = len(lines) if limit is None else offset + limit
        return FileRead(path, tuple(lines[offset:stop]), offset, len(lines), text)

    # -- writing ---------------------------------------------------------------------

    def _check_room(self, path: str) -> None:
        """Nothing but a file may be at ``path``, and no parent of it may be a file."""
        if self._below(path):
            raise FileConflictError(f"{path} is a directory", path=path, reason="is_directory")
        parts = path[1:].split("/")
        for depth in range(1, len(parts)):
            parent = "/" + "/".join(parts[:depth])
            if self._get(parent) is not None:
                raise FileConflictError(
                    f"{parent} is a file, not a directory",
                    path=path,
                    parent=parent,
                    reason="parent_is_file",
                )

    def write(self, path: str, text: str, *, create: bool = False) -> FileWritten:
        """Store ``text`` at ``path``, creating the file or replacing it.

        Args:
            path: The file.
            text: Its whole content.
            create: Refuse when a file is already there.

        Raises:
            FilePathError: A path the rule refuses.
            FileConflictError: ``create`` and a file is there (``reason="exists"``);
                a directory is there; or a parent is a file.
            ValidationError: ``text`` is not a str, or holds a lone surrogate.
        """
        path = check_path(path)
        with self.transaction():
            existed = self._get(path) is not None
            if existed and create:
                raise FileConflictError(f"{path} already exists", path=path, reason="exists")
            if not existed:
                self._check_room(path)
            self._put(path, _check_text(text))
        return FileWritten(path, not existed)

    def str_replace(
        self, path: str, old: str, new: str, *, replace_all: bool = False
    ) -> FileEdited:
        """Replace ``old`` by ``new`` in the file: its one occurrence, or all of them.

        Raises:
            FilePathError: A path the rule refuses.
            FileConflictError: ``path`` is a directory (``reason="is_directory"``).
            NotFoundError: Nothing is at ``path``.
            FileEditError: ``old`` is not in the file, or (without ``replace_all``) in
                it more than once; ``context["lines"]`` lists where.
            ValidationError: ``new`` is not a str, or holds a lone surrogate.
        """
        path = check_path(path)
        with self.transaction():
            text = self._existing(path)
            count = text.count(old)
            if count == 0 or (count > 1 and not replace_all):
                lines: list[int] = []
                start = 0
                while count > 1 and (pos := text.find(old, start)) != -1:
                    lines.append(text.count("\n", 0, pos) + 1)
                    start = pos + 1
                raise FileEditError(
                    f"{old!r} occurs {count} times in {path}",
                    path=path,
                    occurrences=count,
                    lines=lines,
                )
            new_text = text.replace(old, _check_text(new, "new"))
            self._put(path, new_text)
        return FileEdited(path, new_text, count, text.count("\n", 0, text.find(old)))

    def insert(self, path: str, line: int, text: str) -> FileEdited:
        """Insert ``text`` as one line after line ``line`` (0: at the top).

        The file then ends with a newline, and ``text``'s own trailing newlines are cut.

        Raises:
            FilePathError: A path the rule refuses.
            FileConflictError: ``path`` is a directory (``reason="is_directory"``).
            NotFoundError: Nothing is at ``path``.
            RangeError: ``line`` is not an int in ``[0, lines]``
                (``context["lines"]`` is that count).
            ValidationError: ``text`` is not a str, or holds a lone surrogate.
        """
        path = check_path(path)
        with self.transaction():
            lines = self._existing(path).split("\n")
            if lines[-1] == "":
                lines.pop()
            if not isinstance(line, int) or line < 0 or line > len(lines):
                raise RangeError(
                    f"line {line!r} is not within [0, {len(lines)}] in {path}",
                    path=path,
                    line=line,
                    lines=len(lines),
                )
            lines.insert(line, _check_text(text).rstrip("\n"))
            new_text = "\n".join(lines)
            new_text = new_text if new_text.endswith("\n") else new_text + "\n"
            self._put(path, new_text)
        return FileEdited(path, new_text, 1, line)

    def delete(self, path: str) -> FileDeleted:
        """Delete the file at ``path``, or every file below the directory ``path``.

        Raises:
            FilePathError: A path the rule refuses.
            NotFoundError: Nothing is at or below ``path``.
        """
        base = _directory(path)
        with self.transaction():
            doomed = self.paths(base)
            if not doomed:
                raise NotFoundError(f"no file or directory {base} in the tree", path=base)
            for item in doomed:
                self._drop(item)
        return FileDeleted(base, tuple(doomed))

    def rename(self, old_path: str, new_path: str) -> FileRenamed:
        """Move a file, or a directory with everything below it, to ``new_path``.

        Raises:
            FilePathError: A path the rule refuses.
            FileConflictError: Something is at ``new_path`` (``reason="exists"``), a
                directory would move below itself (``"into_itself"``), or a parent of
                ``new_path`` is a file (``"parent_is_file"``).
            NotFoundError: Nothing is at ``old_path``.
        """
        old, new = _directory(old_path), _directory(new_path)
        with self.transaction():
            if new == "/" or self._get(new) is not None or self._below(new):
                raise FileConflictError(f"{new} already exists", path=new, reason="exists")
            if old != "/" and self._get(old) is not None:
                moves = [(old, new)]
            else:
                moves = [(item, new + item[len(old) :]) for item in self._below(old)]
            if not moves:
                raise NotFoundError(f"no file or directory {old} in the tree", path=old)
            if old == "/" or new.startswith(old + "/"):
                raise FileConflictError(
                    f"cannot move {old} into itself ({new})", path=new, reason="into_itself"
                )
            self._check_room(new)
            for source, target in moves:
                self._put(target, self._existing(source))
                self._drop(source)
        return FileRenamed(old, new, tuple(moves))

    def clear(self) -> int:
        """Delete every file of the tree; how many there were."""
        with self.transaction():
            keys = self._keys()
            for key in keys:
                self.store.delete_state(self.session, key, **self._kw)
        return len(keys)

    def files(self) -> dict[str, str]:
        """Every file as ``{path: text}`` (for inspection and tests)."""
        return self._texts(self._below("/"))

    def _texts(self, paths: Iterable[str]) -> dict[str, str]:
        """``{path: text}`` of the stored ``paths`` (one deleted meanwhile is left out)."""
        found = ((path, self._get(path)) for path in paths)
        return {path: text for path, text in found if text is not None}

    def __iter__(self) -> Iterator[str]:
        return iter(self._below("/"))


_GLOB_PART = re.compile(r"\*\*/?|\*|\?|\[[^\]]*\]|[^*?\[]+|\[")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex of a glob over relative paths (``**`` spans segments)."""
    out: list[str] = []
    for part in _GLOB_PART.findall(pattern):
        if part.startswith("**"):
            out.append("(?:.*/)?" if part.endswith("/") else ".*")
        elif part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        elif part.startswith("[") and len(part) > 2 and part.endswith("]"):
            body = part[1:-1]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out), re.DOTALL)
