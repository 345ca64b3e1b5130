"""Shared fixtures for the LlamaIndex adapter tests.

Only the models are fakes, and they are real LlamaIndex subclasses: the LLM is
``offprompt_llamaindex.testing.ScriptedFunctionLLM`` (``make_llm``), which answers from a
script and records every input; ``CountingEmbedding`` is a deterministic
``BaseEmbedding`` (letter counts) that records sync vs async use.
Everything else is the installed llama-index-core.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from offprompt_llamaindex.testing import ScriptedFunctionLLM
from PIL import Image


def png_bytes(
    width: int = 3, height: int = 2, color: tuple[int, int, int] = (10, 200, 30)
) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


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
def make_llm() -> type[ScriptedFunctionLLM]:
    return ScriptedFunctionLLM


@pytest.fixture
def counting_embedding() -> CountingEmbedding:
    return CountingEmbedding()


@pytest.fixture
def png() -> Any:
    return png_bytes
