"""The public API: exactly these names, per package; importable without any optional extra.

Each public package's ``__all__`` is compared for equality with :data:`EXPORTS`, so a
name that leaks into ``__all__`` fails here as surely as one that goes missing. What a
package exports: the names DESIGN.md gives it, the types its public calls take or
return, its errors and documented constants. Helpers (``sigmoid``, ``parse_rating``,
``render_card``, ``validate_namespace``...) stay in the module that defines them and are
imported from there.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import offprompt

ROOT = Path(__file__).resolve().parents[1]

EXPORTS: dict[str, set[str]] = {
    "offprompt": {
        "ActionArtifact",
        "AgentMemory",
        "BaseArtifact",
        "BlobArtifact",
        "BooleanArtifact",
        "ConversationMemory",
        "ErrorArtifact",
        "GenericArtifact",
        "HashingEmbedder",
        "HybridMemory",
        "ImageArtifact",
        "InMemoryStore",
        "InfoArtifact",
        "JsonArtifact",
        "ListArtifact",
        "LongTermMemory",
        "MemoryFragment",
        "Message",
        "OffpromptError",
        "QdrantStore",
        "QdrantVectorStore",
        "RetentionPolicy",
        "SQLiteStore",
        "Scope",
        "SummaryConversationMemory",
        "TaskMemory",
        "TextArtifact",
        "TiktokenTokenizer",
        "Tokenizer",
        "ToolCall",
        "__version__",
        "default_tokenizer",
        "forget",
    },
    "offprompt.artifacts": {
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
        "TextArtifact",
    },
    "offprompt.cli": {
        "CLIError",
        "EXIT_FAILURE",
        "EXIT_OK",
        "EXIT_USAGE",
        "build_parser",
        "main",
    },
    "offprompt.conversation": {
        "ConversationMemory",
        "Run",
        "SUMMARY_STATE_KEY",
        "SummaryConversationMemory",
        "Window",
    },
    "offprompt.interop": {
        "ConversionReport",
        "Loss",
    },
    "offprompt.longterm": {
        "Clock",
        "DEFAULT_IMPORTANCE_PROMPT",
        "DEFAULT_INSIGHT_PROMPT",
        "DEFAULT_MEMORY_TEMPLATE",
        "DEFAULT_WRITE_MEMORY_TEMPLATE",
        "DiscardedMemoryFragments",
        "EnhancedShortTermMemory",
        "ExtractiveInsightExtractor",
        "HeuristicImportanceScorer",
        "HybridMemory",
        "ImportanceScorer",
        "InsightExtractor",
        "LongTermMemory",
        "MemoryFragment",
        "MemoryLike",
        "MemoryModelError",
        "PLAN_STATES",
        "PlanMemory",
        "PromptedImportanceScorer",
        "PromptedInsightExtractor",
        "Scope",
        "ScoredFragment",
        "SensoryMemory",
        "ShortTermMemory",
        "SubTask",
        "format_memories",
        "render_write_memory",
    },
    "offprompt.mcp": {
        "ACTIVITY",
        "CoreBinding",
        "DEFAULT_MAX_MESSAGE_BYTES",
        "DEFAULT_MIN_TOKENS",
        "DEFAULT_TIMEOUT",
        "Offloaded",
        "ProxyConfig",
        "REFERENCES_META_KEY",
        "ServeConfig",
        "UpstreamError",
        "main_proxy",
        "main_serve",
        "run_proxy",
        "run_serve",
    },
    "offprompt.render": {
        "NamespaceInfo",
        "OffpromptReference",
        "REFERENCE_PATTERN",
        "find_references",
        "render_html",
        "render_timeline",
    },
    "offprompt.steps": {
        "ActionStep",
        "AgentMemory",
        "AsyncStateStore",
        "CallbackRegistry",
        "FinalAnswerStep",
        "MemoryStep",
        "PLAN_FOLLOW_UP",
        "PlanningStep",
        "RETRY_GUIDANCE",
        "StateStore",
        "StepError",
        "StepList",
        "SystemPromptStep",
        "TaskStep",
        "Timing",
        "TokenUsage",
        "ToolCall",
    },
    "offprompt.stores": {
        "BaseStore",
        "ConversationStore",
        "InMemoryStore",
        "IndexEntry",
        "MAX_SESSION_ID_LENGTH",
        "QdrantStore",
        "SQLiteStore",
        "SessionInfo",
        "SessionVersion",
        "StoredMessage",
        "default_path",
        "default_store",
        "open_store",
        "release_store",
        "validate_session_id",
    },
    "offprompt.task_memory": {
        "ActionSubtaskMetaEntry",
        "ArtifactStorage",
        "BlobArtifactStorage",
        "BlobStore",
        "FileBlobStore",
        "GrepMatch",
        "GrepResult",
        "InMemoryBlobStore",
        "MEMORY_TOOL_NAMES",
        "MemoryToolSpec",
        "MetaMemory",
        "OffloadPolicy",
        "Offloaded",
        "OutputStats",
        "REFERENCE_TEMPLATE",
        "StorageMismatchError",
        "StoredReference",
        "TaskMemory",
        "TextArtifactStorage",
        "memory_tool_specs",
    },
    "offprompt.vectors": {
        "Analyzer",
        "BM25SparseEncoder",
        "BM25WordEncoder",
        "CheckedEmbedder",
        "Embedder",
        "HashingEmbedder",
        "Hit",
        "QdrantVectorStore",
        "RESERVED_KEYS",
        "Range",
        "SentenceTransformerEmbedder",
        "SparseVector",
        "VectorRecord",
        "point_id",
    },
    "offprompt_langchain": {
        "LLMImportanceScorer",
        "LLMInsightExtractor",
        "LangChainEmbedder",
        "LangChainSummarizer",
        "MemoryModelError",
        "OffpromptBackend",
        "OffpromptBlobStore",
        "OffpromptChatMessageHistory",
        "OffpromptEmbeddings",
        "OffpromptMiddleware",
        "OffpromptSaver",
        "OffpromptStore",
        "OffpromptTool",
        "SummarizationError",
        "TaskMemoryRetriever",
        "from_langchain",
        "message_from_langchain",
        "message_to_langchain",
        "offprompt_tool",
        "task_memory_tools",
        "to_langchain",
    },
    "offprompt_llamaindex": {
        "LLMImportanceScorer",
        "LLMInsightExtractor",
        "LlamaIndexEmbedder",
        "LlamaIndexSummarizer",
        "LlamaIndexTracer",
        "MemoryModelError",
        "OffpromptChatStore",
        "OffpromptEmbedding",
        "OffpromptMemory",
        "OffpromptMemoryBlock",
        "OffpromptTool",
        "OffpromptTraceEvent",
        "SummarizationError",
        "TaskMemoryToolSpec",
        "from_llamaindex",
        "message_from_llamaindex",
        "message_to_llamaindex",
        "offprompt_tool",
        "to_llamaindex",
    },
    "offprompt_demo": {
        "DemoResult",
        "SESSION",
        "TOOL",
        "main",
        "run",
    },
    "offprompt_anthropic": {
        "AsyncOffpromptMemoryTool",
        "MEMORY_SESSION",
        "MemoryFiles",
        "OffpromptMemoryTool",
        "ROOT",
    },
    "offprompt_openai_agents": {
        "OFFLOAD_META",
        "OffpromptSession",
        "ScopeResolver",
        "memory_tools",
    },
}

#: Names a package imports for its own code without exporting them (``offprompt.cli``'s
#: ``main`` runs on these); anything else of ours in a package's namespace is a leak.
INTERNAL: dict[str, set[str]] = {
    "offprompt.cli": {"Context", "OffpromptError", "UsageError", "default_home", "one_line"},
}


def _packages() -> set[str]:
    found = set()
    for src in [ROOT / "src", *sorted((ROOT / "integrations").glob("*/src"))]:
        for init in src.rglob("__init__.py"):
            parts = init.parent.relative_to(src).parts
            if not any(part.startswith("_") for part in parts):
                found.add(".".join(parts))
    return found


#: Adapters whose framework lives in a virtualenv of its own (its pins conflict with the
#: main one's), so this one cannot import them: their own tests check their exports.
OWN_VENV = {
    "offprompt_pydantic_ai",  # make test-pydantic_ai: integrations/pydantic_ai/tests/test_imports.py
}


def test_every_public_package_is_listed() -> None:
    assert _packages() - OWN_VENV == set(EXPORTS)


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_exports_are_exact(name: str) -> None:
    package = importlib.import_module(name)
    exported = set(package.__all__)
    assert len(package.__all__) == len(exported), f"{name}.__all__ repeats a name"
    assert exported - EXPORTS[name] == set(), f"{name} exports names it should not"
    assert EXPORTS[name] - exported == set(), f"{name} does not export names it should"
    for attribute in package.__all__:
        assert getattr(package, attribute) is not None


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_no_unexported_name_of_ours_in_a_package(name: str) -> None:
    """A class or function of this project imported into a package is in its ``__all__``."""
    package = importlib.import_module(name)
    distribution = name.split(".")[0]
    leaked = {
        attribute
        for attribute, value in vars(package).items()
        if not attribute.startswith("_")
        and not isinstance(value, types.ModuleType)
        and (inspect.isclass(value) or inspect.isfunction(value))
        and (getattr(value, "__module__", "") or "").split(".")[0] == distribution
        and attribute not in package.__all__
    }
    assert leaked == INTERNAL.get(name, set())


def test_star_import_gives_exactly_the_exports() -> None:
    """``from package import *`` works and binds ``__all__``, in a fresh interpreter."""
    code = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    space = {}\n"
        "    exec(f'from {name} import *', space)\n"
        "    out[name] = sorted(k for k in space if k != '__builtins__')\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *sorted(EXPORTS)], check=True, capture_output=True, text=True
    )
    assert {k: set(v) for k, v in json.loads(done.stdout).items()} == EXPORTS


def test_validate_namespace_has_one_home() -> None:
    """The name rules live in the leaf ``offprompt.names``; no package re-exports them."""
    from offprompt.names import validate_namespace

    assert validate_namespace("ok") == "ok"
    for name in EXPORTS:
        assert not hasattr(importlib.import_module(name), "validate_namespace"), name
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("offprompt.vectors.names")


def test_design_names_are_exported_where_design_puts_them() -> None:
    from offprompt import longterm, stores, task_memory

    assert {"StoredReference", "OffloadPolicy", "memory_tool_specs"} <= set(task_memory.__all__)
    assert {"validate_namespace", "render_card"}.isdisjoint(task_memory.__all__)
    assert {"sigmoid", "cosine_similarity", "parse_rating"}.isdisjoint(longterm.__all__)
    assert "shared_holders" not in stores.__all__


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
