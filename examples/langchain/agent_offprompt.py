"""A `create_agent` agent whose tool returns a ~1 MB document, with OffpromptMiddleware (offline).

The middleware stores the document off-prompt, shows the model a one-line reference,
adds `query_memory` / `read_memory` / `summarize_memory`, trims the model input to a
token budget and records the thread durably. The chat model is scripted: it reads the
reference it was shown, queries the memory, and answers.

Run: python examples/langchain/agent_offprompt.py
"""

from __future__ import annotations

import re

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from offprompt_langchain import OffpromptMiddleware
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.conversation import ConversationMemory
from offprompt.stores import default_store
from offprompt.task_memory import TaskMemory

LINES = [f"{i:06d} INFO request served in {i % 97} ms by node-{i % 13}\n" for i in range(20_000)]
LINES[12_345] = "012345 ERROR node-7: disk /dev/sdb is full (quota 2 TB)\n"
DOCUMENT = "".join(LINES)


@tool
def fetch_logs(service: str) -> str:
    """Fetch the full log of a service."""
    return DOCUMENT


def query_what_was_stored(messages: list[BaseMessage]) -> object:
    reference = messages[-1].text
    print(f"model saw the tool result as: {reference}")
    memory_name, namespace = re.findall(r'"([^"]+)"', reference)[1:3]
    return tool_call(
        "query_memory",
        {"memory_name": memory_name, "artifact_namespace": namespace, "query": "ERROR disk full"},
    )


def answer(messages: list[BaseMessage]) -> str:
    hit = re.search(r"ERROR (node-\d+): disk (\S+) is full", messages[-1].text)
    return f"{hit[1]} ran out of space on {hit[2]}." if hit else "No error found."


model = ScriptedChatModel(
    script=[tool_call("fetch_logs", {"service": "api"}), query_what_was_stored, answer]
)
task_memory = TaskMemory()
history = ConversationMemory(default_store())  # the embedded SQLite file
agent = create_agent(
    model,
    [fetch_logs],
    system_prompt="You are an SRE assistant.",
    middleware=[OffpromptMiddleware(task_memory, max_tokens=8000, memory=history)],
    checkpointer=InMemorySaver(),
)

config = {"configurable": {"thread_id": "incident-42"}}
state = agent.invoke({"messages": [("user", "Why is the api failing?")]}, config)

print(f"agent answered: {state['messages'][-1].content}")
sent = model.chars_sent()
print(f"tool output: {len(DOCUMENT):,} characters; sent to the model in all calls: {sent:,}")
stored = next(m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "fetch_logs")
loaded = task_memory.load_artifacts(stored.artifact["artifact_namespace"]).value[0].value
print(
    f"stored output loads back identical: {loaded == DOCUMENT} ({stored.artifact['tokens']:,} tokens)"
)
recorded = ConversationMemory(history.store, "incident-42").messages()
print(f"thread recorded in {history.store.path}: {[m.role for m in recorded]}")
