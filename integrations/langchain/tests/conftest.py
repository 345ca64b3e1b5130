"""Shared fixtures for the LangChain adapter tests.

Only the chat model is faked: ``offprompt_langchain.testing.ScriptedChatModel`` with a
``default`` reply (``recording_model``, ``make_recording_model``); it records every input
and whether it came through the sync or the async path.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage
from offprompt_langchain.testing import ScriptedChatModel
from PIL import Image


def _default_reply(messages: list[BaseMessage]) -> str:
    words = messages[-1].text.split()
    return "Summary: " + " ".join(words[:8])


@pytest.fixture
def recording_model() -> ScriptedChatModel:
    """A scripted model whose every reply starts with "Summary:" and echoes the prompt's start."""
    return ScriptedChatModel(default=_default_reply)


@pytest.fixture
def make_recording_model() -> Callable[..., ScriptedChatModel]:
    """Build a scripted model answering every call with ``reply(messages)``."""

    def make(reply: Callable[[list[BaseMessage]], str] = _default_reply) -> ScriptedChatModel:
        return ScriptedChatModel(default=reply)

    return make


@pytest.fixture
def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "blue").save(buffer, format="PNG")
    return buffer.getvalue()
