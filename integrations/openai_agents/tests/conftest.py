"""Shared fixtures for the OpenAI Agents SDK adapter tests.

Only the model is faked: :class:`~offprompt_openai_agents.testing.ScriptedModel` is a
real ``agents`` ``Model`` subclass that answers from a script and records its inputs.
The SDK's tracing is turned off (it would try to export spans to OpenAI).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from offprompt_openai_agents import OffpromptSession

set_tracing_disabled(True)
# The ported tests share helpers in agents_testing.py beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def make_session(db_path: Path) -> Iterator[Any]:
    """``make_session(session_id, **kwargs)``: an OffpromptSession on one SQLite file per test."""
    opened: list[OffpromptSession] = []

    def make(session_id: str, **kwargs: Any) -> OffpromptSession:
        if "store" not in kwargs and "memory" not in kwargs:
            kwargs.setdefault("path", db_path)
        session = OffpromptSession(session_id, **kwargs)
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()
