from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from PIL import Image
from strategies import messages

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.errors import DeserializationError, OffpromptError, UnknownTypeError, ValidationError
from offprompt.messages import Message, ToolCall


@settings(max_examples=120, deadline=None)
@given(messages)
def test_message_round_trips(message: Message) -> None:
    restored = Message.from_dict(json.loads(json.dumps(message.to_dict())))
    assert restored == message


def test_constructors_and_views() -> None:
    image = ImageArtifact.from_pil(Image.new("RGB", (3, 3)))
    msg = Message.user(["Look: ", image, "this"])
    assert msg.role == "user" and msg.text == "Look: this" and msg.images == [image]
    assert isinstance(msg.content[0], TextArtifact)
    call = ToolCall(id="c1", name="lookup", arguments={"k": 1})
    assistant = Message.assistant(tool_calls=[call])
    assert assistant.content == [] and assistant.tool_calls == [call]
    tool = Message.tool("42", tool_call_id="c1", name="lookup")
    assert tool.tool_call_id == "c1"


def test_tool_call_openai_shape_round_trips() -> None:
    call = ToolCall(id="c1", name="lookup", arguments='{"k": [1, "ü"]}')
    shaped = call.dict()
    assert shaped == {
        "id": "c1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"k": [1, "ü"]}'},
    }
    assert ToolCall.from_openai(shaped) == call


def test_naive_datetimes_become_utc() -> None:
    msg = Message.user("x", created_at=datetime(2026, 1, 1, 12, 0))
    assert msg.created_at.tzinfo is timezone.utc


@pytest.mark.parametrize(
    ("make", "error", "mentions"),
    [
        (lambda: Message(role="robot", content="x"), ValidationError, "unknown role 'robot'"),
        (lambda: Message.user(42), ValidationError, "Message.content"),
        (lambda: Message.user([b"bytes"]), ValidationError, r"content\[0\]"),
        (lambda: ToolCall(id="1", name="f", arguments="[1, 2]"), ValidationError, "JSON object"),
        (lambda: ToolCall(id="1", name="f", arguments="{oops"), ValidationError, "malformed JSON"),
        (lambda: ToolCall(id="1", name="", arguments={}), ValidationError, "ToolCall.name"),
        (lambda: Message.from_json("[]"), DeserializationError, "list"),
        (lambda: Message.from_json('{"role": "user"'), DeserializationError, "malformed JSON"),
        (
            lambda: Message.from_dict({"role": "user", "content": [{"type": "Evil"}]}),
            DeserializationError,
            "'Evil'",
        ),
        (lambda: Message.user("x", meta={"bad": {1, 2}}), ValidationError, "meta"),
    ],
)
def test_bad_messages_raise_named_errors(make, error, mentions) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=mentions) as caught:
        make()
    assert isinstance(caught.value, OffpromptError)
    assert not isinstance(caught.value, UnknownTypeError) or error is UnknownTypeError
