"""The end-to-end proof: a 1 MB tool output never reaches the model.

A ``FunctionAgent`` with a scripted function-calling LLM (the only fake; it records every
input) calls a tool wrapped with ``offprompt_tool`` that returns ~1 MB of text holding a
unique secret, then ``query_memory``, then answers. The secret reaches the model only
inside the small query result; the stored output loads back byte-identical; the agent's
``OffpromptMemory`` (a real SQLite file) holds the whole exchange.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.llms import ChatMessage
from offprompt_llamaindex import OffpromptMemory, TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of, tool_call

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES

REFERENCE = re.compile(
    r'^Output of "fetch_archive\.call" was stored in memory with memory_name "TaskMemory" '
    r'and artifact_namespace "([^"]+)"\.(?:\n|$)'  # the sentence first; the card may follow
)


def make_document(secret: str) -> str:
    line = "Routine log line: all systems nominal, temperature steady, fans at 40 percent.\n"
    filler = line * (1_000_000 // len(line))
    middle = len(filler) // 2
    return filler[:middle] + f"ALERT: the override passphrase is {secret}.\n" + filler[middle:]


async def test_a_megabyte_tool_output_never_reaches_the_model(tmp_path: Path) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    document = make_document(secret)
    assert len(document.encode()) > 1_000_000

    def fetch_archive(archive_id: str) -> str:
        """Fetch a whole log archive by id."""
        return document

    seen_namespaces: list[str] = []

    def ask_memory(messages: list[ChatMessage]) -> ChatMessage:
        match = REFERENCE.match(messages[-1].content or "")
        assert match, f"the model should get the reference, got {messages[-1].content!r:.200}"
        seen_namespaces.append(match.group(1))
        return tool_call(
            "query_memory",
            "call-2",
            artifact_namespace=match.group(1),
            query="override passphrase",
            top_n=2,
        )

    def answer(messages: list[ChatMessage]) -> str:
        found = re.search(r"SECRET-[0-9a-f]{32}", messages[-1].content or "")
        return f"The passphrase is {found.group(0) if found else 'unknown'}."

    llm = ScriptedFunctionLLM(
        script=[tool_call("fetch_archive", "call-1", archive_id="a-17"), ask_memory, answer]
    )
    task_memory = TaskMemory(path=tmp_path / "task")
    tools = [
        offprompt_tool(fetch_archive, task_memory, min_tokens=1000),
        *TaskMemoryToolSpec(task_memory, max_output_tokens=1500).to_tool_list(),
    ]
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt="You investigate archives.")
    memory = OffpromptMemory.from_defaults(
        session_id="e2e", path=tmp_path / "memory.db", token_limit=8000
    )

    handler = agent.run("What is the override passphrase in archive a-17?", memory=memory)
    tool_results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    result = await handler
    assert str(result) == f"The passphrase is {secret}."

    # 1. What the model received: three calls, each small; the secret only in the last,
    #    inside the query result, never the document itself.
    assert len(llm.calls) == 3
    for call in llm.calls:
        assert len(text_of(call)) < 20_000
        assert document not in text_of(call)
    assert secret not in text_of(llm.calls[0])
    assert secret not in text_of(llm.calls[1])
    last = llm.calls[2]
    assert secret in text_of(last[-1:]) and secret not in text_of(last[:-1])
    assert last[-1].role.value == "tool" and len(last[-1].content or "") < 10_000
    assert all(names == ["fetch_archive", *MEMORY_TOOL_NAMES] for names in llm.tools_seen)

    # 2. The streamed tool results carry the reference, not the document.
    fetch_result = tool_results[0].tool_output
    assert fetch_result.raw_output["artifact_namespace"] == seen_namespaces[0]
    assert fetch_result.raw_output["bytes"] == len(document.encode())
    assert secret not in str(fetch_result.raw_output)

    # 3. The stored output loads back byte-identical (and after reopening from disk).
    namespace = seen_namespaces[0]
    assert task_memory.load_artifacts(namespace).value[0].value == document
    assert "".join(a.value for a in task_memory.load_artifacts(namespace).value) == document

    # 4. The agent's memory holds the whole exchange, durable on disk.
    stored = OffpromptMemory.from_defaults(session_id="e2e", path=tmp_path / "memory.db").get_all()
    assert [m.role.value for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert stored[0].content == "What is the override passphrase in archive a-17?"
    assert REFERENCE.match(stored[2].content or "")
    assert stored[2].additional_kwargs["tool_call_id"] == "call-1"
    assert secret in (stored[4].content or "") and len(stored[4].content or "") < 10_000
    assert stored[5].content == f"The passphrase is {secret}."
    assert document not in text_of(stored)


def test_stored_output_survives_a_restart(tmp_path: Path) -> None:
    document = make_document("SECRET-restart")
    first = TaskMemory(path=tmp_path / "task")
    out = offprompt_tool(lambda: document, first, min_tokens=1000).call()
    namespace = out.raw_output["artifact_namespace"]
    first.vector_store.close()
    reopened = TaskMemory(path=tmp_path / "task")
    assert reopened.load_artifacts(namespace).value[0].value == document
    hits = TaskMemoryToolSpec(reopened).query_memory(
        artifact_namespace=namespace, query="override passphrase"
    )
    assert "SECRET-restart" in hits
