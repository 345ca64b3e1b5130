"""LangChain's standard embeddings suites on OffpromptEmbeddings (offline HashingEmbedder)."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests
from offprompt_langchain import OffpromptEmbeddings


class TestOffpromptEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[Embeddings]:
        return OffpromptEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"dimensions": 64}


class TestOffpromptEmbeddingsIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[Embeddings]:
        return OffpromptEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"dimensions": 64}


class TestOffpromptEmbeddingsDefaults(EmbeddingsIntegrationTests):
    """The same suite with no arguments: the 384-dimension default."""

    @property
    def embeddings_class(self) -> type[Embeddings]:
        return OffpromptEmbeddings
