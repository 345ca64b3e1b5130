"""Dict-level LlamaIndex interop: ChatMessage dicts and SimpleChatStore files.

The dicts below are the exact shapes ``ChatMessage.model_dump(mode="json")`` produces in
llama-index-core 0.14.25 (captured from the installed version); this core test does not
import llama_index, the adapter's tests check the same shapes against the real classes.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from offprompt.artifacts import (
    BlobArtifact,
    ImageArtifact,
    InfoArtifact,
    JsonArtifact,
    TextArtifact,
)
from offprompt.errors import DeserializationError, NotFoundError, StorageError, ValidationError
from offprompt.interop.llamaindex import (
    LLAMAINDEX_ROLES,
    message_from_llamaindex_dict,
    message_to_llamaindex_dict,
    messages_from_llamaindex_dicts,
    messages_to_llamaindex_dicts,
    read_simple_chat_store,
    simple_chat_store_dict,
    write_simple_chat_store,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall


def png(width: int = 3, height: int = 2, color: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def text(t: str) -> dict[str, Any]:
    return {"block_type": "text", "text": t}


def msg(role: str, blocks: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    return {"role": role, "additional_kwargs": kwargs, "blocks": blocks}


def image_block(data: bytes | None = None, **fields: Any) -> dict[str, Any]:
    block = {
        "block_type": "image",
        "image": base64.b64encode(data).decode() if data is not None else None,
        "path": None,
        "url": None,
        "image_mimetype": "image/png" if data is not None else None,
        "detail": None,
    }
    block.update(fields)
    return block


def roundtrip(d: dict[str, Any]) -> dict[str, Any]:
    """LlamaIndex dict -> Message -> JSON storage -> Message -> LlamaIndex dict."""
    stored = Message.from_json(message_from_llamaindex_dict(d).to_json())
    return message_to_llamaindex_dict(stored)


# -- roles --------------------------------------------------------------------------------


@pytest.mark.parametrize("role", list(LLAMAINDEX_ROLES))
def test_every_role_maps_and_round_trips(role: str) -> None:
    d = msg(role, [text("hi")])
    m = message_from_llamaindex_dict(d)
    assert m.role == LLAMAINDEX_ROLES[role]
    assert m.text == "hi"
    assert roundtrip(d) == d


def test_plain_roles_leave_meta_empty_and_unusual_ones_are_kept() -> None:
    assert message_from_llamaindex_dict(msg("user", [text("x")])).meta == {}
    dev = message_from_llamaindex_dict(msg("developer", [text("x")]))
    assert dev.meta == {"llamaindex": {"role": "developer"}}


def test_role_kept_in_meta_is_ignored_when_it_no_longer_fits() -> None:
    m = message_from_llamaindex_dict(msg("chatbot", [text("x")]))
    changed = m.model_copy(update={"role": "user"})
    assert message_to_llamaindex_dict(changed)["role"] == "user"


def test_legacy_content_shape_is_read() -> None:
    m = message_from_llamaindex_dict(
        {"role": "assistant", "content": "old", "additional_kwargs": {}}
    )
    assert (m.role, m.text) == ("assistant", "old")
    assert message_from_llamaindex_dict({"role": "user", "content": None}).content == []


# -- content blocks -----------------------------------------------------------------------


def test_inline_image_becomes_image_artifact_with_identical_bytes() -> None:
    data = png(5, 4)
    d = msg("user", [text("look"), image_block(data, detail="low")])
    m = message_from_llamaindex_dict(d)
    image = m.images[0]
    assert isinstance(image, ImageArtifact)
    assert image.value == data and (image.width, image.height) == (5, 4)
    assert image.meta == {"detail": "low"}  # the convention the tokenizer reads
    assert roundtrip(d) == d


def test_offprompt_image_becomes_image_block() -> None:
    data = png()
    out = message_to_llamaindex_dict(
        Message.user([TextArtifact(value="a"), ImageArtifact(value=data)])
    )
    assert out["blocks"][1]["block_type"] == "image"
    assert base64.b64decode(out["blocks"][1]["image"]) == data
    assert out["blocks"][1]["image_mimetype"] == "image/png"


@pytest.mark.parametrize(
    "fields",
    [
        {"url": "https://example.org/cat.png", "image_mimetype": "image/png"},
        {"url": "data:image/png;base64,AAAA", "image_mimetype": "image/png"},
        {"path": "/nonexistent/cat.jpg", "image_mimetype": "image/jpeg", "detail": "high"},
    ],
)
def test_url_and_path_images_round_trip_without_fetching(fields: dict[str, Any]) -> None:
    d = msg("user", [image_block(**fields)])
    part = message_from_llamaindex_dict(d).content[0]
    assert isinstance(part, JsonArtifact)
    assert part.value["type"] == "image"
    assert part.reference == (fields.get("url") or fields.get("path"))
    assert part.meta.get("image_url") == fields.get("url")  # the key the LangChain side reads
    assert roundtrip(d) == d


def test_unreadable_image_bytes_are_kept_as_blob() -> None:
    svg = b"<svg xmlns='http://www.w3.org/2000/svg'/>"
    d = msg("user", [image_block(svg, image_mimetype="image/svg+xml")])
    part = message_from_llamaindex_dict(d).content[0]
    assert isinstance(part, BlobArtifact) and not isinstance(part, ImageArtifact)
    assert part.value == svg and part.mime_type == "image/svg+xml"
    assert roundtrip(d) == d


def test_media_and_document_blocks_become_blobs() -> None:
    d = msg(
        "user",
        [
            {
                "block_type": "document",
                "data": base64.b64encode(b"%PDF-1.4 x").decode(),
                "path": None,
                "url": None,
                "title": "report",
                "document_mimetype": "application/pdf",
            },
            {
                "block_type": "audio",
                "audio": base64.b64encode(b"RIFF..WAVE").decode(),
                "path": None,
                "url": None,
                "format": "wav",
            },
            {
                "block_type": "video",
                "video": base64.b64encode(b"\x00\x00\x00 ftypmp4").decode(),
                "path": None,
                "url": None,
                "video_mimetype": "video/mp4",
                "detail": None,
                "fps": 2,
            },
        ],
    )
    parts = message_from_llamaindex_dict(d).content
    assert [type(p) for p in parts] == [BlobArtifact] * 3
    assert parts[0].value == b"%PDF-1.4 x" and parts[0].mime_type == "application/pdf"
    assert parts[1].mime_type.startswith("audio/")
    assert parts[2].mime_type == "video/mp4"
    assert roundtrip(d) == d


@pytest.mark.parametrize(
    "block",
    [
        {
            "block_type": "thinking",
            "content": "let me think",
            "num_tokens": 3,
            "additional_information": {"sig": "x"},
        },
        {"block_type": "cache", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
        {"block_type": "citable", "title": "t", "source": "s", "content": [text("c")]},
        {
            "block_type": "citation",
            "cited_content": text("q"),
            "source": "s",
            "title": "t",
            "additional_location_info": {"start": 1},
        },
        {
            "block_type": "document",
            "data": None,
            "path": None,
            "url": "https://x.org/a.pdf",
            "title": "input_document",
            "document_mimetype": "application/pdf",
        },
        {"block_type": "hologram", "payload": {"anything": [1, 2]}},  # a future block type
    ],
)
def test_other_blocks_are_kept_verbatim(block: dict[str, Any]) -> None:
    d = msg("assistant", [text("before"), block, text("after")])
    m = message_from_llamaindex_dict(d)
    assert m.text == "beforeafter"
    assert isinstance(m.content[1], JsonArtifact) and m.content[1].value == block
    assert roundtrip(d) == d


# -- tool calls ---------------------------------------------------------------------------


def test_tool_call_blocks_keep_their_position() -> None:
    call = {
        "block_type": "tool_call",
        "tool_call_id": "c1",
        "tool_name": "search",
        "tool_kwargs": {"q": "qdrant"},
    }
    d = msg(
        "assistant",
        [
            {
                "block_type": "thinking",
                "content": "t",
                "num_tokens": None,
                "additional_information": {},
            },
            call,
            text("after"),
        ],
    )
    m = message_from_llamaindex_dict(d)
    assert m.tool_calls == [ToolCall(id="c1", name="search", arguments={"q": "qdrant"})]
    assert len(m.content) == 2
    assert roundtrip(d) == d


def test_tool_call_block_without_id_or_with_string_kwargs_round_trips() -> None:
    d = msg(
        "assistant",
        [
            {
                "block_type": "tool_call",
                "tool_call_id": None,
                "tool_name": "f",
                "tool_kwargs": '{"a": 1}',
            }
        ],
    )
    m = message_from_llamaindex_dict(d)
    assert m.tool_calls == [ToolCall(id="", name="f", arguments={"a": 1})]
    assert roundtrip(d) == d


def test_openai_tool_calls_in_additional_kwargs() -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get", "arguments": '{"city":"Zürich"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "put", "arguments": "{}"}},
    ]
    d = msg("assistant", [text("")], tool_calls=calls)
    m = message_from_llamaindex_dict(d)
    assert [c.id for c in m.tool_calls] == ["call_1", "call_2"]
    assert m.tool_calls[0].arguments == {"city": "Zürich"}
    out = roundtrip(d)
    assert out == d
    assert out["additional_kwargs"]["tool_calls"] == calls  # same representation back
    assert not any(b["block_type"] == "tool_call" for b in out["blocks"])


def test_tool_selection_and_anthropic_shapes_are_understood() -> None:
    d = msg(
        "assistant",
        [],
        tool_calls=[
            {"tool_id": "t1", "tool_name": "a", "tool_kwargs": {"x": 1}},
            {"id": "t2", "name": "b", "input": {"y": [1, 2]}, "type": "tool_use"},
        ],
    )
    m = message_from_llamaindex_dict(d)
    assert m.tool_calls == [
        ToolCall(id="t1", name="a", arguments={"x": 1}),
        ToolCall(id="t2", name="b", arguments={"y": [1, 2]}),
    ]
    assert roundtrip(d) == d


def test_edited_tool_calls_are_regenerated_in_the_original_representation() -> None:
    d = msg(
        "assistant",
        [],
        tool_calls=[
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    )
    m = message_from_llamaindex_dict(d)
    edited = m.model_copy(update={"tool_calls": [ToolCall(id="c", name="f", arguments={"a": 2})]})
    out = message_to_llamaindex_dict(edited)
    assert out["additional_kwargs"]["tool_calls"] == [
        ToolCall(id="c", name="f", arguments={"a": 2}).dict()
    ]


def test_unknown_tool_call_shape_is_kept_verbatim_and_reported() -> None:
    d = msg("assistant", [text("x")], tool_calls=[{"weird": True}])
    report = ConversionReport()
    m = message_from_llamaindex_dict(d, report=report)
    assert m.tool_calls == []
    assert report and "tool_calls" in report.losses[0].what
    assert roundtrip(d) == d


def test_tool_result_carries_call_id_and_name() -> None:
    d = msg("tool", [text("42")], tool_call_id="call_1", name="calc")
    m = message_from_llamaindex_dict(d)
    assert (m.role, m.tool_call_id, m.name, m.text) == ("tool", "call_1", "calc", "42")
    assert m.meta == {}
    assert roundtrip(d) == d


def test_other_additional_kwargs_are_kept() -> None:
    d = msg(
        "assistant", [text("x")], thinking="abc", usage={"in": 3, "out": [1, None]}, tool_call_id=7
    )
    m = message_from_llamaindex_dict(d)
    assert m.tool_call_id is None  # not a string: kept as LlamaIndex had it
    assert m.meta["llamaindex"]["additional_kwargs"]["usage"] == {"in": 3, "out": [1, None]}
    assert roundtrip(d) == d


# -- offprompt -> LlamaIndex ------------------------------------------------------------------


def test_offprompt_messages_use_tool_call_blocks_by_default() -> None:
    calls = [ToolCall(id="c1", name="search", arguments={"q": "x"})]
    out = messages_to_llamaindex_dicts(
        [
            Message.assistant("checking", tool_calls=calls),
            Message.tool("found", tool_call_id="c1", name="search"),
        ]
    )
    assert out[0]["blocks"] == [
        text("checking"),
        {
            "block_type": "tool_call",
            "tool_call_id": "c1",
            "tool_name": "search",
            "tool_kwargs": {"q": "x"},
        },
    ]
    assert out[1] == msg("tool", [text("found")], tool_call_id="c1", name="search")
    back = messages_from_llamaindex_dicts(out)
    assert back[0].tool_calls == calls and back[1].tool_call_id == "c1"


def test_what_a_chat_message_cannot_carry_is_reported() -> None:
    m = Message.tool(
        [InfoArtifact(value="stored in memory"), TextArtifact(value="t", meta={"k": 1})],
        tool_call_id="c",
        meta={"langchain": {"id": "x"}},
    )
    report = ConversionReport()
    out = message_to_llamaindex_dict(m, report=report)
    assert out["blocks"] == [text("stored in memory"), text("t")]  # the model still sees the text
    whats = [loss.what for loss in report.losses]
    assert (
        "InfoArtifact" in whats
        and "meta keys ['k']" in whats
        and "meta keys ['langchain']" in whats
    )
    assert (
        "1 item(s) converted offprompt -> llamaindex"
        in ConversionReport(source="offprompt", target="llamaindex", converted=1).summary()
    )


def test_nothing_is_added_to_additional_kwargs() -> None:
    # LLM integrations send additional_kwargs to the provider; unknown keys break calls.
    out = message_to_llamaindex_dict(Message.user("hi", meta={"x": 1}, name=None))
    assert out["additional_kwargs"] == {}


def test_url_image_marked_in_meta_becomes_an_image_block() -> None:
    part = JsonArtifact(
        value={"type": "whatever", "x": 1}, meta={"image_url": "https://x.org/a.gif"}
    )
    block = message_to_llamaindex_dict(Message.user([part]))["blocks"][0]
    assert (block["block_type"], block["url"]) == ("image", "https://x.org/a.gif")


def test_langchain_style_image_url_part_becomes_an_image_block() -> None:
    part = JsonArtifact(
        value={"type": "image_url", "image_url": {"url": "https://x.org/i.png", "detail": "low"}}
    )
    block = message_to_llamaindex_dict(Message.user([part]))["blocks"][0]
    assert block["block_type"] == "image" and block["url"] == "https://x.org/i.png"
    assert block["detail"] == "low"


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ("not a dict", "JSON object"),
        ({"role": "robot", "blocks": []}, "unknown LlamaIndex role 'robot'"),
        ({"role": "user", "blocks": "x"}, "blocks must be a list"),
        ({"role": "user", "blocks": [{"text": "no type"}]}, "block_type"),
        ({"role": "user", "blocks": [{"block_type": "text", "text": 5}]}, "TextBlock.text"),
        (
            {"role": "user", "additional_kwargs": [1], "blocks": []},
            "additional_kwargs must be an object",
        ),
        (
            {"role": "user", "blocks": [{"block_type": "image", "image": "%%%not base64"}]},
            "not base64",
        ),
    ],
)
def test_malformed_dicts_are_clear_errors(data: Any, needle: str) -> None:
    with pytest.raises(DeserializationError, match="message") as info:
        message_from_llamaindex_dict(data)
    assert needle in str(info.value)


def test_error_names_the_message_index() -> None:
    with pytest.raises(DeserializationError, match="message 1"):
        messages_from_llamaindex_dicts([msg("user", []), {"role": "nope"}])
    with pytest.raises(DeserializationError):
        messages_from_llamaindex_dicts({"role": "user"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        message_to_llamaindex_dict({"role": "user"})  # type: ignore[arg-type]


def test_unicode_and_huge_text() -> None:
    big = "日本語 🦙 \u200b" * 200_000
    d = msg("user", [text(big), text("")], name="Zoë")
    m = message_from_llamaindex_dict(d)
    assert m.text == big and m.name == "Zoë"
    assert roundtrip(d) == d


# -- property: LlamaIndex -> Message -> LlamaIndex is the identity ---------------------------

_texts = st.text(max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=6,
)
_ids = st.text(min_size=1, max_size=12)
_names = st.text(alphabet="abcdefghij_", min_size=1, max_size=10)
_args = st.dictionaries(_texts, _json, max_size=3)


@st.composite
def _image_blocks(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["bytes", "url", "path"]))
    detail = draw(st.none() | st.sampled_from(["low", "high", "auto"]))
    if kind == "bytes":
        color = draw(st.tuples(*[st.integers(0, 255)] * 3))
        return image_block(
            png(draw(st.integers(1, 6)), draw(st.integers(1, 6)), color), detail=detail
        )
    if kind == "url":
        return image_block(
            url=f"https://example.org/{draw(_names)}.png", image_mimetype="image/png", detail=detail
        )
    return image_block(path=f"/data/{draw(_names)}.jpg", image_mimetype="image/jpeg", detail=detail)


_blocks = st.one_of(
    st.builds(text, _texts),
    _image_blocks(),
    st.fixed_dictionaries(
        {
            "block_type": st.just("thinking"),
            "content": st.none() | _texts,
            "num_tokens": st.none() | st.integers(0, 99),
            "additional_information": _args,
        }
    ),
    st.fixed_dictionaries(
        {
            "block_type": st.just("tool_call"),
            "tool_call_id": st.none() | _ids,
            "tool_name": _names,
            "tool_kwargs": _args,
        }
    ),
)
_openai_calls = st.lists(
    st.builds(lambda i, n, a: ToolCall(id=i, name=n, arguments=a).dict(), _ids, _names, _args),
    min_size=1,
    max_size=2,
)


@st.composite
def llamaindex_dicts(draw: Any) -> dict[str, Any]:
    kwargs = draw(
        st.dictionaries(st.sampled_from(["extra", "thinking", "usage"]), _json, max_size=2)
    )
    if draw(st.booleans()):
        kwargs["tool_call_id"] = draw(_ids)
    if draw(st.booleans()):
        kwargs["name"] = draw(_names)
    blocks = draw(st.lists(_blocks, max_size=4))
    if draw(st.booleans()) and not any(b["block_type"] == "tool_call" for b in blocks):
        kwargs["tool_calls"] = draw(_openai_calls)
    return msg(draw(st.sampled_from(list(LLAMAINDEX_ROLES))), blocks, **kwargs)


@settings(max_examples=60, deadline=None)
@given(llamaindex_dicts())
def test_property_llamaindex_dicts_round_trip_losslessly(d: dict[str, Any]) -> None:
    report = ConversionReport()
    m = message_from_llamaindex_dict(d, report=report)
    assert not report
    assert message_to_llamaindex_dict(m) == d
    assert roundtrip(d) == d


# -- SimpleChatStore files ---------------------------------------------------------------------


def test_write_then_read_several_sessions(tmp_path: Path) -> None:
    sessions = {
        "alice": [
            Message.user("héllo 🦙"),
            Message.assistant("hi", tool_calls=[ToolCall(id="c", name="f", arguments={"a": 1})]),
            Message.tool("r", tool_call_id="c"),
        ],
        "bob": [Message.user([TextArtifact(value="see"), ImageArtifact(value=png())])],
        "empty": [],
    }
    path = write_simple_chat_store(sessions, tmp_path / "nested" / "chat_store.json")
    raw = path.read_text(encoding="utf-8")
    assert "héllo 🦙" in raw  # written as-is, like pydantic's model_dump_json
    doc = json.loads(raw)
    assert doc["class_name"] == "SimpleChatStore" and set(doc["store"]) == {"alice", "bob", "empty"}
    back = read_simple_chat_store(path)
    assert [m.text for m in back["alice"]] == ["héllo 🦙", "hi", "r"]
    assert back["alice"][1].tool_calls == sessions["alice"][1].tool_calls
    assert back["alice"][2].tool_call_id == "c"
    assert back["bob"][0].images[0].value == sessions["bob"][0].images[0].value
    assert back["empty"] == []
    assert list(tmp_path.joinpath("nested").iterdir()) == [path]  # no temp file left behind


def test_read_accepts_dict_and_json_string_document(tmp_path: Path) -> None:
    doc = {"store": {"s": [msg("user", [text("x")])]}, "class_name": "SimpleChatStore"}
    assert read_simple_chat_store(doc)["s"][0].text == "x"
    wrapped = tmp_path / "old.json"
    wrapped.write_text(json.dumps(json.dumps(doc)), encoding="utf-8")
    assert read_simple_chat_store(wrapped)["s"][0].text == "x"


def test_read_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no SimpleChatStore file"):
        read_simple_chat_store(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DeserializationError, match="malformed JSON"):
        read_simple_chat_store(bad)
    with pytest.raises(DeserializationError, match="'store' object"):
        read_simple_chat_store({"sessions": {}})
    with pytest.raises(DeserializationError, match="class_name"):
        read_simple_chat_store({"store": {}, "class_name": "RedisChatStore"})
    with pytest.raises(DeserializationError, match="session 's'"):
        read_simple_chat_store({"store": {"s": {"role": "user"}}})
    with pytest.raises(StorageError):
        read_simple_chat_store(tmp_path)  # a directory


def test_bad_input_leaves_the_existing_file_untouched(tmp_path: Path) -> None:
    path = write_simple_chat_store({"s": [Message.user("keep me")]}, tmp_path / "cs.json")
    before = path.read_bytes()
    with pytest.raises(ValidationError):
        write_simple_chat_store({"s": [Message.user("a"), "not a message"]}, path)  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        write_simple_chat_store({1: []}, path)  # type: ignore[dict-item]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cs.json"]


def test_concurrent_writers_never_leave_a_torn_file(tmp_path: Path) -> None:
    path = tmp_path / "cs.json"
    write_simple_chat_store({"s": []}, path)
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        try:
            for i in range(15):
                write_simple_chat_store({f"w{n}": [Message.user("x" * (1000 * n + i))]}, path)
        except BaseException as exc:  # pragma: no cover - surfaced by the assert below
            errors.append(exc)

    def reader() -> None:
        while not stop.is_set():
            try:
                assert len(read_simple_chat_store(path)) == 1
            except BaseException as exc:  # pragma: no cover
                errors.append(exc)
                return

    threads = [threading.Thread(target=writer, args=(n,)) for n in (1, 2, 3)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == []
    assert len(read_simple_chat_store(path)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["cs.json"]


def test_simple_chat_store_dict_reports_losses() -> None:
    report = ConversionReport()
    doc = simple_chat_store_dict({"s": [Message.user("x", meta={"a": 1})]}, report)
    assert doc["store"]["s"][0]["blocks"] == [text("x")]
    assert report.target == "llamaindex SimpleChatStore" and "session 's'" in report.losses[0].where
