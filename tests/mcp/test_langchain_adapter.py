"""The LangChain MCP adapter path: a real ``create_agent`` whose tools come from the proxy.

``langchain-mcp-adapters`` loads the proxy's tools (the upstream's and the memory
tools) from one SDK session over stdio; a scripted model reads the reference in the
tool message and greps the stored log through the proxy.
"""

from __future__ import annotations

import re

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp_testing import load_upstream, proxy_command
from offprompt_langchain.testing import ScriptedChatModel, tool_call

NAMESPACE = re.compile(r'memory_name "([^"]+)" and artifact_namespace "([^"]+)"')


async def test_create_agent_with_tools_from_the_proxy_greps_the_stored_log(home):
    needle_id, needle_code = load_upstream().NEEDLES
    command = proxy_command(home)

    def grep_the_reference(messages: list[BaseMessage]):
        reference = messages[-1]
        assert isinstance(reference, ToolMessage)
        memory_name, namespace = NAMESPACE.search(reference.text).groups()
        arguments = {"memory_name": memory_name, "artifact_namespace": namespace}
        return tool_call("grep_memory", {**arguments, "pattern": needle_code})

    model = ScriptedChatModel(
        script=[tool_call("logs", {"megabytes": 2}), grep_the_reference, "Found it."]
    )
    client = MultiServerMCPClient(
        {"logs": {"transport": "stdio", "command": command[0], "args": command[1:]}}
    )
    async with client.session("logs") as session:
        tools = await load_mcp_tools(session)
        names = {tool.name for tool in tools}
        assert {"logs", "echo", "grep_memory", "query_memory", "read_memory"} <= names
        agent = create_agent(model, tools)
        state = await agent.ainvoke({"messages": [("user", "Which request failed?")]})

    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    log_message, grep_message = tool_messages
    assert log_message.text.startswith('Output of "logs.call" was stored in memory')
    # the card shows two first and two last lines; the 2 MB log never reached the model
    assert log_message.text.count("GET /api/items") <= 4 and len(log_message.text) < 2_000
    assert needle_id in grep_message.text and "20000:" in grep_message.text
    assert state["messages"][-1].text == "Found it."
    assert model.chars_sent() < 20_000  # three model calls, none of them holds the log
