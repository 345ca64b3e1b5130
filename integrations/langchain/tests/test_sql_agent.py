"""An aggregate question answered in one ``sql_memory`` call by a real ``create_agent``
(issue 48): a tool returns a paged product list far too large for the prompt, the
scripted model (the only fake) is shown its reference and asks one SQL question, and
the answer it receives is the count computed here in Python, in a few lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from offprompt_langchain import offprompt_tool, task_memory_tools
from offprompt_langchain.testing import ScriptedChatModel, tool_call

from offprompt.task_memory import TaskMemory

REFERENCE = re.compile(r'memory_name "([^"]+)" and artifact_namespace "([^"]+)"')
PRODUCTS = [
    {"sku": f"P{i:05d}", "name": f"product {i}", "stock": (i * 37) % 60, "threshold": 10 + i % 9}
    for i in range(5_000)
]
BELOW = sum(1 for p in PRODUCTS if p["stock"] < p["threshold"])


@tool
def list_products(page_size: int) -> str:
    """List every product of the shop with its stock and reorder threshold."""
    return json.dumps({"products": PRODUCTS, "total": len(PRODUCTS)})


def _script() -> list[Any]:
    def ask(messages: list[BaseMessage]) -> Any:
        found = REFERENCE.search(messages[-1].text)
        assert found is not None, "the model was not shown a reference"
        table = found[2]
        return tool_call(
            "sql_memory",
            {
                "memory_name": found[1],
                "references": [table],
                "query": f'SELECT count(*) AS below FROM (SELECT unnest(products) AS p FROM "{table}") '
                "WHERE p.stock < p.threshold",
            },
        )

    def answer(messages: list[BaseMessage]) -> str:
        found = re.search(r"below\n(\d+)$", messages[-1].text)
        return f"{found[1]} products are below their threshold." if found else messages[-1].text

    return [tool_call("list_products", {"page_size": 5000}), ask, answer]


def test_one_sql_call_answers_an_aggregate_over_a_stored_output() -> None:
    memory = TaskMemory()
    model = ScriptedChatModel(script=_script())
    tools = [offprompt_tool(list_products, memory), *task_memory_tools(memory, sql=True)]
    agent = create_agent(model, tools, system_prompt="You run a shop.")
    state = agent.invoke({"messages": [HumanMessage("How many products need reordering?")]})
    assert state["messages"][-1].content == f"{BELOW} products are below their threshold."
    assert "sql_memory" in model.bound_tools[0]
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "sql_memory"
    )
    assert answer.status != "error"
    # what the model was given for the whole catalogue: the card, then three lines
    assert len(answer.text) < 200
    assert model.chars_sent() < len(json.dumps(PRODUCTS)) * 0.05
