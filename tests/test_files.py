"""FileTree: one path rule, one view/edit/list/delete over a store's state (issue 43 item 6).

Real stores only: InMemoryStore for the rules, SQLiteStore files for durability, the old
layout and two writer processes.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest

from offprompt.errors import (
    FileConflictError,
    FileEditError,
    FilePathError,
    NamespaceError,
    NotFoundError,
    RangeError,
    StorageError,
    ValidationError,
)
from offprompt.files import (
    FileDeleted,
    FileEdited,
    FileEntry,
    FileRead,
    FileRenamed,
    FileTree,
    FileWritten,
    check_path,
    children,
    subtree,
)
from offprompt.scope import Scope
from offprompt.stores import InMemoryStore, SQLiteStore

FIXTURE = Path(__file__).parent / "fixtures" / "file_tree_v1.json"


def _tree() -> FileTree:
    return FileTree(InMemoryStore(), "files")


# -- the path rule ------------------------------------------------------------------------

HOSTILE = [
    ("/a/../b", "'..' segment"),
    ("/..", "'..' segment"),
    ("/a/./b", "'.' segment"),
    ("/a//b", "an empty segment"),
    ("a/b", "absolute"),
    ("", "absolute"),
    ("/a\x00b", "control character"),
    ("/a\x07b", "control character"),
    ("/a\nb", "control character"),
    ("/a\x85b", "control character"),
    ("/a\u2028b", "control character"),
    ("/a\\b", "backslash"),
    ("/..\\..\\etc\\passwd", "backslash"),
    ("/\udcff.txt", "lone surrogate"),
]


@pytest.mark.parametrize(("path", "why"), HOSTILE)
def test_hostile_paths_are_refused_by_every_command_and_store_nothing(path: str, why: str) -> None:
    tree = _tree()
    tree.write("/kept.txt", "x")
    with pytest.raises(FilePathError, match=why) as caught:
        tree.write(path, "y")
    assert caught.value.context["path"] == path and why in caught.value.context["why"]
    calls: list[Callable[[], object]] = [
        lambda: tree.read(path),
        lambda: tree.str_replace(path, "x", "y"),
        lambda: tree.insert(path, 0, "y"),
        lambda: tree.rename("/kept.txt", path),
        lambda: tree.size(path),
    ]
    for call in calls:
        with pytest.raises(FilePathError):
            call()
    assert tree.files() == {"/kept.txt": "x"}


@pytest.mark.parametrize("path", ["/a/../b", "/a\x00", "/a\\b", "a", "///", "/a//"])
def test_hostile_directories_are_refused_by_listing_glob_and_delete(path: str) -> None:
    tree = _tree()
    tree.write("/a/kept.txt", "x")
    for call in (tree.list_dir, tree.delete, tree.paths, lambda p: tree.glob("*", p)):
        with pytest.raises(FilePathError):
            call(path)
    assert tree.files() == {"/a/kept.txt": "x"}


def test_a_file_path_may_not_end_with_a_slash() -> None:
    tree = _tree()
    for call in (lambda: tree.write("/a/", "y"), lambda: tree.read("/a/")):
        with pytest.raises(FilePathError, match="names a directory"):
            call()
    assert tree.files() == {}


def test_a_path_error_is_a_namespace_error_and_a_value_error() -> None:
    with pytest.raises(NamespaceError):
        check_path("/../x")
    with pytest.raises(ValueError, match="must be a str, got int"):
        check_path(3)


def test_the_rule_returns_the_path_unchanged_and_accepts_directories_with_a_slash() -> None:
    assert check_path("/a/b.txt") == "/a/b.txt"
    assert check_path("/a/", directory=True) == "/a/"
    assert check_path("/", directory=True) == "/"
    assert check_path("/foo..bar.txt") == "/foo..bar.txt"  # '..' inside a name is a name
    assert check_path("/naïve café ✓.md") == "/naïve café ✓.md"


def test_very_long_names_round_trip() -> None:
    tree = FileTree(InMemoryStore(), "files")
    name = "/" + "n" * 10_000 + "/" + "é" * 5_000
    tree.write(name, "long", create=True)
    assert tree.read(name).text == "long"
    assert tree.paths() == [name]
    assert [e.path for e in tree.list_dir("/")] == ["/" + "n" * 10_000 + "/"]
    assert tree.delete(name).paths == (name,)
    assert tree.files() == {}


# -- the commands ---------------------------------------------------------------------------


def test_write_read_and_windows_of_lines() -> None:
    tree = _tree()
    assert tree.write("/log.txt", "a\nb\nc\n", create=True) == FileWritten("/log.txt", True)
    assert tree.write("/log.txt", "a\nb\nc\nd") == FileWritten("/log.txt", False)
    window = tree.read("/log.txt", offset=1, limit=2)
    assert window == FileRead("/log.txt", ("b", "c"), 1, 4, "a\nb\nc\nd")
    assert tree.read("/log.txt").lines == ("a", "b", "c", "d")
    assert tree.read("/log.txt", offset=9).lines == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        window.text = "changed"  # type: ignore[misc]
    with pytest.raises(RangeError, match="offset"):
        tree.read("/log.txt", offset=-1)
    with pytest.raises(RangeError, match="limit"):
        tree.read("/log.txt", limit=-1)


def test_files_and_directories_do_not_clash() -> None:
    tree = _tree()
    tree.write("/dir/file.txt", "x")
    with pytest.raises(FileConflictError, match="already exists") as exists:
        tree.write("/dir/file.txt", "y", create=True)
    assert exists.value.context["reason"] == "exists"
    with pytest.raises(FileConflictError) as is_dir:
        tree.write("/dir", "y")
    assert is_dir.value.context["reason"] == "is_directory"
    with pytest.raises(FileConflictError) as parent:
        tree.write("/dir/file.txt/child", "z")
    assert parent.value.context == {
        "path": "/dir/file.txt/child",
        "parent": "/dir/file.txt",
        "reason": "parent_is_file",
    }
    with pytest.raises(FileConflictError, match="is a directory, not a file"):
        tree.read("/dir")
    with pytest.raises(NotFoundError):
        tree.read("/nothing")
    assert tree.files() == {"/dir/file.txt": "x"}
    assert tree.is_file("/dir/file.txt") and not tree.is_file("/dir")
    assert tree.is_dir("/dir") and tree.is_dir("/") and not tree.is_dir("/dir/file.txt")


def test_str_replace_counts_and_says_where_each_occurrence_is() -> None:
    tree = _tree()
    tree.write("/a.txt", "one\ntwo\none\n")
    with pytest.raises(FileEditError) as many:
        tree.str_replace("/a.txt", "one", "1")
    assert many.value.context["occurrences"] == 2 and many.value.context["lines"] == [1, 3]
    with pytest.raises(FileEditError) as none:
        tree.str_replace("/a.txt", "three", "3")
    assert none.value.context["occurrences"] == 0
    assert tree.str_replace("/a.txt", "two", "2") == FileEdited("/a.txt", "one\n2\none\n", 1, 1)
    edited = tree.str_replace("/a.txt", "one", "1", replace_all=True)
    assert (edited.text, edited.occurrences) == ("1\n2\n1\n", 2)


def test_insert_adds_one_line_and_keeps_a_final_newline() -> None:
    tree = _tree()
    tree.write("/a.txt", "a\nb")
    assert tree.insert("/a.txt", 1, "x\n").text == "a\nx\nb\n"
    assert tree.insert("/a.txt", 0, "top").text == "top\na\nx\nb\n"
    with pytest.raises(RangeError) as caught:
        tree.insert("/a.txt", 5, "late")
    assert caught.value.context["lines"] == 4
    assert tree.read("/a.txt").text == "top\na\nx\nb\n"


def test_a_lone_surrogate_in_text_is_refused_and_the_file_is_unchanged() -> None:
    tree = _tree()
    tree.write("/a.txt", "safe")
    for call in (
        lambda: tree.write("/a.txt", "bad \ud800"),
        lambda: tree.str_replace("/a.txt", "safe", "bad \ud800"),
        lambda: tree.insert("/a.txt", 0, "\udfff"),
    ):
        with pytest.raises(ValidationError, match="lone surrogate"):
            call()
    assert tree.files() == {"/a.txt": "safe"}


def test_listing_glob_rename_and_delete_of_a_subtree() -> None:
    tree = _tree()
    tree.write("/old/a.txt", "a")
    tree.write("/old/sub/b.md", "bé")
    tree.write("/older.txt", "not below /old")
    assert tree.list_dir("/") == [
        FileEntry("/old/", True, 4),
        FileEntry("/older.txt", False, 14),
    ]
    assert tree.list_dir("/old/") == [
        FileEntry("/old/a.txt", False, 1),
        FileEntry("/old/sub/", True, 3),
    ]
    with pytest.raises(NotFoundError):
        tree.list_dir("/missing")
    assert tree.glob("**/*.md") == ["/old/sub/b.md"]
    assert tree.glob("*.txt") == ["/older.txt"]
    assert tree.glob("*.txt", "/old") == ["/old/a.txt"]
    assert tree.glob("old/[ab].txt") == ["/old/a.txt"]
    with pytest.raises(FileConflictError) as into:
        tree.rename("/old", "/old/inner")
    assert into.value.context["reason"] == "into_itself"
    with pytest.raises(FileConflictError) as taken:
        tree.rename("/old/a.txt", "/older.txt")
    assert taken.value.context["reason"] == "exists"
    with pytest.raises(NotFoundError):
        tree.rename("/nothing", "/else")
    renamed = tree.rename("/old", "/new")
    assert renamed == FileRenamed(
        "/old", "/new", (("/old/a.txt", "/new/a.txt"), ("/old/sub/b.md", "/new/sub/b.md"))
    )
    assert tree.files() == {
        "/new/a.txt": "a",
        "/new/sub/b.md": "bé",
        "/older.txt": "not below /old",
    }
    assert tree.delete("/new/") == FileDeleted("/new", ("/new/a.txt", "/new/sub/b.md"))
    with pytest.raises(NotFoundError):
        tree.delete("/new")
    assert tree.clear() == 1 and tree.files() == {}


def test_children_and_subtree_are_the_same_listing_on_bare_paths() -> None:
    paths = ["/a/x", "/a/b/y", "/ab", "/c"]
    assert children(paths, "/") == (["/ab", "/c"], ["/a/"])
    assert children(paths, "/a/") == (["/a/x"], ["/a/b/"])
    assert subtree(paths, "/a") == ["/a/b/y", "/a/x"]  # not /ab
    assert subtree(paths, "/") == sorted(paths)


def test_a_damaged_entry_is_a_storage_error_naming_the_file() -> None:
    store = InMemoryStore()
    store.set_state("files", "bad.txt", ["not", "a", "text", "entry"])
    with pytest.raises(StorageError, match="damaged") as caught:
        FileTree(store, "files").read("/bad.txt")
    assert caught.value.context["path"] == "/bad.txt"


def test_each_scope_has_its_own_tree() -> None:
    store = InMemoryStore()
    ada = FileTree(store, "files", scope=Scope(user="ada"))
    bob = FileTree(store, "files", scope=Scope(user="bob"))
    ada.write("/notes.md", "ada's")
    assert bob.files() == {} and ada.files() == {"/notes.md": "ada's"}


# -- the stored layout ----------------------------------------------------------------------


def test_a_tree_written_before_file_tree_reads_the_same(tmp_path: Path) -> None:
    """The fixture holds the state entries the memory tool wrote before FileTree existed."""
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    db = tmp_path / "old.db"
    with SQLiteStore(db) as store:
        for entry in fixture["entries"]:  # written as the old code wrote them
            store.set_state(fixture["session"], entry["key"], entry["value"])
    with SQLiteStore(db) as store:
        tree = FileTree(store, fixture["session"])
        assert tree.files() == {"/" + e["key"]: e["value"]["text"] for e in fixture["entries"]}
        assert tree.read("/prefs.md").lines == ("likes metric units\r", "no meetings before 10", "")
        tree.insert("/notes/todo.md", 3, "last")
        # and what it writes is the same layout again
        assert store.get_state(fixture["session"], "notes/todo.md") == {
            "text": "first\nbuy tea\nwrite the docs\nlast\n"
        }
        assert store.state_keys(fixture["session"]) == sorted(e["key"] for e in fixture["entries"])


# -- two writer processes -------------------------------------------------------------------


def _append(db: str, worker: int, count: int) -> None:
    with SQLiteStore(db) as store:
        tree = FileTree(store, "files")
        for i in range(count):
            tree.insert("/log.md", tree.read("/log.md").total_lines - 1, f"w{worker}-{i}")
            tree.write(f"/w{worker}/{i}.txt", str(i), create=True)


def test_two_writer_processes_on_one_sqlite_file_lose_no_update(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    with SQLiteStore(db) as store:
        FileTree(store, "files").write("/log.md", "", create=True)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append, args=(db, w, 20)) for w in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    with SQLiteStore(db) as store:
        tree = FileTree(store, "files")
        lines = tree.read("/log.md").text.splitlines()
        assert sorted(lines) == sorted(f"w{w}-{i}" for w in range(2) for i in range(20))
        assert len(tree.paths()) == 1 + 2 * 20


def test_a_stored_path_the_rule_now_refuses_is_listed_and_deleted_with_its_directory() -> None:
    """Claude's memory tool let control characters in before the one rule: such a file of
    an older store still shows in listings and goes with its directory."""
    store = InMemoryStore()
    store.set_state("files", "old/tab\there.md", {"text": "kept"})
    tree = FileTree(store, "files")
    assert tree.sizes() == {"/old/tab\there.md": 4}
    assert tree.list_dir("/old") == [FileEntry("/old/tab\there.md", False, 4)]
    with pytest.raises(FilePathError, match="control character"):
        tree.read("/old/tab\there.md")
    assert tree.delete("/old").paths == ("/old/tab\there.md",)
    assert store.state_keys("files") == []
