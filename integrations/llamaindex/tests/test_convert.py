"""to_llamaindex / from_llamaindex against the real llama-index-core classes.

The only fake is the LLM of the agent test: llama-index-core's own
``MockFunctionCallingLLM``, which calls every tool it is given and then answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    AudioBlock,
    CacheControl,
    CachePoint,
    ChatMessage,
    CitableBlock,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.tools import FunctionTool
from offprompt_llamaindex import (
    from_llamaindex,
    message_from_llamaindex,
    message_to_llamaindex,
    to_llamaindex,
)

from offprompt.artifacts import ImageArtifact, InfoArtifact, JsonArtifact
from offprompt.errors import DeserializationError, ValidationError
from offprompt.interop.llamaindex import read_simple_chat_store, write_simple_chat_store
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall


def through_storage(messages: list[ChatMessage]) -> list[ChatMessage]:
    """LlamaIndex -> Message -> JSON (what the stores keep) -> Message -> LlamaIndex."""
    stored = [Message.from_json(m.to_json()) for m in from_llamaindex(messages)]
    return to_llamaindex(stored)


@pytest.mark.parametrize("role", list(MessageRole))
def test_every_message_role_round_trips(role: MessageRole) -> None:
    original = ChatMessage(role=role, content=f"as {role.value}")
    (message,) = from_llamaindex([original])
    assert message.text == f"as {role.value}"
    assert message.role in ("system", "user", "assistant", "tool")
    assert to_llamaindex([message]) == [original]
    assert through_storage([original]) == [original]


def test_blocks_of_every_kind_round_trip(png: Any) -> None:
    original = [
        ChatMessage(role="system", content="be brief"),
        ChatMessage(
            role="user",
            blocks=[
                TextBlock(text="what is in these? 🦙"),
                ImageBlock(image=png(), detail="low"),
                ImageBlock(url="https://example.org/cat.png"),
                DocumentBlock(data=b"%PDF-1.4 tiny", title="tiny.pdf"),
                AudioBlock(audio=b"RIFF\x00\x00\x00\x00WAVEfmt "),
                CachePoint(cache_control=CacheControl(type="ephemeral")),
                CitableBlock(title="t", source="s", content=[TextBlock(text="cite me")]),
            ],
        ),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(
                    content="the user wants",
                    num_tokens=4,
                    additional_information={"signature": "abc"},
                ),
                TextBlock(text="Looking it up."),
                ToolCallBlock(
                    tool_call_id="call_1", tool_name="lookup", tool_kwargs={"q": "cat", "n": 3}
                ),
            ],
        ),
        ChatMessage(
            role="tool",
            content="a cat",
            additional_kwargs={"tool_call_id": "call_1", "name": "lookup"},
        ),
    ]
    messages = from_llamaindex(original)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    user = messages[1]
    assert isinstance(user.content[1], ImageArtifact) and user.content[1].value == png()
    assert (
        isinstance(user.content[2], JsonArtifact)
        and user.content[2].reference == "https://example.org/cat.png"
    )
    assert messages[2].tool_calls == [
        ToolCall(id="call_1", name="lookup", arguments={"q": "cat", "n": 3})
    ]
    assert (messages[3].tool_call_id, messages[3].name) == ("call_1", "lookup")
    assert to_llamaindex(messages) == original
    assert through_storage(original) == original


def test_openai_style_tool_calls_come_back_in_additional_kwargs() -> None:
    calls = [
        {
            "id": "call_9",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
        }
    ]
    original = [
        ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": calls})
    ]
    (message,) = from_llamaindex(original)
    assert message.tool_calls == [ToolCall(id="call_9", name="add", arguments={"a": 1, "b": 2})]
    back = through_storage(original)
    assert back == original
    assert back[0].additional_kwargs["tool_calls"] == calls and back[0].blocks == []


def test_offprompt_messages_become_native_chat_messages(png: Any) -> None:
    messages = [
        Message.user(["hi", ImageArtifact(value=png())]),
        Message.assistant("", tool_calls=[ToolCall(id="c1", name="search", arguments={"q": "x"})]),
        Message.tool([InfoArtifact(value="Output stored in memory.")], tool_call_id="c1"),
    ]
    report = ConversionReport()
    out = to_llamaindex(messages, report=report)
    assert out[0].role == MessageRole.USER and isinstance(out[0].blocks[1], ImageBlock)
    assert out[0].blocks[1].resolve_image().read() == png()  # LlamaIndex can read our image
    call = out[1].blocks[-1]
    assert isinstance(call, ToolCallBlock) and (
        call.tool_call_id,
        call.tool_name,
        call.tool_kwargs,
    ) == ("c1", "search", {"q": "x"})
    assert out[2].role == MessageRole.TOOL and out[2].content == "Output stored in memory."
    assert out[2].additional_kwargs == {"tool_call_id": "c1"}
    assert [loss.what for loss in report.losses] == ["InfoArtifact"]


async def test_function_agent_history_round_trips() -> None:
    """The representation FunctionAgent itself writes: ToolCallBlock + TOOL with tool_call_id."""

    def get_weather(city: str = "Paris") -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(get_weather)], llm=MockFunctionCallingLLM()
    )
    memory = Memory.from_defaults(session_id="agent-convert", token_limit=10_000)

    await agent.run("weather?", memory=memory)
    history = await memory.aget_all()
    messages = from_llamaindex(history)
    calls = [c for m in messages for c in m.tool_calls]
    results = [m for m in messages if m.role == "tool"]
    assert calls and results
    assert calls[0].name == "get_weather" and calls[0].arguments == {"city": "Paris"}
    assert results[0].tool_call_id == calls[0].id and results[0].text == "sunny in Paris"
    assert through_storage(history) == history


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="list of messages"):
        from_llamaindex(ChatMessage(role="user", content="x"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="list of messages"):
        to_llamaindex(Message.user("x"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="message 1: expected a llama_index ChatMessage"):
        from_llamaindex([ChatMessage(role="user", content="x"), 42])  # type: ignore[list-item]
    with pytest.raises(DeserializationError, match="unknown LlamaIndex role"):
        from_llamaindex([{"role": "robot", "blocks": []}])
    missing = Message.user([JsonArtifact(value={"type": "image", "path": "/no/such/file.png"})])
    with pytest.raises(ValidationError, match="LlamaIndex refuses it"):
        message_to_llamaindex(missing)


def test_single_message_helpers() -> None:
    chat = ChatMessage(role="chatbot", content="hey")
    message = message_from_llamaindex(chat)
    assert message.role == "assistant"
    assert message_to_llamaindex(message) == chat


# -- property: any ChatMessage round-trips -------------------------------------------------

_text = st.text(max_size=30)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=5,
)
_kwargs = st.dictionaries(_text, _json, max_size=3)
_name = st.text(alphabet="abcdefgh_", min_size=1, max_size=8)
_colors = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255))


def _blocks(png: Any) -> st.SearchStrategy[Any]:
    return st.one_of(
        _text.map(lambda t: TextBlock(text=t)),
        st.builds(
            lambda c, d: ImageBlock(image=png(2, 2, c), detail=d),
            _colors,
            st.none() | st.just("high"),
        ),
        st.builds(lambda n: ImageBlock(url=f"https://example.org/{n}.jpg"), _name),
        st.builds(
            lambda c, n: ThinkingBlock(content=c, num_tokens=n),
            st.none() | _text,
            st.none() | st.integers(0, 50),
        ),
        st.builds(
            lambda i, n, k: ToolCallBlock(tool_call_id=i, tool_name=n, tool_kwargs=k),
            st.none() | _name,
            _name,
            _kwargs,
        ),
        st.builds(
            lambda d: DocumentBlock(data=d, document_mimetype="application/octet-stream"),
            st.binary(min_size=1, max_size=40),
        ),
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_property_chat_messages_round_trip(png: Any, data: st.DataObject) -> None:
    kwargs = data.draw(
        st.dictionaries(
            st.sampled_from(["thinking", "usage", "tool_call_id", "name"]), _text, max_size=3
        )
    )
    blocks = data.draw(st.lists(_blocks(png), max_size=4))
    original = ChatMessage(
        role=data.draw(st.sampled_from(list(MessageRole))), blocks=blocks, additional_kwargs=kwargs
    )
    assert to_llamaindex(from_llamaindex([original])) == [original]
    assert through_storage([original]) == [original]


# -- SimpleChatStore files ------------------------------------------------------------------


def test_written_file_loads_in_simple_chat_store(tmp_path: Path, png: Any) -> None:
    sessions = {
        "s1": [
            Message.user("héllo"),
            Message.assistant("", tool_calls=[ToolCall(id="c", name="f", arguments={"a": 1})]),
            Message.tool("done", tool_call_id="c"),
        ],
        "s2": [Message.user(["look", ImageArtifact(value=png())])],
    }
    path = write_simple_chat_store(sessions, tmp_path / "chat_store.json")
    store = SimpleChatStore.from_persist_path(str(path))
    assert sorted(store.get_keys()) == ["s1", "s2"]
    for key, messages in sessions.items():
        assert store.get_messages(key) == to_llamaindex(messages)


def test_simple_chat_store_file_is_read(tmp_path: Path) -> None:
    # SimpleChatStore.persist() writes model_dump_json() of the store: {"store": {key: [ChatMessage
    # dumps]}, "class_name": "SimpleChatStore"}. With pydantic 2.14 persist() itself raises
    # inside LlamaIndex's WrapSerializer, so the same document is built from the dumps here.
    store = SimpleChatStore()
    chat = [
        ChatMessage(role="user", content="q"),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="t1", tool_name="calc", tool_kwargs={"x": 2})],
        ),
        ChatMessage(role="tool", content="4", additional_kwargs={"tool_call_id": "t1"}),
    ]
    store.set_messages("alice", chat)
    doc = {
        "store": {
            k: [m.model_dump(mode="json") for m in store.get_messages(k)] for k in store.get_keys()
        },
        "class_name": SimpleChatStore.class_name(),
    }
    path = tmp_path / "chat_store.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    sessions = read_simple_chat_store(path)
    assert sessions["alice"][1].tool_calls == [ToolCall(id="t1", name="calc", arguments={"x": 2})]
    assert sessions["alice"][2].tool_call_id == "t1"
    assert to_llamaindex(sessions["alice"]) == chat
    assert SimpleChatStore.from_persist_path(str(path)).get_messages("alice") == chat


# -- LangChain -> Message -> LlamaIndex -> Message -> LangChain ------------------------------


def test_cross_framework_langchain_llamaindex_langchain(png: Any) -> None:
    import base64

    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from offprompt_langchain import from_langchain, to_langchain

    data_url = "data:image/png;base64," + base64.b64encode(png()).decode()
    original = [
        SystemMessage("You are terse."),
        HumanMessage(
            content=[
                {"type": "text", "text": "Compare these 🦙"},
                {"type": "image_url", "image_url": {"url": data_url}},
                {"type": "image_url", "image_url": {"url": "https://example.org/b.png"}},
            ],
            name="zoë",
        ),
        AIMessage(
            content="Checking.",
            tool_calls=[
                {
                    "id": "call_a",
                    "name": "lookup",
                    "args": {"q": "llama", "n": 2},
                    "type": "tool_call",
                },
                {"id": "call_b", "name": "size", "args": {}, "type": "tool_call"},
            ],
        ),
        ToolMessage("3 results", tool_call_id="call_a", name="lookup"),
        ToolMessage("42", tool_call_id="call_b", name="size"),
        AIMessage("Done."),
    ]
    first = from_langchain(original)
    via_llamaindex = to_llamaindex(first)
    # JSON storage on the LlamaIndex side too, as a shared session would do.
    second = [Message.from_json(m.to_json()) for m in from_llamaindex(via_llamaindex)]
    back = to_langchain(second)

    assert [type(m) for m in back] == [type(m) for m in original]
    assert [m.text for m in back] == [m.text for m in original]
    assert [a.role for a in first] == [b.role for b in second]
    # names and tool-call ids, names, arguments
    assert back[1].name == "zoë"
    assert [(c["id"], c["name"], c["args"]) for c in back[2].tool_calls] == [
        ("call_a", "lookup", {"q": "llama", "n": 2}),
        ("call_b", "size", {}),
    ]
    assert [(m.tool_call_id, m.name) for m in back[3:5]] == [
        ("call_a", "lookup"),
        ("call_b", "size"),
    ]
    # images: the inline one keeps its bytes, the URL one its URL
    assert second[1].images[0].value == png()
    assert isinstance(via_llamaindex[1].blocks[2], ImageBlock)
    assert str(via_llamaindex[1].blocks[2].url) == "https://example.org/b.png"
    urls = json.dumps(back[1].content)
    assert "https://example.org/b.png" in urls
    assert base64.b64encode(png()).decode() in urls


def test_pydantic_objects_in_additional_kwargs_are_read() -> None:
    # MockFunctionCallingLLM and older integrations put objects (ToolSelection, OpenAI
    # ChatCompletionMessageToolCall) in additional_kwargs["tool_calls"]; model_dump turns them
    # into dicts, which are understood and then written back as those dicts.
    from llama_index.core.llms.llm import ToolSelection

    chat = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [ToolSelection(tool_id="s1", tool_name="f", tool_kwargs={"k": "v"})]
        },
    )
    (message,) = from_llamaindex([chat])
    assert message.tool_calls == [ToolCall(id="s1", name="f", arguments={"k": "v"})]
    back = to_llamaindex([message])[0]
    assert back.additional_kwargs["tool_calls"] == [
        {"tool_id": "s1", "tool_name": "f", "tool_kwargs": {"k": "v"}}
    ]
    assert back.model_dump(mode="json") == chat.model_dump(mode="json")
