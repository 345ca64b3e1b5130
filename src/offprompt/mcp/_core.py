"""The one module of ``offprompt.mcp`` that touches the off-prompt core.

The proxy and the memory server only call what is here: :class:`CoreBinding` decides
what goes off-prompt and stores it, and :meth:`CoreBinding.memory_tools` gives the
memory tools as framework-neutral specs (name, description, JSON-schema parameters, an
async ``arun`` returning bounded text). Everything else in the package speaks MCP.

Today this binds to ``TaskMemory.process_output`` / ``query`` / ``read`` /
``summarize`` (the core API on ``main``). When the core's one offload policy
(``offprompt.task_memory.offload.OffloadPolicy``) and the memory tool specs
(``offprompt.task_memory.tools.memory_tool_specs``) are merged, this module switches to
them and nothing else in the package changes.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ErrorArtifact,
    ImageArtifact,
    InfoArtifact,
    TextArtifact,
)
from offprompt.errors import NotFoundError, OffpromptError, ValidationError
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory

__all__ = [
    "ACTIVITY",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MIN_TOKENS",
    "CoreBinding",
    "FunctionTool",
    "MemoryTool",
    "Offloaded",
    "open_task_memory",
]

ACTIVITY = "call"
"""The activity in reference sentences (``Output of "{tool}.call" was stored ...``)."""

DEFAULT_MIN_TOKENS = 500
"""Text results with fewer tokens pass through unchanged (the library's default)."""

DEFAULT_MAX_OUTPUT_TOKENS = 1000
"""Bound, in tokens, of every memory-tool output, errors included."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# A token is rarely more than this many characters: longer text is not counted exactly.
_CHARS_PER_TOKEN_MAX = 32
# base64 carries 6 bits a character; a binary block is "large" when its base64 text
# would cost about min_tokens tokens (~4 characters a token).
_B64_CHARS_PER_TOKEN = 4


class MemoryTool(Protocol):
    """A memory tool as the core defines it: what MCP lists and calls."""

    name: str
    description: str
    parameters: dict[str, Any]

    async def arun(self, **arguments: Any) -> str: ...


@dataclass(frozen=True)
class Offloaded:
    """What the model sees instead of an output, and where the output went.

    Attributes:
        text: The text for the model: the output itself when it passed through, else the
            reference sentence and its card.
        reference: ``None`` when the output passed through; else the stored reference
            (``memory_name``, ``namespace``, ``tool``, ``activity``, ``kind``, ``bytes``,
            ``tokens``, ``is_error``, ...).
    """

    text: str
    reference: dict[str, Any] | None = None


class CoreBinding:
    """The off-prompt policy and memory tools of one task memory, for MCP.

    Args:
        task_memory: Where outputs go (its scope bounds what the tools reach).
        min_tokens: Text with fewer tokens passes through (``None``: the default).
        sensitive: Tools whose every result is stored, whatever its size.
        max_output_tokens: Bound of every memory-tool output.
    """

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        min_tokens: int | None = None,
        sensitive: Sequence[str] = (),
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        if min_tokens is not None and (isinstance(min_tokens, bool) or min_tokens < 0):
            raise ValidationError(f"min_tokens must be 0 or more, got {min_tokens!r}")
        if max_output_tokens < 16:
            raise ValidationError(f"max_output_tokens must be 16 or more, got {max_output_tokens}")
        self.task_memory = task_memory
        self.min_tokens = DEFAULT_MIN_TOKENS if min_tokens is None else min_tokens
        self.sensitive = frozenset(sensitive)
        self.max_output_tokens = max_output_tokens
        self._tokenizer = task_memory.tokenizer

    # ----------------------------------------------------------------- the policy

    def namespace_for(self, tool_name: str) -> str:
        """A fresh namespace named after the tool, valid in every storage."""
        stem = _UNSAFE.sub("_", tool_name or "tool").replace("..", "_").strip("._")[:64]
        return f"{stem or 'tool'}-{uuid.uuid4().hex[:16]}"

    def is_large_text(self, tool_name: str, text: str) -> bool:
        """Whether a text result goes off-prompt (size, or a sensitive tool)."""
        if tool_name in self.sensitive or self.min_tokens == 0:
            return bool(text.strip())
        if len(text) >= self.min_tokens * _CHARS_PER_TOKEN_MAX:
            return True
        return bool(self._tokenizer.count(text) >= self.min_tokens)

    def is_large_blob(self, tool_name: str, base64_chars: int) -> bool:
        """Whether a binary block (``base64_chars`` long) goes off-prompt."""
        if tool_name in self.sensitive:
            return base64_chars > 0
        return base64_chars >= self.min_tokens * _B64_CHARS_PER_TOKEN

    def offload_text(self, tool_name: str, text: str, *, is_error: bool = False) -> Offloaded:
        """Store a text result if it is large (or the tool is sensitive).

        A stored error shows its first line and its size before the reference, so the
        model knows what failed without reading it.

        Raises:
            OffpromptError: The output could not be stored (nothing is half-visible).
        """
        if not self.is_large_text(tool_name, text):
            return Offloaded(text)
        artifact = TextArtifact(value=text, name=self.namespace_for(tool_name))
        reference = self._store(tool_name, artifact, kind="text", is_error=is_error)
        shown = reference.pop("_text")
        if is_error:
            first = text.lstrip().split("\n", 1)[0][:200]
            shown = (
                f"The tool failed: {first}\n(the whole error, {reference['bytes']:,} bytes, "
                f"was stored off-prompt) {shown}"
            )
        return Offloaded(shown, reference)

    def offload_blob(self, tool_name: str, data: bytes, mime_type: str) -> Offloaded:
        """Store binary content (an image, audio, a file) by reference, with a card.

        Raises:
            OffpromptError: The bytes could not be stored.
        """
        namespace = self.namespace_for(tool_name)
        artifact: BlobArtifact
        kind = "binary"
        details = ""
        if mime_type.startswith("image/"):
            try:
                artifact = ImageArtifact(value=data, mime_type=mime_type, name=namespace)
                kind = "image"
                details = f", {artifact.width}x{artifact.height} pixels"
            except ValidationError:
                artifact = BlobArtifact(value=data, mime_type=mime_type, name=namespace)
                details = ", not a readable image"
        else:
            artifact = BlobArtifact(value=data, mime_type=mime_type, name=namespace)
        reference = self._store(tool_name, artifact, kind=kind, is_error=False)
        reference["mime_type"] = mime_type
        text = (
            f"{reference.pop('_text')}\n{kind} ({mime_type}{details}), {len(data):,} bytes, "
            "kept in the blob store: not shown here."
        )
        return Offloaded(text, reference)

    def _store(
        self, tool_name: str, artifact: BaseArtifact, *, kind: str, is_error: bool
    ) -> dict[str, Any]:
        result = self.task_memory.process_output(
            tool_name, ACTIVITY, artifact, sensitive=tool_name in self.sensitive, min_tokens=0
        )
        if isinstance(result, ErrorArtifact):
            raise OffpromptError(f"the output of {tool_name} could not be stored: {result.value}")
        if not isinstance(result, InfoArtifact) or "artifact_namespace" not in result.meta:
            raise OffpromptError(f"the output of {tool_name} was not stored: {result.to_text()}")
        namespace = result.meta["artifact_namespace"]
        meta = self.task_memory.namespace_metadata(namespace)
        return {
            "_text": result.value,
            "memory_name": self.task_memory.name,
            "namespace": namespace,
            "tool": tool_name,
            "activity": ACTIVITY,
            "kind": kind,
            "bytes": int(meta.get("bytes", 0)),
            "tokens": int(meta.get("tokens", 0)),
            "is_error": is_error,
        }

    async def aoffload_text(
        self, tool_name: str, text: str, *, is_error: bool = False
    ) -> Offloaded:
        """Async twin of :meth:`offload_text` (storage runs in a worker thread)."""
        if not self.is_large_text(tool_name, text):
            return Offloaded(text)
        return await asyncio.to_thread(self.offload_text, tool_name, text, is_error=is_error)

    async def aoffload_blob(self, tool_name: str, data: bytes, mime_type: str) -> Offloaded:
        """Async twin of :meth:`offload_blob`."""
        return await asyncio.to_thread(self.offload_blob, tool_name, data, mime_type)

    # ------------------------------------------------------------ the memory tools

    def memory_tools(self) -> list[MemoryTool]:
        """The memory tools over this task memory, each output bounded."""
        reader = _Reader(self.task_memory, self.max_output_tokens)
        target = {
            "memory_name": {
                "type": "string",
                "description": 'The memory_name quoted in the reference, e.g. "TaskMemory".',
            },
            "artifact_namespace": {
                "type": "string",
                "description": "The artifact_namespace quoted in the reference, exactly.",
            },
        }
        where = (
            "Use the memory_name and artifact_namespace quoted in a reference like "
            '\'Output of "tool.call" was stored in memory with memory_name "..." and '
            'artifact_namespace "..."\'.'
        )

        def schema(extra: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {**target, **extra},
                "required": ["memory_name", "artifact_namespace", *required],
                "additionalProperties": False,
            }

        return [
            FunctionTool(
                "query_memory",
                "Search a tool output that was stored in memory instead of being shown, and "
                f"return the passages that best answer `query`. {where}",
                schema(
                    {"query": {"type": "string", "description": "What to look for."}}, ["query"]
                ),
                reader.query,
            ),
            FunctionTool(
                "grep_memory",
                "Find the lines of a stored tool output that contain `pattern` (exact text, or "
                "a regular expression with regex=true), with their line numbers and the total "
                f"count. Best for ids, error codes and exact strings. {where}",
                schema(
                    {
                        "pattern": {"type": "string", "description": "Text or regex to find."},
                        "regex": {"type": "boolean", "default": False},
                        "ignore_case": {"type": "boolean", "default": False},
                        "max_matches": {"type": "integer", "minimum": 1, "default": 50},
                    },
                    ["pattern"],
                ),
                reader.grep,
            ),
            FunctionTool(
                "read_memory",
                "Read one page of a tool output that was stored in memory, in its original "
                f"order; pages start at 1. {where}",
                schema({"page": {"type": "integer", "minimum": 1, "default": 1}}),
                reader.read,
            ),
            FunctionTool(
                "summarize_memory",
                f"Summarize a tool output that was stored in memory. {where}",
                schema({}),
                reader.summarize,
            ),
        ]


@dataclass
class FunctionTool:
    """A :class:`MemoryTool` made of a blocking function (run in a worker thread)."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., str] = field(repr=False)

    def run(self, **arguments: Any) -> str:
        return self.function(**arguments)

    async def arun(self, **arguments: Any) -> str:
        return await asyncio.to_thread(self.function, **arguments)


class _Reader:
    """Resolves a reference to this memory and bounds what goes back to the model."""

    def __init__(self, memory: TaskMemory, max_output_tokens: int) -> None:
        self.memory = memory
        self.max_output_tokens = max_output_tokens
        self.tokenizer = memory.tokenizer

    def bound(self, text: str, hint: str = "") -> str:
        if len(text) < self.max_output_tokens:  # fewer characters than tokens allowed
            return text
        tokens = self.tokenizer.encode(text)
        if len(tokens) <= self.max_output_tokens:
            return text
        kept = self.tokenizer.decode(tokens[: self.max_output_tokens])
        return f"{kept}\n[... truncated: {len(tokens) - self.max_output_tokens} more tokens{hint}]"

    def _resolve(self, memory_name: str, namespace: str) -> str | None:
        """An error text for the model, or ``None`` when the reference is valid here."""
        if memory_name != self.memory.name:
            return (
                f'Unknown memory_name "{memory_name[:100]}". Use the memory_name quoted in the '
                f'reference ("{self.memory.name}").'
            )
        try:
            self.memory.namespace_metadata(namespace)
        except OffpromptError:
            return (
                f'Unknown artifact_namespace "{namespace[:200]}" in memory "{memory_name}". '
                "Use the artifact_namespace quoted in the reference, exactly."
            )
        return None

    def _guarded(self, memory_name: str, namespace: str, body: Callable[[], str]) -> str:
        problem = self._resolve(memory_name, namespace)
        if problem is not None:
            return self.bound(problem)
        try:
            return self.bound(body())
        except (NotFoundError, ValidationError) as exc:
            return self.bound(f"Error: {exc}")

    def query(self, memory_name: str, artifact_namespace: str, query: str) -> str:
        def body() -> str:
            hits = list(self.memory.query(artifact_namespace, query, top_n=4).value)
            if not hits:
                return f'No passage of artifact_namespace "{artifact_namespace}" matches the query.'
            parts = [f'{len(hits)} passage(s) from "{artifact_namespace}", best first:']
            parts += [
                f"[{i}] (page {hit.meta.get('page')})\n{hit.to_text()}"
                for i, hit in enumerate(hits, 1)
            ]
            return "\n\n".join(parts)

        return self._guarded(memory_name, artifact_namespace, body)

    def grep(
        self,
        memory_name: str,
        artifact_namespace: str,
        pattern: str,
        regex: bool = False,
        ignore_case: bool = False,
        max_matches: int = 50,
    ) -> str:
        def body() -> str:
            flags = re.IGNORECASE if ignore_case else 0
            try:
                compiled = re.compile(pattern if regex else re.escape(pattern), flags)
            except re.error as exc:
                raise ValidationError(f"bad regex {pattern[:100]!r}: {exc}") from None
            text = "".join(
                item.to_text()
                for item in self.memory.load_artifacts(artifact_namespace).value
                if isinstance(item, TextArtifact)
            )
            found: list[str] = []
            total = 0
            for number, line in enumerate(text.splitlines(), 1):
                if compiled.search(line):
                    total += 1
                    if len(found) < max_matches:
                        found.append(f"{number}: {line[:500]}")
            if not total:
                return f'No line of "{artifact_namespace}" matches {pattern[:100]!r}.'
            more = f" (first {len(found)} shown)" if total > len(found) else ""
            return f"{total} matching line(s){more}:\n" + "\n".join(found)

        return self._guarded(memory_name, artifact_namespace, body)

    def read(self, memory_name: str, artifact_namespace: str, page: int = 1) -> str:
        def body() -> str:
            found = self.memory.read(artifact_namespace, page, page_tokens=self.max_output_tokens)
            pages = found.meta.get("pages", 1)
            return f'Page {page} of {pages} of "{artifact_namespace}":\n{found.value}'

        return self._guarded(memory_name, artifact_namespace, body)

    def summarize(self, memory_name: str, artifact_namespace: str) -> str:
        def body() -> str:
            return self.memory.summarize(artifact_namespace, max_tokens=300).value

        return self._guarded(memory_name, artifact_namespace, body)


def open_task_memory(home: Path, scope: Scope | None) -> TaskMemory:
    """The task memory of an offprompt home (``HOME/qdrant``), in ``scope``'s partition.

    Raises:
        OffpromptError: The home is not a directory, or its memory cannot be opened
            (e.g. another process holds the embedded engine's lock).
    """
    if home.exists() and not home.is_dir():
        raise OffpromptError(f"home {home} is not a directory")
    home.mkdir(parents=True, exist_ok=True)
    try:
        return TaskMemory(path=home / "qdrant", scope=scope)
    except OffpromptError:
        raise
    except Exception as exc:  # the embedded engine says "locked" in its own words
        raise OffpromptError(f"cannot open the task memory in {home}: {exc}") from None
