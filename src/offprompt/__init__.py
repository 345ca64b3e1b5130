"""offprompt: agent memory that lives outside the prompt.

Typed artifacts, lossless token-budgeted conversation memory, off-prompt task memory
on Qdrant, step memory and long-term memory, behind thin LangChain and LlamaIndex
adapters (``offprompt_langchain``, ``offprompt_llamaindex``).
"""

from typing import TYPE_CHECKING, Any

from offprompt.artifacts import (
    ActionArtifact,
    BaseArtifact,
    BlobArtifact,
    BooleanArtifact,
    ErrorArtifact,
    GenericArtifact,
    ImageArtifact,
    InfoArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import OffpromptError
from offprompt.messages import Message, ToolCall
from offprompt.tokens import TiktokenTokenizer, Tokenizer, default_tokenizer

__version__ = "0.1.0"

# The memories and stores load on first use, so `import offprompt` stays light (the CLI
# and short scripts do not pay for qdrant-client unless they use it).
_LAZY = {
    "ConversationMemory": "offprompt.conversation",
    "SummaryConversationMemory": "offprompt.conversation",
    "InMemoryStore": "offprompt.stores",
    "SQLiteStore": "offprompt.stores",
    "QdrantStore": "offprompt.stores",
    "TaskMemory": "offprompt.task_memory",
    "QdrantVectorStore": "offprompt.vectors",
    "HashingEmbedder": "offprompt.vectors",
    "AgentMemory": "offprompt.steps",
    "LongTermMemory": "offprompt.longterm",
    "HybridMemory": "offprompt.longterm",
    "MemoryFragment": "offprompt.longterm",
    "Scope": "offprompt.scope",
    "forget": "offprompt.forget",
    "RetentionPolicy": "offprompt.retention",
}

if TYPE_CHECKING:
    from offprompt.conversation import ConversationMemory, SummaryConversationMemory
    from offprompt.forget import forget
    from offprompt.longterm import HybridMemory, LongTermMemory, MemoryFragment
    from offprompt.retention import RetentionPolicy
    from offprompt.scope import Scope
    from offprompt.steps import AgentMemory
    from offprompt.stores import InMemoryStore, QdrantStore, SQLiteStore
    from offprompt.task_memory import TaskMemory
    from offprompt.vectors import HashingEmbedder, QdrantVectorStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'offprompt' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ActionArtifact",
    "AgentMemory",
    "BaseArtifact",
    "BlobArtifact",
    "BooleanArtifact",
    "ConversationMemory",
    "ErrorArtifact",
    "GenericArtifact",
    "HashingEmbedder",
    "HybridMemory",
    "ImageArtifact",
    "InMemoryStore",
    "InfoArtifact",
    "JsonArtifact",
    "ListArtifact",
    "LongTermMemory",
    "MemoryFragment",
    "Message",
    "OffpromptError",
    "QdrantStore",
    "QdrantVectorStore",
    "RetentionPolicy",
    "SQLiteStore",
    "Scope",
    "SummaryConversationMemory",
    "TaskMemory",
    "TextArtifact",
    "TiktokenTokenizer",
    "Tokenizer",
    "ToolCall",
    "__version__",
    "default_tokenizer",
    "forget",
]
