"""Real Strands agents keeping their session in an ``OffpromptSessionRepository``.

Only the model is scripted. A second agent, on a second repository over the same
SQLite file (as another process would open it), resumes the conversation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from offprompt_strands import OffpromptSessionRepository, OffpromptStorage
from strands import Agent, tool
from strands.session.repository_session_manager import RepositorySessionManager
from strands.vended_plugins.context_offloader import ContextOffloader
from strands_testing import ScriptedModel, say, tool_call

from offprompt.stores import SQLiteStore

BIG = "\n".join(f"row {i}: value {i * 7}" for i in range(4000))


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    return f"code {code} means 'green'"


@tool
def dump_table() -> str:
    """Dump the whole table."""
    return BIG


def _agent(repo: OffpromptSessionRepository, model: ScriptedModel, **kwargs: object) -> Agent:
    manager = RepositorySessionManager(session_id="user-42", session_repository=repo)
    return Agent(
        agent_id="helper",
        model=model,
        session_manager=manager,
        callback_handler=None,
        **kwargs,  # type: ignore[arg-type]
    )


def test_conversation_resumes_from_another_repository(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with OffpromptSessionRepository(path=db) as repo:
        first = ScriptedModel([tool_call("lookup", "t1", code="7431"), say("7431 means green.")])
        agent = _agent(repo, first, tools=[lookup])
        agent("What does 7431 mean?")
        written = [m["content"] for m in agent.messages]
    store = SQLiteStore(db)
    try:
        with OffpromptSessionRepository(store=store) as again:
            second = ScriptedModel([say("You asked about 7431.")])
            resumed = _agent(again, second)
            assert [m["content"] for m in resumed.messages] == written
            resumed("What did I ask?")
            assert len(second.calls) == 1
            sent = second.calls[0]
            assert sent[0]["content"][0]["text"] == "What does 7431 mean?"
            assert any("toolResult" in block for m in sent for block in m["content"])
            messages = again.list_messages("user-42", "helper")
            assert [m.message["role"] for m in messages] == [
                "user",
                "assistant",
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            assert again.list_messages("user-42", "helper", limit=2, offset=4)[1].message[
                "content"
            ] == [{"text": "You asked about 7431."}]
            again.delete_session("user-42")
            assert again.read_session("user-42") is None
    finally:
        store.close()


def test_offloaded_session_keeps_the_reference_not_the_output(tmp_path: Path) -> None:
    """With ContextOffloader on OffpromptStorage, the session stores the preview and the
    reference; the full output lives once, in task memory."""
    with (
        OffpromptSessionRepository(path=tmp_path / "memory.db") as repo,
        OffpromptStorage(path=tmp_path / "tm") as storage,
    ):
        model = ScriptedModel([tool_call("dump_table", "t1"), say("The table has 4000 rows.")])
        offloader = ContextOffloader(storage=storage, max_result_tokens=1_000, preview_tokens=100)
        agent = _agent(repo, model, tools=[dump_table], plugins=[offloader])
        agent("How many rows?")
        stored = repr([m.to_dict() for m in repo.list_messages("user-42", "helper")])
        assert "row 2000:" not in stored  # (a preview shows the head, and the tail from 1.65)
        assert len(stored) < len(BIG) // 5
        assert "[Offloaded:" in stored
        namespaces = [ns for ns in storage.memory.namespaces() if ns.startswith("strands-")]
        assert len(namespaces) == 1
        assert namespaces[0] in stored
        assert storage.retrieve_sync(namespaces[0])[0] == BIG.encode()


def test_bad_construction_is_refused(tmp_path: Path) -> None:
    from offprompt.errors import ValidationError

    store = SQLiteStore(tmp_path / "m.db")
    try:
        with pytest.raises(ValidationError, match="not both"):
            OffpromptSessionRepository(path=tmp_path / "m.db", store=store)
        with pytest.raises(ValidationError, match="offprompt store"):
            OffpromptSessionRepository(store="memory.db")  # type: ignore[arg-type]
    finally:
        store.close()
