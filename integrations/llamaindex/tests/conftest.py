"""Shared fixtures for the LlamaIndex adapter tests.

Only the models are fakes, and they are real LlamaIndex subclasses: ``ScriptedLLM`` is a
``CustomLLM`` that answers from a script and records every input; ``CountingEmbedding``
is a deterministic ``BaseEmbedding`` (letter counts) that records sync vs async use.
Everything else is the installed llama-index-core.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CustomLLM
from PIL import Image


def png_bytes(
    width: int = 3, height: int = 2, color: tuple[int, int, int] = (10, 200, 30)
) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


class ScriptedLLM(CustomLLM):
    """A fake LLM: returns ``answers`` in turn (the last one repeats) and records inputs.

    ``calls`` holds ``(method, messages)`` for every call, so tests can prove which
    method (sync or async) was used and what the model saw.
    """

    answers: list[str] = Field(default_factory=lambda: ["summary"])
    context_window: int = 4096
    calls: list[tuple[str, list[ChatMessage]]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, is_chat_model=True)

    def _next(self) -> str:
        index = min(len(self.calls) - 1, len(self.answers) - 1)
        return self.answers[index]

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.calls.append(("chat", list(messages)))
        return ChatResponse(message=ChatMessage(role="assistant", content=self._next()))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.calls.append(("achat", list(messages)))
        await asyncio.sleep(0)
        return ChatResponse(message=ChatMessage(role="assistant", content=self._next()))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError("the summarizer must use chat/achat")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise AssertionError("the summarizer must not stream")


class CountingEmbedding(BaseEmbedding):
    """Deterministic embedding: counts of the letters a-h, plus which API was used."""

    used: list[str] = Field(default_factory=list)

    @staticmethod
    def _vector(text: str) -> list[float]:
        return [float(text.lower().count(c)) for c in "abcdefgh"]

    def _get_query_embedding(self, query: str) -> list[float]:
        self.used.append("sync-query")
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        self.used.append("async-query")
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self.used.append("sync-text")
        return self._vector(text)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        self.used.append("async-text")
        return self._vector(text)


@pytest.fixture
def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def make_llm() -> type[ScriptedLLM]:
    return ScriptedLLM


@pytest.fixture
def counting_embedding() -> CountingEmbedding:
    return CountingEmbedding()


@pytest.fixture
def png() -> Any:
    return png_bytes
