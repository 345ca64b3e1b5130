"""offprompt for LlamaIndex: durable token-limited memory, off-prompt tools, memory blocks."""

from offprompt_llamaindex.bridges import (
    LlamaIndexEmbedder,
    LlamaIndexSummarizer,
    OffpromptEmbedding,
    SummarizationError,
)
from offprompt_llamaindex.convert import (
    from_llamaindex,
    message_from_llamaindex,
    message_to_llamaindex,
    to_llamaindex,
)

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexSummarizer",
    "OffpromptEmbedding",
    "SummarizationError",
    "from_llamaindex",
    "message_from_llamaindex",
    "message_to_llamaindex",
    "to_llamaindex",
]
