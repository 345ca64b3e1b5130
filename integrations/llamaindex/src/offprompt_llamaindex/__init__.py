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
from offprompt_llamaindex.memory import OffpromptMemory
from offprompt_llamaindex.tools import OffpromptTool, TaskMemoryToolSpec, offprompt_tool

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexSummarizer",
    "OffpromptChatStore",
    "OffpromptEmbedding",
    "OffpromptMemory",
    "OffpromptMemoryBlock",
    "OffpromptTool",
    "SummarizationError",
    "TaskMemoryToolSpec",
    "from_llamaindex",
    "message_from_llamaindex",
    "message_to_llamaindex",
    "offprompt_tool",
    "to_llamaindex",
]
