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
    expected |= {
        "ConversationMemory",
        "SummaryConversationMemory",
        "InMemoryStore",
        "SQLiteStore",
        "QdrantStore",
        "TaskMemory",
        "QdrantVectorStore",
        "HashingEmbedder",
        "AgentMemory",
        "LongTermMemory",
        "HybridMemory",
        "MemoryFragment",
        "Scope",
        "forget",
        "RetentionPolicy",
    }
    assert expected <= set(offprompt.__all__)
    for name in offprompt.__all__:
        assert getattr(offprompt, name) is not None


def test_unknown_attribute_is_an_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_thing"):
        offprompt.no_such_thing  # noqa: B018


def test_memories_load_lazily() -> None:
    """`import offprompt` does not import the memories; the first access does."""
    code = "import sys, offprompt; a = 'offprompt.task_memory' in sys.modules; offprompt.TaskMemory; print(a, 'offprompt.task_memory' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_core_never_imports_a_framework() -> None:
    code = (
        "import sys, offprompt, offprompt.artifacts, offprompt.messages, offprompt.tokens\n"
        "offprompt.default_tokenizer().count('x')\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', 'llama_index', 'langgraph')]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
