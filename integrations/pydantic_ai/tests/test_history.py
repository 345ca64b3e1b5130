"""``OffpromptHistory`` with real pydantic-ai runs (``TestModel`` / ``FunctionModel``) on
real SQLite files: runs recorded at ``after_run``, read back as the harness's
``HistorySource`` (and by its own ``ConversationSearch``), whole ``Conversation`` s saved
and loaded exactly."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from offprompt_pydantic_ai import OffpromptHistory
from pydantic_ai import Agent, Conversation, ConversationTypeAdapter, DeferredToolRequests
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness.conversation_search import HistorySource
from pydantic_ai_harness.step_persistence import RunRecord

from offprompt.errors import ValidationError
from offprompt.stores import SQLiteStore


@pytest.fixture
def history(tmp_path: Path) -> Iterator[OffpromptHistory]:
    opened = OffpromptHistory("chat-1", path=tmp_path / "runs.db")
    yield opened
    opened.close()


def _json(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


def _agent(history: OffpromptHistory, text: str = "the answer") -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        TestModel(custom_output_text=text), name="helper", capabilities=[history]
    )

    @agent.tool_plain
    def lookup(city: str) -> str:
        return f"sunny in {city}"

    return agent


def test_it_is_a_history_source(history: OffpromptHistory) -> None:
    assert isinstance(history, HistorySource)


async def test_every_run_is_recorded_exactly(history: OffpromptHistory) -> None:
    agent = _agent(history)
    first = await agent.run("weather?")
    second = await agent.run("and tomorrow?", conversation=first.conversation)
    runs = await history.list_runs()
    assert [run.run_id for run in runs] == [first.run_id, second.run_id]
    assert {run.conversation_id for run in runs} == {first.conversation_id}
    assert runs[0].agent_name == "helper"
    assert _json(await history.run_history(run_id=first.run_id)) == _json(first.all_messages())
    assert _json(await history.run_history(run_id=second.run_id)) == _json(second.all_messages())


async def test_runs_of_other_conversations_stay_apart(history: OffpromptHistory) -> None:
    agent = _agent(history)
    one = await agent.run("weather?")
    other = await agent.run("something else")
    assert one.conversation_id != other.conversation_id
    listed = await history.list_runs(conversation_id=other.conversation_id)
    assert [run.run_id for run in listed] == [other.run_id]
    assert _json(await history.run_history(run_id=other.run_id)) == _json(other.all_messages())


async def test_an_unknown_run_has_no_history(history: OffpromptHistory) -> None:
    assert await history.run_history(run_id="nope") == []
    assert await history.list_runs() == []


async def test_runs_outlive_the_history_object(tmp_path: Path) -> None:
    with_path = OffpromptHistory("chat-1", path=tmp_path / "runs.db")
    result = await _agent(with_path).run("weather?")
    with_path.close()
    reopened = OffpromptHistory("chat-1", path=tmp_path / "runs.db")
    try:
        assert [run.run_id for run in await reopened.list_runs()] == [result.run_id]
        assert _json(await reopened.run_history(run_id=result.run_id)) == _json(
            result.all_messages()
        )
    finally:
        reopened.close()


async def test_sessions_on_one_store_stay_apart(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "shared.db")
    try:
        alice, bob = OffpromptHistory("alice", store=store), OffpromptHistory("bob", store=store)
        result = await _agent(alice).run("weather?")
        assert [run.run_id for run in await alice.list_runs()] == [result.run_id]
        assert await bob.list_runs() == []
    finally:
        store.close()


async def test_compaction_artifacts_are_left_out(history: OffpromptHistory) -> None:
    """SummarizingCompaction's summaries are left out, as the harness's source leaves them."""
    from pydantic_ai_harness.compaction._summary import summary_request

    run = RunRecord(run_id="r1", conversation_id="c1")
    kept = ModelRequest(parts=[UserPromptPart("the ZEBRA passphrase is 42")])
    reply = ModelResponse(parts=[TextPart("noted")])
    summary = summary_request("older context")
    merged = ModelRequest(parts=[*summary.parts, UserPromptPart("what was it again?")])
    await history.add_run(run, [kept, reply, summary, merged])
    got = await history.run_history(run_id="r1")
    assert [m.parts for m in got] == [kept.parts, reply.parts, merged.parts[1:]]


# -- ported from the harness's tests/conversation_search/test_conversation_search.py ------


async def test_legacy_summary_system_prompt_is_an_artifact(history: OffpromptHistory) -> None:
    # test_summary_skip_stays_in_sync_with_compaction
    from pydantic_ai_harness.conversation_search._source import SUMMARY_PREFIX

    artifact = ModelRequest(parts=[SystemPromptPart(f"{SUMMARY_PREFIX}older summarized context")])
    original = ModelRequest(parts=[UserPromptPart("KEEPME original detail")])
    await history.add_run(RunRecord(run_id="r1"), [artifact, original])
    assert [m.parts for m in await history.run_history(run_id="r1")] == [original.parts]


async def test_user_authored_summary_lookalike_stays(history: OffpromptHistory) -> None:
    # test_user_authored_summary_lookalike_stays_in_the_corpus
    lookalike = ModelRequest(
        parts=[SystemPromptPart("Summary of previous conversation: the ONYX migration is done.")]
    )
    application_part = ModelRequest(parts=[CompactionPart(content="an app's own compaction")])
    await history.add_run(RunRecord(run_id="r1"), [lookalike, application_part])
    got = await history.run_history(run_id="r1")
    assert [m.parts for m in got] == [lookalike.parts, application_part.parts]


async def test_repeated_identical_messages_keep_distinct_positions(
    history: OffpromptHistory,
) -> None:
    repeated = ModelRequest(parts=[UserPromptPart("repeat this exactly")])
    reply = ModelResponse(parts=[TextPart("done")])
    await history.add_run(RunRecord(run_id="r1"), [repeated, repeated, reply])
    got = await history.run_history(run_id="r1")
    assert [m.parts for m in got] == [repeated.parts, repeated.parts, reply.parts]


async def test_list_runs_in_started_at_order(history: OffpromptHistory) -> None:
    # test_list_runs_delegates_to_store: every registered run, in order
    early = RunRecord(run_id="r1", started_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    late = RunRecord(run_id="r2", started_at=datetime(2026, 2, 1, tzinfo=timezone.utc))
    message = [ModelRequest(parts=[UserPromptPart("x")])]
    await history.add_run(late, message)
    await history.add_run(early, message)
    assert [r.run_id for r in await history.list_runs()] == ["r1", "r2"]


async def test_the_harness_s_conversation_search_reads_the_runs(
    history: OffpromptHistory,
) -> None:
    from pydantic_ai_harness.conversation_search import ConversationSearch

    first = await _agent(history, text="the tides table for Brest").run("tides?")

    def search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part
            for message in messages
            for part in message.parts
            if isinstance(part, ToolReturnPart) and part.tool_name == "search_conversation_history"
        ]
        if not returns:
            args = {"query": "Brest"}
            call = ToolCallPart("search_conversation_history", args, tool_call_id="s1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(str(returns[-1].content))])

    searcher: Agent[None, str] = Agent(
        FunctionModel(search),
        capabilities=[history, ConversationSearch(source=history, scope="conversation")],
    )
    second = await searcher.run("what did you say about tides?", conversation=first.conversation)
    assert "match(es) for 'Brest'" in second.output
    assert f"run: {first.run_id}" in second.output
    assert "the tides table for Brest" in second.output


async def test_a_whole_conversation_is_saved_and_loaded_exactly(
    history: OffpromptHistory,
) -> None:
    assert await history.load() is None

    def pause(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("delete_file", {"path": "a.txt"}, "c1")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(pause), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        return f"deleted {path}"

    result = await agent.run("clean up")
    conversation = result.conversation
    assert conversation.deferred_tool_requests is not None
    await history.save(conversation)
    loaded = await history.load()
    assert loaded is not None
    assert ConversationTypeAdapter.dump_json(loaded) == ConversationTypeAdapter.dump_json(
        conversation
    )
    assert loaded.usage == conversation.usage
    assert loaded.deferred_tool_requests == conversation.deferred_tool_requests
    # a second save replaces the first
    await history.save(Conversation(messages=[]))
    again = await history.load()
    assert again is not None and again.messages == []


async def test_bad_input_gets_a_clear_error(history: OffpromptHistory) -> None:
    with pytest.raises(ValidationError, match="RunRecord"):
        await history.add_run({"run_id": "x"}, [])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="Conversation"):
        await history.save([])  # type: ignore[arg-type]
    assert await history.list_runs() == []
    history.close()
    with pytest.raises(ValidationError, match="closed"):
        await history.list_runs()
