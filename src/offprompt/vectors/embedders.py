"""The ``Embedder`` protocol and ``HashingEmbedder``, the offline default.

``HashingEmbedder`` needs no model and no network: every lower-cased word contributes
its own signed hash feature plus the signed hashes of its character 3-grams (of
``<word>``; words holding a digit get no n-grams), so related word forms share
dimensions. Vectors are L2-normalised, so a cosine / dot product compares them.

It is built for ingest speed on large tool outputs, where most distinct words are ids
and numbers: ASCII text is split into words by one ``bytes.translate`` and ``split``
(the same words as ``\\w+`` after ``lower()``), words are counted per text in C, every
distinct word of a batch is hashed by ``zlib.crc32`` through ``map``, and only real
words (no digit, at most 24 characters; they repeat) keep their n-gram features in a
cache. A batch is accumulated with one ``np.bincount``.
"""

from __future__ import annotations

import asyncio
import math
import operator
import re
import threading
import zlib
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import chain, repeat
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from offprompt.errors import ValidationError

__all__ = ["CheckedEmbedder", "Embedder", "HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_HAS_DIGIT = re.compile(r"\d")
_ASCII_DIGIT = re.compile(rb"[0-9]")
# ASCII byte -> its lower-case form if it is a word character (``\w``), else a space.
_ASCII_WORDS = bytes(
    (ord(chr(b).lower()) if chr(b).isalnum() or chr(b) == "_" else 0x20) if b < 128 else b
    for b in range(256)
)
# crc32(prefix + data) == crc32(data, crc32(prefix)): the prefixes keep word and
# n-gram hashes apart.
_WORD_SEED = zlib.crc32(b"w\x00")
_GRAM_SEED = zlib.crc32(b"c\x00")
_MAX_GRAM_WORD = 24

Features = tuple[tuple[int, ...], tuple[float, ...]]


def _words(text: str) -> list[bytes]:
    """The lower-cased ``\\w+`` words of ``text``, as UTF-8 bytes."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).split()
    # A word never contains whitespace, so joining and splitting keeps every word whole.
    return " ".join(_WORD.findall(text.lower())).encode("utf-8").split()


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


PROBE_TEXT = "offprompt dimension probe"
"""What :attr:`CheckedEmbedder.dimensions` embeds when asked before any result came."""


def _text_list(texts: Any) -> list[str]:
    if isinstance(texts, str):
        raise ValidationError("texts must be a list of str, got one str")
    if not isinstance(texts, Sequence):
        raise ValidationError(f"texts must be a list of str, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValidationError(f"texts[{index}] must be str, got {type(text).__name__}")
    return list(texts)


def _one_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"text must be str, got {type(text).__name__}")
    return text


class CheckedEmbedder(ABC):
    """Base of the embedders that wrap another library's model (LangChain, LlamaIndex).

    A subclass says how to call its model (:meth:`_embed_documents`,
    :meth:`_embed_query` and their async twins); this class checks every input and
    every result, so a misbehaving model cannot write bad vectors into a store:

    * one vector per text, each a sequence of numbers, none empty;
    * every value finite: NaN or infinity is a :class:`~offprompt.errors.ValidationError`
      naming the embedder, the method, the vector and the position;
    * :attr:`dimensions` given, or learnt once from the first result (under a lock, so
      threads racing on first use agree), and every later vector checked against it.
      Only reading :attr:`dimensions` before any result embeds one probe text; the
      async twins never spend a probe call.

    Args:
        dimensions: The vector size, if known.

    Raises:
        ValidationError: ``dimensions`` is not a positive int.
    """

    def __init__(self, *, dimensions: int | None = None) -> None:
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise ValidationError(f"dimensions must be a positive int, got {dimensions!r}")
        self._dimensions = dimensions
        self._lock = threading.Lock()

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The wrapped model's name, as errors quote it (e.g. its class name)."""

    @abstractmethod
    def _embed_documents(self, texts: list[str]) -> Any:
        """The model's vectors for ``texts`` (non-empty), unchecked."""

    @abstractmethod
    def _embed_query(self, text: str) -> Any:
        """The model's vector for one query, unchecked."""

    @abstractmethod
    async def _aembed_documents(self, texts: list[str]) -> Any:
        """Async twin of :meth:`_embed_documents`."""

    @abstractmethod
    async def _aembed_query(self, text: str) -> Any:
        """Async twin of :meth:`_embed_query`."""

    @property
    def dimensions(self) -> int:
        """The vector size (embeds one probe text the first time if no result came yet)."""
        if self._dimensions is None:
            self._check([self._embed_query(PROBE_TEXT)], 1, "embed_query")
        assert self._dimensions is not None
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One checked vector per text, in order."""
        batch = _text_list(texts)
        if not batch:
            return []
        return self._check(self._embed_documents(batch), len(batch), "embed_documents")

    def embed_query(self, text: str) -> list[float]:
        """The checked vector of a search query."""
        return self._check([self._embed_query(_one_text(text))], 1, "embed_query")[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (the model's own async method, no probe)."""
        batch = _text_list(texts)
        if not batch:
            return []
        vectors = await self._aembed_documents(batch)
        return self._check(vectors, len(batch), "aembed_documents")

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (the model's own async method, no probe)."""
        vector = await self._aembed_query(_one_text(text))
        return self._check([vector], 1, "aembed_query")[0]

    def _check(self, vectors: Any, expected: int, method: str) -> list[list[float]]:
        """``vectors`` as lists of floats, or a ``ValidationError`` saying what is wrong."""
        name = f"{type(self).__name__}({self.model_name}).{method}"
        if not isinstance(vectors, Sequence) or len(vectors) != expected:
            got = len(vectors) if isinstance(vectors, Sequence) else type(vectors).__name__
            raise ValidationError(f"{name} returned {got} vectors for {expected} texts")
        out: list[list[float]] = []
        for index, vector in enumerate(vectors):
            try:
                row = [float(x) for x in vector]
            except (TypeError, ValueError):
                raise ValidationError(
                    f"{name}: vector {index} is not a sequence of numbers"
                ) from None
            if not all(map(math.isfinite, row)):
                position = next(i for i, x in enumerate(row) if not math.isfinite(x))
                raise ValidationError(
                    f"{name}: vector {index} has {row[position]} at position {position}; "
                    "an embedding must be finite (NaN or infinity is refused)"
                )
            if self._dimensions is None:
                if not row:
                    raise ValidationError(f"{name}: vector {index} is empty")
                with self._lock:  # two threads may learn it at once; the first one wins
                    if self._dimensions is None:
                        self._dimensions = len(row)
            if len(row) != self._dimensions:
                raise ValidationError(
                    f"{name}: vector {index} has {len(row)} dimensions, expected {self._dimensions}"
                )
            out.append(row)
        return out


class HashingEmbedder:
    """Deterministic signed feature hashing of words and character 3-grams.

    Args:
        dimensions: Vector size (at least 8).
        ngram: Character n-gram length (0 disables n-grams).
        ngram_weight: Weight of each n-gram feature relative to the word feature.
        cache_size: Distinct words whose n-gram features are kept; the cache is
            cleared when full (features are recomputed identically).

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
        self._cache: dict[bytes, Features] = {}
        self._ngrams: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self._dimensions})"

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        return self._dimensions

    def _wants_grams(self, word: bytes) -> bool:
        # n-grams model word forms; ids and numbers (any digit) only get the word
        # feature, which also keeps ingest fast on logs full of unique hex ids.
        if word.isascii():
            return len(word) <= _MAX_GRAM_WORD and _ASCII_DIGIT.search(word) is None
        text = word.decode("utf-8")
        return len(text) <= _MAX_GRAM_WORD and _HAS_DIGIT.search(text) is None

    def _gram_features(self, word: bytes) -> Features:
        """Signed feature indices of the n-grams of ``<word>`` (sign folded into the weight)."""
        dim, n, weight = self._dimensions, self.ngram, self.ngram_weight
        padded = f"<{word.decode('utf-8')}>"
        grams = self._ngrams
        idx: list[int] = []
        weights: list[float] = []
        for i in range(max(1, len(padded) - n + 1)):
            gram = padded[i : i + n]
            feature = grams.get(gram)
            if feature is None:
                # n-grams repeat across words far more than words do: hash each once
                g = zlib.crc32(gram.encode("utf-8"), _GRAM_SEED)
                feature = grams[gram] = (g % dim, -weight if g & 0x80000000 else weight)
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
        bags: list[Counter[bytes]] = []
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValidationError(f"embed: item {row} must be str, got {type(text).__name__}")
            bags.append(Counter(_words(text)))
        sizes = np.fromiter(map(len, bags), dtype=np.int64, count=len(bags))
        pairs = int(sizes.sum())
        if not pairs:
            return np.zeros((len(texts), dim), dtype=np.float32)
        # One (text, word) pair per distinct word of a text, weighted by its count. A
        # word's id is its insertion order: the defaultdict trick runs the lookup in C.
        vocab: defaultdict[bytes, int] = defaultdict()
        vocab.default_factory = vocab.__len__
        pair_word = np.fromiter(
            map(vocab.__getitem__, chain.from_iterable(bags)), dtype=np.int64, count=pairs
        )
        pair_count = np.fromiter(
            chain.from_iterable(bag.values() for bag in bags), dtype=np.float64, count=pairs
        )
        pair_row = np.repeat(np.arange(len(texts), dtype=np.int64) * dim, sizes)
        words = list(vocab)
        hashes = np.fromiter(
            map(zlib.crc32, words, repeat(_WORD_SEED)), dtype=np.int64, count=len(words)
        )
        word_sign = np.where(hashes & 0x80000000, -1.0, 1.0)
        targets = [pair_row + (hashes % dim)[pair_word]]
        values = [word_sign[pair_word] * pair_count]
        if self.ngram:
            grams = self._gram_arrays(words)
            if grams is not None:
                lengths, offsets, flat_idx, flat_w = grams
                # Expand every pair into its word's n-grams (a vectorised ragged gather).
                pair_len = lengths[pair_word]
                total = int(pair_len.sum())
                starts = np.repeat(offsets[pair_word] - np.cumsum(pair_len) + pair_len, pair_len)
                gather = starts + np.arange(total, dtype=np.int64)
                targets.append(np.repeat(pair_row, pair_len) + flat_idx[gather])
                values.append(flat_w[gather] * np.repeat(pair_count, pair_len))
        summed = np.bincount(
            np.concatenate(targets), weights=np.concatenate(values), minlength=len(texts) * dim
        )
        matrix = summed.reshape(len(texts), dim).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix

    def _gram_arrays(
        self, words: list[bytes]
    ) -> (
        tuple[
            npt.NDArray[np.int64],
            npt.NDArray[np.int64],
            npt.NDArray[np.int64],
            npt.NDArray[np.float64],
        ]
        | None
    ):
        """The n-gram features of ``words`` as flat arrays: per word its count and offset.

        Returns ``(lengths, offsets, flat_idx, flat_weights)``, or None when no word has
        n-grams.
        """
        # Most distinct words of a tool output are ids holding a digit, which have no
        # n-grams: one C-level pass rules them out before any per-word Python work.
        no_digit = np.fromiter(
            map(operator.not_, map(_ASCII_DIGIT.search, words)), dtype=bool, count=len(words)
        )
        with_grams: list[tuple[int, Features]] = []
        cache = self._cache
        with self._lock:
            for i in np.flatnonzero(no_digit).tolist():
                word = words[i]
                features = cache.get(word)
                if features is None:
                    if not self._wants_grams(word):
                        continue
                    if len(cache) >= self.cache_size:
                        cache.clear()
                        self._ngrams.clear()
                    features = cache[word] = self._gram_features(word)
                with_grams.append((i, features))
        if not with_grams:
            return None
        lengths = np.zeros(len(words), dtype=np.int64)
        lengths[[i for i, _ in with_grams]] = [len(f[0]) for _, f in with_grams]
        offsets = np.cumsum(lengths) - lengths
        flat_idx = np.fromiter(chain.from_iterable(f[0] for _, f in with_grams), dtype=np.int64)
        flat_w = np.fromiter(chain.from_iterable(f[1] for _, f in with_grams), dtype=np.float64)
        return lengths, offsets, flat_idx, flat_w

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text."""
        result: list[list[float]] = self.embed_array(list(texts)).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``text`` (queries and documents are embedded the same way)."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_query, text)
