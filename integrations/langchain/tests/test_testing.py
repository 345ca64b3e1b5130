"""``offprompt_langchain.testing.ScriptedChatModel``, the one scripted LangChain model."""

from __future__ import annotations

import pydantic
import pytest
from offprompt_langchain.testing import ScriptedChatModel, ScriptExhaustedError


async def test_steps_then_the_default_and_the_mode_of_each_call() -> None:
    model = ScriptedChatModel(
        script=["first"], default=lambda messages: f"echo {messages[-1].text}"
    )
    assert model.invoke("a").content == "first"
    assert (await model.ainvoke("b")).content == "echo b"
    assert model.invoke("c").content == "echo c"
    assert [[m.text for m in call] for call in model.calls] == [["a"], ["b"], ["c"]]
    assert model.modes == ["sync", "async", "sync"]


async def test_without_a_default_a_call_past_the_script_is_an_error() -> None:
    model = ScriptedChatModel(script=["only"])
    model.invoke("a")
    with pytest.raises(ScriptExhaustedError, match="called 2 times; its script has 1 steps"):
        model.invoke("b")
    with pytest.raises(ScriptExhaustedError):
        await model.ainvoke("c")
    assert model.modes == ["sync", "sync", "async"]


def test_a_default_that_is_not_a_step_is_refused() -> None:
    with pytest.raises(
        pydantic.ValidationError, match="default must be an AIMessage, a str, a function"
    ):
        ScriptedChatModel(default=42)
