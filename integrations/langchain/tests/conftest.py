"""Shared fixtures for the LangChain adapter tests.

Only the chat model is faked: :class:`RecordingChatModel` is a real ``BaseChatModel``
subclass with a scripted reply that records every input it receives, with native sync
and async generation so tests can tell which path ran.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from PIL import Image
from pydantic import ConfigDict, Field, PrivateAttr


def _default_reply(messages: list[BaseMessage]) -> str:
    words = messages[-1].text.split()
    return "Summary: " + " ".join(words[:8])


class RecordingChatModel(BaseChatModel):
    """A scripted chat model that records every prompt (a test fake, not a real LLM).

    Attributes:
        reply: Turns the prompt into the reply text.
        calls: Every prompt received, in order, with ``"sync"`` or ``"async"``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reply: Callable[[list[BaseMessage]], str] = Field(default=_default_reply)
    _calls: list[tuple[str, list[BaseMessage]]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> list[tuple[str, list[BaseMessage]]]:
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "recording-fake"

    def _respond(self, mode: str, messages: list[BaseMessage]) -> ChatResult:
        with self._lock:
            self._calls.append((mode, list(messages)))
        message = AIMessage(content=self.reply(messages))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond("sync", messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond("async", messages)


@pytest.fixture
def recording_model() -> RecordingChatModel:
    """A recording fake whose reply starts with "Summary:" and echoes the prompt's start."""
    return RecordingChatModel()


@pytest.fixture
def make_recording_model() -> Callable[..., RecordingChatModel]:
    """Build a recording fake with a custom ``reply``."""
    return RecordingChatModel


@pytest.fixture
def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "blue").save(buffer, format="PNG")
    return buffer.getvalue()
