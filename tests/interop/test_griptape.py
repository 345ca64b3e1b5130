"""Griptape conversation-memory JSON, validated against files the real griptape writes."""

from __future__ import annotations

import io
import json

import griptape.artifacts as gt
import pytest
from griptape.common import ToolAction
from griptape.memory.structure import ConversationMemory as GtMemory
from griptape.memory.structure import Run as GtRun
from griptape.memory.structure import SummaryConversationMemory as GtSummaryMemory
from PIL import Image

from offprompt.artifacts import ActionArtifact, ImageArtifact, TextArtifact
from offprompt.errors import DeserializationError
from offprompt.interop import ConversionReport
from offprompt.interop.griptape import conversation_from_griptape, conversation_to_griptape
from offprompt.messages import Message, ToolCall


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 4), "green").save(buffer, format="PNG")
    return buffer.getvalue()


def _real_griptape_memory() -> GtMemory:
    memory = GtMemory(autoload=False)
    memory.add_run(
        GtRun(
            input=gt.TextArtifact("What is in the chart? ünï 🚀"),
            output=gt.TextArtifact("A green square."),
        )
    )
    memory.add_run(
        GtRun(
            input=gt.ListArtifact(
                [
                    gt.TextArtifact("Compare these"),
                    gt.ImageArtifact(_png(), format="png", width=5, height=4),
                ]
            ),
            output=gt.JsonArtifact({"winner": "left", "score": [1, 2]}),
            meta={"source": "test"},
        )
    )
    memory.add_run(
        GtRun(
            input=gt.TextArtifact("call it"),
            output=gt.ActionArtifact(
                ToolAction(
                    tag="t1", name="Calculator", path="calculate", input={"values": {"x": 1}}
                )
            ),
        )
    )
    memory.add_run(
        GtRun(
            input=gt.UrlArtifact("https://example.com/doc"),
            output=gt.ErrorArtifact("could not fetch"),
        )
    )
    memory.add_run(
        GtRun(input=gt.BlobArtifact(b"\x00\x01raw"), output=gt.TextArtifact("binary noted"))
    )
    return memory


def test_real_griptape_json_round_trips_exactly() -> None:
    original = json.loads(_real_griptape_memory().to_json())
    report = ConversionReport()
    conversation = conversation_from_griptape(json.dumps(original), report)
    assert report.converted == 5 and not report
    assert [m.role for m in conversation.messages] == ["user", "assistant"] * 5
    first = conversation.messages[0]
    assert (
        isinstance(first.content[0], TextArtifact) and first.text == "What is in the chart? ünï 🚀"
    )
    images = [p for p in conversation.messages[2].content[0].value if isinstance(p, ImageArtifact)]
    assert images and images[0].to_pil().getpixel((0, 0)) == (0, 128, 0)
    action = conversation.messages[5].content[0]
    assert isinstance(action, ActionArtifact) and action.value.arguments == {"values": {"x": 1}}
    back = conversation_to_griptape(conversation, report=ConversionReport())
    assert back == original
    # and the real griptape reads what we wrote
    assert GtMemory.from_dict(back).to_dict() == original


def test_summary_memory_keeps_summary_and_index() -> None:
    memory = GtSummaryMemory(
        autoload=False, offset=1, summary="User likes qdrant.", summary_index=1
    )
    memory.add_run(GtRun(input=gt.TextArtifact("hi"), output=gt.TextArtifact("hello")))
    memory.add_run(GtRun(input=gt.TextArtifact("again"), output=gt.TextArtifact("yes")))
    original = json.loads(memory.to_json())
    conversation = conversation_from_griptape(original)
    assert (conversation.summary, conversation.summary_index, conversation.offset) == (
        "User likes qdrant.",
        1,
        1,
    )
    back = conversation_to_griptape(conversation)
    assert back == original
    assert GtSummaryMemory.from_dict(back).summary == "User likes qdrant."


def test_export_reports_what_griptape_cannot_carry() -> None:
    messages = [
        Message.system("be brief"),
        Message.user("weather?"),
        Message.assistant(
            tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Oslo"})]
        ),
        Message.tool("12C", tool_call_id="c1"),
        Message.assistant("It is 12C."),
        Message.user("unanswered"),
    ]
    report = ConversionReport()
    document = conversation_to_griptape(messages, report=report)
    restored = GtMemory.from_dict(document)
    assert [(r.input.value, r.output.value) for r in restored.runs] == [("weather?", "It is 12C.")]
    lost = {loss.what for loss in report.losses}
    assert lost == {"system message", "tool_calls", "tool result", "user turn"}
    assert "4 thing(s)" in report.summary()


@pytest.mark.parametrize(
    ("payload", "mentions"),
    [
        ('{"type": "ConversationMemory", "runs": [', "malformed JSON"),
        ('{"type": "PromptStack", "runs": []}', "not a Griptape conversation memory"),
        ('{"type": "ConversationMemory"}', "'runs'"),
        (
            '{"type": "ConversationMemory", "runs": [{"type": "Run", "input": {"type": "TextArtifact", "value": "x"}}]}',
            "run 0",
        ),
        (
            '{"type": "ConversationMemory", "runs": [{"type": "Run", "input": {"value": 1}, "output": {"value": 2}}]}',
            "no 'type'",
        ),
        ("[1, 2]", "JSON object"),
    ],
)
def test_bad_griptape_documents_are_named(payload: str, mentions: str) -> None:
    with pytest.raises(DeserializationError, match=mentions):
        conversation_from_griptape(payload)
