"""Vectors: embedders, the BM25 sparse encoder and ``QdrantVectorStore``.

``QdrantVectorStore()`` works offline as is: ``HashingEmbedder`` for dense vectors,
BM25 over tiktoken ids for sparse vectors, and the embedded Qdrant engine.
"""

from offprompt.names import validate_namespace
from offprompt.vectors.embedders import Embedder, HashingEmbedder
from offprompt.vectors.records import Hit, Range, VectorRecord, point_id
from offprompt.vectors.sparse import BM25SparseEncoder, SparseVector
from offprompt.vectors.store import RESERVED_KEYS, QdrantVectorStore

__all__ = [
    "RESERVED_KEYS",
    "BM25SparseEncoder",
    "Embedder",
    "HashingEmbedder",
    "Hit",
    "QdrantVectorStore",
    "Range",
    "SparseVector",
    "VectorRecord",
    "point_id",
    "validate_namespace",
]
