"""One session, two frameworks: LangChain's history and LlamaIndex's memory share it.

A session written through ``offprompt_langchain.OffpromptChatMessageHistory`` is read by
``OffpromptMemory`` (and by LlamaIndex ``Memory`` over ``OffpromptChatStore``) on the
same SQLite file and session id, and the other way round, with tool calls and images
intact. Real classes on both sides; the agent's LLM is the only fake.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool
from offprompt_langchain import OffpromptChatMessageHistory
from offprompt_llamaindex import OffpromptChatStore, OffpromptMemory
from offprompt_llamaindex.testing import ScriptedFunctionLLM, tool_call


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "shared.db"


def langchain_session(png: bytes) -> list[Any]:
    return [
        SystemMessage("You describe pictures."),
        HumanMessage(
            content=[
                {"type": "text", "text": "What is in this picture? ☃"},
                {
                    "type": "image",
                    "base64": base64.b64encode(png).decode(),
                    "mime_type": "image/png",
                },
            ]
        ),
        AIMessage(
            content="",
            tool_calls=[
                {"id": "call-7", "name": "classify", "args": {"top": 3, "label": "façade"}}
            ],
        ),
        ToolMessage(content='{"label": "cat"}', tool_call_id="call-7", name="classify"),
        AIMessage(content="A cat."),
    ]


def test_langchain_writes_llamaindex_reads(db: Path, png: Any) -> None:
    image = png()
    history = OffpromptChatMessageHistory("user-1", path=db)
    history.add_messages(langchain_session(image))

    memory = OffpromptMemory.from_defaults(session_id="user-1", path=db, token_limit=4000)
    messages = memory.get()
    assert [m.role.value for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    question = messages[1]
    assert isinstance(question.blocks[0], TextBlock)
    assert question.blocks[0].text == "What is in this picture? ☃"
    picture = question.blocks[1]
    assert isinstance(picture, ImageBlock)
    assert picture.resolve_image().read() == image
    calls = [b for b in messages[2].blocks if isinstance(b, ToolCallBlock)]
    assert [(c.tool_call_id, c.tool_name, c.tool_kwargs) for c in calls] == [
        ("call-7", "classify", {"top": 3, "label": "façade"})
    ]
    assert messages[3].additional_kwargs["tool_call_id"] == "call-7"
    assert messages[3].content == '{"label": "cat"}' and messages[4].content == "A cat."

    # LlamaIndex's own Memory over OffpromptChatStore reads the same session.
    li_memory = Memory.from_defaults(session_id="user-1", chat_store=OffpromptChatStore(path=db))
    assert [m.model_dump() for m in li_memory.get_all()] == [m.model_dump() for m in messages]


async def test_llamaindex_agent_writes_langchain_reads(db: Path, png: Any) -> None:
    image = png(4, 4, (200, 10, 10))

    def classify(label: str, top: int = 1) -> str:
        """Classify the picture."""
        return '{"label": "cat"}'

    llm = ScriptedFunctionLLM(
        script=[tool_call("classify", "call-9", label="façade", top=2), "It is a cat."]
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(classify)], llm=llm)
    memory = OffpromptMemory.from_defaults(session_id="user-2", path=db)
    question = ChatMessage(
        role="user", blocks=[TextBlock(text="What is this? ☃"), ImageBlock(image=image)]
    )
    await agent.run(question, memory=memory)

    history = OffpromptChatMessageHistory("user-2", path=db)
    lc = history.messages
    assert [type(m).__name__ for m in lc] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    parts = lc[0].content
    assert isinstance(parts, list) and parts[0]["text"] == "What is this? ☃"
    image_part = parts[1]
    encoded = image_part.get("base64") or image_part.get("data") or ""
    if not encoded and "image_url" in image_part:
        encoded = image_part["image_url"]["url"].split(",", 1)[1]
    assert base64.b64decode(encoded) == image
    assert lc[1].tool_calls == [
        {
            "id": "call-9",
            "name": "classify",
            "args": {"label": "façade", "top": 2},
            "type": "tool_call",
        }
    ]
    assert isinstance(lc[2], ToolMessage) and lc[2].tool_call_id == "call-9"
    assert lc[2].content == '{"label": "cat"}'
    assert lc[3].content == "It is a cat."


def test_alternating_writers_keep_one_ordered_session(db: Path) -> None:
    history = OffpromptChatMessageHistory("user-3", path=db)
    memory = OffpromptMemory.from_defaults(session_id="user-3", path=db)
    history.add_user_message("1 from langchain")
    memory.put(ChatMessage(role="assistant", content="2 from llamaindex"))
    history.add_user_message("3 from langchain")
    memory.put(ChatMessage(role="assistant", content="4 from llamaindex"))
    expected = ["1 from langchain", "2 from llamaindex", "3 from langchain", "4 from llamaindex"]
    assert [m.content for m in history.messages] == expected
    assert [m.content for m in memory.get_all()] == expected
    history.clear()
    assert memory.get_all() == []
