"""The harness's ``HistorySource`` behaviour, checked on its own ``SnapshotHistorySource``
(over ``StepPersistence`` on a ``SqliteStepStore``) and on ``OffpromptHistory`` alike.

From the harness's tests/conversation_search/test_conversation_search.py
(``test_stamped_boundary_request_does_not_duplicate_serialized_history``, search over a
persisted run): each message once, in order, compared on the harness's own dedup key
``message_hash``; unknown runs empty; the search tool finds what a run said.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offprompt_pydantic_ai import OffpromptHistory
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness.conversation_search import (
    ConversationSearchToolset,
    SnapshotHistorySource,
)
from pydantic_ai_harness.conversation_search._source import message_hash
from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence


@pytest.fixture(params=["harness", "offprompt"])
def recorder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """``(capability, source)``: what records runs, and the HistorySource reading them."""
    if request.param == "harness":
        store = SqliteStepStore(database=tmp_path / "steps.db")
        yield StepPersistence(store=store, agent_name="a"), SnapshotHistorySource(store)
        return
    history = OffpromptHistory("runs", path=tmp_path / "runs.db")
    yield history, history
    history.close()


def _looping(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
    returns = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
    if returns < 2:
        return ModelResponse(parts=[ToolCallPart(tool_name="lookup", args={"q": str(returns)})])
    return ModelResponse(parts=[TextPart(content="done, the ZEBRA code is 42")])


def _agent(capability: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(_looping), capabilities=[capability])

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"result-{q}"

    return agent


async def test_each_message_once_in_order(recorder: tuple[Any, Any]) -> None:
    capability, source = recorder
    result = await _agent(capability).run("hi", conversation_id="c1")
    (run,) = [r for r in await source.list_runs() if r.conversation_id == "c1"]
    history = await source.run_history(run_id=run.run_id)
    expected = result.all_messages()
    assert len(history) == len(expected) == 6
    assert [message_hash(m) for m in history] == [message_hash(m) for m in expected]


async def test_unknown_run_yields_empty(recorder: tuple[Any, Any]) -> None:
    _, source = recorder
    assert await source.run_history(run_id="never-ran") == []


async def test_the_search_tool_finds_a_persisted_run(recorder: tuple[Any, Any]) -> None:
    capability, source = recorder
    await _agent(capability).run("hi", conversation_id="c1")
    toolset: ConversationSearchToolset[None] = ConversationSearchToolset(
        source,
        tool_id="conversation-search",
        max_matches=10,
        context_lines=1,
        bm25_k1=1.5,
        bm25_b=0.75,
        scope="all",
    )
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), prompt=None)
    found = await toolset.search_conversation_history(ctx, "ZEBRA")
    assert "Found 1 match(es) for 'ZEBRA'" in found
    assert "the ZEBRA code is 42" in found
