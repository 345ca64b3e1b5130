"""The deployed app of the deployment tests: FastAPI under ``uvicorn --workers N``.

Every worker process opens the same off-prompt memory at startup, the way a user deploys
an agent: ``TaskMemory(path=DIR/task)``, LangGraph threads in ``OffpromptSaver(path=...)``
and LlamaIndex chat history in ``OffpromptMemory(path=...)``, all under the directory
named by ``OFFPROMPT_DEPLOY_DIR``. Once everything is open it writes ``DIR/ready/<pid>``,
so the test knows every worker is up.

Two endpoints, one per framework, each running one turn of a thread:

* ``POST /langchain/turn``: a ``langchain.agents.create_agent`` agent with
  :class:`~offprompt_langchain.OffpromptMiddleware` and the checkpointer.
* ``POST /llamaindex/turn``: a LlamaIndex ``FunctionAgent`` with the offprompt tool
  wrapper, the memory tools and :class:`~offprompt_llamaindex.OffpromptMemory`.

The model is **not** a language model: it is a scripted fake
(``offprompt_langchain.testing.ScriptedChatModel`` here,
``offprompt_llamaindex.testing.ScriptedFunctionLLM`` there) whose reply is a pure
function of the messages it is shown, so any worker gives the same reply to the same thread. A user
turn is a JSON command (``{"op": ..., "source": ..., "args": {...}}``): ``fetch_log`` and
``log_events`` call the tool of that name (whose large output goes off-prompt), a memory
tool op (``grep_memory``...) calls that tool on the reference the ``source`` tool left
earlier in the thread, which the model finds in the history the worker loaded from the
shared stores. After a tool result the model answers with it verbatim (a memory tool) or
with ``stored <memory_name> <namespace>`` (a stored output), so the HTTP answer is what
the memory tool said.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from offprompt_langchain import OffpromptMiddleware, OffpromptSaver
from offprompt_langchain.testing import ScriptedChatModel
from offprompt_llamaindex import OffpromptMemory, TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.testing import ScriptedFunctionLLM
from offprompt_llamaindex.testing import tool_call as li_tool_call
from pydantic import BaseModel

from offprompt.task_memory import TaskMemory

LOG = Path(__file__).with_name("data") / "HDFS_800.log"
REFERENCE = re.compile(
    r'Output of "(\w+)\.call" was stored in memory with memory_name "([^"]+)" '
    r'and artifact_namespace "([^"]+)"'
)
FETCH_TOOLS = ("fetch_log", "log_events")


def log_text() -> str:
    """The real HDFS log excerpt the ``fetch_log`` tool returns (112 KB, 800 lines)."""
    return LOG.read_text(encoding="utf-8")


def log_events_json() -> str:
    """The excerpt parsed into JSON events (what ``log_events`` returns)."""
    events = []
    for number, line in enumerate(log_text().splitlines(), 1):
        date, time, pid, level, component, content = line.split(" ", 5)
        events.append(
            {
                "line": number,
                "date": date,
                "time": time,
                "pid": int(pid),
                "level": level,
                "component": component.rstrip(":"),
                "content": content,
            }
        )
    return json.dumps({"system": "HDFS", "events": events})


def _fetch(system: str, what: str) -> str:
    if system != "HDFS":
        raise ValueError(f"no log for system {system!r}: this deployment has HDFS")
    return log_text() if what == "fetch_log" else log_events_json()


# -- the policy both fake models follow ---------------------------------------------------


def decide(user: str, references: dict[str, tuple[str, str]], last_tool: str | None) -> Any:
    """The next step of the thread: a tool call ``(name, args)`` or a final answer (str).

    Args:
        user: The thread's last user message (a JSON command).
        references: ``tool -> (memory_name, namespace)`` of every reference in the history.
        last_tool: The content of the tool result just received, if the model is answering one.
    """
    if last_tool is not None:
        found = REFERENCE.search(last_tool)
        if found and found[1] in FETCH_TOOLS:
            return f"stored {found[2]} {found[3]}"
        return last_tool
    command = json.loads(user)
    op = command["op"]
    if op in FETCH_TOOLS:
        return (op, {"system": "HDFS"})
    source = references.get(command["source"])
    if source is None:
        return f"no reference from {command['source']} in this thread"
    memory_name, namespace = source
    return (op, {"memory_name": memory_name, "artifact_namespace": namespace, **command["args"]})


def _references(texts: Sequence[str]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for text in texts:
        for match in REFERENCE.finditer(text):
            found[match[1]] = (match[2], match[3])
    return found


def langchain_policy(messages: list[BaseMessage]) -> AIMessage | str:
    """The LangChain model's reply (``ScriptedChatModel``'s default step): :func:`decide`."""
    user = next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))
    last = messages[-1]
    step = decide(
        user,
        _references([m.text for m in messages if isinstance(m, ToolMessage)]),
        last.text if isinstance(last, ToolMessage) else None,
    )
    if isinstance(step, str):
        return step
    name, args = step
    call = {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}"}
    return AIMessage(content="", tool_calls=[call])


def llamaindex_policy(messages: list[ChatMessage]) -> ChatMessage | str:
    """:func:`decide` for the LlamaIndex scripted LLM."""
    user = next(m.content or "" for m in reversed(messages) if m.role.value == "user")
    last = messages[-1]
    step = decide(
        user,
        _references([m.content or "" for m in messages if m.role.value == "tool"]),
        (last.content or "") if last.role.value == "tool" else None,
    )
    if isinstance(step, str):
        return step
    name, args = step
    return li_tool_call(name, f"call-{uuid.uuid4().hex[:12]}", **args)


# -- the app ---------------------------------------------------------------------------------


def fetch_log(system: str) -> str:
    """Fetch the whole raw log of a system (e.g. "HDFS")."""
    return _fetch(system, "fetch_log")


def log_events(system: str) -> str:
    """Fetch a system's log parsed into JSON events."""
    return _fetch(system, "log_events")


class Turn(BaseModel):
    """One user turn of a thread."""

    thread: str
    text: str


class Answer(BaseModel):
    """What a worker answers: its pid and the agent's final answer."""

    pid: int
    answer: str


_state: dict[str, Any] = {}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    root = Path(os.environ["OFFPROMPT_DEPLOY_DIR"])
    task_memory = TaskMemory(path=root / "task")
    saver = OffpromptSaver(path=str(root / "threads.db"))
    _state["langchain"] = create_agent(
        ScriptedChatModel(default=langchain_policy),
        [tool(fetch_log), tool(log_events)],
        middleware=[OffpromptMiddleware(task_memory, min_tokens=1000)],
        checkpointer=saver,
    )
    _state["llamaindex"] = FunctionAgent(
        tools=[
            offprompt_tool(fetch_log, task_memory, min_tokens=1000),
            offprompt_tool(log_events, task_memory, min_tokens=1000),
            *TaskMemoryToolSpec(task_memory).to_tool_list(),
        ],
        llm=ScriptedFunctionLLM(script=[llamaindex_policy]),
        system_prompt="You investigate logs.",
    )
    _state["chats"] = root / "chats.db"
    ready = root / "ready"
    ready.mkdir(exist_ok=True)
    (ready / str(os.getpid())).touch()
    yield
    _state.clear()
    saver.close()
    task_memory.close()  # a graceful shutdown releases this worker's chunk index


app = FastAPI(lifespan=lifespan)


@app.post("/langchain/turn")
async def langchain_turn(turn: Turn) -> Answer:
    """One turn of a LangGraph thread (its state in the shared checkpointer)."""
    state = await _state["langchain"].ainvoke(
        {"messages": [HumanMessage(turn.text)]}, {"configurable": {"thread_id": turn.thread}}
    )
    return Answer(pid=os.getpid(), answer=state["messages"][-1].text)


@app.post("/llamaindex/turn")
async def llamaindex_turn(turn: Turn) -> Answer:
    """One turn of a LlamaIndex chat (its history in the shared ``OffpromptMemory``)."""
    memory = OffpromptMemory.from_defaults(
        session_id=turn.thread, path=_state["chats"], token_limit=200_000
    )
    result = await _state["llamaindex"].run(turn.text, memory=memory)
    return Answer(pid=os.getpid(), answer=str(result))
