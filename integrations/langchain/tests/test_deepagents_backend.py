"""``OffpromptBackend`` beyond the ported deepagents tests: what task memory adds.

Storage is byte-identical, paths are safe, overwrites never lose the old version, the
scope is the ``TaskMemory``'s, grep is offprompt's (regex, case, context), and a real
``create_deep_agent`` (with a scripted chat model, a test fake, not an LLM) evicts a large
tool result into the backend, then reads and greps it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend
from deepagents.backends.protocol import BackendProtocol
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from offprompt_langchain import OffpromptBackend
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.artifacts import TextArtifact
from offprompt.errors import NamespaceError, ValidationError
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore


@pytest.fixture(scope="module")
def shared_memory() -> Iterator[TaskMemory]:
    tm = TaskMemory()  # one embedded engine for the module: opening one takes seconds
    yield tm
    tm.close()


@pytest.fixture
def memory(shared_memory: TaskMemory) -> TaskMemory:
    """The module's memory, emptied."""
    for namespace in shared_memory.namespaces():
        shared_memory.delete(namespace)
    return shared_memory


@pytest.fixture
def backend(memory: TaskMemory) -> OffpromptBackend:
    return OffpromptBackend(memory)


def test_is_a_backend_protocol_with_delete(backend: OffpromptBackend) -> None:
    assert isinstance(backend, BackendProtocol)
    assert type(backend).delete is not BackendProtocol.delete


def test_stored_text_is_byte_identical(backend: OffpromptBackend, memory: TaskMemory) -> None:
    text = "naïve — 日本語\r\nline two\ttab\n\nno final newline ✓"
    assert backend.write("/call_1", text).error is None
    namespace = backend.namespace_for("/call_1")
    assert namespace == "deepagents-call_1"
    stored = memory.load_artifacts(namespace).value
    assert [a.value for a in stored] == [text]
    assert backend.download_files(["/call_1"])[0].content == text.encode("utf-8")
    # the lines the model reads are the stored lines, \r\n shown as \n
    window = backend.read("/call_1", offset=0, limit=10)
    assert window.file_data is not None
    assert window.file_data["content"] == text.replace("\r\n", "\n")
    assert (window.start_line, window.end_line, window.total_lines) == (1, 4, 4)


def test_paths_map_to_reversible_namespaces(backend: OffpromptBackend, memory: TaskMemory) -> None:
    paths = ["/a/b.txt", "/sp ace/ü.md", "/a%2Fb", "/x~1", "/dots...name"]
    for path in paths:
        assert backend.write(path, path).error is None
    assert sorted(fi["path"] for fi in backend.glob("**/*").matches or []) == sorted(paths)
    for namespace in memory.namespaces():
        assert namespace.startswith("deepagents-")
        assert "/" not in namespace and ".." not in namespace
    for path in paths:
        read = backend.read(path)
        assert read.file_data is not None and read.file_data["content"] == path


@pytest.mark.parametrize(
    "path",
    [
        "/../etc/passwd",
        "/a/../../b",
        "/a/./b",
        "/a//b",
        "relative.txt",
        "/a\\..\\b",
        "/a\x00b",
        "/a\nb",
        "/dir/",
        "",
    ],
)
def test_hostile_paths_are_refused_and_nothing_escapes(
    backend: OffpromptBackend, memory: TaskMemory, path: str
) -> None:
    write = backend.write(path, "x")
    assert write.path is None and write.error and "not allowed" in write.error
    read = backend.read(path)
    assert read.error and "not allowed" in read.error
    assert backend.upload_files([(path, b"x")])[0].error == "invalid_path"
    assert backend.download_files([path])[0].error == "invalid_path"
    assert backend.edit(path, "x", "y").error
    with pytest.raises(NamespaceError, match="not allowed"):
        backend.namespace_for(path)
    assert memory.namespaces() == []


def test_hostile_directories_are_refused(backend: OffpromptBackend) -> None:
    for call in (
        lambda: backend.ls("/../"),
        lambda: backend.grep("x", path="/a/../.."),
        lambda: backend.glob("*", path="/a\\b"),
        lambda: backend.delete("/../x"),
    ):
        result = call()
        assert result.error and "not allowed" in result.error


def test_a_path_too_long_for_a_namespace_is_refused(backend: OffpromptBackend) -> None:
    result = backend.write("/" + "é" * 100, "x")
    assert result.error and "namespace is not valid" in result.error


def test_other_outputs_of_the_memory_are_not_files(
    backend: OffpromptBackend, memory: TaskMemory
) -> None:
    memory.process_output("web", "call", TextArtifact("someone else's output", name="web-1"))
    memory.store_artifact("deepagents-%ZZ", TextArtifact("not an encoded path"))
    backend.write("/mine", "my output")
    assert [fi["path"] for fi in backend.ls("/").entries or []] == ["/mine"]
    assert [m["path"] for m in backend.grep("output").matches or []] == ["/mine"]
    assert backend.delete("/").error is None
    assert memory.namespaces() == ["deepagents-%ZZ", "web-1"]


def test_scope_is_the_task_memory_scope() -> None:
    store = QdrantVectorStore()
    memories = [TaskMemory(vector_store=store, tenant=who) for who in ("alice", "bob")]
    try:
        alice, bob = (OffpromptBackend(tm) for tm in memories)
        assert alice.write("/notes", "alice notes").error is None
        assert bob.write("/notes", "bob notes").error is None
        for be, who in ((alice, "alice"), (bob, "bob")):
            read = be.read("/notes")
            assert read.file_data is not None and read.file_data["content"] == f"{who} notes"
            assert [m["text"] for m in be.grep("notes").matches or []] == [f"{who} notes"]
        assert bob.delete("/notes").error is None
        assert alice.read("/notes").file_data is not None
    finally:
        for tm in memories:
            tm.close()


def test_overwrite_keeps_one_version_in_one_namespace_and_reads_a_legacy_second_slot(
    backend: OffpromptBackend, memory: TaskMemory
) -> None:
    assert backend.write("/f", "v1").error is None
    assert backend.write("/f", "v2").error is None
    assert memory.namespaces() == ["deepagents-f"]
    assert [a.value for a in memory.load_artifacts("deepagents-f").value] == ["v2"]
    # a file an older release left in both slots (an overwrite cut short between its
    # write and its delete): the newer slot is the file
    memory.store_artifact("deepagents-f~1", TextArtifact("v4"))
    read = backend.read("/f")
    assert read.file_data is not None and read.file_data["content"] == "v4"
    assert [fi["path"] for fi in backend.ls("/").entries or []] == ["/f"]
    assert [m["text"] for m in backend.grep("v").matches or []] == ["v4"]
    # the next overwrite replaces the first slot and removes the second
    assert backend.write("/f", "v5").error is None
    assert memory.namespaces() == ["deepagents-f"]
    assert backend.download_files(["/f"])[0].content == b"v5"


def test_rewriting_the_same_content_is_a_no_op(
    backend: OffpromptBackend, memory: TaskMemory
) -> None:
    backend.write("/same", "replayed eviction")
    created = memory.namespace_metadata("deepagents-same", wait=False)["created_at"]
    assert backend.write("/same", "replayed eviction").error is None
    assert memory.namespace_metadata("deepagents-same", wait=False)["created_at"] == created


def test_immutable_backend_refuses_changes(memory: TaskMemory) -> None:
    backend = OffpromptBackend(memory, immutable=True)
    assert backend.write("/kept", "fact").error is None
    assert backend.write("/kept", "fact").error is None  # identical: still fine
    for result in (
        backend.write("/kept", "changed"),
        backend.edit("/kept", "fact", "fiction"),
        backend.delete("/kept"),
    ):
        assert result.error and "immutable" in result.error
    assert backend.upload_files([("/kept", b"changed")])[0].error == "permission_denied"
    assert backend.download_files(["/kept"])[0].content == b"fact"


def test_edit_stores_a_new_version(backend: OffpromptBackend) -> None:
    backend.write("/e", "a b a")
    ambiguous = backend.edit("/e", "a", "c")
    assert ambiguous.error and "appears 2 times" in ambiguous.error
    done = backend.edit("/e", "a", "c", replace_all=True)
    assert done.error is None and done.occurrences == 2
    assert backend.download_files(["/e"])[0].content == b"c b c"
    backend.upload_files([("/bin", b"\xff\xfe")])
    assert "binary" in (backend.edit("/bin", "x", "y").error or "")


def test_grep_uses_offprompts_grep(backend: OffpromptBackend) -> None:
    backend.write("/log", "INFO start\nERROR disk 7 full\ninfo again\nError: 42\nend\n")
    literal = backend.grep("ERROR", path="/")
    assert [m["line"] for m in literal.matches or []] == [2]
    regex = backend.grep(r"(?i)^error", path="/", regex=True)
    assert [m["line"] for m in regex.matches or []] == [2, 4]
    folded = backend.grep("info", ignore_case=True)
    assert [m["line"] for m in folded.matches or []] == [1, 3]
    context = backend.grep("disk", context_lines=1).matches or []
    assert context[0]["context_before"] == [{"line": 1, "text": "INFO start"}]
    assert context[0]["context_after"] == [{"line": 3, "text": "info again"}]
    bad = backend.grep("(", regex=True)
    assert bad.error and bad.matches is None
    assert backend.grep("").error


def test_async_grep_takes_the_same_options(backend: OffpromptBackend) -> None:
    backend.write("/log", "a1\nb2\n")
    result = asyncio.run(backend.agrep(r"[ab]\d", regex=True, max_count=1))
    assert [m["line"] for m in result.matches or []] == [1] and result.truncated


def test_stored_json_reads_as_its_lines_and_the_card_has_its_outline(
    backend: OffpromptBackend,
) -> None:
    document = json.dumps({"items": [{"id": i, "ok": i % 2 == 0} for i in range(50)]}, indent=1)
    backend.write("/call_json", document)
    lines = document.split("\n")
    window = backend.read("/call_json", offset=3, limit=2)
    assert window.file_data is not None
    assert window.file_data["content"] == "\n".join(lines[3:5]) + "\n"
    assert window.total_lines == len(lines)
    card = backend.card("/call_json")
    assert card is not None
    assert 'artifact_namespace "deepagents-call_json"' in card
    assert "kind: json" in card and "items" in card
    assert f"{len(lines):,} lines" in card


def test_reading_past_the_end_is_deepagents_own_error_exactly(backend: OffpromptBackend) -> None:
    backend.write("/short", "one\ntwo\n")
    result = backend.read("/short", offset=5)
    assert result.error == "Line offset 5 exceeds file length (2 lines)"
    assert result.file_data is None and result.total_lines is None
    big = "\n".join(f"line {i}" for i in range(50_000))  # stored output: still no card
    backend.write("/big", big)
    assert backend.read("/big", offset=60_000).error == (
        "Line offset 60000 exceeds file length (50000 lines)"
    )


def test_constructor_validates(memory: TaskMemory) -> None:
    with pytest.raises(ValidationError, match="TaskMemory"):
        OffpromptBackend("not a memory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="namespace_prefix"):
        OffpromptBackend(memory, namespace_prefix="")
    with pytest.raises(ValidationError, match="namespace_prefix"):
        OffpromptBackend(memory, namespace_prefix="a/")
    with pytest.raises(ValidationError, match="card_tokens"):
        OffpromptBackend(memory, card_tokens=0)


# -- a real deep agent --------------------------------------------------------------------

LOG = "".join(
    f"2026-12-01 10:{i // 60:02d}:{i % 60:02d} worker-{i % 7} "
    f"{'ERROR disk full' if i % 97 == 0 else 'ok request served'}\n"
    for i in range(3000)
)


@tool
def fetch_log() -> str:
    """Fetch the server log."""
    return LOG


def _deep_agent(backend: OffpromptBackend, model: ScriptedChatModel):  # type: ignore[no-untyped-def]
    return create_deep_agent(
        model=model,
        tools=[fetch_log],
        backend=CompositeBackend(default=StateBackend(), routes={"/large_tool_results/": backend}),
        middleware=[backend.card_middleware()],
    )


def _script() -> list[AIMessage | str]:
    return [
        tool_call("fetch_log", {}, id="call_log1"),
        tool_call(
            "read_file",
            {"file_path": "/large_tool_results/call_log1", "offset": 96, "limit": 3},
            id="call_read",
        ),
        tool_call(
            "grep",
            {"pattern": "ERROR disk", "path": "/large_tool_results/", "output_mode": "content"},
            id="call_grep",
        ),
        "Disk full on 31 lines.",
    ]


def _check_run(model: ScriptedChatModel, memory: TaskMemory, result: dict) -> None:  # type: ignore[type-arg]
    assert len(model.calls) == 4
    evicted, read, grep = (call[-1] for call in model.calls[1:])
    assert isinstance(evicted, ToolMessage) and isinstance(evicted.content, str)
    # deepagents' eviction stub, then offprompt's card (model input only)
    assert evicted.content.startswith("Tool result too large")
    assert "/large_tool_results/call_log1" in evicted.content
    assert 'artifact_namespace "deepagents-call_log1"' in evicted.content
    assert "[stored output] kind: text | 140,938 bytes | 3,000 lines" in evicted.content
    assert len(evicted.content) < 5000  # the log itself never reached the model
    state_stub = next(
        m for m in result["messages"] if getattr(m, "tool_call_id", "") == "call_log1"
    )
    assert "[offprompt]" not in state_stub.content  # the state keeps deepagents' message
    # read_file pages by line offset: lines 97-99, in deepagents' format
    lines = LOG.split("\n")
    assert read.content == (
        "@@ lines 97-99 of 3000 | next offset 99 @@\n" + "\n".join(lines[96:99])
    )
    # grep: every matching line, with its line number
    expected = [n + 1 for n in range(3000) if n % 97 == 0]
    assert grep.content.splitlines()[0] == "/large_tool_results/call_log1:"
    assert grep.content.splitlines()[1:] == [f"  {n}: {lines[n - 1]}" for n in expected]
    # and the stored output is the tool's output, byte for byte
    assert memory.namespaces() == ["deepagents-call_log1"]
    stored = memory.load_artifacts("deepagents-call_log1").value
    assert "".join(str(a.value) for a in stored).encode() == LOG.encode()
    for call in model.calls:
        assert all(LOG not in str(m.content) for m in call)


def test_create_deep_agent_evicts_reads_and_greps(memory: TaskMemory) -> None:
    backend = OffpromptBackend(memory)
    model = ScriptedChatModel(script=_script())
    result = _deep_agent(backend, model).invoke({"messages": [("user", "Check the log")]})
    _check_run(model, memory, result)
    assert result["messages"][-1].content == "Disk full on 31 lines."


def test_create_deep_agent_async(memory: TaskMemory) -> None:
    backend = OffpromptBackend(memory)
    model = ScriptedChatModel(script=_script())
    agent = _deep_agent(backend, model)
    result = asyncio.run(agent.ainvoke({"messages": [("user", "Check the log")]}))
    _check_run(model, memory, result)


def test_card_middleware_leaves_other_messages_alone(backend: OffpromptBackend) -> None:
    middleware = backend.card_middleware()
    backend.write("/call_x", "stored")
    messages = [
        ToolMessage(content="small result", tool_call_id="call_x"),
        ToolMessage(
            content="Tool result too large ... at this path: /large_tool_results/call_y\n",
            tool_call_id="call_y",
        ),
        ToolMessage(
            content="Tool result too large ... at this path: /large_tool_results/call_x\n",
            tool_call_id="call_x",
        ),
    ]
    # private-ok: the card middleware's switch is the subject
    out = middleware._with_cards(messages)  # type: ignore[attr-defined]
    assert out is not None
    assert out[0] is messages[0] and out[1] is messages[1]
    assert "[offprompt] Kept whole" in out[2].content
    # private-ok: the card middleware's switch is the subject
    assert middleware._with_cards(out) is None  # type: ignore[attr-defined]


def test_without_deepagents_the_name_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['deepagents'] = None\n"
        "import offprompt_langchain\n"
        "try:\n"
        "    offprompt_langchain.OffpromptBackend\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "OffpromptBackend needs deepagents" in out.stdout
    assert "pip install 'offprompt-langchain[deepagents]'" in out.stdout


def test_card_middleware_with_the_backend_as_the_whole_backend(backend: OffpromptBackend) -> None:
    backend.write("/large_tool_results/call_z", "everything here")
    stub = ToolMessage(
        content="Tool result too large ... at this path: /large_tool_results/call_z\n",
        tool_call_id="call_z",
    )
    # private-ok: the card middleware's switch is the subject
    out = backend.card_middleware()._with_cards([stub])  # type: ignore[attr-defined]
    assert (
        out is not None
        and 'artifact_namespace "deepagents-large_tool_results%2Fcall_z"' in out[0].content
    )
