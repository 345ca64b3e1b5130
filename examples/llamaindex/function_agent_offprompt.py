"""A LlamaIndex FunctionAgent whose tool returns a large document, kept off-prompt.

Run: python examples/llamaindex/function_agent_offprompt.py
(writes under $OFFPROMPT_HOME, or ./.offprompt)

1. ``fetch_contract`` returns ~230 KB of text. Wrapped with ``offprompt_tool``, its
   output is stored in ``TaskMemory`` (embedded Qdrant) and the model gets one sentence:
   the reference with the ``artifact_namespace``.
2. ``TaskMemoryToolSpec`` gives the model ``query_memory`` / ``grep_memory`` / ``read_memory`` /
   ``summarize_memory``; it asks for the clause it needs and gets a few hundred tokens.
3. The whole exchange is in an ``OffpromptMemory`` session in the SQLite store.

The model is ``offprompt_llamaindex.testing.ScriptedFunctionLLM`` (no network, no key).
It records what it receives, so the script can show how little of the document the model
ever saw.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from offprompt_llamaindex import OffpromptMemory, TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.testing import ScriptedFunctionLLM, tool_call

from offprompt.stores import default_path
from offprompt.task_memory import TaskMemory

CLAUSE = "Clause 14.2: either party may terminate with 90 days written notice."


def fetch_contract(contract_id: str) -> str:
    """Fetch the full text of a contract by its id."""
    filler = "".join(
        f"Clause {i}.{j}: the supplier shall deliver item {i * 10 + j} as specified.\n"
        for i in range(1, 400)
        for j in range(1, 10)
    )
    cut = filler.index("Clause 14.2:")
    end = filler.index("\n", cut) + 1
    return filler[:cut] + CLAUSE + "\n" + filler[end:]


def decide(messages: list[ChatMessage]) -> ChatMessage:
    """Plays the model: fetch, then query the stored output, then answer."""
    last = messages[-1]
    if last.role.value == "user":
        return tool_call("fetch_contract", "c1", contract_id="ACME-7")
    found = re.search(r'was stored in memory .* artifact_namespace "([^"]+)"', last.content or "")
    if found:
        return tool_call(
            "query_memory",
            "c2",
            artifact_namespace=found.group(1),
            query="terminate notice days",
            top_n=1,
        )
    notice = re.search(r"terminate with (\d+ days)", last.content or "")
    return ChatMessage(
        role="assistant",
        content=f"Either party may terminate with {notice.group(1) if notice else '?'} notice.",
    )


async def main() -> None:
    home = default_path().parent
    task_memory = TaskMemory(path=home / "task-memory")
    tools = [
        offprompt_tool(fetch_contract, task_memory, min_tokens=1000),
        *TaskMemoryToolSpec(task_memory, max_output_tokens=700).to_tool_list(),
    ]
    llm = ScriptedFunctionLLM(script=[decide])  # the last step repeats: it decides each turn
    agent = FunctionAgent(
        tools=tools, llm=llm, system_prompt="You answer questions about contracts."
    )
    memory = OffpromptMemory.from_defaults(session_id="example-agent", token_limit=8000)
    memory.reset()

    answer = await agent.run("How can the ACME-7 contract be terminated?", memory=memory)
    print(f"answer: {answer}")

    document = fetch_contract("ACME-7")
    sent = [sum(len(json.dumps(m.model_dump(mode="json"))) for m in call) for call in llm.calls]
    print(f"tool output: {len(document):,} characters; stored in {Path(home / 'task-memory')}")
    print(f"characters sent to the model per call: {sent}")
    for message in memory.get_all():
        text = (message.content or "").replace("\n", " ")
        calls = [
            f"{b.tool_name}({b.tool_kwargs})"
            for b in message.blocks
            if isinstance(b, ToolCallBlock)
        ]
        print(f"  {message.role.value:9} {text[:110]}{' ' + ', '.join(calls) if calls else ''}")

    namespace = re.search(r'artifact_namespace "([^"]+)"', memory.get_all()[2].content or "")
    assert namespace is not None
    assert task_memory.load_artifacts(namespace.group(1)).value[0].value == document
    assert max(sent) < len(document) // 20 and "90 days" in str(answer)
    print("the stored output loads back byte-identical; the model never saw it whole")


if __name__ == "__main__":
    asyncio.run(main())
