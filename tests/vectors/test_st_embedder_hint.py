"""Without the ``embeddings`` extra, ``SentenceTransformerEmbedder`` names what to install.

The model itself is tested in the benchmark environment (``make test-embeddings``:
``tests_embeddings/``), since sentence-transformers pulls in PyTorch.
"""

from __future__ import annotations

import importlib.util

import pytest

from offprompt.errors import OffpromptError, ValidationError
from offprompt.vectors import SentenceTransformerEmbedder


def test_missing_extra_names_it() -> None:
    assert importlib.util.find_spec("sentence_transformers") is None  # make test's env
    with pytest.raises(OffpromptError, match=r"pip install 'offprompt\[embeddings\]'"):
        SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValidationError, match="batch_size"):
        SentenceTransformerEmbedder(batch_size=0)
    with pytest.raises(ValidationError, match="SentenceTransformer"):
        SentenceTransformerEmbedder(object())


def test_import_offprompt_does_not_load_torch() -> None:
    import subprocess
    import sys

    code = "import offprompt.vectors, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
