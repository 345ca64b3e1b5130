"""``TaskMemoryRetriever``: a LangChain retriever over outputs stored in task memory."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from offprompt.artifacts import BaseArtifact
from offprompt.errors import ValidationError
from offprompt.names import validate_namespace
from offprompt.task_memory import TaskMemory

__all__ = ["TaskMemoryRetriever"]


class TaskMemoryRetriever(BaseRetriever):
    """Hybrid (dense + BM25) search over one or more task-memory namespaces.

    Each hit is a ``Document`` whose ``page_content`` is the stored chunk, byte for byte,
    and whose ``metadata`` holds ``memory_name``, ``artifact_namespace``, ``tool``,
    ``score``, ``page``, ``chunk_index`` and ``artifact_id``. With several namespaces,
    the hits of each are merged by score. ``k`` can also be given per call:
    ``retriever.invoke(query, k=2)``.

    Attributes:
        task_memory: The memory to search.
        namespaces: The namespaces to search; empty means every namespace of the memory.
        k: Documents returned (at most).
        mode: ``"hybrid"`` (default), or whatever else ``TaskMemory.query`` accepts.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "run", TextArtifact(value="disk full on node 7", name="logs-1"))
        >>> docs = TaskMemoryRetriever(task_memory=memory, namespaces=["logs-1"], k=1).invoke("node")
        >>> docs[0].page_content, docs[0].metadata["artifact_namespace"]
        ('disk full on node 7', 'logs-1')
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task_memory: TaskMemory
    namespaces: list[str] = Field(default_factory=list)
    k: int = Field(default=4, ge=1)
    mode: str = "hybrid"

    @field_validator("namespaces", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, (list, tuple)):
            return [validate_namespace(v) for v in value]
        return value

    def _k(self, k: int | None) -> int:
        if k is None:
            return self.k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValidationError(f"k must be an int >= 1, got {k!r}")
        return k

    def _targets(self) -> list[str]:
        return list(self.namespaces) or self.task_memory.namespaces()

    def _document(self, namespace: str, hit: BaseArtifact, tool: Any) -> Document:
        meta = hit.meta
        return Document(
            id=f"{namespace}:{meta.get('artifact_id')}:{meta.get('chunk_index')}",
            page_content=hit.to_text(),
            metadata={
                "memory_name": self.task_memory.name,
                "artifact_namespace": namespace,
                "tool": tool,
                "score": meta.get("score"),
                "page": meta.get("page"),
                "chunk_index": meta.get("chunk_index"),
                "artifact_id": meta.get("artifact_id"),
            },
        )

    def _search(self, namespace: str, query: str, k: int) -> list[Document]:
        hits = self.task_memory.query(namespace, query, top_n=k, mode=self.mode)
        if not hits.value:
            return []
        tool = self.task_memory.namespace_metadata(namespace).get("tool")
        return [self._document(namespace, hit, tool) for hit in hits.value]

    @staticmethod
    def _best(found: list[Document], k: int) -> list[Document]:
        found.sort(key=lambda d: -(d.metadata.get("score") or 0.0))
        return found[:k]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        limit = self._k(k)
        found: list[Document] = []
        for namespace in self._targets():
            found.extend(self._search(namespace, query, limit))
        return self._best(found, limit)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        limit = self._k(k)
        targets = list(self.namespaces) or await self.task_memory.anamespaces()
        found: list[Document] = []
        for namespace in targets:
            found.extend(await asyncio.to_thread(self._search, namespace, query, limit))
        return self._best(found, limit)
