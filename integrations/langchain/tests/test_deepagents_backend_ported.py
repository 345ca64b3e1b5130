"""deepagents' own backend tests, ported to ``OffpromptBackend``.

Ported from deepagents ``libs/deepagents/tests/unit_tests/backends/`` (test_state_backend,
test_store_backend, test_delete, test_read_efficiency, test_grep_glob_semantics,
test_composite_backend): the same calls and assertions, with only the class under test
swapped. Every test runs twice, on deepagents' own ``StoreBackend`` (over LangGraph's
``InMemoryStore``, the reference) and on ``OffpromptBackend`` (over a real in-memory
``TaskMemory``), so each expectation is what the installed deepagents does, not what we
wished it did. Where upstream asserts an older behaviour the installed version changed
(``write`` on an existing file now overwrites; a bare glob now matches basenames at any
depth; ``files_update`` is gone since state writes go through the graph), the port asserts
the installed behaviour, which the reference run confirms.

Not ported, and why: the StateBackend / files_update / ToolRuntime plumbing tests (state
channels, not a storage contract); StoreBackend's namespace-factory and
``_NamespaceRuntimeCompat`` tests (its own configuration; OffpromptBackend's scope is the
``TaskMemory``'s, tested in test_deepagents_backend.py); FilesystemBackend, sandbox,
local-shell and ripgrep tests (real disks and processes: ``virtual_mode``, symlinks,
permissions, ``execute``); context-hub / LangSmith / S3 backends (remote services);
FilesystemBackend's ``max_file_size_mb`` binary-read limit (no such limit here: a binary
file is read whole).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from deepagents.backends.composite import CompositeBackend
from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    ReadResult,
    WriteResult,
)
from deepagents.backends.store import StoreBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain_core.messages import ToolMessage
from langgraph.store.memory import InMemoryStore
from offprompt_langchain import OffpromptBackend

from offprompt.task_memory import TaskMemory


@pytest.fixture(scope="module")
def task_memory() -> Iterator[TaskMemory]:
    memory = TaskMemory()
    yield memory
    memory.close()


def _clear(memory: TaskMemory) -> None:
    for namespace in memory.namespaces():
        memory.delete(namespace)


@pytest.fixture(params=["deepagents-StoreBackend", "OffpromptBackend"])
def make_backend(request: pytest.FixtureRequest, task_memory: TaskMemory) -> Any:
    """A factory for fresh, empty backends of the kind under test."""
    if request.param == "OffpromptBackend":
        _clear(task_memory)

        def offprompt() -> BackendProtocol:
            return OffpromptBackend(task_memory)

        return offprompt

    def store() -> BackendProtocol:
        return StoreBackend(store=InMemoryStore(), namespace=lambda _rt: ("filesystem",))

    return store


@pytest.fixture
def be(make_backend: Any) -> BackendProtocol:
    return make_backend()  # type: ignore[no-any-return]


def _write_all(be: BackendProtocol, files: dict[str, str]) -> None:
    for path, content in files.items():
        res = be.write(path, content)
        assert res.error is None, res.error


# -- test_store_backend / test_state_backend ----------------------------------------------


def test_crud_and_search(be: BackendProtocol) -> None:
    msg = be.write("/docs/readme.md", "hello store")
    assert isinstance(msg, WriteResult) and msg.error is None and msg.path == "/docs/readme.md"

    read_result = be.read("/docs/readme.md")
    assert isinstance(read_result, ReadResult) and read_result.file_data is not None
    assert "hello store" in read_result.file_data["content"]

    msg2 = be.edit("/docs/readme.md", "hello", "hi", replace_all=False)
    assert isinstance(msg2, EditResult) and msg2.error is None and msg2.occurrences == 1
    read2 = be.read("/docs/readme.md")
    assert read2.file_data is not None and "hi store" in read2.file_data["content"]

    infos = be.ls("/docs/").entries
    assert infos is not None and any(i["path"] == "/docs/readme.md" for i in infos)

    matches = be.grep("hi", path="/").matches
    assert matches is not None and any(m["path"] == "/docs/readme.md" for m in matches)

    # special characters are treated literally, not as a regex
    literal = be.grep("[", path="/")
    assert literal.error is None and literal.matches == []

    # installed semantics: a bare pattern matches the basename at any depth
    g = be.glob("*.md", path="/").matches
    assert [i["path"] for i in g or []] == ["/docs/readme.md"]
    g2 = be.glob("**/*.md", path="/").matches
    assert any(i["path"] == "/docs/readme.md" for i in g2 or [])


def test_errors(be: BackendProtocol) -> None:
    err = be.edit("/missing.txt", "a", "b")
    assert isinstance(err, EditResult) and err.error and "not found" in err.error

    assert be.write("/dup.txt", "x").error is None
    # installed protocol: write creates or overwrites
    again = be.write("/dup.txt", "y")
    assert again.error is None
    read = be.read("/dup.txt")
    assert read.file_data is not None and read.file_data["content"] == "y"

    not_unique = be.edit("/dup.txt", "", "z")
    assert not_unique.error


def test_ls_nested_directories(be: BackendProtocol) -> None:
    _write_all(
        be,
        {
            "/src/main.py": "main code",
            "/src/utils/helper.py": "helper code",
            "/src/utils/common.py": "common code",
            "/docs/readme.md": "readme",
            "/docs/api/reference.md": "api reference",
            "/config.json": "config",
        },
    )
    root_paths = [fi["path"] for fi in be.ls("/").entries or []]
    assert "/config.json" in root_paths
    assert "/src/" in root_paths and "/docs/" in root_paths
    assert "/src/main.py" not in root_paths and "/src/utils/helper.py" not in root_paths
    assert "/docs/readme.md" not in root_paths and "/docs/api/reference.md" not in root_paths

    src_paths = [fi["path"] for fi in be.ls("/src/").entries or []]
    assert "/src/main.py" in src_paths and "/src/utils/" in src_paths
    assert "/src/utils/helper.py" not in src_paths

    utils_paths = [fi["path"] for fi in be.ls("/src/utils/").entries or []]
    assert sorted(utils_paths) == ["/src/utils/common.py", "/src/utils/helper.py"]

    assert be.ls("/nonexistent/").entries == []


def test_ls_trailing_slash(be: BackendProtocol) -> None:
    _write_all(be, {"/file.txt": "content", "/dir/nested.txt": "nested"})
    root = be.ls("/").entries or []
    assert sorted(fi["path"] for fi in root) == ["/dir/", "/file.txt"]
    with_slash = be.ls("/dir/").entries or []
    without = be.ls("/dir").entries or []
    assert (
        [fi["path"] for fi in with_slash] == [fi["path"] for fi in without] == ["/dir/nested.txt"]
    )


def test_intercept_large_tool_result(be: BackendProtocol) -> None:
    middleware = FilesystemMiddleware(backend=be, tool_token_limit_before_evict=1000)
    large_content = "y" * 5000
    # private-ok: deepagents' own method, as its test calls it
    result = middleware._intercept_large_tool_result(
        ToolMessage(content=large_content, tool_call_id="test_456")
    )
    assert isinstance(result, ToolMessage)
    assert "Tool result too large" in result.content
    assert "/large_tool_results/test_456" in result.content
    stored = be.download_files(["/large_tool_results/test_456"])[0]
    assert stored.error is None and stored.content == large_content.encode()


@pytest.mark.parametrize(
    ("pattern", "expected_file"),
    [
        ("def __init__(", "code.py"),
        ("str | int", "types.py"),
        ("[a-z]", "regex.py"),
        ("(.*)", "regex.py"),
        ("api.key", "config.json"),
        ("x * y", "math.py"),
        ("a^2", "math.py"),
    ],
)
def test_grep_literal_search_special_chars(
    be: BackendProtocol, pattern: str, expected_file: str
) -> None:
    _write_all(
        be,
        {
            "/code.py": "def __init__(self, arg):\n    pass",
            "/types.py": "def func(x: str | int) -> None:\n    return x",
            "/regex.py": "pattern = r'[a-z]+'\nchars = '(.*)'",
            "/config.json": '{"api.key": "value", "url": "https://example.com"}',
            "/math.py": "result = x * y + z\nformula = a^2 + b^2",
        },
    )
    matches = be.grep(pattern, path="/").matches
    assert matches is not None
    assert {m["path"] for m in matches} == {f"/{expected_file}"}


def test_grep_exact_file_path(be: BackendProtocol) -> None:
    evicted_path = "/large_tool_results/toolu_01ABC123XYZ"
    content = (
        "Task Results:\nProject Alpha - Status: Active\nProject Beta - Status: Pending\n"
        "Project Gamma - Status: Completed\nTotal projects: 3\n"
    )
    assert be.write(evicted_path, content).error is None

    parent = be.grep("Project Beta", path="/large_tool_results/").matches or []
    assert [(m["path"], m["line"], m["text"]) for m in parent] == [
        (evicted_path, 3, "Project Beta - Status: Pending")
    ]
    exact = be.grep("Project Beta", path=evicted_path).matches or []
    assert [(m["path"], m["line"]) for m in exact] == [(evicted_path, 3)]
    globbed = be.glob("*", path=evicted_path).matches or []
    assert [g["path"] for g in globbed] == [evicted_path]


def test_path_edge_cases(be: BackendProtocol) -> None:
    _write_all(
        be,
        {
            "/file.txt": "root content",
            "/dir/nested.txt": "nested content",
            "/dir/subdir/deep.txt": "deep content",
        },
    )
    assert len(be.grep("content", path=None).matches or []) == 3
    assert [m["path"] for m in be.grep("nested", path="/dir/").matches or []] == ["/dir/nested.txt"]
    assert [m["path"] for m in be.grep("nested", path="/dir").matches or []] == ["/dir/nested.txt"]
    assert [g["path"] for g in be.glob("*.txt", path="/file.txt").matches or []] == ["/file.txt"]
    # installed semantics: "*.txt" matches basenames at any depth under the root
    assert {g["path"] for g in be.glob("*.txt", path="/dir/").matches or []} == {
        "/dir/nested.txt",
        "/dir/subdir/deep.txt",
    }
    assert {g["path"] for g in be.glob("**/*.txt", path="/dir/").matches or []} == {
        "/dir/nested.txt",
        "/dir/subdir/deep.txt",
    }
    assert [g["path"] for g in be.glob("/*.txt", path="/dir/").matches or []] == ["/dir/nested.txt"]


@pytest.mark.parametrize(
    ("path", "expected_paths"),
    [
        ("/app", ["/app/main.py", "/app/utils.py"]),
        ("/app/", ["/app/main.py", "/app/utils.py"]),
        ("/app/main.py", ["/app/main.py"]),
    ],
)
def test_grep_with_path_variations(
    be: BackendProtocol, path: str, expected_paths: list[str]
) -> None:
    _write_all(
        be,
        {
            "/app/main.py": "import os\nprint('main')",
            "/app/utils.py": "import sys\nprint('utils')",
            "/tests/test_main.py": "import pytest",
        },
    )
    matches = be.grep("import", path=path).matches or []
    assert sorted(m["path"] for m in matches) == expected_paths


def test_grep_max_count(be: BackendProtocol) -> None:
    _write_all(be, {"/a.txt": "x\nx\nx", "/b.txt": "x\nx"})
    assert len(be.grep("x", path="/").matches or []) == 5
    capped = be.grep("x", path="/", max_count=2)
    assert len(capped.matches or []) == 2 and capped.truncated
    exact = be.grep("x", path="/", max_count=5)
    assert len(exact.matches or []) == 5 and not exact.truncated


# -- test_grep_glob_semantics ---------------------------------------------------------------

GLOB_CASES = [
    ("src/**/*.py", ["/src/app/main.py"]),
    ("**/*.py", ["/src/app/main.py"]),
    ("*.py", ["/src/app/main.py"]),
    ("*.md", ["/readme.md"]),
    ("app/*.py", []),
]


@pytest.mark.parametrize(("glob", "expected"), GLOB_CASES)
def test_grep_include_glob(be: BackendProtocol, glob: str, expected: list[str]) -> None:
    _write_all(be, {"/src/app/main.py": "import os", "/readme.md": "import nothing"})
    matches = be.grep("import", path="/", glob=glob).matches or []
    assert sorted(m["path"] for m in matches) == expected


def test_grep_glob_relative_to_search_root(be: BackendProtocol) -> None:
    _write_all(be, {"/src/app/main.py": "import os", "/readme.md": "import nothing"})
    matches = be.grep("import", path="/src", glob="app/*.py").matches or []
    assert [m["path"] for m in matches] == ["/src/app/main.py"]


def test_glob_refuses_traversal(be: BackendProtocol) -> None:
    _write_all(be, {"/a.py": "x"})
    result = be.glob("../*.py", path="/")
    assert result.error and "traversal" in result.error.lower() and result.matches is None


# -- test_delete --------------------------------------------------------------------------


def test_delete_file(be: BackendProtocol) -> None:
    be.write("/doc.md", "hello store")
    result = be.delete("/doc.md")
    assert isinstance(result, DeleteResult)
    assert result.error is None and result.path == "/doc.md"


def test_delete_nonexistent_file(be: BackendProtocol) -> None:
    result = be.delete("/missing.md")
    assert result.error is not None and "not found" in result.error


def test_delete_then_read(be: BackendProtocol) -> None:
    be.write("/data.txt", "content")
    be.delete("/data.txt")
    read_res = be.read("/data.txt")
    assert read_res.error is not None and "not found" in read_res.error


def test_delete_then_write(be: BackendProtocol) -> None:
    be.write("/reuse.txt", "original")
    be.delete("/reuse.txt")
    assert be.write("/reuse.txt", "new content").error is None
    read_res = be.read("/reuse.txt")
    assert read_res.file_data is not None and "new content" in read_res.file_data["content"]


def test_delete_not_in_ls_or_grep(be: BackendProtocol) -> None:
    be.write("/visible.txt", "findme")
    be.delete("/visible.txt")
    assert not any(fi["path"] == "/visible.txt" for fi in be.ls("/").entries or [])
    assert be.grep("findme", path="/").matches == []


def test_delete_directory_is_recursive(be: BackendProtocol) -> None:
    _write_all(be, {"/d/a.txt": "a", "/d/sub/b.txt": "b", "/keep.txt": "k"})
    assert be.delete("/d").error is None
    assert [fi["path"] for fi in be.ls("/").entries or []] == ["/keep.txt"]


# -- test_read_efficiency / pagination ----------------------------------------------------


def test_read_windows(be: BackendProtocol) -> None:
    be.write("/test.txt", "Line 1\nLine 2\nLine 3\nLine 4\nLine 5")
    first = be.read("/test.txt", offset=0, limit=2)
    assert first.file_data is not None and first.file_data["content"] == "Line 1\nLine 2\n"
    assert (first.start_line, first.end_line, first.total_lines, first.next_offset) == (1, 2, 5, 2)
    middle = be.read("/test.txt", offset=2, limit=2)
    assert middle.file_data is not None and middle.file_data["content"] == "Line 3\nLine 4\n"
    last = be.read("/test.txt", offset=4, limit=10)
    assert last.file_data is not None and last.file_data["content"] == "Line 5"
    assert (last.start_line, last.end_line, last.next_offset) == (5, 5, None)


def test_read_degenerate_windows(be: BackendProtocol) -> None:
    be.write("/t.txt", "a\nb\nc\n")
    negative = be.read("/t.txt", offset=-3, limit=1)
    assert negative.file_data is not None and negative.file_data["content"] == "a\n"
    assert negative.start_line == 1
    zero = be.read("/t.txt", offset=0, limit=0)
    assert zero.no_lines_requested and zero.file_data is not None
    assert zero.file_data["content"] == ""


def test_read_empty_file(be: BackendProtocol) -> None:
    be.write("/empty.txt", "")
    response = be.read("/empty.txt")
    assert response.error is None and response.file_data is not None
    assert response.file_data["content"] == "" and response.start_line is None


def test_read_offset_out_of_bounds(be: BackendProtocol) -> None:
    be.write("/test.txt", "line 1")
    response = be.read("/test.txt", offset=10)
    assert response.error is not None and "Line offset 10 exceeds file length" in response.error


def test_read_offset_beyond_eof_errors_with_total(be: BackendProtocol) -> None:
    # deepagents' test_filesystem_backend_read_offset_beyond_eof_errors_with_total
    be.write("/notes.txt", "one\ntwo\nthree\nfour\nfive")
    result = be.read("/notes.txt", offset=99, limit=10)
    assert result.error == "Line offset 99 exceeds file length (5 lines)"
    assert result.file_data is None
    assert result.total_lines is None
    assert result.next_offset is None


def test_read_crlf_window_is_lf(be: BackendProtocol) -> None:
    be.write("/crlf.txt", "a\r\nb\r\nc")
    window = be.read("/crlf.txt", offset=1, limit=1)
    assert window.file_data is not None and window.file_data["content"] == "b\n"


# -- uploads and downloads ----------------------------------------------------------------


def test_upload_download_round_trip(be: BackendProtocol) -> None:
    payload = [("/u/a.txt", "héllo\n".encode()), ("/u/b.bin", bytes(range(256)))]
    assert [r.error for r in be.upload_files(payload)] == [None, None]
    down = be.download_files(["/u/a.txt", "/u/b.bin", "/u/missing"])
    assert [d.content for d in down[:2]] == [p[1] for p in payload]
    assert down[2].error == "file_not_found" and down[2].content is None
    binary = be.read("/u/b.bin")
    assert binary.file_data is not None and binary.file_data["encoding"] == "base64"


# -- test_composite_backend: a routed backend ----------------------------------------------


def test_composite_route(make_backend: Any) -> None:
    routed = make_backend()
    default = StoreBackend(store=InMemoryStore(), namespace=lambda _rt: ("default",))
    comp = CompositeBackend(default=default, routes={"/large_tool_results/": routed})
    assert comp.write("/notes.txt", "top level note").error is None
    res = comp.write("/large_tool_results/call_1", "first\nsecond needle\nthird")
    assert res.error is None and res.path == "/large_tool_results/call_1"
    assert routed.read("/call_1").file_data is not None  # stored in the routed backend

    read = comp.read("/large_tool_results/call_1", offset=1, limit=1)
    assert read.file_data is not None and read.file_data["content"] == "second needle\n"
    root = [fi["path"] for fi in comp.ls("/").entries or []]
    assert root == ["/large_tool_results/", "/notes.txt"]
    routed_ls = [fi["path"] for fi in comp.ls("/large_tool_results/").entries or []]
    assert routed_ls == ["/large_tool_results/call_1"]
    grep_all = comp.grep("needle", path="/").matches or []
    assert [(m["path"], m["line"]) for m in grep_all] == [("/large_tool_results/call_1", 2)]
    globbed = comp.glob("**/call_*", path="/").matches or []
    assert [g["path"] for g in globbed] == ["/large_tool_results/call_1"]
    assert comp.delete("/large_tool_results/call_1").error is None
    assert comp.ls("/large_tool_results/").entries == []


# -- the async twins ----------------------------------------------------------------------


def test_async_twins(be: BackendProtocol) -> None:
    async def run() -> None:
        assert (await be.awrite("/a/x.txt", "one\ntwo needle\n")).error is None
        read = await be.aread("/a/x.txt", offset=1, limit=1)
        assert read.file_data is not None and read.file_data["content"] == "two needle\n"
        edited = await be.aedit("/a/x.txt", "one", "uno")
        assert edited.error is None and edited.occurrences == 1
        assert [e["path"] for e in (await be.als("/a")).entries or []] == ["/a/x.txt"]
        grep = await be.agrep("needle", path="/")
        assert [(m["path"], m["line"]) for m in grep.matches or []] == [("/a/x.txt", 2)]
        assert [g["path"] for g in (await be.aglob("*.txt")).matches or []] == ["/a/x.txt"]
        up = await be.aupload_files([("/a/y.txt", b"why")])
        assert up[0].error is None
        down = await be.adownload_files(["/a/y.txt"])
        assert down[0].content == b"why"
        assert (await be.adelete("/a")).error is None
        assert (await be.als("/")).entries == []

    asyncio.run(run())
