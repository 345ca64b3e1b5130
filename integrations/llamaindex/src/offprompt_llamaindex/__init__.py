"""offprompt for LlamaIndex: durable token-limited memory, off-prompt tools, memory blocks."""

from offprompt_llamaindex.block import OffpromptMemoryBlock
from offprompt_llamaindex.bridges import (
    LlamaIndexEmbedder,
    LlamaIndexSummarizer,
    OffpromptEmbedding,
    SummarizationError,
)
from offprompt_llamaindex.chat_store import OffpromptChatStore
from offprompt_llamaindex.convert import (
    from_llamaindex,
    message_from_llamaindex,
    message_to_llamaindex,
    to_llamaindex,
)
from offprompt_llamaindex.longterm import LLMImportanceScorer, LLMInsightExtractor, MemoryModelError
from offprompt_llamaindex.memory import OffpromptMemory
from offprompt_llamaindex.tools import OffpromptTool, TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.tracing import LlamaIndexTracer, OffpromptTraceEvent

__all__ = [
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
