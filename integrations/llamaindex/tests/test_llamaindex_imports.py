"""The public names of ``offprompt_llamaindex``, exactly (as langchain-qdrant's test_imports)."""

from __future__ import annotations

import offprompt_llamaindex

from offprompt import errors

EXPECTED_ALL = [
    "LLMImportanceScorer",
    "LLMInsightExtractor",
    "LlamaIndexEmbedder",
    "LlamaIndexSummarizer",
    "LlamaIndexTracer",
    "MemoryModelError",
    "OffpromptChatStore",
    "OffpromptEmbedding",
    "OffpromptMemory",
    "OffpromptMemoryBlock",
    "OffpromptTool",
    "OffpromptTraceEvent",
    "SummarizationError",
    "TaskMemoryToolSpec",
    "from_llamaindex",
    "message_from_llamaindex",
    "message_to_llamaindex",
    "offprompt_tool",
    "to_llamaindex",
]


def test_all_is_exactly_the_public_api() -> None:
    assert sorted(offprompt_llamaindex.__all__) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert getattr(offprompt_llamaindex, name) is not None


def test_errors_are_the_core_ones() -> None:
    # one exception per failure, whichever adapter raised it
    assert offprompt_llamaindex.SummarizationError is errors.SummarizationError
    assert offprompt_llamaindex.MemoryModelError is errors.MemoryModelError
