"""to_langchain / from_langchain against the real langchain-core message classes."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    trim_messages,
)
from offprompt_langchain import (
    from_langchain,
    message_from_langchain,
    message_to_langchain,
    to_langchain,
)
from PIL import Image

from offprompt.artifacts import ImageArtifact, JsonArtifact
from offprompt.conversation import ConversationMemory
from offprompt.errors import OffpromptError, SerializationError, ValidationError
from offprompt.interop import ConversionReport
from offprompt.messages import Message, ToolCall
from offprompt.stores import SQLiteStore


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "blue").save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _png()
PNG64 = base64.b64encode(PNG).decode()

# -- strategies: real LangChain messages of every type ------------------------------------

text = st.text(max_size=60)
name = st.text(min_size=1, max_size=12)
maybe_id = st.none() | name
json_leaf = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | text
json_obj = st.dictionaries(text, json_leaf, max_size=3)
block = st.one_of(
    text,
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.just({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}),
    st.just({"type": "image", "base64": PNG64, "mime_type": "image/png"}),
    st.builds(lambda u: {"type": "image", "url": "https://img.test/" + u}, text),
    st.builds(lambda r: {"type": "reasoning", "reasoning": r}, text),
    st.builds(lambda v: {"type": "non_standard", "value": v}, json_obj),
)
content = text | st.lists(block, max_size=3)
base = {
    "content": content,
    "id": maybe_id,
    "name": st.none() | name,
    "additional_kwargs": json_obj,
    "response_metadata": json_obj,
}
tool_call = st.builds(
    lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"}, name, json_obj, name
)
invalid_call = st.builds(
    lambda n, a, i: {"name": n, "args": a, "id": i, "error": "bad", "type": "invalid_tool_call"},
    st.none() | name,
    st.none() | text,
    maybe_id,
)
usage = st.none() | st.builds(
    lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
ai = {
    **base,
    "tool_calls": st.lists(tool_call, max_size=2),
    "invalid_tool_calls": st.lists(invalid_call, max_size=1),
    "usage_metadata": usage,
}
tool = {
    **base,
    "tool_call_id": name,
    "status": st.sampled_from(["success", "error"]),
    "artifact": st.none() | json_obj,
}


def _of(cls: type[BaseMessage], fields: dict[str, Any]) -> st.SearchStrategy[BaseMessage]:
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


lc_messages = st.one_of(
    _of(HumanMessage, base),
    _of(HumanMessageChunk, base),
    _of(SystemMessage, base),
    _of(SystemMessageChunk, base),
    _of(AIMessage, ai),
    _of(AIMessageChunk, ai),
    _of(
        AIMessageChunk,
        {
            **base,
            "tool_call_chunks": st.lists(
                st.builds(
                    lambda n, a, i: {"name": n, "args": a, "id": i, "index": 0},
                    st.none() | name,
                    st.none() | st.sampled_from(['{"a": 1}', '{"a": ', "[]", ""]),
                    maybe_id,
                ),
                max_size=2,
            ),
            "chunk_position": st.none() | st.just("last"),
        },
    ),
    _of(ToolMessage, tool),
    _of(ToolMessageChunk, tool),
    _of(ChatMessage, {**base, "role": st.sampled_from(["user", "assistant", "critic"])}),
    _of(ChatMessageChunk, {**base, "role": name}),
    _of(FunctionMessage, {**base, "name": name}),
    _of(FunctionMessageChunk, {**base, "name": name}),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lc_messages, max_size=4))
def test_langchain_messages_round_trip_losslessly(messages: list[BaseMessage]) -> None:
    converted = from_langchain(messages)
    assert to_langchain(converted) == messages
    assert [type(m) for m in to_langchain(converted)] == [type(m) for m in messages]
    # The storage path: Message -> JSON -> Message -> LangChain.
    stored = [Message.from_json(m.to_json()) for m in converted]
    assert to_langchain(stored) == messages


def test_a_tool_calling_exchange_keeps_every_field() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("You are terse."),
        HumanMessage(
            [
                {"type": "text", "text": "What is in this chart?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
            ],
            id="h1",
        ),
        AIMessage(
            "",
            id="run-1",
            tool_calls=[{"name": "ocr", "args": {"page": 1}, "id": "call_1"}],
            invalid_tool_calls=[{"name": "x", "args": "{", "id": "call_2", "error": "bad"}],
            usage_metadata={"input_tokens": 50, "output_tokens": 5, "total_tokens": 55},
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
        ),
        ToolMessage(
            "Stored in memory.",
            tool_call_id="call_1",
            name="ocr",
            artifact={"memory_name": "TaskMemory", "artifact_namespace": "ns", "tokens": 9000},
        ),
        ToolMessage("boom", tool_call_id="call_2", status="error"),
        AIMessage("A blue square.", id="run-2"),
    ]
    converted = from_langchain(messages)
    assert [m.role for m in converted] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    image = converted[1].images[0]
    assert isinstance(image, ImageArtifact) and image.value == PNG
    assert converted[2].tool_calls == [ToolCall(id="call_1", name="ocr", arguments={"page": 1})]
    assert converted[3].tool_call_id == "call_1" and converted[3].name == "ocr"
    assert converted[2].id == "run-1"
    assert to_langchain(converted) == messages


def test_history_through_a_real_sqlite_store_comes_back_equal(tmp_path: Path) -> None:
    messages: list[BaseMessage] = [
        HumanMessage(["look ", {"type": "image", "base64": PNG64, "mime_type": "image/png"}]),
        AIMessage("", tool_calls=[{"name": "f", "args": {"ünï": "🚀"}, "id": "c1"}]),
        ToolMessage("42", tool_call_id="c1", artifact={"k": [1, 2]}),
        AIMessageChunk(
            "partial",
            id="run-3",
            usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        ),
        ChatMessage("an aside", role="narrator"),
    ]
    path = tmp_path / "history.sqlite"
    ConversationMemory(SQLiteStore(path), "s1").add_messages(from_langchain(messages))
    reopened = ConversationMemory(SQLiteStore(path), "s1")  # as after a process restart
    assert to_langchain(reopened.messages()) == messages


def test_streamed_chunks_with_partial_tool_calls_round_trip() -> None:
    first = AIMessageChunk(
        "", tool_call_chunks=[{"name": "search", "args": '{"q": ', "id": "c1", "index": 0}]
    )
    second = AIMessageChunk(
        "", tool_call_chunks=[{"name": None, "args": '"x"}', "id": None, "index": 0}]
    )
    nameless = AIMessageChunk(
        "", tool_call_chunks=[{"name": None, "args": None, "id": None, "index": 0}]
    )
    merged = first + second
    messages: list[BaseMessage] = [first, second, nameless, merged]
    converted = from_langchain(messages)
    assert converted[3].tool_calls == [ToolCall(id="c1", name="search", arguments={"q": "x"})]
    assert converted[2].tool_calls == []  # no name yet: kept verbatim in meta only
    assert to_langchain(converted) == messages


def test_message_like_inputs_are_accepted() -> None:
    converted = from_langchain(
        [("system", "Be brief."), ("user", "hi"), {"role": "assistant", "content": "hello"}]
    )
    assert [(m.role, m.text) for m in converted] == [
        ("system", "Be brief."),
        ("user", "hi"),
        ("assistant", "hello"),
    ]


def test_single_message_helpers() -> None:
    message = message_from_langchain(AIMessage("4", id="a"))
    assert (message.role, message.text, message.id) == ("assistant", "4", "a")
    assert message_to_langchain(message) == AIMessage("4", id="a")


def test_foreign_messages_become_standard_langchain_messages() -> None:
    image = ImageArtifact(value=PNG)
    url = JsonArtifact(
        value={"url": "https://x.test/a.png"}, meta={"image_url": "https://x.test/a.png"}
    )
    messages = [
        Message.system("Be brief."),
        Message.user(["Compare", image, url], id="u1"),
        Message.assistant(None, tool_calls=[ToolCall(id="c1", name="zoom", arguments={"x": 2})]),
        Message.tool("zoomed", tool_call_id="c1", name="zoom"),
        Message.assistant("Same colour."),
    ]
    report = ConversionReport()
    out = to_langchain(messages, report)
    assert [type(m) for m in out] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert out[1].content_blocks[1] == {"type": "image", "base64": PNG64, "mime_type": "image/png"}
    assert out[1].content_blocks[2]["url"] == "https://x.test/a.png"
    assert out[2].tool_calls == [
        {"name": "zoom", "args": {"x": 2}, "id": "c1", "type": "tool_call"}
    ]
    assert not report
    # LangChain's own utilities work on the result.
    trimmed = trim_messages(
        out, max_tokens=3, token_counter=len, strategy="last", include_system=True
    )
    assert isinstance(trimmed[0], SystemMessage)


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="single message"):
        from_langchain(HumanMessage("hi"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not LangChain messages"):
        from_langchain([42])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="RemoveMessage"):
        from_langchain([RemoveMessage(id="m1")])
    with pytest.raises(ValidationError, match="BaseMessage"):
        message_from_langchain("hi")  # type: ignore[arg-type]


def test_non_json_fields_raise_or_are_reported() -> None:
    message = ToolMessage("done", tool_call_id="c", artifact=b"\x00raw bytes")
    with pytest.raises(SerializationError, match="'artifact'") as info:
        from_langchain([message])
    assert isinstance(info.value, OffpromptError)
    report = ConversionReport()
    converted = from_langchain([message], report)
    assert [loss.what for loss in report.losses] == ["artifact"]
    assert to_langchain(converted)[0].artifact is None
    assert json.loads(converted[0].to_json())["role"] == "tool"
