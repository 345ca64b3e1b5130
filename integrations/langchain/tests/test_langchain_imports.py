"""The public names of ``offprompt_langchain``, exactly (as langchain-qdrant's test_imports)."""

from __future__ import annotations

import offprompt_langchain

from offprompt import errors

EXPECTED_ALL = [
    "LLMImportanceScorer",
    "LLMInsightExtractor",
    "LangChainEmbedder",
    "LangChainSummarizer",
    "MemoryModelError",
    "OffpromptBackend",
    "OffpromptBlobStore",
    "OffpromptChatMessageHistory",
    "OffpromptEmbeddings",
    "OffpromptMiddleware",
    "OffpromptSaver",
    "OffpromptStore",
    "OffpromptTool",
    "SummarizationError",
    "TaskMemoryRetriever",
    "from_langchain",
    "message_from_langchain",
    "message_to_langchain",
    "offprompt_tool",
    "task_memory_tools",
    "to_langchain",
]


def test_all_is_exactly_the_public_api() -> None:
    assert sorted(offprompt_langchain.__all__) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert getattr(offprompt_langchain, name) is not None


def test_errors_are_the_core_ones() -> None:
    assert offprompt_langchain.SummarizationError is errors.SummarizationError
    assert offprompt_langchain.MemoryModelError is errors.MemoryModelError
