"""offprompt for LangChain: durable chat history, off-prompt tools and agent middleware."""

from offprompt_langchain.bridges import (
    LangChainEmbedder,
    LangChainSummarizer,
    OffpromptEmbeddings,
    SummarizationError,
)
from offprompt_langchain.convert import (
    from_langchain,
    message_from_langchain,
    message_to_langchain,
    to_langchain,
)

__all__ = [
    "LangChainEmbedder",
    "LangChainSummarizer",
    "OffpromptEmbeddings",
    "SummarizationError",
    "from_langchain",
    "message_from_langchain",
    "message_to_langchain",
    "to_langchain",
]
