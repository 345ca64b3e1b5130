"""Lone surrogates (invalid Unicode) get one rule: text given by the caller is refused
with a clear ValidationError naming where (issue 14 item 3); text arriving inside an agent
run (tool outputs through the offload policy, messages recorded by the middleware, the
LlamaIndex memory and the OpenAI Agents session) is escaped and flagged by
``escape_in_run``; those are tested with the adapters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offprompt.artifacts import JsonArtifact, ListArtifact, TextArtifact
from offprompt.cli import EXIT_FAILURE, main
from offprompt.errors import DeserializationError, ValidationError
from offprompt.messages import Message, ToolCall
from offprompt.scope import Scope

LONE = json.loads('"\\ud83d"')  # what a JSON escape of half an emoji gives
ESCAPED = b"\xff".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("bad", [LONE, ESCAPED, f"text {LONE} around"])
def test_every_model_refuses_them_naming_the_field(bad: str) -> None:
    cases = [
        (lambda: Message.user(bad), "TextArtifact.value"),
        (lambda: TextArtifact(value="x", name=bad), "TextArtifact.name"),
        (lambda: Message.user("x", name=bad), "Message field"),
        (lambda: Message.user("x", meta={"note": bad}), "Message.meta"),
        (lambda: ToolCall(id="c", name="f", arguments={"q": bad}), "tool-call arguments"),
        (lambda: ToolCall(id="c", name="f", arguments=json.dumps({"q": bad})), "arguments"),
        (lambda: JsonArtifact(value={"k": [bad]}), "JsonArtifact"),
        (lambda: ListArtifact(value=[{"type": "TextArtifact", "value": bad}]), "TextArtifact"),
        (lambda: Scope(tenant="t", session=bad), "session"),
        (lambda: Scope(user=bad), "control character"),
    ]
    for make, where in cases:
        with pytest.raises(ValidationError) as caught:
            make()
        assert where in str(caught.value)
        assert "lone surrogate" in str(caught.value) or "control character" in str(caught.value)


def test_json_with_a_lone_surrogate_escape_is_a_deserialization_error() -> None:
    with pytest.raises(DeserializationError, match="lone surrogate"):
        Message.from_json('{"role": "user", "content": "half \\ud83d an emoji"}')
    pair = Message.from_json('{"role": "user", "content": "whole \\ud83d\\ude80"}')
    assert pair.text == "whole 🚀"  # a proper surrogate pair is one valid character


def test_adapters_refuse_them_with_the_same_error() -> None:
    from langchain_core.messages import HumanMessage
    from llama_index.core.base.llms.types import ChatMessage
    from offprompt_langchain import message_from_langchain
    from offprompt_llamaindex.convert import message_from_llamaindex

    with pytest.raises(ValidationError, match="lone surrogate"):
        message_from_langchain(HumanMessage(f"hi {LONE}"))
    with pytest.raises(ValidationError, match="lone surrogate"):
        message_from_llamaindex(ChatMessage(role="user", content=f"hi {ESCAPED}"))


@pytest.mark.parametrize("fmt", ["offprompt", "langchain"])
def test_cli_import_refuses_them_in_one_line(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "chat.json"
    if fmt == "offprompt":
        source.write_text('{"role": "user", "content": "half \\ud83d"}\n', encoding="utf-8")
    else:
        source.write_text(
            '[{"type": "human", "data": {"content": "half \\ud83d"}}]', encoding="utf-8"
        )
    code = main(["--home", str(tmp_path / "home"), "import", "--format", fmt, str(source)])
    assert code == EXIT_FAILURE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lone surrogate" in err[0], err
    assert not (tmp_path / "home" / "memory.db").exists()
