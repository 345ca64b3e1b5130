"""offprompt for LangChain: durable chat history, off-prompt tools and agent middleware.

``OffpromptSaver`` (a LangGraph checkpointer) needs ``langgraph``;
``OffpromptMiddleware`` needs ``langchain`` and ``langgraph`` and ``OffpromptStore``
needs ``langgraph`` (the ``agents`` extra); ``OffpromptBackend`` (a deepagents backend)
needs ``deepagents`` (the ``deepagents`` extra). They are imported on first use, so the
rest works with ``langchain-core`` alone.
"""

from typing import TYPE_CHECKING, Any

from offprompt_langchain.blobs import OffpromptBlobStore
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
from offprompt_langchain.history import OffpromptChatMessageHistory
from offprompt_langchain.longterm import LLMImportanceScorer, LLMInsightExtractor, MemoryModelError
from offprompt_langchain.retriever import TaskMemoryRetriever
from offprompt_langchain.tools import OffpromptTool, offprompt_tool, task_memory_tools

if TYPE_CHECKING:
    from offprompt_langchain.checkpoint import OffpromptSaver
    from offprompt_langchain.deepagents_backend import OffpromptBackend
    from offprompt_langchain.middleware import OffpromptMiddleware
    from offprompt_langchain.store import OffpromptStore

__all__ = [
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

# name: (module, what it needs, the extra that installs it)
_LAZY = {
    "OffpromptBackend": ("offprompt_langchain.deepagents_backend", "deepagents", "deepagents"),
    "OffpromptSaver": ("offprompt_langchain.checkpoint", "langgraph", "agents"),
    "OffpromptMiddleware": ("offprompt_langchain.middleware", "langchain and langgraph", "agents"),
    "OffpromptStore": ("offprompt_langchain.store", "langgraph", "agents"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'offprompt_langchain' has no attribute {name!r}")
    module_name, needs, extra = _LAZY[name]
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"{name} needs {needs}: pip install 'offprompt-langchain[{extra}]' ({exc})"
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value
