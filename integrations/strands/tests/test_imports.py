"""The public API of offprompt_strands is exactly what DESIGN.md names, and each name works."""

from __future__ import annotations

import offprompt_strands
from strands.session.session_repository import SessionRepository
from strands.tools.tools import PythonAgentTool
from strands.vended_plugins.context_offloader import Storage


def test_all_is_exactly_the_public_api() -> None:
    assert sorted(offprompt_strands.__all__) == [
        "CONTENT_TYPE_META",
        "OffpromptSessionRepository",
        "OffpromptStorage",
        "SESSION_PREFIX",
        "memory_tools",
    ]
    for name in offprompt_strands.__all__:
        assert getattr(offprompt_strands, name) is not None


def test_the_classes_are_what_strands_takes() -> None:
    storage = offprompt_strands.OffpromptStorage()
    try:
        assert isinstance(storage, Storage)  # ContextOffloader's runtime-checkable protocol
        assert all(
            isinstance(t, PythonAgentTool) for t in offprompt_strands.memory_tools(storage.memory)
        )
    finally:
        storage.close()
    assert issubclass(offprompt_strands.OffpromptSessionRepository, SessionRepository)
