"""``offprompt mcp serve`` driven by the SDK's client over stdio (real processes)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mcp_testing import OFFPROMPT, connect, serve_command, text_of, wire

from offprompt.artifacts import TextArtifact
from offprompt.longterm import LongTermMemory, MemoryFragment
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.task_memory import TaskMemory
from offprompt.vectors import QdrantVectorStore

READ_TOOLS = {
    "query_memory",
    "grep_memory",
    "read_memory",
    "json_memory",
    "summarize_memory",
    "list_outputs",
    "list_sessions",
    "read_session",
    "search_longterm",
}
WRITE_TOOLS = {"store_output", "append_message", "forget_scope"}


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo") / "home"
    subprocess.run(
        [*OFFPROMPT, "--home", str(home), "demo"],
        check=True,
        capture_output=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    return home


def one_namespace(home: Path, scope: Scope | None = None) -> str:
    with TaskMemory(path=home / "qdrant", scope=scope) as memory:
        (namespace,) = memory.namespaces()
    return namespace


@pytest.mark.timeout(600)  # the demo_home fixture runs the demo (up to 300 s)
async def test_serve_reads_what_the_demo_stored(demo_home, call_memory):
    namespace = one_namespace(demo_home)
    async with connect(serve_command(demo_home)) as session:
        assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
        outputs = text_of(await session.call_tool("list_outputs", {}))
        assert f"- {namespace}: tool fetch_server_log" in outputs
        found = await call_memory(session, "query_memory", namespace, query="rollback requested")
        # BM25 ranks only passages sharing a term with the query: the rollback line first
        # (all the passages found, or as many as the answer's bound holds whole)
        assert re.match(r"\d+ (passage\(s\)|of \d+ passages) from ", found), found[:300]
        assert "rollback of release" in found.split("\n\n[2]")[0]

        sessions = text_of(await session.call_tool("list_sessions", {}))
        assert "- offprompt-demo: 8 messages" in sessions
        window = text_of(
            await session.call_tool("read_session", {"session_id": "offprompt-demo", "limit": 3})
        )
        assert window.startswith("Session 'offprompt-demo': messages 5-7 of 8")
        assert window.count("\n[") == 3
        early = text_of(
            await session.call_tool(
                "read_session", {"session_id": "offprompt-demo", "start": 0, "limit": 1}
            )
        )
        assert "\n[0] " in early and "\n[1] " not in early
        assert "no long-term memory" in text_of(
            await session.call_tool("search_longterm", {"query": "anything"})
        )
        refused = await session.call_tool("store_output", {"tool_name": "x", "text": "y"})
        assert wire(refused)["isError"] and "unknown tool 'store_output'" in text_of(refused)


def _scoped_home(home: Path) -> str:
    """Outputs, a session and a long-term memory, all of user u1."""
    scope = Scope(user="u1")
    with TaskMemory(path=home / "qdrant", scope=scope) as memory:
        memory.process_output(
            "build", "call", TextArtifact("u1's build failed at step 7", name="build-u1")
        )
    store = SQLiteStore(home / "memory.db")
    try:
        messages = [Message.user("where did my build fail?"), Message.assistant("at step 7")]
        store.append("s1", messages, [5, 3], scope=Scope(user="u1", session="s1"))
    finally:
        store.close()
    vectors = QdrantVectorStore(path=str(home / "longterm"))
    try:
        LongTermMemory(vectors).write(
            MemoryFragment(observation="u1 prefers short answers", scope=scope)
        )
    finally:
        vectors.close()
    return "build-u1"


async def test_a_scope_sees_nothing_outside_itself(home, call_memory):
    namespace = _scoped_home(home)
    async with connect(serve_command(home, "--user", "u2")) as session:
        assert text_of(await session.call_tool("list_outputs", {})) == (
            "No stored outputs in this scope."
        )
        missing = await call_memory(session, "read_memory", namespace)
        assert missing.startswith(f'Error: Unknown artifact_namespace "{namespace}"')
        assert "No conversation sessions" in text_of(await session.call_tool("list_sessions", {}))
        window = text_of(await session.call_tool("read_session", {"session_id": "s1"}))
        assert window.startswith("Unknown session 's1'")
        recalled = text_of(await session.call_tool("search_longterm", {"query": "answers"}))
        assert "short answers" not in recalled
    async with connect(serve_command(home, "--user", "u1")) as session:
        assert "step 7" in await call_memory(session, "read_memory", namespace)
        window = text_of(await session.call_tool("read_session", {"session_id": "s1"}))
        assert "[1] assistant: at step 7" in window
        recalled = text_of(await session.call_tool("search_longterm", {"query": "answers"}))
        assert "u1 prefers short answers" in recalled


async def test_allow_write_stores_appends_and_forgets_after_confirmation(home, call_memory):
    namespace = _scoped_home(home)
    async with connect(serve_command(home, "--user", "u1", "--allow-write")) as session:
        assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS | WRITE_TOOLS
        reference = text_of(
            await session.call_tool(
                "store_output", {"tool_name": "notes", "text": "the deploy key rotates on Fridays"}
            )
        )
        assert reference.startswith('Output of "notes.call" was stored in memory with')
        stored = reference.split('artifact_namespace "')[1].split('"')[0]
        assert "Fridays" in await call_memory(session, "grep_memory", stored, pattern="Fridays")

        appended = await session.call_tool(
            "append_message", {"session_id": "s1", "role": "user", "text": "thanks"}
        )
        assert text_of(appended) == "Appended message 2 to session 's1'."
        assert "[2] user: thanks" in text_of(
            await session.call_tool("read_session", {"session_id": "s1"})
        )

        asked = text_of(await session.call_tool("forget_scope", {}))
        assert asked.startswith("This deletes everything stored for") and "confirm=true" in asked
        assert "step 7" in await call_memory(session, "read_memory", namespace)  # still there
        done = await session.call_tool("forget_scope", {"confirm": True})
        assert not wire(done)["isError"]
        assert text_of(await session.call_tool("list_outputs", {})) == (
            "No stored outputs in this scope."
        )
        assert "No conversation sessions" in text_of(await session.call_tool("list_sessions", {}))


async def test_forget_needs_a_scope_and_bad_arguments_are_named(home):
    async with connect(serve_command(home, "--allow-write")) as session:
        refused = await session.call_tool("forget_scope", {"confirm": True})
        assert wire(refused)["isError"]  # a refusal is an error, not a done
        assert text_of(refused).startswith("Error: Refused: this server has no scope.")
        # Clients that auto-approve read-only tools see which these are.
        hints = {
            t.name: {k: v for k, v in wire(t)["annotations"].items() if v is not None}
            for t in (await session.list_tools()).tools
        }
        for name in ("read_memory", "grep_memory", "json_memory", "list_outputs"):
            assert hints[name]["readOnlyHint"] is True and hints[name]["destructiveHint"] is False
        assert hints["forget_scope"]["destructiveHint"] is True
        assert hints["forget_scope"]["readOnlyHint"] is False
        assert hints["store_output"] == {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        }
        bad = await session.call_tool("read_session", {"session_id": "s1", "limit": 0})
        assert wire(bad)["isError"] and "bad arguments for read_session (limit)" in text_of(bad)


def test_a_home_already_open_elsewhere_is_shared(home):
    # Since issue 29 several processes share one home: the server starts beside it
    # (and ends cleanly at the end of its stdin) instead of being refused.
    with TaskMemory(path=home / "qdrant"):
        run = subprocess.run(
            [*serve_command(home)],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "open in another process" not in run.stderr


async def test_stored_outputs_are_resources_read_in_the_servers_scope_only(home):
    """Each read checks the scope: u2 cannot read u1's output by its URI."""
    namespace = _scoped_home(home)
    uri = f"offprompt://outputs/{namespace}"
    async with connect(serve_command(home, "--user", "u1")) as session:
        templates = wire(await session.list_resource_templates())["resourceTemplates"]
        first = templates[0]["uriTemplate"]
        assert first == "offprompt://outputs/{artifact_namespace}"
        (content,) = wire(await session.read_resource(uri))["contents"]
        assert "u1's build failed at step 7" in content["text"]
        lines = wire(await session.read_resource(uri + "/lines/1-1"))["contents"][0]["text"]
        assert "step 7" in lines
    async with connect(serve_command(home, "--user", "u2")) as session:
        with pytest.raises(Exception, match="Unknown artifact_namespace"):
            await session.read_resource(uri)
