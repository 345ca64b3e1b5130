"""``offprompt.interop.strands`` in the core suite (no Strands installed).

``RECORDS`` is what strands-agents 1.62's own ``FileSessionManager`` wrote for a real
agent run (integrations/strands/tests/test_interop.py makes it again against the
installed Strands): a tool call pair, a result with text, JSON and an image, a failed
tool, ``tracking_id`` and ``metadata`` fields.
"""

from __future__ import annotations

import json

import pytest

from offprompt.errors import DeserializationError
from offprompt.interop.report import ConversionReport
from offprompt.interop.strands import (
    RESERVED,
    message_from_strands,
    messages_from_strands,
    messages_to_session_messages,
    messages_to_strands,
)
from offprompt.messages import Message, ToolCall

RECORDS = json.loads(
    r"""
[
    {
        "message": {
            "role": "user",
            "content": [
                {
                    "text": "Add 2 and 3, then chart it."
                }
            ],
            "tracking_id": "d7dae5be-ed80-42ac-ae93-1eea938e0c33"
        },
        "message_id": 0,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.259080+00:00",
        "updated_at": "2026-12-07T20:55:55.259087+00:00"
    },
    {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "text": "Let me compute and draw."
                },
                {
                    "toolUse": {
                        "toolUseId": "t1",
                        "name": "add",
                        "input": {
                            "a": 2,
                            "b": 3
                        }
                    }
                },
                {
                    "toolUse": {
                        "toolUseId": "t2",
                        "name": "chart",
                        "input": {}
                    }
                }
            ],
            "metadata": {
                "usage": {
                    "inputTokens": 0,
                    "outputTokens": 0,
                    "totalTokens": 0
                },
                "metrics": {
                    "latencyMs": 0,
                    "timeToFirstByteMs": 0
                }
            },
            "tracking_id": "4e134923-d863-4bb9-a11d-091dc4171f01"
        },
        "message_id": 1,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.261319+00:00",
        "updated_at": "2026-12-07T20:55:55.261324+00:00"
    },
    {
        "message": {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "status": "success",
                        "content": [
                            {
                                "text": "5"
                            }
                        ]
                    }
                },
                {
                    "toolResult": {
                        "status": "success",
                        "content": [
                            {
                                "text": "a chart"
                            },
                            {
                                "json": {
                                    "points": [
                                        1,
                                        2,
                                        3
                                    ]
                                }
                            },
                            {
                                "image": {
                                    "format": "png",
                                    "source": {
                                        "bytes": {
                                            "__bytes_encoded__": true,
                                            "data": "iVBORw0KGgoAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/"
                                        }
                                    }
                                }
                            }
                        ],
                        "toolUseId": "t2"
                    }
                }
            ],
            "tracking_id": "20514ab5-44d9-42eb-941f-dc907b41b070"
        },
        "message_id": 2,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.278007+00:00",
        "updated_at": "2026-12-07T20:55:55.278016+00:00"
    },
    {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "t3",
                        "name": "fail",
                        "input": {}
                    }
                }
            ],
            "metadata": {
                "usage": {
                    "inputTokens": 0,
                    "outputTokens": 0,
                    "totalTokens": 0
                },
                "metrics": {
                    "latencyMs": 0,
                    "timeToFirstByteMs": 0
                }
            },
            "tracking_id": "4997955c-90e2-4e69-86fb-21563dbf1ac7"
        },
        "message_id": 3,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.284512+00:00",
        "updated_at": "2026-12-07T20:55:55.284525+00:00"
    },
    {
        "message": {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t3",
                        "status": "error",
                        "content": [
                            {
                                "text": "Error: RuntimeError - boom"
                            }
                        ]
                    }
                }
            ],
            "tracking_id": "366c6955-80f1-4896-8a18-d5f5964adf5e"
        },
        "message_id": 4,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.287446+00:00",
        "updated_at": "2026-12-07T20:55:55.287460+00:00"
    },
    {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "text": "2 + 3 = 5, and here is a chart; the last tool failed."
                }
            ],
            "metadata": {
                "usage": {
                    "inputTokens": 0,
                    "outputTokens": 0,
                    "totalTokens": 0
                },
                "metrics": {
                    "latencyMs": 0,
                    "timeToFirstByteMs": 0
                }
            },
            "tracking_id": "a4f93d08-b3f5-4c92-b9df-8560b3fd1e3b"
        },
        "message_id": 5,
        "redact_message": null,
        "created_at": "2026-12-07T20:55:55.294812+00:00",
        "updated_at": "2026-12-07T20:55:55.294823+00:00"
    }
]
"""
)


def test_session_records_round_trip_exactly() -> None:
    messages = messages_from_strands(RECORDS)
    assert json.dumps(messages_to_session_messages(messages)) == json.dumps(RECORDS)
    assert not [m for m in messages if "message" in m.meta.get(RESERVED, {})]


def test_messages_round_trip_exactly_and_are_real_messages() -> None:
    plain = [r["message"] for r in RECORDS]
    messages = messages_from_strands(plain)
    assert json.dumps(messages_to_strands(messages)) == json.dumps(plain)
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert messages[1].tool_calls[1].name == "chart"
    assert messages[3].content[1].value == {"json": {"points": [1, 2, 3]}}


def test_a_message_it_cannot_split_is_kept_whole() -> None:
    odd = {"role": "user", "content": [{"toolResult": {"toolUseId": "x", "status": "success"}}]}
    [message] = message_from_strands(odd)
    assert message.meta[RESERVED]["message"] == odd
    assert messages_to_strands([message]) == [odd]


def test_foreign_messages_are_written_as_strands_accepts_them() -> None:
    history = [
        Message.system("Be brief."),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1})]),
        Message(role="tool", tool_call_id="c1", content="2"),
        Message(role="tool", tool_call_id="c2", content="3"),
    ]
    report = ConversionReport()
    written = messages_to_strands(history, report=report)
    assert written[0] == {"role": "user", "content": [{"text": "Be brief."}]}
    assert "role system" in report.summary()
    assert written[1] == {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": "c1", "name": "add", "input": {"a": 1}}}],
    }
    assert [b["toolResult"]["toolUseId"] for b in written[2]["content"]] == ["c1", "c2"]
    records = messages_to_session_messages(history)
    assert [r["message_id"] for r in records] == [0, 1, 2]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"role": "tool", "content": []}], "role must be 'user' or 'assistant'"),
        ([{"role": "user", "content": "hi"}], "content must be a list"),
        ([{"role": "user", "content": [{"text": b"x"}]}], "not JSON"),
        ([42], "a Strands message is a JSON object"),
    ],
)
def test_bad_input_is_refused_clearly(data: list, message: str) -> None:
    with pytest.raises(DeserializationError, match=message):
        messages_from_strands(data)


def test_the_cli_format_reads_and_writes_strands_json() -> None:
    from offprompt.cli.formats import FORMATS, sniff

    plain = [r["message"] for r in RECORDS]
    assert sniff(json.dumps(RECORDS)) == sniff(json.dumps(plain)) == "strands"
    assert sniff(json.dumps([{"role": "user", "content": "hi"}])) == "openai-agents"
    report = ConversionReport()
    sessions = FORMATS["strands"].read(json.dumps(RECORDS), report)
    assert report.converted == 7
    written = FORMATS["strands"].write({"s": sessions[None]}, ConversionReport())
    assert json.loads(written) == plain
