"""ADK's own ``get_user_state`` tests, ported, over ADK's services and ours.

Ported from google/adk-python ``tests/unittests/sessions/test_get_user_state.py``
(Apache-2.0, Copyright 2026 Google LLC); each test keeps its upstream name. The backends
are those of ``test_session_service_ported.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from test_session_service_ported import BACKENDS, _close, _make

_APP = "test-app"
_USER = "user-42"
_OTHER_USER = "user-99"


@pytest.fixture(params=BACKENDS)
async def session_service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    service = _make(request.param, tmp_path)
    yield service
    await _close(service)


def _delta(delta: dict[str, Any]) -> Event:
    return Event(author="system", actions=EventActions(state_delta=delta))


async def test_get_user_state_returns_empty_dict_when_no_state_exists(session_service: Any) -> None:
    assert await session_service.get_user_state(app_name=_APP, user_id=_USER) == {}


async def test_get_user_state_returns_state_written_via_append_event(session_service: Any) -> None:
    session = await session_service.create_session(app_name=_APP, user_id=_USER)
    await session_service.append_event(
        session, _delta({"user:profile": {"name": "Alice"}, "session_key": 1})
    )
    state = await session_service.get_user_state(app_name=_APP, user_id=_USER)
    assert state == {"profile": {"name": "Alice"}}
    assert "session_key" not in state


async def test_get_user_state_is_not_visible_across_users(session_service: Any) -> None:
    session = await session_service.create_session(app_name=_APP, user_id=_USER)
    await session_service.append_event(session, _delta({"user:secret": "only-for-user-42"}))
    assert await session_service.get_user_state(app_name=_APP, user_id=_OTHER_USER) == {}


async def test_get_user_state_available_before_session_is_created(session_service: Any) -> None:
    first_session = await session_service.create_session(app_name=_APP, user_id=_USER)
    await session_service.append_event(first_session, _delta({"user:ctx": {"v": 1}}))
    state = await session_service.get_user_state(app_name=_APP, user_id=_USER)
    assert state == {"ctx": {"v": 1}}


async def test_get_user_state_reflects_latest_write(session_service: Any) -> None:
    session = await session_service.create_session(app_name=_APP, user_id=_USER)
    await session_service.append_event(session, _delta({"user:counter": 1}))
    await session_service.append_event(session, _delta({"user:counter": 2}))
    state = await session_service.get_user_state(app_name=_APP, user_id=_USER)
    assert state["counter"] == 2
