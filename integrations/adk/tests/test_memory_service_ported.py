"""ADK's own memory-service tests, ported, run against ADK's service and ours.

Ported from google/adk-python ``tests/unittests/memory/test_in_memory_memory_service.py``
(Apache-2.0, Copyright 2025 Google LLC); each test keeps its upstream name. Upstream
checks two tests through ``InMemoryMemoryService``'s private dict; here they check
the same through ``search_memory``, which every service has. The ``memory_service``
fixture yields ADK's ``InMemoryMemoryService`` (the self-check) and
``OffpromptMemoryService`` on a SQLite file and on an ``InMemoryStore``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.sessions.session import Session
from google.genai import types
from offprompt_adk import OffpromptMemoryService

from offprompt.stores import InMemoryStore

MOCK_APP_NAME = "test-app"
MOCK_USER_ID = "test-user"
MOCK_OTHER_USER_ID = "another-user"

MOCK_SESSION_1 = Session(
    app_name=MOCK_APP_NAME,
    user_id=MOCK_USER_ID,
    id="session-1",
    last_update_time=1000,
    events=[
        Event(
            id="event-1a",
            invocation_id="inv-1",
            author="user",
            timestamp=12345,
            content=types.Content(parts=[types.Part(text="The ADK is a great toolkit.")]),
        ),
        # Event with no content, should be ignored by the service
        Event(id="event-1b", invocation_id="inv-2", author="user", timestamp=12346),
        Event(
            id="event-1c",
            invocation_id="inv-3",
            author="model",
            timestamp=12347,
            content=types.Content(
                parts=[types.Part(text="I agree. The Agent Development Kit (ADK) rocks!")]
            ),
        ),
    ],
)

MOCK_SESSION_2 = Session(
    app_name=MOCK_APP_NAME,
    user_id=MOCK_USER_ID,
    id="session-2",
    last_update_time=2000,
    events=[
        Event(
            id="event-2a",
            invocation_id="inv-4",
            author="user",
            timestamp=54321,
            content=types.Content(parts=[types.Part(text="I like to code in Python.")]),
        ),
    ],
)

MOCK_SESSION_DIFFERENT_USER = Session(
    app_name=MOCK_APP_NAME,
    user_id=MOCK_OTHER_USER_ID,
    id="session-3",
    last_update_time=3000,
    events=[
        Event(
            id="event-3a",
            invocation_id="inv-5",
            author="user",
            timestamp=60000,
            content=types.Content(parts=[types.Part(text="This is a secret.")]),
        ),
    ],
)

MOCK_SESSION_WITH_NO_EVENTS = Session(
    app_name=MOCK_APP_NAME, user_id=MOCK_USER_ID, id="session-4", last_update_time=4000
)


@pytest.fixture(params=["adk_in_memory", "offprompt_sqlite", "offprompt_in_memory_store"])
async def memory_service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "adk_in_memory":
        service: Any = InMemoryMemoryService()
    elif request.param == "offprompt_sqlite":
        service = OffpromptMemoryService(path=tmp_path / "memory.db")
    else:
        service = OffpromptMemoryService(store=InMemoryStore())
    yield service
    if isinstance(service, OffpromptMemoryService):
        service.close()


async def _search(service: Any, query: str, user_id: str = MOCK_USER_ID) -> list[Any]:
    found = await service.search_memory(app_name=MOCK_APP_NAME, user_id=user_id, query=query)
    return list(found.memories)


async def test_add_session_to_memory(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    # The event with no content was filtered out; both others are remembered, in order.
    found = await _search(memory_service, "ADK toolkit agree")
    assert [m.id for m in found] == ["event-1a", "event-1c"]
    # Adding the session again replaces, never duplicates.
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    assert [m.id for m in await _search(memory_service, "ADK")] == ["event-1a", "event-1c"]


async def test_add_session_with_no_events_to_memory(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_WITH_NO_EVENTS)
    assert await _search(memory_service, "anything") == []


async def test_search_memory_simple_match(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    await memory_service.add_session_to_memory(MOCK_SESSION_2)
    found = await _search(memory_service, "Python")
    assert len(found) == 1
    assert found[0].content.parts[0].text == "I like to code in Python."
    assert found[0].author == "user"


async def test_search_memory_case_insensitive_match(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    found = await _search(memory_service, "development")
    assert len(found) == 1
    assert found[0].content.parts[0].text == "I agree. The Agent Development Kit (ADK) rocks!"


async def test_search_memory_multiple_matches(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    found = await _search(memory_service, "How about ADK?")
    assert len(found) == 2
    texts = {memory.content.parts[0].text for memory in found}
    assert "The ADK is a great toolkit." in texts
    assert "I agree. The Agent Development Kit (ADK) rocks!" in texts


async def test_search_memory_no_match(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    assert not await _search(memory_service, "nonexistent")


async def test_search_memory_is_scoped_by_user(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    await memory_service.add_session_to_memory(MOCK_SESSION_DIFFERENT_USER)
    assert not await _search(memory_service, "secret")
    found = await _search(memory_service, "secret", MOCK_OTHER_USER_ID)
    assert len(found) == 1
    assert found[0].content.parts[0].text == "This is a secret."


async def test_add_events_to_memory_is_a_delta(memory_service: Any) -> None:
    events = MOCK_SESSION_2.events
    for _ in range(2):
        await memory_service.add_events_to_memory(
            app_name=MOCK_APP_NAME, user_id=MOCK_USER_ID, events=events, session_id="session-2"
        )
    found = await _search(memory_service, "python")
    assert [m.id for m in found] == ["event-2a"]
    assert found[0].content == MOCK_SESSION_2.events[0].content


async def test_deleted_memory_stays_deleted(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    await memory_service.delete_memory(
        app_name=MOCK_APP_NAME, user_id=MOCK_USER_ID, memory_id="event-1a"
    )
    assert [m.id for m in await _search(memory_service, "ADK")] == ["event-1c"]
    await memory_service.add_session_to_memory(MOCK_SESSION_1)
    assert [m.id for m in await _search(memory_service, "ADK")] == ["event-1c"]


async def test_search_memory_keeps_the_ten_best(memory_service: Any) -> None:
    events = [
        Event(
            id=f"e{i}",
            author="user",
            timestamp=i,
            content=types.Content(parts=[types.Part(text="alpha" + (" beta" if i == 11 else ""))]),
        )
        for i in range(12)
    ]
    session = Session(app_name=MOCK_APP_NAME, user_id=MOCK_USER_ID, id="many", events=events)
    await memory_service.add_session_to_memory(session)
    found = await _search(memory_service, "alpha beta")
    assert len(found) == 10
    assert found[0].id == "e11"
    assert [m.id for m in found[1:]] == [f"e{i}" for i in range(9)]
