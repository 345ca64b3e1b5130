"""The OpenAI Agents SDK's own session tests, run against ``OffpromptSession``.

Ported from openai/openai-agents-python ``tests/memory/test_session.py``,
``tests/memory/test_session_limit.py``, ``tests/memory/test_session_context_wrapper.py``
and ``tests/extensions/memory/test_async_sqlite_session.py``: the same scenarios and
assertions, with ``SQLiteSession`` / ``AsyncSQLiteSession`` swapped for
``OffpromptSession(session_id, path=db_path)`` and the SDK's ``FakeModel`` for
``ScriptedModel`` (a real ``Model`` subclass answering from a script; the only fake).

Not ported, and why:

* ``test_session_memory_disabled_parametrized``, ``test_session_settings_resolve``,
  ``test_runner_preserves_legacy_session_call_shapes``,
  ``test_runner_does_not_partially_enable_context_aware_session``,
  ``test_session_wrapper_method_requires_named_keyword_or_kwargs``,
  ``test_compaction_session_keeps_context_aware_underlying_on_legacy_scope``: they test
  the Runner without a session, ``SessionSettings`` itself, or other session classes.
* ``SQLiteSession``'s private connection registry (``_connections``, ``_file_locks``)
  and ``AsyncSQLiteSession``'s aiosqlite connection handling (rollback failures,
  quarantined connections, failed initialisation, cancelled ``close``): OffpromptSession
  has no connections of its own; its store's transactions and sharing are tested by the
  core's store suite. The closest equivalents (close gives back the one shared store,
  two sessions on one file share one store) are here instead.
* The corrupt-row tests (``pop_item_skips_corrupt_most_recent``, ``limit_skips_corrupt``):
  offprompt's stores never hold an unparsable item (every item is validated before it
  is written), so there is no corrupt row to skip.
* The timestamp-tie tests rewrite ``created_at`` in SQL; offprompt orders by the
  store's sequence number, never by time, so only their ordering assertions are kept.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, RunConfig, RunContextWrapper, Runner, TResponseInputItem, function_tool
from agents.exceptions import InputGuardrailTripwireTriggered
from agents.guardrail import GuardrailFunctionOutput, InputGuardrail
from agents.memory import Session, SessionSettings

# private-ok: the Agents SDK's own test imports it
from agents.memory.session import _session_accepts_wrapper
from agents.run_internal.session_persistence import rewind_session_items
from agents_testing import RUNNER_METHODS, run_agent
from offprompt_openai_agents import OffpromptSession
from offprompt_openai_agents.testing import ScriptedModel, function_call

from offprompt.errors import OffpromptError, StorageError, ValidationError
from offprompt.scope import Scope
from offprompt.stores import SQLiteStore
from offprompt.stores.shared import shared_holders


def _agent(model: ScriptedModel, **kwargs: Any) -> Agent[Any]:
    return Agent(name="test", model=model, **kwargs)


# -- tests/memory/test_session.py -------------------------------------------------------


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_basic_functionality_parametrized(runner_method, make_session):
    session = make_session("test_session_123")
    model = ScriptedModel(["San Francisco", "California"])
    agent = _agent(model)
    result1 = await run_agent(
        runner_method, agent, "What city is the Golden Gate Bridge in?", session=session
    )
    assert result1.final_output == "San Francisco"
    result2 = await run_agent(runner_method, agent, "What state is it in?", session=session)
    assert result2.final_output == "California"
    last_input = model.inputs[-1]
    assert len(last_input) > 1
    assert last_input[0] == {"role": "user", "content": "What city is the Golden Gate Bridge in?"}


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_with_explicit_instance_parametrized(runner_method, make_session):
    session = make_session("test_session_456")
    model = ScriptedModel(["Hello", "I remember you said hi"])
    agent = _agent(model)
    result1 = await run_agent(runner_method, agent, "Hi there", session=session)
    assert result1.final_output == "Hello"
    result2 = await run_agent(runner_method, agent, "Do you remember what I said?", session=session)
    assert result2.final_output == "I remember you said hi"


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_different_sessions_parametrized(runner_method, make_session):
    model = ScriptedModel(["I like cats", "I like dogs", "Yes, you mentioned cats"])
    agent = _agent(model)
    session_1 = make_session("session_1")
    session_2 = make_session("session_2")
    await run_agent(runner_method, agent, "I like cats", session=session_1)
    await run_agent(runner_method, agent, "I like dogs", session=session_2)
    result3 = await run_agent(runner_method, agent, "What did I say I like?", session=session_1)
    assert result3.final_output == "Yes, you mentioned cats"
    seen = str(model.inputs[-1])
    assert "I like cats" in seen and "I like dogs" not in seen


async def test_sqlite_session_memory_direct(make_session):
    session = make_session("direct_test")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    retrieved = await session.get_items()
    assert len(retrieved) == 2
    assert retrieved[0].get("role") == "user"
    assert retrieved[0].get("content") == "Hello"
    assert retrieved[1].get("role") == "assistant"
    assert retrieved[1].get("content") == "Hi there!"
    await session.clear_session()
    assert len(await session.get_items()) == 0


async def test_close_gives_back_the_shared_store(make_session):
    # SQLiteSession closes its worker threads' connections; an OffpromptSession on a
    # path holds the process's one store of that file, given back by close().
    session = make_session("worker_thread_close")
    await session.add_items([{"role": "user", "content": "Hello"}])
    store = session.memory.store
    assert isinstance(store, SQLiteStore) and not store.closed
    session.close()
    assert store.closed
    with pytest.raises(StorageError, match="closed"):
        await session.get_items()


async def test_sqlite_session_memory_pop_item(make_session):
    session = make_session("pop_test")
    assert await session.pop_item() is None
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
        {"role": "user", "content": "How are you?"},
    ]
    await session.add_items(items)
    assert len(await session.get_items()) == 3
    popped = await session.pop_item()
    assert popped is not None
    assert popped.get("role") == "user"
    assert popped.get("content") == "How are you?"
    retrieved_after_pop = await session.get_items()
    assert len(retrieved_after_pop) == 2
    assert retrieved_after_pop[-1].get("content") == "Hi there!"
    popped2 = await session.pop_item()
    assert popped2 is not None and popped2.get("content") == "Hi there!"
    popped3 = await session.pop_item()
    assert popped3 is not None and popped3.get("content") == "Hello"
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_session_memory_pop_different_sessions(make_session):
    session_1 = make_session("session_1")
    session_2 = make_session("session_2")
    await session_1.add_items([{"role": "user", "content": "Session 1 message"}])
    await session_2.add_items(
        [
            {"role": "user", "content": "Session 2 message 1"},
            {"role": "user", "content": "Session 2 message 2"},
        ]
    )
    popped = await session_2.pop_item()
    assert popped is not None and popped.get("content") == "Session 2 message 2"
    session_1_items = await session_1.get_items()
    assert [i.get("content") for i in session_1_items] == ["Session 1 message"]
    session_2_items = await session_2.get_items()
    assert [i.get("content") for i in session_2_items] == ["Session 2 message 1"]


async def test_sqlite_session_get_items_with_limit(make_session):
    session = make_session("count_test")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Message 1"},
        {"role": "assistant", "content": "Response 1"},
        {"role": "user", "content": "Message 2"},
        {"role": "assistant", "content": "Response 2"},
        {"role": "user", "content": "Message 3"},
        {"role": "assistant", "content": "Response 3"},
    ]
    await session.add_items(items)
    all_items = await session.get_items()
    assert len(all_items) == 6
    assert all_items[0].get("content") == "Message 1"
    assert all_items[-1].get("content") == "Response 3"
    latest_2 = await session.get_items(limit=2)
    assert [i.get("content") for i in latest_2] == ["Message 3", "Response 3"]
    latest_4 = await session.get_items(limit=4)
    assert [i.get("content") for i in latest_4] == [
        "Message 2",
        "Response 2",
        "Message 3",
        "Response 3",
    ]
    latest_10 = await session.get_items(limit=10)
    assert len(latest_10) == 6
    assert latest_10[0].get("content") == "Message 1"
    assert await session.get_items(limit=0) == []


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_appends_list_input_by_default(runner_method, make_session):
    session = make_session("test_validation_parametrized")
    model = ScriptedModel(["This should run"])
    initial_history: list[TResponseInputItem] = [
        {"role": "user", "content": "Earlier message"},
        {"role": "assistant", "content": "Saved reply"},
    ]
    await session.add_items(initial_history)
    list_input: list[TResponseInputItem] = [{"role": "user", "content": "Test message"}]
    await run_agent(runner_method, _agent(model), list_input, session=session)
    assert model.inputs[-1] == initial_history + list_input


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_callback_prepared_input(runner_method, make_session):
    session = make_session("session_1")
    model = ScriptedModel(["I'm gpt-4o"])
    initial_history: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello there."},
        {"role": "assistant", "content": "Hi, I'm here to assist you."},
    ]
    await session.add_items(initial_history)

    def filter_assistant_messages(history, new_input):
        return [item for item in history if item["role"] == "user"] + new_input

    new_turn_input: list[TResponseInputItem] = [{"role": "user", "content": "What your name?"}]
    await run_agent(
        runner_method,
        _agent(model),
        new_turn_input,
        session=session,
        run_config=RunConfig(session_input_callback=filter_assistant_messages),
    )
    assert model.inputs[-1] == [initial_history[0], new_turn_input[0]]


UNICODE_ITEMS = [
    {"role": "user", "content": "こんにちは"},
    {"role": "assistant", "content": "😊👍"},
    {"role": "user", "content": "Привет"},
]
SQL_ITEMS = [
    {"role": "user", "content": "O'Reilly"},
    {"role": "assistant", "content": "DROP TABLE sessions;"},
    {"role": "user", "content": '"SELECT * FROM users WHERE name = "admin";"'},
    {"role": "assistant", "content": "Robert'); DROP TABLE students;--"},
    {"role": "user", "content": "Normal message"},
]


# test_sqlite_session_unicode_content and test_sqlite_session_special_characters_and_sql_injection
@pytest.mark.parametrize("items", [UNICODE_ITEMS, SQL_ITEMS], ids=["unicode", "sql-injection"])
async def test_sqlite_session_content_comes_back_as_added(items, make_session):
    session = make_session("content_test")
    await session.add_items(items)
    assert await session.get_items() == items


async def test_sqlite_session_concurrent_access(make_session):
    session = make_session("concurrent_test")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(10)
    ]

    def add_item(item):
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.run_until_complete(session.add_items([item]))
        loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as executor:
        list(executor.map(add_item, items))
    contents = {item.get("content") for item in await session.get_items()}
    assert contents == {f"Message {i}" for i in range(10)}


async def test_sessions_on_one_file_share_one_store(make_session):
    # SQLiteSession shares one process-local lock per file; OffpromptSession shares one
    # store (its connections and lock) per file, counted and released per holder.
    session_1 = make_session("session_1")
    session_2 = make_session("session_2")
    store = session_1.memory.store
    assert session_2.memory.store is store and shared_holders(store) == 2
    await asyncio.gather(
        session_1.add_items([{"role": "user", "content": "session_1"}]),
        session_2.add_items([{"role": "user", "content": "session_2"}]),
    )
    assert [i.get("content") for i in await session_1.get_items()] == ["session_1"]
    assert [i.get("content") for i in await session_2.get_items()] == ["session_2"]
    session_1.close()
    assert shared_holders(store) == 1 and not store.closed
    session_2.close()
    assert shared_holders(store) == 0 and store.closed


async def test_session_add_items_exception_propagates_in_streamed(make_session):
    session = make_session("test_exception_session")

    async def _failing_add_items(_items, *, wrapper: Any | None = None):
        del wrapper
        raise RuntimeError("Simulated session.add_items failure")

    session.add_items = _failing_add_items  # type: ignore[method-assign]
    result = Runner.run_streamed(
        _agent(ScriptedModel(["This should not be reached"])), "Hello", session=session
    )

    async def consume_stream():
        async for _event in result.stream_events():
            pass

    with pytest.raises(RuntimeError, match=r"Simulated session\.add_items failure"):
        await asyncio.wait_for(consume_stream(), timeout=30.0)


async def test_session_settings_default(make_session):
    session = make_session("default_settings_test")
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None


@pytest.mark.parametrize("use_dictionary", [False, True], ids=["class", "dictionary"])
async def test_session_settings_constructor(use_dictionary, make_session):
    settings = {"limit": 5} if use_dictionary else SessionSettings(limit=5)
    session = make_session("constructor_settings_test", session_settings=settings)
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 5


async def test_session_settings_constructor_normalizes_dictionary(make_session):
    session = make_session("dictionary_settings_test", session_settings={"limit": 0})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 0
    assert session.session_settings.resolve({"limit": 4}).limit == 4


def test_session_settings_rejects_unknown_dictionary_fields(make_session):
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        make_session("invalid_settings_test", session_settings={"limitt": 1})


async def test_get_items_uses_session_settings_limit(make_session):
    session = make_session("uses_settings_limit_test", session_settings=SessionSettings(limit=3))
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(5)
    ]
    await session.add_items(items)
    assert await session.get_items() == items[-3:]


async def test_get_items_explicit_limit_overrides_session_settings(make_session):
    session = make_session("explicit_override_test", session_settings=SessionSettings(limit=5))
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(10)
    ]
    await session.add_items(items)
    retrieved = await session.get_items(limit=2)
    assert [i.get("content") for i in retrieved] == ["Message 8", "Message 9"]


async def test_runner_with_session_settings_override(make_session):
    session = make_session("runner_override_test", session_settings=SessionSettings(limit=100))
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model = ScriptedModel(["Got it"])
    await Runner.run(
        _agent(model),
        "New question",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    history = [i for i in model.inputs[-1] if i.get("content") != "New question"]
    assert [i.get("content") for i in history] == ["Turn 8", "Turn 9"]


# -- tests/memory/test_session_limit.py -------------------------------------------------


async def _run_limited(
    method: str, agent: Agent[Any], text: str, session: Any, *, limit: int | None
) -> Any:
    settings = RunConfig(session_settings=SessionSettings(limit=limit))
    return await run_agent(method, agent, text, session=session, run_config=settings)


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_limit_parameter(runner_method, make_session):
    session = make_session("limit_test")
    model = ScriptedModel(["Reply 1", "Reply 2", "Reply 3", "Reply 4"])
    agent = _agent(model)
    for n in (1, 2, 3):
        await run_agent(runner_method, agent, f"Message {n}", session=session)
    assert len(await session.get_items()) == 6
    await _run_limited(runner_method, agent, "Message 4", session, limit=2)
    last_input = model.inputs[-1]
    assert len(last_input) == 3
    assert last_input[0].get("content") == "Message 3"
    assert last_input[1].get("content")[0]["text"] == "Reply 3"
    assert last_input[2].get("content") == "Message 4"


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_limit_zero(runner_method, make_session):
    session = make_session("limit_zero_test")
    model = ScriptedModel(["Reply 1", "Reply 2", "Reply 3"])
    agent = _agent(model)
    await run_agent(runner_method, agent, "Message 1", session=session)
    await run_agent(runner_method, agent, "Message 2", session=session)
    await _run_limited(runner_method, agent, "Message 3", session, limit=0)
    assert model.inputs[-1] == [{"role": "user", "content": "Message 3"}]


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_limit_none_gets_all_history(runner_method, make_session):
    session = make_session("limit_none_test")
    model = ScriptedModel([f"Reply {i}" for i in range(1, 7)])
    agent = _agent(model)
    for i in range(1, 6):
        await run_agent(runner_method, agent, f"Message {i}", session=session)
    assert len(await session.get_items()) == 10
    await _run_limited(runner_method, agent, "Message 6", session, limit=None)
    last_input = model.inputs[-1]
    assert len(last_input) == 11
    assert last_input[0].get("content") == "Message 1"
    assert last_input[-1].get("content") == "Message 6"


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_limit_larger_than_history(runner_method, make_session):
    session = make_session("limit_large_test")
    model = ScriptedModel(["Reply 1", "Reply 2"])
    agent = _agent(model)
    await run_agent(runner_method, agent, "Message 1", session=session)
    await _run_limited(runner_method, agent, "Message 2", session, limit=100)
    last_input = model.inputs[-1]
    assert len(last_input) == 3
    assert last_input[0].get("content") == "Message 1"
    assert last_input[1].get("content")[0]["text"] == "Reply 1"
    assert last_input[2].get("content") == "Message 2"


async def test_session_limit_negative_returns_empty(make_session):
    session = make_session("limit_negative_test")
    await session.add_items(
        [{"role": "user", "content": "1"}, {"role": "assistant", "content": "2"}]
    )
    assert await session.get_items(limit=-1) == []
    assert await session.get_items(limit=0) == []
    assert len(await session.get_items(limit=1)) == 1
    assert len(await session.get_items()) == 2


# -- tests/extensions/memory/test_async_sqlite_session.py ------------------------------


async def test_async_sqlite_session_basic_flow(make_session):
    session = make_session("async_basic")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    await session.clear_session()
    assert await session.get_items() == []


async def test_async_sqlite_session_pop_item(make_session):
    session = make_session("async_pop")
    assert await session.pop_item() is None
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "Two"},
    ]
    await session.add_items(items)
    assert await session.pop_item() == items[-1]
    assert await session.get_items() == items[:-1]


async def test_async_sqlite_session_get_items_limit(make_session):
    session = make_session("async_limit")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Message 1"},
        {"role": "assistant", "content": "Response 1"},
        {"role": "user", "content": "Message 2"},
    ]
    await session.add_items(items)
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=0) == []


async def test_async_sqlite_session_explicit_limit_overrides_session_settings(make_session):
    session = make_session("async_settings_override", session_settings=SessionSettings(limit=5))
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(10)
    ]
    await session.add_items(items)
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=0) == []


async def test_async_sqlite_session_runner_integration(make_session):
    session = make_session("runner_integration_test")
    model = ScriptedModel(["San Francisco", "California"])
    agent = _agent(model)
    result1 = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    assert result1.final_output == "San Francisco"
    result2 = await Runner.run(agent, "What state is it in?", session=session)
    assert result2.final_output == "California"
    last_input = model.inputs[-1]
    assert len(last_input) > 1
    assert any("Golden Gate Bridge" in str(item.get("content", "")) for item in last_input)


async def test_async_sqlite_session_session_isolation(make_session):
    model = ScriptedModel(["I like cats.", "I like dogs.", "You said you like cats."])
    agent = _agent(model)
    session1, session2 = make_session("session_1"), make_session("session_2")
    await Runner.run(agent, "I like cats.", session=session1)
    await Runner.run(agent, "I like dogs.", session=session2)
    result = await Runner.run(agent, "What animal did I say I like?", session=session1)
    assert "cats" in result.final_output.lower()
    assert "dogs" not in str(model.inputs[-1]).lower()


async def test_async_sqlite_session_add_empty_items_list(make_session):
    session = make_session("add_empty_test")
    assert await session.get_items() == []
    await session.add_items([])
    assert await session.get_items() == []


async def test_async_sqlite_session_get_items_same_timestamp_consistent_order(make_session):
    session = make_session("same_timestamp_test")
    older = cast(TResponseInputItem, {"id": "older_same_ts", "role": "user", "content": "old"})
    reasoning = cast(TResponseInputItem, {"id": "rs_same_ts", "type": "reasoning"})
    message = cast(
        TResponseInputItem,
        {"id": "msg_same_ts", "type": "message", "role": "assistant", "content": []},
    )
    await session.add_items([older])
    await session.add_items([reasoning, message])
    assert [i["id"] for i in await session.get_items()] == [
        "older_same_ts",
        "rs_same_ts",
        "msg_same_ts",
    ]  # type: ignore[typeddict-item]
    assert [i["id"] for i in await session.get_items(limit=2)] == ["rs_same_ts", "msg_same_ts"]  # type: ignore[typeddict-item]
    popped = await session.pop_item()
    assert popped == message
    assert await session.get_items() == [older, reasoning]


async def test_async_sqlite_session_closed_operations_raise(make_session):
    session = make_session("closed_state_test")
    await session.add_items([{"role": "user", "content": "before close"}])
    session.close()
    session.close()  # idempotent
    for call in (
        session.get_items(),
        session.add_items([{"role": "user", "content": "after close"}]),
        session.add_items([]),  # the empty-list fast path does not bypass the check
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(StorageError, match="OffpromptSession 'closed_state_test' is closed"):
            await call


async def test_failed_add_items_stores_nothing_and_session_stays_usable(make_session):
    session = make_session("add_rollback")
    unserializable = cast(TResponseInputItem, {"role": "user", "content": object()})
    with pytest.raises(OffpromptError, match="JSON"):
        await session.add_items([{"role": "user", "content": "first of the batch"}, unserializable])
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "after failure"}])
    assert [i.get("content") for i in await session.get_items()] == ["after failure"]


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
async def test_cancellation_returns_only_after_the_mutation_settled(operation, make_session):
    # The SDK's sessions wait for a cancelled write to finish before the cancellation
    # propagates, so a retry never doubles it; so does OffpromptSession.
    session = make_session(f"cancel_{operation}")
    item: TResponseInputItem = {"role": "user", "content": "once"}
    if operation != "add":
        await session.add_items([item])
    if operation == "add":
        task = asyncio.ensure_future(session.add_items([item]))
    elif operation == "pop":
        task = asyncio.ensure_future(session.pop_item())
    else:
        task = asyncio.ensure_future(session.clear_session())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    expected = [item] if operation == "add" else []
    assert await session.get_items() == expected


# -- tests/memory/test_session_context_wrapper.py (per-tenant scopes) -------------------


class TenantContext:
    def __init__(self, tenant_id: str) -> None:
        self.tenant_id = tenant_id


def _tenant_scope(context: TenantContext) -> Scope:
    return Scope(tenant=context.tenant_id)


def _tenant_session(make_session: Any) -> OffpromptSession:
    return make_session("context-aware", scope=_tenant_scope)


@pytest.mark.parametrize("streamed", [False, True])
async def test_runner_passes_the_wrapper_and_items_land_in_the_tenant_scope(
    streamed, make_session, db_path: Path
):
    session = _tenant_session(make_session)
    assert isinstance(session, Session) and _session_accepts_wrapper(session)
    agent = _agent(ScriptedModel(["ok"]))
    context = TenantContext("tenant-a")
    if streamed:
        result: Any = Runner.run_streamed(agent, "hello", context=context, session=session)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "hello", context=context, session=session)
    assert result.final_output == "ok"
    tenant_a = RunContextWrapper(context=TenantContext("tenant-a"))
    tenant_b = RunContextWrapper(context=TenantContext("tenant-b"))
    assert len(await session.get_items(wrapper=tenant_a)) == 2
    assert await session.get_items(wrapper=tenant_b) == []
    # Nothing in the unscoped partition of the file, and a call without a context is refused.
    unscoped = OffpromptSession("context-aware", path=db_path)
    try:
        assert await unscoped.get_items() == []
    finally:
        unscoped.close()
    with pytest.raises(ValidationError, match="scope from the run's context"):
        await session.get_items()


async def test_retry_rewind_uses_same_context_scope_for_reads_pops_and_cleanup(make_session):
    session = _tenant_session(make_session)
    wrapper = RunContextWrapper(context=TenantContext("tenant-a"))
    other = RunContextWrapper(context=TenantContext("tenant-b"))
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
    ]
    await session.add_items([{"role": "user", "content": "keep"}], wrapper=other)
    await session.add_items(items, wrapper=wrapper)
    await rewind_session_items(session, items, wrapper=wrapper)
    assert await session.get_items(wrapper=wrapper) == []
    assert await session.get_items(wrapper=other) == [{"role": "user", "content": "keep"}]


@pytest.mark.parametrize("streamed", [False, True])
async def test_input_guardrail_persists_in_the_context_scope(streamed, make_session):
    def guardrail_function(_context, _agent, _input) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    session = _tenant_session(make_session)
    other = RunContextWrapper(context=TenantContext("other"))
    await session.add_items([{"role": "user", "content": "keep"}], wrapper=other)
    context = TenantContext("tenant-a")
    agent = _agent(
        ScriptedModel(["not persisted"]),
        input_guardrails=[InputGuardrail(guardrail_function=guardrail_function)],
    )
    with pytest.raises(InputGuardrailTripwireTriggered):
        if streamed:
            result = Runner.run_streamed(agent, "hello", context=context, session=session)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, "hello", context=context, session=session)
    assert await session.get_items(wrapper=other) == [{"role": "user", "content": "keep"}]
    tenant = RunContextWrapper(context=context)
    assert await session.get_items(wrapper=tenant) == [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize("streamed", [False, True])
async def test_resumed_run_persists_in_the_context_scope(streamed, make_session):
    async def test_tool() -> str:
        return "tool result"

    tool = function_tool(test_tool, name_override="test_tool", needs_approval=True)
    model = ScriptedModel([[function_call("test_tool", {}, call_id="call-resume")], "done"])
    agent = _agent(model, tools=[tool])
    session = _tenant_session(make_session)
    other = RunContextWrapper(context=TenantContext("other"))
    await session.add_items([{"role": "user", "content": "keep"}], wrapper=other)
    context = TenantContext("tenant-a")
    if streamed:
        first: Any = Runner.run_streamed(agent, "hello", context=context, session=session)
        async for _ in first.stream_events():
            pass
    else:
        first = await Runner.run(agent, "hello", context=context, session=session)
    assert len(first.interruptions) == 1
    state = first.to_state()
    state.approve(first.interruptions[0])
    if streamed:
        resumed: Any = Runner.run_streamed(agent, state, session=session)
        async for _ in resumed.stream_events():
            pass
    else:
        resumed = await Runner.run(agent, state, session=session)
    assert resumed.final_output == "done"
    assert await session.get_items(wrapper=other) == [{"role": "user", "content": "keep"}]
    stored = await session.get_items(wrapper=RunContextWrapper(context=context))
    assert any(
        item.get("type") == "function_call_output" and item.get("call_id") == "call-resume"
        for item in stored
    )
