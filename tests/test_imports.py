"""The public API: names users rely on, importable without any optional extra."""

from __future__ import annotations

import subprocess
import sys

import offprompt


def test_public_names() -> None:
    expected = {
        "ActionArtifact",
        "BaseArtifact",
        "BlobArtifact",
        "BooleanArtifact",
        "ErrorArtifact",
        "GenericArtifact",
        "ImageArtifact",
        "InfoArtifact",
        "JsonArtifact",
        "ListArtifact",
        "Message",
        "OffpromptError",
        "TextArtifact",
        "TiktokenTokenizer",
        "ToolCall",
        "Tokenizer",
    }
    assert expected <= set(offprompt.__all__)
    for name in offprompt.__all__:
        assert getattr(offprompt, name) is not None


def test_core_never_imports_a_framework() -> None:
    code = (
        "import sys, offprompt, offprompt.artifacts, offprompt.messages, offprompt.tokens\n"
        "offprompt.default_tokenizer().count('x')\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', 'llama_index', 'langgraph')]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
