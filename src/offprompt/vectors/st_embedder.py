"""``SentenceTransformerEmbedder``: a real embedding model, one line away.

Any sentence-transformers model (``all-MiniLM-L6-v2``, ``bge-small-en-v1.5``...) as an
:class:`~offprompt.vectors.Embedder`, for the dense half of ``QdrantVectorStore`` and
so of long-term memory and task memory. It needs the ``embeddings`` extra, which pulls
in PyTorch::

    pip install 'offprompt[embeddings]'

The model is loaded when the embedder is made (by name, from a local directory, or an
already loaded ``SentenceTransformer``); sentence-transformers is imported only then,
so ``import offprompt`` never loads PyTorch.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offprompt.errors import OffpromptError, ValidationError

__all__ = ["SentenceTransformerEmbedder"]

_HINT = (
    "SentenceTransformerEmbedder needs sentence-transformers: pip install 'offprompt[embeddings]'"
)


class SentenceTransformerEmbedder:
    """An ``Embedder`` over a sentence-transformers model (L2-normalised vectors).

    Args:
        model: A model name or local directory (``SentenceTransformer(model)``), or a
            loaded ``SentenceTransformer``.
        device: Where the model runs (``"cpu"``, ``"cuda"``...; the library's choice
            when ``None``). Ignored for a loaded model.
        batch_size: Texts per forward pass.
        query_prompt: Text put before every query (some models want one, e.g.
            ``"query: "`` for E5); documents are embedded as they are.
        **model_kwargs: Passed to ``SentenceTransformer`` (``local_files_only=True``,
            ``cache_folder=``...).

    Raises:
        OffpromptError: sentence-transformers is not installed (the message names the
            extra to install).
        ValidationError: A bad ``batch_size`` or a model without a fixed dimension.

    Example:
        ```text
        from offprompt.longterm import LongTermMemory
        from offprompt.vectors import QdrantVectorStore, SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
        memory = LongTermMemory(QdrantVectorStore(embedder=embedder))
        ```
    """

    def __init__(
        self,
        model: str | Path | Any = "sentence-transformers/all-MiniLM-L6-v2",
        *,
        device: str | None = None,
        batch_size: int = 64,
        query_prompt: str = "",
        **model_kwargs: Any,
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValidationError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.name = Path(model).name if isinstance(model, (str, Path)) else type(model).__name__
        if isinstance(model, (str, Path)):
            try:
                from sentence_transformers import (  # type: ignore[import-not-found,unused-ignore]
                    SentenceTransformer,
                )
            except ImportError:
                raise OffpromptError(_HINT) from None
            model = SentenceTransformer(str(model), device=device, **model_kwargs)
        if not callable(getattr(model, "encode", None)):
            raise ValidationError(
                f"model must be a name, a directory or a SentenceTransformer, got {type(model).__name__}"
            )
        self.model = model
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        get_dim = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        dims = get_dim() if get_dim is not None else None
        if not isinstance(dims, int) or dims < 1:
            dims = len(self._encode(["dimensions"])[0])
        self._dimensions = int(dims)
        # torch modules are not documented as safe for concurrent forward passes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, dimensions={self._dimensions})"

    @property
    def dimensions(self) -> int:
        """Length of every vector."""
        return self._dimensions

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise ValidationError("embed_documents takes a sequence of texts, not one str")
        for text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"texts must be str, got {type(text).__name__}")
        if not texts:
            return []
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors.tolist()]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""
        with getattr(self, "_lock", threading.Lock()):
            return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``query_prompt + text``."""
        if not isinstance(text, str):
            raise ValidationError(f"query must be str, got {type(text).__name__}")
        return self.embed_documents([self.query_prompt + text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_query, text)
