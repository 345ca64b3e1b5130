"""Off-prompt task memory: store big tool outputs, give the model a reference to query.

``TaskMemory()`` works offline as is (embedded Qdrant, ``HashingEmbedder``, BM25).
"""

from offprompt.task_memory.blobs import BlobStore, FileBlobStore, InMemoryBlobStore
from offprompt.task_memory.card import OutputStats, render_card
from offprompt.task_memory.meta import ActionSubtaskMetaEntry, MetaMemory
from offprompt.task_memory.storage import ArtifactStorage, BlobArtifactStorage, TextArtifactStorage
from offprompt.task_memory.task_memory import REFERENCE_TEMPLATE, StorageMismatchError, TaskMemory
from offprompt.task_memory.text_view import GrepMatch, GrepResult
from offprompt.vectors.names import validate_namespace

__all__ = [
    "REFERENCE_TEMPLATE",
    "ActionSubtaskMetaEntry",
    "ArtifactStorage",
    "BlobArtifactStorage",
    "BlobStore",
    "FileBlobStore",
    "GrepMatch",
    "GrepResult",
    "InMemoryBlobStore",
    "MetaMemory",
    "OutputStats",
    "StorageMismatchError",
    "TaskMemory",
    "TextArtifactStorage",
    "render_card",
    "validate_namespace",
]
