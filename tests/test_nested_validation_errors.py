"""Issue 26 item 5: a nested validation error says each thing once, with the field path
and one shortened copy of the bad value (not once per model it passed through)."""

from __future__ import annotations

from typing import Any

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import DeserializationError, OffpromptError, ValidationError
from offprompt.messages import Message

BAD = "bad \ud83d here"
CASES: list[tuple[str, Any]] = [
    ("artifact", lambda: TextArtifact(value=BAD)),
    ("artifact dict", lambda: TextArtifact.from_dict({"type": "TextArtifact", "value": BAD})),
    ("message", lambda: Message(role="user", content=BAD)),
    ("message of parts", lambda: Message(role="user", content=[TextArtifact("ok"), BAD])),
    ("message dict", lambda: Message.from_dict({"role": "user", "content": BAD})),
    (
        "message dict of parts",
        lambda: Message.from_dict(
            {"role": "user", "content": [{"type": "TextArtifact", "value": BAD}]}
        ),
    ),
]


@pytest.mark.parametrize(("label", "build"), CASES, ids=[c[0] for c in CASES])
def test_a_lone_surrogate_is_reported_once(label: str, build: Any) -> None:
    with pytest.raises((ValidationError, DeserializationError)) as raised:
        build()
    message = str(raised.value)
    assert isinstance(raised.value, OffpromptError)
    assert message.count("(got ") == 1 and message.endswith(f"(got {BAD!r})")
    assert message.count("lone surrogate") == 1 and "<root>" not in message
    assert "TextArtifact.value contains a lone surrogate '\\ud83d' at position 4" in message
    if label.startswith("message"):
        assert message.startswith("Message.content: TextArtifact.value contains")


def test_other_problems_keep_their_path_and_value() -> None:
    with pytest.raises(ValidationError) as raised:
        Message(role="robot")
    assert str(raised.value) == (
        "Message.role: unknown role 'robot'; expected one of system, user, assistant, tool "
        "(got 'robot')"
    )
    with pytest.raises(ValidationError) as long_value:
        Message(role="user", content="x", id=123)
    assert str(long_value.value) == "Message.id: Input should be a valid string (got 123)"
