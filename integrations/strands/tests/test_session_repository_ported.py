"""Strands' own FileSessionManager tests, run on FileSessionManager and on ours.

Ported from strands-agents 1.62 ``tests/strands/session/test_file_session_manager.py``
(Apache-2.0), parametrized over Strands' ``FileSessionManager`` (the self-check: it is
its own repository) and ``OffpromptSessionRepository`` on a SQLite file and on an
offprompt ``InMemoryStore``. Where the original opens the JSON file written, the port
reads the record back through the repository (and, for ours, in a second repository on
the same file); the tests of the file layout itself (directories, symlinks, corrupt
JSON, ``open`` failing) are FileSessionManager's alone and are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import pytest
from offprompt_strands import OffpromptSessionRepository
from strands.agent.conversation_manager.null_conversation_manager import NullConversationManager
from strands.session.file_session_manager import FileSessionManager
from strands.types.content import ContentBlock
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

from offprompt.stores import InMemoryStore

KINDS = ["file", "offprompt-sqlite", "offprompt-memory"]


@pytest.fixture(params=KINDS)
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """``reopen()``: another repository on this test's one backing place."""
    opened: list[OffpromptSessionRepository] = []
    memory_store = InMemoryStore()

    def make() -> Any:
        if request.param == "file":
            return FileSessionManager(session_id="test", storage_dir=str(tmp_path / "sessions"))
        if request.param == "offprompt-sqlite":
            repo = OffpromptSessionRepository(path=tmp_path / "memory.db")
        else:
            repo = OffpromptSessionRepository(store=memory_store)
        opened.append(repo)
        return repo

    yield make
    for repo in opened:
        repo.close()
    memory_store.close()


@pytest.fixture
def file_manager(reopen: Callable[[], Any]) -> Any:
    return reopen()


@pytest.fixture
def sample_session() -> Session:
    return Session(session_id="test-session", session_type=SessionType.AGENT)


@pytest.fixture
def sample_agent() -> SessionAgent:
    return SessionAgent(
        agent_id="test-agent",
        state={"key": "value"},
        conversation_manager_state=NullConversationManager().get_state(),
    )


@pytest.fixture
def sample_message() -> SessionMessage:
    return SessionMessage.from_message(
        message={"role": "user", "content": [ContentBlock(text="Hello world")]}, index=0
    )


@pytest.fixture
def mock_multi_agent() -> Mock:
    """Strands' stand-in for a ``MultiAgentBase`` (what the repository calls of one)."""
    mock = Mock()
    mock.id = "test-multi-agent"
    mock.state = {"key": "value"}
    mock.serialize_state.return_value = {"id": "test-multi-agent", "state": {"key": "value"}}
    return mock


def test_create_session(file_manager: Any, reopen: Any, sample_session: Session) -> None:
    file_manager.create_session(sample_session)
    data = reopen().read_session(sample_session.session_id).to_dict()
    assert data["session_id"] == sample_session.session_id
    assert data["session_type"] == sample_session.session_type


def test_create_existing_session_raises(file_manager: Any, sample_session: Session) -> None:
    file_manager.create_session(sample_session)
    with pytest.raises(SessionException, match="Session test-session already exists"):
        file_manager.create_session(sample_session)


def test_read_session(file_manager: Any, sample_session: Session) -> None:
    file_manager.create_session(sample_session)
    result = file_manager.read_session(sample_session.session_id)
    assert result.session_id == sample_session.session_id
    assert result.session_type == sample_session.session_type


def test_read_nonexistent_session(file_manager: Any) -> None:
    assert file_manager.read_session("nonexistent-session") is None


def test_delete_session(
    file_manager: Any,
    sample_session: Session,
    sample_agent: SessionAgent,
    sample_message: SessionMessage,
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, sample_message)
    assert file_manager.read_session(sample_session.session_id) is not None

    file_manager.delete_session(sample_session.session_id)

    assert file_manager.read_session(sample_session.session_id) is None
    assert file_manager.read_agent(sample_session.session_id, sample_agent.agent_id) is None
    assert file_manager.read_message(sample_session.session_id, sample_agent.agent_id, 0) is None


def test_delete_nonexistent_session(file_manager: Any) -> None:
    with pytest.raises(SessionException, match="Session nonexistent-session does not exist"):
        file_manager.delete_session("nonexistent-session")


def test_create_agent(
    file_manager: Any, reopen: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    data = reopen().read_agent(sample_session.session_id, sample_agent.agent_id).to_dict()
    assert data["agent_id"] == sample_agent.agent_id
    assert data["state"] == sample_agent.state
    assert data == sample_agent.to_dict()


def test_read_agent(file_manager: Any, sample_session: Session, sample_agent: SessionAgent) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    result = file_manager.read_agent(sample_session.session_id, sample_agent.agent_id)
    assert result.agent_id == sample_agent.agent_id
    assert result.state == sample_agent.state


def test_read_nonexistent_agent(file_manager: Any, sample_session: Session) -> None:
    assert file_manager.read_agent(sample_session.session_id, "nonexistent_agent") is None


def test_update_agent(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    created_at = sample_agent.created_at

    sample_agent.state = {"updated": "value"}
    sample_agent.created_at = "2000-01-01T00:00:00+00:00"
    file_manager.update_agent(sample_session.session_id, sample_agent)

    result = file_manager.read_agent(sample_session.session_id, sample_agent.agent_id)
    assert result.state == {"updated": "value"}
    assert result.created_at == created_at  # (added: update keeps created_at, as the source does)


def test_update_nonexistent_agent(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    with pytest.raises(
        SessionException, match="Agent test-agent in session test-session does not exist"
    ):
        file_manager.update_agent(sample_session.session_id, sample_agent)


def test_create_message(
    file_manager: Any,
    reopen: Any,
    sample_session: Session,
    sample_agent: SessionAgent,
    sample_message: SessionMessage,
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, sample_message)
    stored = reopen().read_message(
        sample_session.session_id, sample_agent.agent_id, sample_message.message_id
    )
    assert stored.to_dict()["message_id"] == sample_message.message_id
    assert stored.to_dict() == sample_message.to_dict()


def test_message_durable_id_persists(
    file_manager: Any, reopen: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    message = SessionMessage.from_message(
        message={
            "role": "user",
            "content": [ContentBlock(text="Hello")],
            "tracking_id": "durable-1",
        },
        index=0,
    )
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, message)

    again = reopen().read_message(
        sample_session.session_id, sample_agent.agent_id, message.message_id
    )
    assert again.to_dict()["message"]["tracking_id"] == "durable-1"
    result = file_manager.read_message(
        sample_session.session_id, sample_agent.agent_id, message.message_id
    )
    assert result.to_message()["tracking_id"] == "durable-1"


def test_message_with_bytes_round_trips(
    file_manager: Any, reopen: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    """(Added) an image block's bytes come back exactly, as FileSessionManager's do."""
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    image: Any = {"image": {"format": "png", "source": {"bytes": png}}}
    message = SessionMessage.from_message(message={"role": "user", "content": [image]}, index=0)
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, message)
    result = reopen().read_message(sample_session.session_id, sample_agent.agent_id, 0)
    assert result.to_message()["content"][0]["image"]["source"]["bytes"] == png


def test_read_message(
    file_manager: Any,
    sample_session: Session,
    sample_agent: SessionAgent,
    sample_message: SessionMessage,
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, sample_message)
    sample_message.message_id = sample_message.message_id + 1
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, sample_message)

    result = file_manager.read_message(
        sample_session.session_id, sample_agent.agent_id, sample_message.message_id
    )
    assert result.message_id == sample_message.message_id
    assert result.message["role"] == sample_message.message["role"]
    assert result.message["content"] == sample_message.message["content"]


def test_read_messages_with_new_agent(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    assert file_manager.read_message(sample_session.session_id, sample_agent.agent_id, 999) is None


def test_read_nonexistent_message(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    assert file_manager.read_message(sample_session.session_id, sample_agent.agent_id, 999) is None


def _create_messages(repo: Any, session: Session, agent: SessionAgent, count: int) -> None:
    for i in range(count):
        message = SessionMessage(
            message={"role": "user", "content": [ContentBlock(text=f"Message {i}")]}, message_id=i
        )
        repo.create_message(session.session_id, agent.agent_id, message)


def _texts(messages: list[SessionMessage]) -> list[str]:
    return [m.message["content"][0]["text"] for m in messages]


def test_list_messages_all(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    _create_messages(file_manager, sample_session, sample_agent, 5)
    result = file_manager.list_messages(sample_session.session_id, sample_agent.agent_id)
    assert len(result) == 5
    assert _texts(result) == [f"Message {i}" for i in range(5)]


def test_list_messages_orders_by_id_not_text(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    """(Added) message 10 comes after message 9, as the source sorts ids as ints."""
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    _create_messages(file_manager, sample_session, sample_agent, 12)
    result = file_manager.list_messages(sample_session.session_id, sample_agent.agent_id)
    assert [m.message_id for m in result] == list(range(12))


def test_list_messages_with_limit(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    _create_messages(file_manager, sample_session, sample_agent, 10)
    result = file_manager.list_messages(sample_session.session_id, sample_agent.agent_id, limit=3)
    assert len(result) == 3
    assert _texts(result) == ["Message 0", "Message 1", "Message 2"]


def test_list_messages_with_offset(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    _create_messages(file_manager, sample_session, sample_agent, 10)
    result = file_manager.list_messages(sample_session.session_id, sample_agent.agent_id, offset=5)
    assert len(result) == 5
    assert _texts(result)[0] == "Message 5"
    both = file_manager.list_messages(
        sample_session.session_id, sample_agent.agent_id, limit=2, offset=7
    )
    assert _texts(both) == ["Message 7", "Message 8"]


def test_list_messages_with_new_agent(
    file_manager: Any, sample_session: Session, sample_agent: SessionAgent
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    assert len(file_manager.list_messages(sample_session.session_id, sample_agent.agent_id)) == 0


def test_list_messages_of_unknown_agent_raises(file_manager: Any, sample_session: Session) -> None:
    """(Added) the source's error for an agent never created."""
    file_manager.create_session(sample_session)
    with pytest.raises(
        SessionException,
        match="Messages directory missing from agent: ghost in session test-session",
    ):
        file_manager.list_messages(sample_session.session_id, "ghost")


def test_update_message(
    file_manager: Any,
    sample_session: Session,
    sample_agent: SessionAgent,
    sample_message: SessionMessage,
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    file_manager.create_message(sample_session.session_id, sample_agent.agent_id, sample_message)

    sample_message.message["content"] = [ContentBlock(text="Updated content")]
    file_manager.update_message(sample_session.session_id, sample_agent.agent_id, sample_message)

    result = file_manager.read_message(
        sample_session.session_id, sample_agent.agent_id, sample_message.message_id
    )
    assert result.message["content"][0]["text"] == "Updated content"


def test_update_nonexistent_message(
    file_manager: Any,
    sample_session: Session,
    sample_agent: SessionAgent,
    sample_message: SessionMessage,
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_agent(sample_session.session_id, sample_agent)
    with pytest.raises(SessionException, match="Message 0 does not exist"):
        file_manager.update_message(
            sample_session.session_id, sample_agent.agent_id, sample_message
        )


@pytest.mark.parametrize("session_id", ["a/../b", "a/b"])
def test_invalid_session_id(session_id: str, file_manager: Any) -> None:
    with pytest.raises(
        ValueError, match=f"session_id={session_id} | id cannot contain path separators"
    ):
        file_manager.read_session(session_id)


@pytest.mark.parametrize("agent_id", ["a/../b", "a/b"])
def test_invalid_agent_id(agent_id: str, file_manager: Any) -> None:
    with pytest.raises(
        ValueError, match=f"agent_id={agent_id} | id cannot contain path separators"
    ):
        file_manager.read_agent("session1", agent_id)


@pytest.mark.parametrize(
    "message_id",
    ["../../../secret", "../../attack", "../escape", "path/traversal", "not_an_int", None, []],
)
def test_invalid_message_id(message_id: Any, file_manager: Any) -> None:
    with pytest.raises(ValueError, match=r"message_id=<.*> \| message id must be an integer"):
        file_manager.read_message("session1", "agent1", message_id)


def test_create_multi_agent(
    file_manager: Any, reopen: Any, sample_session: Session, mock_multi_agent: Mock
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_multi_agent(sample_session.session_id, mock_multi_agent)
    data = reopen().read_multi_agent(sample_session.session_id, mock_multi_agent.id)
    assert data["id"] == mock_multi_agent.id
    assert data["state"] == mock_multi_agent.state


def test_read_multi_agent(
    file_manager: Any, sample_session: Session, mock_multi_agent: Mock
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_multi_agent(sample_session.session_id, mock_multi_agent)
    result = file_manager.read_multi_agent(sample_session.session_id, mock_multi_agent.id)
    assert result["id"] == mock_multi_agent.id
    assert result["state"] == mock_multi_agent.state


def test_read_nonexistent_multi_agent(file_manager: Any, sample_session: Session) -> None:
    assert file_manager.read_multi_agent(sample_session.session_id, "nonexistent") is None


def test_update_multi_agent(
    file_manager: Any, sample_session: Session, mock_multi_agent: Mock
) -> None:
    file_manager.create_session(sample_session)
    file_manager.create_multi_agent(sample_session.session_id, mock_multi_agent)

    updated_mock = Mock()
    updated_mock.id = mock_multi_agent.id
    updated_mock.serialize_state.return_value = {
        "id": mock_multi_agent.id,
        "state": {"updated": "value"},
    }
    file_manager.update_multi_agent(sample_session.session_id, updated_mock)

    result = file_manager.read_multi_agent(sample_session.session_id, mock_multi_agent.id)
    assert result["state"] == {"updated": "value"}


def test_update_nonexistent_multi_agent(file_manager: Any, sample_session: Session) -> None:
    file_manager.create_session(sample_session)
    nonexistent_mock = Mock()
    nonexistent_mock.id = "nonexistent"
    nonexistent_mock.serialize_state.return_value = {"id": "nonexistent", "state": {}}
    with pytest.raises(
        SessionException, match="MultiAgent state nonexistent in session test-session"
    ):
        file_manager.update_multi_agent(sample_session.session_id, nonexistent_mock)


def test_sessions_are_isolated(file_manager: Any, sample_agent: SessionAgent) -> None:
    """(Added) one session's agents and messages never show in another's."""
    for sid in ("alpha", "beta"):
        file_manager.create_session(Session(session_id=sid, session_type=SessionType.AGENT))
        file_manager.create_agent(sid, sample_agent)
    message = SessionMessage(
        message={"role": "user", "content": [ContentBlock(text="a")]}, message_id=0
    )
    file_manager.create_message("alpha", sample_agent.agent_id, message)
    assert len(file_manager.list_messages("alpha", sample_agent.agent_id)) == 1
    assert file_manager.list_messages("beta", sample_agent.agent_id) == []
    file_manager.delete_session("alpha")
    assert file_manager.read_agent("beta", sample_agent.agent_id) is not None
