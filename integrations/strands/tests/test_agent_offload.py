"""A real Strands ``Agent`` run with ``ContextOffloader(storage=OffpromptStorage(...))``.

Only the model is scripted (:class:`strands_testing.ScriptedModel`). The tool returns a
large log; the offloader stores it in offprompt task memory, the model sees a preview
and the reference, and reads the log back through Strands' ``retrieve_offloaded_content``
and offprompt's ``grep_memory``; the whole log never reaches the model.
"""

from __future__ import annotations

import re
from pathlib import Path

from offprompt_strands import OffpromptStorage, memory_tools
from strands import Agent, tool
from strands.types.content import Messages
from strands.vended_plugins.context_offloader import ContextOffloader
from strands_testing import ScriptedModel, say, tool_call

from offprompt.stores import SQLiteStore

NEEDLE = "ERROR disk full on node-7731"
LOG = "\n".join(
    NEEDLE if i == 1234 else f"INFO request {i} served in {i % 97} ms" for i in range(3000)
)


@tool
def fetch_logs(service: str) -> str:
    """Fetch the logs of a service."""
    return LOG


def _reference(messages: Messages) -> str:
    """The first offprompt reference in the last tool result the model was sent."""
    for block in messages[-1]["content"]:
        if "toolResult" in block:
            text = block["toolResult"]["content"][0]["text"]
            found = re.search(r"strands-[A-Za-z0-9_\-]+", text.split("[Stored references:]")[1])
            assert found, text
            return found.group(0)
    raise AssertionError(f"no tool result in {messages[-1]}")


def _run(storage: OffpromptStorage) -> tuple[ScriptedModel, Agent, str]:
    model = ScriptedModel(
        [
            tool_call("fetch_logs", "tooluse_fetch", service="api"),
            lambda messages: tool_call(
                "retrieve_offloaded_content",
                "tooluse_retrieve",
                reference=_reference(messages),
                pattern="ERROR",
                context_lines=0,
            ),
            lambda messages: tool_call(
                "grep_memory",
                "tooluse_grep",
                memory_name=storage.memory.name,
                artifact_namespace=_reference(model.calls[1]),
                pattern="node-7731",
            ),
            say("Node 7731 ran out of disk."),
        ]
    )
    offloader = ContextOffloader(storage=storage, max_result_tokens=2_000, preview_tokens=200)
    agent = Agent(
        model=model,
        tools=[fetch_logs, *memory_tools(storage.memory)],
        plugins=[offloader],
        callback_handler=None,
    )
    result = agent("What went wrong with the api service?")
    return model, agent, str(result)


def _tool_result_text(messages: Messages, tool_use_id: str) -> str:
    for message in messages:
        for block in message["content"]:
            if "toolResult" in block and block["toolResult"]["toolUseId"] == tool_use_id:
                return "\n".join(part.get("text", "") for part in block["toolResult"]["content"])
    raise AssertionError(f"no result for {tool_use_id}")


def _check(model: ScriptedModel, agent: Agent, answer: str, storage: OffpromptStorage) -> str:
    assert "Node 7731 ran out of disk." in answer
    assert len(model.calls) == 4
    sent = model.sent_text()
    # The model saw a preview (its head, and from strands-agents 1.65 its tail), never the body.
    for middle in (1000, 1500, 2000):
        assert f"INFO request {middle} served" not in sent
    assert len(_tool_result_text(agent.messages, "tooluse_fetch")) < len(LOG) // 10
    reference = _reference(model.calls[1])
    assert "[Offloaded:" in _tool_result_text(agent.messages, "tooluse_fetch")
    assert NEEDLE in _tool_result_text(agent.messages, "tooluse_retrieve")
    assert NEEDLE in _tool_result_text(agent.messages, "tooluse_grep")
    assert storage.retrieve_sync(reference) == (LOG.encode("utf-8"), "text/plain")
    return reference


def test_agent_offloads_to_task_memory_and_reads_back() -> None:
    with OffpromptStorage() as storage:
        model, agent, answer = _run(storage)
        reference = _check(model, agent, answer, storage)
        assert storage.memory.has_namespace(reference)


def test_offloaded_block_is_readable_from_another_process_memory(tmp_path: Path) -> None:
    with OffpromptStorage(path=tmp_path / "tm") as storage:
        model, agent, answer = _run(storage)
        reference = _check(model, agent, answer, storage)
    with OffpromptStorage(path=tmp_path / "tm") as reopened:
        assert reopened.retrieve_sync(reference) == (LOG.encode("utf-8"), "text/plain")


def test_agent_run_on_a_sqlite_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    try:
        with OffpromptStorage(store=store) as storage:
            model, agent, answer = _run(storage)
            reference = _check(model, agent, answer, storage)
        with OffpromptStorage(store=store) as again:
            assert again.retrieve_sync(reference)[0] == LOG.encode("utf-8")
    finally:
        store.close()
