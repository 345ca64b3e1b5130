"""The ``Embedder`` protocol and ``HashingEmbedder``, the offline default.

``HashingEmbedder`` needs no model and no network: every lower-cased word contributes
its own signed hash feature plus the signed hashes of its character 3-grams (of
``<word>``; words holding a digit get no n-grams), so related word forms share
dimensions. Vectors are L2-normalised, so a
cosine / dot product compares them. The per-word features are cached (a word's features
are a pure function of the word), and a batch is accumulated with one ``np.bincount``,
which keeps it at tens of MB/s on one core.
"""

from __future__ import annotations

import asyncio
import re
import threading
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from offprompt.errors import ValidationError

__all__ = ["Embedder", "HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_HAS_DIGIT = re.compile(r"\d")


@runtime_checkable
class Embedder(Protocol):
    """Turns text into dense vectors of a fixed size.

    Implementations must be deterministic for a given model and thread-safe.
    """

    @property
    def dimensions(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        ...

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        ...


class HashingEmbedder:
    """Deterministic signed feature hashing of words and character 3-grams.

    Args:
        dimensions: Vector size (at least 8).
        ngram: Character n-gram length (0 disables n-grams).
        ngram_weight: Weight of each n-gram feature relative to the word feature.
        cache_size: Distinct words whose features are kept; the cache is cleared when
            full (features are recomputed identically).

    Example:
        >>> emb = HashingEmbedder(dimensions=64)
        >>> v = emb.embed_query("disk full on node 7")
        >>> len(v), round(sum(x * x for x in v), 6)
        (64, 1.0)
    """

    def __init__(
        self,
        dimensions: int = 384,
        *,
        ngram: int = 3,
        ngram_weight: float = 0.5,
        cache_size: int = 500_000,
    ) -> None:
        if not isinstance(dimensions, int) or dimensions < 8:
            raise ValidationError(
                f"HashingEmbedder.dimensions must be an int >= 8, got {dimensions!r}"
            )
        if ngram < 0:
            raise ValidationError(f"HashingEmbedder.ngram must be >= 0, got {ngram!r}")
        self._dimensions = dimensions
        self.ngram = ngram
        self.ngram_weight = float(ngram_weight)
        self.cache_size = cache_size
        self._cache: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {}
        self._ngrams: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self._dimensions})"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _features(self, word: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Signed feature indices of one word (sign folded into the weight)."""
        dim = self._dimensions
        h = zlib.crc32(b"w\x00" + word.encode("utf-8"))
        idx = [h % dim]
        weights = [-1.0 if h & 0x80000000 else 1.0]
        n = self.ngram
        # n-grams model word forms; ids and numbers (any digit) only get the word feature,
        # which also keeps ingest fast on logs full of unique hex ids.
        if n and len(word) <= 24 and not _HAS_DIGIT.search(word):
            padded = f"<{word}>"
            grams = self._ngrams
            for i in range(max(1, len(padded) - n + 1)):
                gram = padded[i : i + n]
                feature = grams.get(gram)
                if feature is None:
                    # n-grams repeat across words far more than words do: hash each once
                    g = zlib.crc32(b"c\x00" + gram.encode("utf-8"))
                    w = self.ngram_weight
                    feature = grams[gram] = (g % dim, -w if g & 0x80000000 else w)
                idx.append(feature[0])
                weights.append(feature[1])
        return tuple(idx), tuple(weights)

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` into a ``(len(texts), dimensions)`` float32 array (rows L2-normalised).

        Texts with no word characters get a zero vector.
        """
        dim = self._dimensions
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        # A word's id is its insertion order: the defaultdict trick runs the lookup in C.
        vocab: defaultdict[str, int] = defaultdict()
        vocab.default_factory = vocab.__len__
        doc_of: list[int] = []
        word_ids: list[int] = []
        counts: list[int] = []
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValidationError(f"embed: item {row} must be str, got {type(text).__name__}")
            bag = Counter(_WORD.findall(text.lower()))
            word_ids.extend(map(vocab.__getitem__, bag.keys()))
            counts.extend(bag.values())
            doc_of.extend([row] * len(bag))
        out: npt.NDArray[np.float64] = np.zeros(len(texts) * dim, dtype=np.float64)
        if vocab:
            with self._lock:
                if len(self._cache) + len(vocab) > self.cache_size:
                    self._cache.clear()
                    self._ngrams.clear()
                feats = []
                for word in vocab:
                    cached = self._cache.get(word)
                    if cached is None:
                        cached = self._cache[word] = self._features(word)
                    feats.append(cached)
            lengths = np.fromiter((len(f[0]) for f in feats), dtype=np.int64, count=len(feats))
            offsets = np.concatenate(([0], np.cumsum(lengths)))
            total_features = int(offsets[-1])
            flat_idx = np.fromiter(
                chain.from_iterable(f[0] for f in feats), dtype=np.int64, count=total_features
            )
            flat_w = np.fromiter(
                chain.from_iterable(f[1] for f in feats), dtype=np.float64, count=total_features
            )
            occ_word = np.asarray(word_ids, dtype=np.int64)
            occ_doc = np.asarray(doc_of, dtype=np.int64)
            # Expand every word occurrence into its features (a vectorised ragged gather).
            occ_len = lengths[occ_word]
            total = int(occ_len.sum())
            starts = np.repeat(offsets[occ_word] - np.cumsum(occ_len) + occ_len, occ_len)
            gather = starts + np.arange(total, dtype=np.int64)
            target = np.repeat(occ_doc * dim, occ_len) + flat_idx[gather]
            occ_count = np.repeat(np.asarray(counts, dtype=np.float32), occ_len)
            out = np.bincount(  # type: ignore[assignment]
                target, weights=flat_w[gather] * occ_count, minlength=len(texts) * dim
            )
        matrix = out.reshape(len(texts), dim).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text."""
        result: list[list[float]] = self.embed_array(list(texts)).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``text`` (queries and documents are embedded the same way)."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)
