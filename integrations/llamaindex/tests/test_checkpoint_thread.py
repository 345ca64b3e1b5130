"""A LlamaIndex ``FunctionAgent`` continues a thread that a LangGraph agent wrote.

The LangGraph side is a real ``create_agent`` with ``checkpointer=OffpromptSaver(...)``
(scripted chat model); the LlamaIndex side is a real ``FunctionAgent`` with
``OffpromptMemory.from_defaults(session_id=thread_id)`` on the same SQLite file (scripted
function-calling LLM). No export step in between.
"""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from offprompt_langchain.checkpoint import OffpromptSaver
from offprompt_langchain.testing import ScriptedChatModel
from offprompt_langchain.testing import tool_call as lc_tool_call
from offprompt_llamaindex import OffpromptMemory
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of, tool_call


@tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"Sunny in {city}, 21 degrees."


def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    return f"Rain in {city} tomorrow."


async def test_function_agent_continues_a_langgraph_thread(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    saver = OffpromptSaver(path=str(db))
    model = ScriptedChatModel(
        script=[lc_tool_call("lookup", {"city": "Oslo"}, id="call-lg"), "Sunny, 21 degrees."]
    )
    agent = create_agent(model, tools=[lookup], checkpointer=saver)
    config = {"configurable": {"thread_id": "trip-42"}}
    agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}, config)

    memory = OffpromptMemory.from_defaults(session_id="trip-42", path=db, token_limit=4000)
    history = memory.get_all()
    assert [m.role.value for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2].additional_kwargs["tool_call_id"] == "call-lg"

    llm = ScriptedFunctionLLM(
        script=[
            tool_call("forecast", "call-li", city="Oslo"),
            "Rain tomorrow, after the sun today.",
        ]
    )
    li_agent = FunctionAgent(tools=[FunctionTool.from_defaults(forecast)], llm=llm)
    answer = await li_agent.run(ChatMessage(role="user", content="And tomorrow?"), memory=memory)
    assert "Rain tomorrow" in str(answer)
    # the LlamaIndex model saw what the LangGraph agent said
    seen = text_of(llm.calls[0])
    assert "Weather in Oslo?" in seen and "Sunny in Oslo, 21 degrees." in seen
    assert "Sunny, 21 degrees." in seen
    contents = [m.content for m in memory.get_all()]
    assert contents[:4] == [m.content for m in history]
    assert contents[4] == "And tomorrow?" and contents[-1] == "Rain tomorrow, after the sun today."
    # the LangGraph checkpoints are untouched by the LlamaIndex turn
    latest = OffpromptSaver(path=str(db)).get_tuple(config)
    assert latest is not None
    assert [m.content for m in latest.checkpoint["channel_values"]["messages"]][-1] == (
        "Sunny, 21 degrees."
    )
