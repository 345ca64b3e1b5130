"""Fixtures the ported LangGraph store suites share: the class under test and its tools.

``CharacterEmbeddings`` plays the part of the upstream suites' test embeddings (the
same idea: character frequencies projected on seeded Gaussian vectors, normalised),
rewritten here because the upstream helper ships only in LangGraph's test tree.
``FakeClock`` stands in for ``time.sleep``: the store under test takes a ``clock``,
so the TTL tests advance time instead of waiting for it.
"""

from __future__ import annotations

import math
import random
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import TTLConfig
from offprompt_langchain.bridges import LangChainEmbedder
from offprompt_langchain.store import OffpromptStore

from offprompt.vectors import QdrantVectorStore


class CharacterEmbeddings(Embeddings):
    """Deterministic embeddings from character frequencies (a test fake, not a model)."""

    def __init__(self, dims: int = 50, seed: int = 42) -> None:
        self.dims = dims
        self._rng = random.Random(seed)
        self._projections: dict[str, list[float]] = {}

    def _projection(self, char: str) -> list[float]:
        if char not in self._projections:
            scale = 1 / math.sqrt(self.dims)
            self._projections[char] = [self._rng.gauss(0, scale) for _ in range(self.dims)]
        return self._projections[char]

    def _embed(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        vector = [0.0] * self.dims
        if not total:
            return vector
        for char, count in counts.items():
            for i, p in enumerate(self._projection(char)):
                vector[i] += count / total * p
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CharacterEmbeddings) and other.dims == self.dims

    def __hash__(self) -> int:
        return hash(self.dims)


class FakeClock:
    """POSIX seconds that move a millisecond per reading and as far as :meth:`sleep` says."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 0.001
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class StoreFactory:
    """Makes the class under test: each store its own namespace of one shared Qdrant.

    Opening an embedded Qdrant costs seconds; namespaces partition it completely, so
    every store still starts empty and sees only its own items.
    """

    def __init__(self, vector_store: QdrantVectorStore) -> None:
        self.vector_store = vector_store
        self.made: list[OffpromptStore] = []

    def __call__(
        self,
        *,
        fields: list[str] | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] | None = None,
    ) -> OffpromptStore:
        store = OffpromptStore(
            self.vector_store,
            namespace=f"t{uuid.uuid4().hex}",
            fields=fields,
            ttl=ttl,
            clock=clock or FakeClock(),
        )
        self.made.append(store)
        return store

    def close(self) -> None:
        for store in self.made:
            store.close()
        self.made.clear()


def character_vector_store(dims: int = 500) -> QdrantVectorStore:
    return QdrantVectorStore(embedder=LangChainEmbedder(CharacterEmbeddings(dims=dims)))
