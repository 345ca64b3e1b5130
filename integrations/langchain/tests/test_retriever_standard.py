"""TaskMemoryRetriever: LangChain's standard retriever suite, plus metadata and isolation."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from offprompt_langchain import TaskMemoryRetriever

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory

MEMORY = TaskMemory(chunk_tokens=64, overlap_tokens=8)
REPORT = "".join(
    f"Node {i} in rack {i % 5} reported disk usage of {50 + i} percent. " for i in range(300)
)
MEMORY.process_output("monitor", "run", TextArtifact(value=REPORT, name="disks"))
MEMORY.process_output(
    "mail",
    "run",
    TextArtifact(value="The launch code is 7431. " + "Filler sentence here. " * 200, name="mail"),
)


class TestTaskMemoryRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[TaskMemoryRetriever]:
        return TaskMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"task_memory": MEMORY, "namespaces": ["disks"]}

    @property
    def retriever_query_example(self) -> str:
        return "disk usage in rack 3"


def test_documents_carry_the_reference_and_exact_text() -> None:
    docs = TaskMemoryRetriever(task_memory=MEMORY, namespaces="mail", k=2).invoke("launch code")
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert "7431" in top.page_content
    assert top.page_content in "The launch code is 7431. " + "Filler sentence here. " * 200
    meta = top.metadata
    assert meta["memory_name"] == "TaskMemory" and meta["artifact_namespace"] == "mail"
    assert meta["tool"] == "mail" and meta["page"] >= 1 and isinstance(meta["score"], float)
    assert top.id and top.id.startswith("mail:")


async def test_all_namespaces_merged_by_score_and_async() -> None:
    retriever = TaskMemoryRetriever(task_memory=MEMORY, k=3)
    docs = await retriever.ainvoke("launch code 7431")
    assert len(docs) == 3
    assert docs[0].metadata["artifact_namespace"] == "mail"
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert {d.metadata["artifact_namespace"] for d in retriever.invoke("rack 2 disk", k=5)} <= {
        "disks",
        "mail",
    }


def test_tenants_and_unknown_namespaces_are_isolated() -> None:
    other = TaskMemory(tenant="other", vector_store=MEMORY.vector_store)
    assert TaskMemoryRetriever(task_memory=other, namespaces=["mail"]).invoke("launch code") == []
    assert TaskMemoryRetriever(task_memory=MEMORY, namespaces=["missing"]).invoke("x") == []


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        TaskMemoryRetriever(task_memory=MEMORY, k=0)
    with pytest.raises(ValueError):
        TaskMemoryRetriever(task_memory=MEMORY, namespaces=["../etc"])
    with pytest.raises(ValueError, match="k must be"):
        TaskMemoryRetriever(task_memory=MEMORY).invoke("x", k=-1)
