"""OffpromptSessionService beyond ADK's ported tests: a real Runner, a reopened file,
two services on one file, ids that are not scope names, and bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.genai import types
from offprompt_adk import OffpromptSessionService
from offprompt_adk.testing import ScriptedLlm, function_call

from offprompt.errors import ValidationError
from offprompt.interop.adk import RESERVED
from offprompt.scope import Scope
from offprompt.stores import InMemoryStore


def lookup(city: str) -> dict[str, str]:
    """The weather of a city."""
    return {"city": city, "weather": "rain"}


async def test_runner_history_survives_a_reopened_file(db_path: Path) -> None:
    service = OffpromptSessionService(path=db_path)
    llm = ScriptedLlm(script=[function_call("lookup", {"city": "Oslo"}), "Rain in Oslo."])
    agent = LlmAgent(name="weather", model=llm, tools=[lookup], output_key="temp:last")
    runner = Runner(app=App(name="weather_app", root_agent=agent), session_service=service)
    session = await service.create_session(
        app_name="weather_app", user_id="u1", state={"user:lang": "nb"}
    )
    message = types.Content(role="user", parts=[types.Part.from_text(text="Weather in Oslo?")])
    produced = [
        e async for e in runner.run_async(user_id="u1", session_id=session.id, new_message=message)
    ]
    await runner.close()
    service.close()

    reopened = OffpromptSessionService(path=db_path)
    stored = await reopened.get_session(app_name="weather_app", user_id="u1", session_id=session.id)
    assert stored is not None
    # The user message, the call, the response, the answer: each exactly as produced.
    assert [e.model_dump() for e in stored.events[1:]] == [e.model_dump() for e in produced]
    assert stored.events[0].content.parts[0].text == "Weather in Oslo?"
    assert stored.state == {"user:lang": "nb"}  # temp: output never stored
    # Each event is an offprompt message in the app/user partition.
    messages = reopened.store.read(session.id, scope=Scope(agent="weather_app", user="u1"))
    assert [m.message.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1].message.text == "Rain in Oslo."
    assert RESERVED in messages[-1].message.meta
    reopened.close()


async def test_two_services_on_one_file_detect_stale_copies(db_path: Path) -> None:
    first = OffpromptSessionService(path=db_path)
    second = OffpromptSessionService(path=db_path)
    created = await first.create_session(app_name="a", user_id="u")
    mine = await first.get_session(app_name="a", user_id="u", session_id=created.id)
    theirs = await second.get_session(app_name="a", user_id="u", session_id=created.id)
    now = created.last_update_time
    results = await asyncio.gather(
        first.append_event(mine, Event(author="user", timestamp=now + 1)),
        second.append_event(theirs, Event(author="user", timestamp=now + 2)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, StaleSessionError) for r in results) == 1
    stored = await first.get_session(app_name="a", user_id="u", session_id=created.id)
    assert len(stored.events) == 1
    first.close()
    second.close()


@pytest.mark.parametrize("user_id", ["a/b", "..", "", "50%", "user@example.com", "ü ser"])
async def test_any_user_id_is_kept_apart(user_id: str) -> None:
    service = OffpromptSessionService(store=InMemoryStore())
    session = await service.create_session(app_name="app/x", user_id=user_id, state={"user:k": 1})
    await service.append_event(
        session, Event(author="user", actions=EventActions(state_delta={"s": user_id}))
    )
    other = await service.create_session(app_name="app/x", user_id=user_id + "-other")
    assert other.state == {}
    listed = (await service.list_sessions(app_name="app/x")).sessions
    assert {(s.user_id, s.id) for s in listed} == {
        (user_id, session.id),
        (user_id + "-other", other.id),
    }
    got = await service.get_session(app_name="app/x", user_id=user_id, session_id=session.id)
    assert got.state == {"user:k": 1, "s": user_id}
    assert await service.get_user_state(app_name="app/x", user_id=user_id) == {"k": 1}


def test_path_and_store_together_are_refused(db_path: Path) -> None:
    with pytest.raises(ValidationError, match="at most one of path and store"):
        OffpromptSessionService(path=db_path, store=InMemoryStore())


async def test_a_closed_service_says_so() -> None:
    service = OffpromptSessionService(store=InMemoryStore())
    service.close()
    service.close()
    with pytest.raises(ValidationError, match="closed"):
        await service.create_session(app_name="a", user_id="u")
