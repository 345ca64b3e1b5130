"""Vectors: embedders, the BM25 sparse encoder and ``QdrantVectorStore``.

``QdrantVectorStore()`` works offline as is: ``HashingEmbedder`` for dense vectors,
BM25 over the :class:`Analyzer`'s word terms for sparse vectors, and the embedded Qdrant engine.
"""

from offprompt.vectors.analyzer import Analyzer
from offprompt.vectors.embedders import CheckedEmbedder, Embedder, HashingEmbedder
from offprompt.vectors.records import Hit, Range, VectorRecord, point_id
from offprompt.vectors.sparse import BM25SparseEncoder, BM25WordEncoder, SparseVector
from offprompt.vectors.st_embedder import SentenceTransformerEmbedder
from offprompt.vectors.store import RESERVED_KEYS, QdrantVectorStore

__all__ = [
    "RESERVED_KEYS",
    "Analyzer",
    "BM25SparseEncoder",
    "BM25WordEncoder",
    "CheckedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "Hit",
    "QdrantVectorStore",
    "Range",
    "SentenceTransformerEmbedder",
    "SparseVector",
    "VectorRecord",
    "point_id",
]
