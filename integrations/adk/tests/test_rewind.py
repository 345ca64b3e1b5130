"""A real ``Runner.rewind_async`` on our session and artifact services gives what it
gives on ADK's in-memory ones: state back, artifacts back, new files tombstoned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.artifacts import InMemoryArtifactService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from offprompt_adk import OffpromptArtifactService, OffpromptSessionService
from offprompt_adk.testing import ScriptedLlm, function_call


async def save_note(text: str, extra: bool, tool_context: ToolContext) -> str:
    """Save a note (and, with extra, a second file)."""
    await tool_context.save_artifact("note.txt", types.Part.from_text(text=text))
    if extra:
        await tool_context.save_artifact("extra.txt", types.Part.from_text(text="more"))
    tool_context.state["note"] = text
    return "saved"


def _services(kind: str, tmp_path: Path) -> tuple[Any, Any]:
    if kind == "adk":
        return InMemorySessionService(), InMemoryArtifactService()
    path = tmp_path / "memory.db"
    return OffpromptSessionService(path=path), OffpromptArtifactService(path=path)


@pytest.mark.parametrize("kind", ["adk", "offprompt"])
async def test_rewind_restores_state_and_artifacts(kind: str, tmp_path: Path) -> None:
    sessions, artifacts = _services(kind, tmp_path)
    script: list[Any] = [
        function_call("save_note", {"text": "v1", "extra": False}),
        "ok",
        function_call("save_note", {"text": "v2", "extra": True}),
        "ok",
    ]
    agent = LlmAgent(name="notes", model=ScriptedLlm(script=script), tools=[save_note])
    runner = Runner(
        app=App(name="notes", root_agent=agent),
        session_service=sessions,
        artifact_service=artifacts,
    )
    session = await sessions.create_session(app_name="notes", user_id="u")
    invocations = []
    for text in ("first", "second"):
        message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message
        ):
            invocations.append(event.invocation_id)
    second = invocations[-1]
    await runner.rewind_async(
        user_id="u", session_id=session.id, rewind_before_invocation_id=second
    )

    after = await sessions.get_session(app_name="notes", user_id="u", session_id=session.id)
    assert after.state["note"] == "v1"
    where = {"app_name": "notes", "user_id": "u", "session_id": session.id}
    note = await artifacts.load_artifact(filename="note.txt", **where)
    assert note == types.Part.from_text(text="v1")
    assert await artifacts.load_artifact(filename="extra.txt", **where) is None
    # Nothing is rewritten: the rewind added versions.
    assert await artifacts.list_versions(filename="note.txt", **where) == [0, 1, 2]
    assert await artifacts.list_versions(filename="extra.txt", **where) == [0, 1]
    await runner.close()
    if kind == "offprompt":
        sessions.close()
        artifacts.close()
