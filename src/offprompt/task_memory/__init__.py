"""Off-prompt task memory: store big tool outputs, give the model a reference to query.

``TaskMemory()`` works offline as is (embedded Qdrant, ``HashingEmbedder``, BM25).
"""

from offprompt.task_memory.blobs import BlobStore, FileBlobStore, InMemoryBlobStore
from offprompt.task_memory.card import OutputStats
from offprompt.task_memory.meta import ActionSubtaskMetaEntry, MetaMemory
from offprompt.task_memory.offload import Offloaded, OffloadPolicy, StoredReference
from offprompt.task_memory.results import NamespaceMetadata, Stored
from offprompt.task_memory.storage import ArtifactStorage, BlobArtifactStorage, TextArtifactStorage
from offprompt.task_memory.task_memory import REFERENCE_TEMPLATE, StorageMismatchError, TaskMemory
from offprompt.task_memory.text_view import GrepMatch, GrepResult
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES, MemoryToolSpec, memory_tool_specs

__all__ = [
    "MEMORY_TOOL_NAMES",
    "REFERENCE_TEMPLATE",
    "ActionSubtaskMetaEntry",
    "ArtifactStorage",
    "BlobArtifactStorage",
    "BlobStore",
    "FileBlobStore",
    "GrepMatch",
    "GrepResult",
    "InMemoryBlobStore",
    "MemoryToolSpec",
    "MetaMemory",
    "NamespaceMetadata",
    "OffloadPolicy",
    "Offloaded",
    "OutputStats",
    "StorageMismatchError",
    "Stored",
    "StoredReference",
    "TaskMemory",
    "TextArtifactStorage",
    "memory_tool_specs",
]
