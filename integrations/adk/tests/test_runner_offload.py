"""A real ADK ``Runner`` run: a large tool result goes to task memory, the model sees the
reference, and reads the result back through a memory tool (only the model is scripted)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.genai import types
from offprompt_adk import OffpromptPlugin, OffpromptSessionService
from offprompt_adk.testing import ScriptedLlm, function_call, function_responses

from offprompt.errors import ValidationError
from offprompt.task_memory import TaskMemory

LOGS = "".join(f"2026-12-07 10:{i % 60:02d} worker-{i} ok\n" for i in range(400)) + (
    "2026-12-07 11:00 worker-7431 disk full on /var\n"
)


def fetch_logs(host: str) -> str:
    """Fetch the logs of a host."""
    return LOGS


def small_status(host: str) -> dict[str, Any]:
    """A host's status."""
    return {"host": host, "status": "ok"}


def _namespace(request: Any) -> str:
    (response,) = [r for r in function_responses(request) if "result" in r][-1:]
    found = re.search(r'artifact_namespace "([^"]+)"', response["result"])
    assert found, response
    return found.group(1)


async def _run(plugin: OffpromptPlugin, llm: ScriptedLlm, tools: list[Any]) -> list[Any]:
    agent = LlmAgent(name="ops", model=llm, instruction="Answer.", tools=tools)
    runner = Runner(
        app=App(name="ops_app", root_agent=agent, plugins=[plugin]),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    message = types.Content(role="user", parts=[types.Part.from_text(text="why is 7431 down?")])
    events = []
    async for event in runner.run_async(user_id="u1", session_id="s1", new_message=message):
        events.append(event)
    await runner.close()
    return events


@pytest.mark.asyncio
async def test_large_result_is_offloaded_and_read_back(db_path: Path) -> None:
    memory = TaskMemory(path=db_path.parent / "task", index="sync")
    plugin = OffpromptPlugin(memory, min_tokens=500)

    def grep(request: Any) -> types.Part:
        return function_call(
            "grep_memory", {"artifact_namespace": _namespace(request), "pattern": "7431"}
        )

    llm = ScriptedLlm(script=[function_call("fetch_logs", {"host": "h1"}), grep, "disk full"])
    events = await _run(plugin, llm, [fetch_logs, *plugin.tools])

    # The model saw the reference, not the logs.
    seen = function_responses(llm.requests[1])
    assert len(seen) == 1
    assert set(seen[0]) == {"result"}
    assert "was stored in memory" in seen[0]["result"]
    assert "worker-200 " not in seen[0]["result"]  # the card previews only the ends
    assert len(seen[0]["result"]) < len(LOGS) // 5
    # The memory tool's answer found the line, and was not stored again.
    answers = function_responses(llm.requests[2])
    assert "disk full on /var" in answers[-1]["result"]
    assert "was stored in memory" not in answers[-1]["result"]
    # The stored output is the tool's string, byte for byte.
    namespace = _namespace(llm.requests[1])
    assert memory.load_artifacts(namespace).value[0].value == LOGS
    assert events[-1].content.parts[0].text == "disk full"
    memory.close()


@pytest.mark.asyncio
async def test_small_result_passes_unchanged(db_path: Path) -> None:
    memory = TaskMemory(path=db_path.parent / "task")
    plugin = OffpromptPlugin(memory, min_tokens=500)
    llm = ScriptedLlm(script=[function_call("small_status", {"host": "h1"}), "fine"])
    await _run(plugin, llm, [small_status])
    assert function_responses(llm.requests[1]) == [{"host": "h1", "status": "ok"}]
    memory.close()


@pytest.mark.asyncio
async def test_dict_result_is_stored_as_its_json(db_path: Path) -> None:
    memory = TaskMemory(path=db_path.parent / "task", index="sync")
    plugin = OffpromptPlugin(memory, min_tokens=0)
    result = {"rows": [{"id": i, "name": f"n{i}"} for i in range(3)]}

    class Table(BaseTool):
        def __init__(self) -> None:
            super().__init__(name="table", description="rows")

    tool_context: Any = type("Ctx", (), {"function_call_id": "call-1"})()
    swapped = await plugin.after_tool_callback(
        tool=Table(), tool_args={}, tool_context=tool_context, result=result
    )
    assert swapped is not None and set(swapped) == {"result"}
    namespace = re.search(r'artifact_namespace "([^"]+)"', swapped["result"]).group(1)
    assert json.loads(memory.load_artifacts(namespace).value[0].value) == result
    memory.close()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValidationError, match="TaskMemory"):
        OffpromptPlugin("not a memory")  # type: ignore[arg-type]
    memory = TaskMemory()
    with pytest.raises(ValidationError, match="name"):
        OffpromptPlugin(memory, name="")
    memory.close()


@pytest.mark.asyncio
async def test_the_session_keeps_the_reference_not_the_result(db_path: Path) -> None:
    memory = TaskMemory(path=db_path.parent / "task", index="sync")
    plugin = OffpromptPlugin(memory, min_tokens=500)
    sessions = OffpromptSessionService(path=db_path)
    llm = ScriptedLlm(script=[function_call("fetch_logs", {"host": "h1"}), "done"])
    agent = LlmAgent(name="ops", model=llm, tools=[fetch_logs, *plugin.tools])
    runner = Runner(
        app=App(name="ops_app", root_agent=agent, plugins=[plugin]), session_service=sessions
    )
    session = await sessions.create_session(app_name="ops_app", user_id="u1")
    message = types.Content(role="user", parts=[types.Part.from_text(text="logs?")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        pass
    await runner.close()
    stored = await sessions.get_session(app_name="ops_app", user_id="u1", session_id=session.id)
    (response,) = [r for e in stored.events for r in e.get_function_responses()]
    assert response.response["result"].startswith('Output of "fetch_logs')
    namespace = _namespace(llm.requests[1])
    assert memory.load_artifacts(namespace).value[0].value == LOGS
    sessions.close()
    memory.close()
