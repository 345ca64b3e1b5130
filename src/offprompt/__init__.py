"""offprompt: agent memory that lives outside the prompt.

Typed artifacts, lossless token-budgeted conversation memory, off-prompt task memory
on Qdrant, step memory and long-term memory, behind thin LangChain and LlamaIndex
adapters (``offprompt_langchain``, ``offprompt_llamaindex``).
"""

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

__all__ = [
    "ActionArtifact",
    "BaseArtifact",
    "BlobArtifact",
    "BooleanArtifact",
    "ErrorArtifact",
    "GenericArtifact",
    "ImageArtifact",
    "InfoArtifact",
    "JsonArtifact",
    "ListArtifact",
    "Message",
    "OffpromptError",
    "TextArtifact",
    "TiktokenTokenizer",
    "Tokenizer",
    "ToolCall",
    "__version__",
    "default_tokenizer",
]
