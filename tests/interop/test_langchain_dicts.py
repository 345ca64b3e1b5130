"""LangChain message dicts (``messages_to_dict`` shape) ⇄ Message, without importing LangChain.

The dicts here are written in exactly the shape langchain-core 1.x's ``messages_to_dict``
produces (every field present); ``integrations/langchain/tests/test_convert.py`` checks
the same conversions against the real LangChain classes.
"""

from __future__ import annotations

import base64
import copy
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from strategies import images, json_objects, names, texts

from offprompt.artifacts import (
    BlobArtifact,
    ErrorArtifact,
    ImageArtifact,
    JsonArtifact,
    TextArtifact,
)
from offprompt.errors import (
    DeserializationError,
    OffpromptError,
    SerializationError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.interop.langchain import (
    IMAGE_URL_META,
    LANGCHAIN_TYPES,
    message_from_langchain_dict,
    message_to_langchain_dict,
    messages_from_langchain_dicts,
    messages_to_langchain_dicts,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall


def _png(size: tuple[int, int] = (3, 2), color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _png()
PNG64 = base64.b64encode(PNG).decode()


def lc(type_: str, content: Any = "", **fields: Any) -> dict[str, Any]:
    """A dict as ``messages_to_dict`` writes it: every field of the type present."""
    data: dict[str, Any] = {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": type_,
        "name": None,
        "id": None,
    }
    if type_ in ("ai", "AIMessageChunk"):
        data.update(tool_calls=[], invalid_tool_calls=[], usage_metadata=None)
    if type_ == "AIMessageChunk":
        data.update(tool_call_chunks=[], chunk_position=None)
    if type_ in ("tool", "ToolMessageChunk"):
        data.update(tool_call_id="call_0", artifact=None, status="success")
    if type_ in ("chat", "ChatMessageChunk"):
        data.update(role="critic")
    if type_ in ("function", "FunctionMessageChunk"):
        data.update(name="lookup")
    data.update(fields)
    return {"type": type_, "data": data}


def round_trip(dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """LangChain dicts → Message → JSON (as a store keeps it) → Message → LangChain dicts."""
    messages = messages_from_langchain_dicts(dicts)
    stored = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in messages]
    assert messages_to_langchain_dicts(messages) == dicts
    return messages_to_langchain_dicts(stored)


# -- strategies: LangChain dicts of every type --------------------------------------------

ids = st.none() | st.text(min_size=1, max_size=20)
b64_images = images().map(lambda art: (art.base64, art.mime_type))
blocks = st.one_of(
    texts,  # a bare string item
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(
        lambda t, i: {"type": "text", "text": t, "id": i, "annotations": []},
        texts,
        names,
    ),
    b64_images.map(
        lambda im: {"type": "image_url", "image_url": {"url": f"data:{im[1]};base64,{im[0]}"}}
    ),
    b64_images.map(
        lambda im: {
            "type": "image_url",
            "image_url": {"url": f"data:{im[1]};base64,{im[0]}", "detail": "low"},
        }
    ),
    b64_images.map(lambda im: {"type": "image", "base64": im[0], "mime_type": im[1], "id": "i"}),
    b64_images.map(
        lambda im: {"type": "image", "source_type": "base64", "data": im[0], "mime_type": im[1]}
    ),
    b64_images.map(
        lambda im: {
            "type": "image",
            "source": {"type": "base64", "media_type": im[1], "data": im[0]},
        }
    ),
    st.builds(
        lambda data: {
            "type": "audio",
            "base64": base64.b64encode(data).decode(),
            "mime_type": "audio/wav",
        },
        st.binary(max_size=64),
    ),
    st.builds(
        lambda data: {
            "type": "file",
            "url": "data:application/pdf;base64," + base64.b64encode(data).decode(),
        },
        st.binary(max_size=64),
    ),
    st.builds(lambda u: {"type": "image", "url": u}, texts),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": "https://x.test/" + u}}, texts),
    st.builds(lambda r: {"type": "reasoning", "reasoning": r, "id": "rs_1"}, texts),
    st.builds(
        lambda n, a: {"type": "tool_call", "id": "c", "name": n, "args": a}, names, json_objects
    ),
    st.builds(lambda v: {"type": "non_standard", "value": v}, json_objects),
    json_objects,  # provider-specific blocks of any shape
)
contents = texts | st.lists(blocks, max_size=4)
tool_call_dicts = st.builds(
    lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"}, names, json_objects, ids
)
invalid_calls = st.builds(
    lambda n, a, i, e: {"type": "invalid_tool_call", "id": i, "name": n, "args": a, "error": e},
    st.none() | names,
    st.none() | texts,
    ids,
    st.none() | texts,
)
usages = st.none() | st.builds(
    lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
common = {
    "content": contents,
    "additional_kwargs": json_objects,
    "response_metadata": json_objects,
    "name": st.none() | names,
    "id": ids,
}


def _message(type_: str, **extra: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({**common, **extra}).map(lambda fields: lc(type_, **fields))


ai_fields = {
    "tool_calls": st.lists(tool_call_dicts, max_size=2),
    "invalid_tool_calls": st.lists(invalid_calls, max_size=2),
    "usage_metadata": usages,
}
chunk_fields = {
    "tool_call_chunks": st.lists(
        st.builds(
            lambda n, a, i: {"name": n, "args": a, "id": i, "index": 0, "type": "tool_call_chunk"},
            st.none() | names,
            st.none() | texts,
            ids,
        ),
        max_size=2,
    ),
    "chunk_position": st.none() | st.just("last"),
}
tool_fields = {
    "tool_call_id": names,
    "artifact": st.none() | json_objects,
    "status": st.sampled_from(["success", "error"]),
}
lc_messages = st.one_of(
    _message("human"),
    _message("HumanMessageChunk"),
    _message("system"),
    _message("SystemMessageChunk"),
    _message("ai", **ai_fields),
    _message("AIMessageChunk", **ai_fields, **chunk_fields),
    _message("tool", **tool_fields),
    _message("ToolMessageChunk", **tool_fields),
    _message("chat", role=st.sampled_from(["user", "assistant", "system", "critic", "narrator"])),
    _message("ChatMessageChunk", role=names),
    _message("function", name=names),
    _message("FunctionMessageChunk", name=names),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lc_messages, max_size=4))
def test_langchain_dicts_round_trip_losslessly(dicts: list[dict[str, Any]]) -> None:
    original = copy.deepcopy(dicts)
    assert round_trip(dicts) == original
    assert dicts == original  # the input is not modified
    # The parts and tool calls carry the data; nothing falls back to a verbatim copy
    # except tool calls without an id, which a ToolCall cannot hold.
    for item, message in zip(dicts, messages_from_langchain_dicts(dicts), strict=True):
        kept = message.meta["_langchain"]["fields"]
        assert "content" not in kept
        calls = item["data"].get("tool_calls", [])
        assert ("tool_calls" in kept) == any(c["id"] is None for c in calls)


def test_every_type_is_covered_and_mapped_to_a_role() -> None:
    dicts = [lc(t, "x") for t in LANGCHAIN_TYPES]
    roles = {
        d["type"]: m.role for d, m in zip(dicts, messages_from_langchain_dicts(dicts), strict=True)
    }
    assert roles == {
        "human": "user",
        "HumanMessageChunk": "user",
        "ai": "assistant",
        "AIMessageChunk": "assistant",
        "system": "system",
        "SystemMessageChunk": "system",
        "tool": "tool",
        "ToolMessageChunk": "tool",
        "function": "tool",
        "FunctionMessageChunk": "tool",
        "chat": "user",  # custom role "critic": user, the original kept in meta
        "ChatMessageChunk": "user",
    }
    assert round_trip(dicts) == dicts


@pytest.mark.parametrize(
    ("chat_role", "role"),
    [("assistant", "assistant"), ("ai", "assistant"), ("developer", "system"), ("human", "user")],
)
def test_chat_message_roles(chat_role: str, role: str) -> None:
    dicts = [lc("chat", "hello", role=chat_role)]
    message = messages_from_langchain_dicts(dicts)[0]
    assert message.role == role
    assert round_trip(dicts) == dicts


def test_ai_message_fields_land_where_other_frameworks_see_them() -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 3,
        "total_tokens": 15,
        "input_token_details": {"cache_read": 4},
    }
    data = lc(
        "ai",
        "Looking it up.",
        id="run-1",
        name="agent",
        tool_calls=[
            {"name": "search", "args": {"q": "qdrant ünï"}, "id": "call_1", "type": "tool_call"}
        ],
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "id": "call_2",
                "name": "calc",
                "args": "{1+",
                "error": "bad json",
            }
        ],
        usage_metadata=usage,
        additional_kwargs={"refusal": None},
        response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
    )
    message = message_from_langchain_dict(data)
    assert message.id == "run-1" and message.name == "agent" and message.text == "Looking it up."
    assert message.tool_calls == [
        ToolCall(id="call_1", name="search", arguments={"q": "qdrant ünï"})
    ]
    kept = message.meta["_langchain"]["fields"]
    assert kept["usage_metadata"] == usage
    assert kept["invalid_tool_calls"][0]["error"] == "bad json"
    assert kept["response_metadata"]["model_name"] == "fake"
    assert "tool_calls" not in kept  # carried by Message.tool_calls, not duplicated
    assert message_to_langchain_dict(message) == data


def test_tool_message_status_and_artifact_are_kept() -> None:
    data = lc(
        "tool",
        "404",
        tool_call_id="call_1",
        name="fetch",
        status="error",
        artifact={"memory_name": "TaskMemory", "artifact_namespace": "ns1", "tokens": 12000},
    )
    message = message_from_langchain_dict(data)
    assert (message.role, message.tool_call_id, message.name) == ("tool", "call_1", "fetch")
    assert message.meta["_langchain"]["fields"]["status"] == "error"
    assert round_trip([data]) == [data]


def test_function_message_becomes_a_named_tool_message() -> None:
    data = lc("function", '{"temp": 21}', name="weather")
    message = message_from_langchain_dict(data)
    assert (message.role, message.name, message.tool_call_id) == ("tool", "weather", None)
    assert message_to_langchain_dict(message) == data


def test_images_become_image_artifacts_and_urls_stay_urls() -> None:
    content = [
        {"type": "text", "text": "Compare "},
        {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{PNG64}", "detail": "high"},
        },
        {"type": "image", "base64": PNG64, "mime_type": "image/png"},
        {"type": "image", "source_type": "base64", "data": PNG64, "mime_type": "image/png"},
        {"type": "image", "url": "https://example.test/chart.png"},
        {"type": "image_url", "image_url": {"url": "https://example.test/b.png"}},
        "with these.",
    ]
    data = lc("human", content, id="h1")
    message = message_from_langchain_dict(data)
    assert message.text == "Compare with these."
    assert [image.value for image in message.images] == [PNG, PNG, PNG]
    assert all((i.format, i.width, i.height) == ("png", 3, 2) for i in message.images)
    urls = [p.meta.get(IMAGE_URL_META) for p in message.content if isinstance(p, JsonArtifact)]
    assert urls == ["https://example.test/chart.png", "https://example.test/b.png"]
    assert round_trip([data]) == [data]


def test_undecodable_or_non_canonical_inline_data_is_kept_verbatim() -> None:
    content = [
        {"type": "image", "base64": "AAAA", "mime_type": "image/png"},  # not an image
        {"type": "image", "base64": PNG64.rstrip("="), "mime_type": "image/png"},  # no padding
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}},  # not base64
        {
            "type": "audio",
            "base64": base64.b64encode(b"RIFF....").decode(),
            "mime_type": "audio/wav",
        },
    ]
    message = message_from_langchain_dict(lc("human", content))
    kinds = [type(p).__name__ for p in message.content]
    assert kinds[:3] == ["JsonArtifact"] * 3
    assert isinstance(message.content[3], BlobArtifact) and message.content[3].value == b"RIFF...."
    assert message.content[3].mime_type == "audio/wav"
    assert message_to_langchain_dict(message) == lc("human", content)


def test_other_blocks_are_kept_losslessly() -> None:
    content = [
        {"type": "reasoning", "reasoning": "think", "id": "rs_1", "extras": {"signature": "s"}},
        {"type": "tool_call", "id": "c1", "name": "f", "args": {"x": 1}},
        {"type": "non_standard", "value": {"custom": [1, 2]}},
        {"type": "citation", "url": "https://a.test", "cited_text": "q"},
        {"no_type_at_all": True},
    ]
    data = lc("ai", content, response_metadata={"output_version": "v1"})
    message = message_from_langchain_dict(data)
    assert all(isinstance(p, JsonArtifact) for p in message.content)
    assert message.content[0].value == content[0]
    assert round_trip([data]) == [data]


def test_string_vs_list_content_and_empty_content() -> None:
    dicts = [lc("human", ""), lc("human", []), lc("human", ["only"]), lc("ai", "", tool_calls=[])]
    messages = messages_from_langchain_dicts(dicts)
    assert [len(m.content) for m in messages] == [0, 0, 1, 0]
    assert round_trip(dicts) == dicts


def test_ids_none_empty_and_tool_calls_without_ids() -> None:
    calls = [
        {"name": "a", "args": {}, "id": None, "type": "tool_call"},
        {"name": "b", "args": {"n": 1.5}, "id": "x", "type": "tool_call"},
    ]
    dicts = [lc("human", "hi", id=""), lc("ai", "", id=None, tool_calls=calls)]
    messages = messages_from_langchain_dicts(dicts)
    assert all(m.id for m in messages)  # offprompt ids are never empty
    assert [c.name for c in messages[1].tool_calls] == ["a", "b"]  # still visible to others
    assert round_trip(dicts) == dicts


def test_unicode_and_a_huge_message() -> None:
    huge = ("ünïcödé 🚀 数据 \u0000 " * 70_000)[:1_000_000]
    dicts = [
        lc("human", huge, id="big"),
        lc("ai", [{"type": "text", "text": "\U0001d518\U0001d52b\U0001d526"}]),
    ]
    messages = messages_from_langchain_dicts(dicts)
    assert messages[0].text == huge
    assert round_trip(dicts) == dicts


def test_minimal_hand_written_dicts_are_accepted() -> None:
    message = message_from_langchain_dict({"type": "human", "data": {"content": "hi"}})
    assert message.text == "hi"
    assert message_to_langchain_dict(message) == lc("human", "hi")


# -- exporting messages that did not come from LangChain -----------------------------------


def test_foreign_messages_get_plain_types_and_standard_blocks() -> None:
    image = ImageArtifact(value=PNG)
    pdf = BlobArtifact(value=b"%PDF-1.7", mime_type="application/pdf")
    wav = BlobArtifact(value=b"RIFF", mime_type="audio/wav")
    url_image = JsonArtifact(
        value={"url": "https://x.test/a.png"}, meta={IMAGE_URL_META: "https://x.test/a.png"}
    )
    call = ToolCall(id="c1", name="search", arguments={"q": "x"})
    messages = [
        Message.system("Be brief."),
        Message.user(["Look", image, pdf, wav, url_image], id="u1"),
        Message.assistant("ok", tool_calls=[call], id="a1"),
        Message.tool("result", tool_call_id="c1", name="search", id="t1"),
    ]
    report = ConversionReport()
    out = messages_to_langchain_dicts(messages, report)
    assert [d["type"] for d in out] == ["system", "human", "ai", "tool"]
    assert out[0]["data"]["content"] == "Be brief."
    assert out[1]["data"]["id"] == "u1"
    assert out[1]["data"]["content"] == [
        {"type": "text", "text": "Look"},
        {"type": "image", "base64": PNG64, "mime_type": "image/png"},
        {
            "type": "file",
            "base64": base64.b64encode(b"%PDF-1.7").decode(),
            "mime_type": "application/pdf",
        },
        {"type": "audio", "base64": base64.b64encode(b"RIFF").decode(), "mime_type": "audio/wav"},
        {"type": "image", "url": "https://x.test/a.png"},
    ]
    assert out[2]["data"]["tool_calls"] == [
        {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    ]
    assert out[3]["data"]["tool_call_id"] == "c1"
    assert not report and report.converted == 4

    # ... and back: the same roles, text, image bytes, calls and ids.
    back = messages_from_langchain_dicts(out)
    assert [m.role for m in back] == [m.role for m in messages]
    assert [m.id for m in back[1:]] == ["u1", "a1", "t1"]
    assert back[1].images[0].value == PNG and back[2].tool_calls == [call]


def test_what_langchain_cannot_carry_is_reported() -> None:
    messages = [
        Message.user(
            [TextArtifact(value="a"), ErrorArtifact("boom")], meta={"llamaindex": {"k": 1}}
        ),
        Message.user("calls?", tool_calls=[ToolCall(id="c", name="f")]),
        Message.tool("orphan", tool_call_id=None),
    ]
    report = ConversionReport()
    out = messages_to_langchain_dicts(messages, report)
    assert out[0]["data"]["content"][1] == {"type": "text", "text": "boom"}
    assert out[2]["type"] == "tool" and out[2]["data"]["tool_call_id"] == ""
    reported = {(loss.where, loss.what) for loss in report.losses}
    assert ("message 0", "meta['llamaindex']") in reported
    assert ("message 0 content[1]", "ErrorArtifact") in reported
    assert ("message 1", "tool_calls") in reported
    assert ("message 2", "tool_call_id") in reported
    assert "thing(s) the target cannot carry" in report.summary()


def test_edited_role_wins_over_the_remembered_type() -> None:
    message = message_from_langchain_dict(lc("human", "hi"))
    edited = message.model_copy(update={"role": "assistant"})
    assert message_to_langchain_dict(edited)["type"] == "ai"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.builds(
            Message,
            role=st.sampled_from(["system", "user", "assistant"]),
            content=st.lists(st.builds(TextArtifact, texts) | images(), max_size=3),
            name=st.none() | names,
        ),
        max_size=4,
    )
)
def test_foreign_messages_keep_text_images_and_ids_through_langchain(
    messages: list[Message],
) -> None:
    back = messages_from_langchain_dicts(messages_to_langchain_dicts(messages))
    for before, after in zip(messages, back, strict=True):
        assert (after.role, after.id, after.name, after.text) == (
            before.role,
            before.id,
            before.name,
            before.text,
        )
        assert [i.value for i in after.images] == [i.value for i in before.images]


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "error", "fragment"),
    [
        ("human", DeserializationError, "must be a dict"),
        ({"data": {"content": "x"}}, UnknownTypeError, "unknown type None"),
        ({"type": "robot", "data": {"content": "x"}}, UnknownTypeError, "'robot'"),
        ({"type": "remove", "data": {"id": "m1"}}, ValidationError, "RemoveMessage"),
        ({"type": "human"}, DeserializationError, "needs a 'data' dict"),
        ({"type": "human", "data": {}}, DeserializationError, "no 'content'"),
        ({"type": "human", "data": {"content": 42}}, DeserializationError, "string or a list"),
        ({"type": "human", "data": {"content": [42]}}, DeserializationError, "content[0]"),
        (
            {"type": "human", "data": {"content": "x", "type": "ai"}},
            DeserializationError,
            "data.type",
        ),
        ({"type": "tool", "data": {"content": "x"}}, DeserializationError, "'tool_call_id'"),
        ({"type": "chat", "data": {"content": "x"}}, DeserializationError, "'role'"),
        ({"type": "function", "data": {"content": "x"}}, DeserializationError, "'name'"),
        (
            {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "f", "args": [1]}]}},
            DeserializationError,
            "tool_calls[0]",
        ),
        (
            {"type": "ai", "data": {"content": "", "tool_calls": "f()"}},
            DeserializationError,
            "list",
        ),
        (
            {"type": "ai", "data": {"content": "", "additional_kwargs": {"raw": b"\x00"}}},
            SerializationError,
            "'additional_kwargs'",
        ),
    ],
)
def test_malformed_dicts_are_clear_errors(item: Any, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error) as info:
        message_from_langchain_dict(item)
    assert isinstance(info.value, OffpromptError)
    assert fragment in str(info.value)


def test_a_list_is_required() -> None:
    with pytest.raises(DeserializationError, match="list of dicts"):
        messages_from_langchain_dicts({"type": "human", "data": {"content": "x"}})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="must be a Message"):
        message_to_langchain_dict({"role": "user"})  # type: ignore[arg-type]


def test_non_json_values_are_dropped_and_reported_when_a_report_is_given() -> None:
    data = lc("tool", "done", tool_call_id="c", artifact=object(), response_metadata={"ok": 1})
    report = ConversionReport()
    message = messages_from_langchain_dicts([data], report)[0]
    assert [(loss.where, loss.what) for loss in report.losses] == [("message 0", "artifact")]
    assert message.meta["_langchain"]["fields"] == {"response_metadata": {"ok": 1}}
    assert message_to_langchain_dict(message)["data"]["artifact"] is None


def test_values_json_would_change_are_refused_or_reported() -> None:
    data = lc("ai", "x", additional_kwargs={1: "int key"})
    with pytest.raises(SerializationError, match="losslessly"):
        message_from_langchain_dict(data)
    report = ConversionReport()
    messages_from_langchain_dicts([data], report)
    assert [loss.what for loss in report.losses] == ["additional_kwargs"]
