"""The one off-prompt policy: what goes into task memory and what the model sees instead.

Every adapter (LangChain's ``offprompt_tool`` and middleware, LlamaIndex's
``offprompt_tool``, the MCP server) turns its framework's tool result into text, calls
:meth:`OffloadPolicy.offload`, and translates the :class:`Offloaded` answer back into its
own types. So the activity name (:data:`ACTIVITY`), the namespace rule
(:meth:`OffloadPolicy.namespace_for`), the reference text and the
:class:`StoredReference` schema are the same everywhere.

Rules:

* An output of at least ``min_tokens`` tokens, or any non-empty output when
  ``sensitive``, is stored; the model gets the reference (the sentence of
  :data:`~offprompt.task_memory.REFERENCE_TEMPLATE`, then the card, when the memory has
  ``preview=True``). Smaller outputs pass through unchanged (``reference=None``).
* An error goes through the same rule: a large (or sensitive) error is stored and the
  model sees the error's first line (quoted as data, at most :data:`ERROR_LINE_CHARS`
  characters), its size, then the bare reference sentence (no card). A sensitive
  tool's error shows no line at all: its kind, its size and the reference only. A short
  error of a tool that is not sensitive passes through.
* An output that cannot be stored raises :class:`OffloadError`, whose message never
  holds any of the output.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from offprompt.artifacts import ErrorArtifact, InfoArtifact, TextArtifact
from offprompt.errors import OffloadError, ValidationError
from offprompt.tokens import TokenCodec

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory

__all__ = [
    "ACTIVITY",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_PAGE_TOKENS",
    "ERROR_LINE_CHARS",
    "OffloadError",
    "OffloadPolicy",
    "Offloaded",
    "StoredReference",
    "bound_text",
]

ACTIVITY = "call"
"""The activity named in every reference: ``Output of "{tool}.call" was stored ...``."""

DEFAULT_MIN_TOKENS = 500
"""The threshold LangChain's ``offprompt_tool`` and the middleware default to."""

DEFAULT_MAX_OUTPUT_TOKENS = 1000
"""Bound of what one memory tool call or one offloaded reference may send the model."""

PAGE_HEADER_TOKENS = 64
"""Room ``read_memory`` keeps for its ``Page i of n of artifact_namespace "..."`` line."""

DEFAULT_PAGE_TOKENS = DEFAULT_MAX_OUTPUT_TOKENS - PAGE_HEADER_TOKENS
"""The one page unit: ``TaskMemory(page_tokens=)``'s default. :meth:`TaskMemory.read`,
``read_memory`` and the card's "N pages of T tokens" all count pages of the memory's
``page_tokens``; with this default one page and its header fit in
:data:`DEFAULT_MAX_OUTPUT_TOKENS`."""

ERROR_LINE_CHARS = 200
"""Characters of a stored error's first line that the model sees."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_NON_SPACE = re.compile(r"\S")
_STEM_CHARS = 64
_CALL_ID_CHARS = 32


class StoredReference(BaseModel):
    """Where a tool output went: the one schema of ``ToolMessage.artifact`` (LangChain)
    and of ``ToolOutput.raw_output`` (LlamaIndex), as :meth:`to_artifact` dicts.

    Attributes:
        offprompt: Always ``"stored"`` (tells a reference from other artifacts).
        memory_name: The task memory's name, as quoted in the reference.
        namespace: The namespace; serialised as ``artifact_namespace`` (the name the
            reference sentence and the memory tools use). Both names are accepted.
        tool: The tool whose output this is.
        activity: :data:`ACTIVITY`.
        kind: ``"text"``, ``"json"``, ``"ndjson"``, ``"csv"``, ``"binary"`` or ``"image"``.
        bytes: Size of the stored text, UTF-8.
        lines: Its line count.
        tokens: Its token count (o200k), or an estimate when ``tokens_estimated``.
        tokens_estimated: ``tokens`` is an estimate (indexing was still running).
        is_error: The output was the tool's error.
        sensitive: Stored because the tool is sensitive, whatever its size.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    offprompt: Literal["stored"] = "stored"
    memory_name: str
    namespace: str = Field(
        validation_alias=AliasChoices("artifact_namespace", "namespace"),
        serialization_alias="artifact_namespace",
    )
    tool: str
    activity: str = ACTIVITY
    kind: str = "text"
    bytes: int = 0
    lines: int = 0
    tokens: int = 0
    tokens_estimated: bool = False
    is_error: bool = False
    sensitive: bool = False

    def to_artifact(self) -> dict[str, Any]:
        """The JSON-ready dict that rides in tool messages (``artifact_namespace`` key)."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_artifact(cls, artifact: Any) -> StoredReference | None:
        """The reference an artifact dict (or model) holds, or ``None`` if it holds none."""
        if isinstance(artifact, StoredReference):
            return artifact
        if isinstance(artifact, dict) and artifact.get("offprompt") == "stored":
            return cls.model_validate(artifact)
        return None


@dataclass(frozen=True)
class Offloaded:
    """The answer of :meth:`OffloadPolicy.offload`.

    Attributes:
        text: What the model sees: the reference, or the output itself.
        reference: Where the output was stored; ``None`` when it passed through.
    """

    text: str
    reference: StoredReference | None


def bound_text(text: str, max_tokens: int, tokenizer: TokenCodec, hint: str = "") -> str:
    """``text`` cut to at most ``max_tokens`` tokens, the cut said in a last line.

    ``tokenizer`` has ``encode``, ``decode`` and ``count`` (a ``TiktokenTokenizer``).
    The note is counted in the bound (a shorter note when the bound is tiny), and the
    result is re-counted, so it never exceeds ``max_tokens``.
    """
    tokens = tokenizer.encode(text)
    if len(tokens) <= max_tokens:
        return text
    for note in (f"\n[... cut: {len(tokens):,} tokens in all{hint}]", "\n[... cut]", ""):
        room = max_tokens - tokenizer.count(note)
        if note and room < max_tokens // 2:
            continue  # the note would crowd out the text
        keep = room
        while keep >= 0:
            # A cut inside a character decodes to a replacement that may count more.
            out = str(tokenizer.decode(tokens[:keep])).rstrip("\ufffd") + note
            over = tokenizer.count(out) - max_tokens
            if over <= 0:
                return out
            keep -= over
    return ""


def _check_int(label: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{label} must be an int >= {low}, got {value!r}")
    return value


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _size(reference: StoredReference) -> str:
    tokens = f"~{reference.tokens:,}" if reference.tokens_estimated else f"{reference.tokens:,}"
    lines = "1 line" if reference.lines == 1 else f"{reference.lines:,} lines"
    return f"{reference.bytes:,} bytes, {lines}, {tokens} tokens"


class OffloadPolicy:
    """Decides what of a tool's output goes off-prompt, and says what the model sees.

    Args:
        task_memory: Where outputs are stored.
        min_tokens: Outputs (and errors) with fewer tokens pass through;
            ``task_memory.min_tokens`` when ``None``; 0 stores every non-empty output.
        sensitive: Store every non-empty output and error, whatever its size.
        max_output_tokens: Bound of the text :meth:`offload` returns for a stored output.

    Raises:
        ValidationError: ``task_memory`` is not a ``TaskMemory``, or a bad bound.

    Example:
        >>> from offprompt.task_memory import TaskMemory
        >>> policy = OffloadPolicy(TaskMemory(), min_tokens=50)
        >>> policy.offload("fetch", "ok").reference is None
        True
        >>> out = policy.offload("fetch", "disk full on node 7\\n" * 100)
        >>> out.text.startswith('Output of "fetch.call" was stored in memory'), out.reference.lines
        (True, 100)
    """

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        min_tokens: int | None = None,
        sensitive: bool = False,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        from offprompt.task_memory.task_memory import TaskMemory

        if not isinstance(task_memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
            )
        self.task_memory = task_memory
        threshold = task_memory.min_tokens if min_tokens is None else min_tokens
        self.min_tokens = _check_int("min_tokens", threshold, 0)
        self.sensitive = bool(sensitive)
        self.max_output_tokens = _check_int("max_output_tokens", max_output_tokens, 16)

    def __repr__(self) -> str:
        return (
            f"OffloadPolicy({self.task_memory!r}, min_tokens={self.min_tokens}, "
            f"sensitive={self.sensitive})"
        )

    @staticmethod
    def namespace_for(tool_name: str, call_id: str | None = None) -> str:
        """A fresh namespace for one output of ``tool_name``, safe for every storage.

        ``{tool}-{call id}-{random}`` (or ``{tool}-{random}`` without a call id): letters,
        digits, ``_``, ``.`` and ``-`` only, at most 64 characters of tool name and 32 of
        call id, and a random part so that reused call ids never share a namespace.
        """
        stem = _UNSAFE.sub("_", tool_name or "tool").replace("..", "_").strip("._")
        stem = stem[:_STEM_CHARS] or "tool"
        if call_id:
            call = _UNSAFE.sub("_", str(call_id)).replace("..", "_").strip("._")
            if call:
                return f"{stem}-{call[:_CALL_ID_CHARS]}-{uuid.uuid4().hex[:12]}"
        return f"{stem}-{uuid.uuid4().hex[:16]}"

    def offload(
        self,
        tool_name: str,
        output: str,
        *,
        call_id: str | None = None,
        is_error: bool = False,
        sensitive: bool | None = None,
    ) -> Offloaded:
        """Store ``output`` if it is large (or sensitive); say what the model sees.

        Args:
            tool_name: The tool that produced it (named in the reference).
            output: Its text, exactly as it should load back.
            call_id: The tool call's id (part of the namespace, for tracing).
            is_error: ``output`` is the tool's error message.
            sensitive: Overrides the policy's ``sensitive`` for this call.

        Raises:
            OffloadError: The output could not be stored (nothing of it is in the message).
            ValidationError: ``output`` is not a str.
        """
        if not isinstance(output, str):
            raise ValidationError(f"output must be a str, got {type(output).__name__}")
        secret = self.sensitive if sensitive is None else bool(sensitive)
        if not output or output.isspace():  # isspace stops at the first other character
            return Offloaded(output, None)
        memory = self.task_memory
        namespace = self.namespace_for(tool_name, call_id)
        result = memory.process_output(
            tool_name,
            ACTIVITY,
            TextArtifact(value=output, name=namespace),
            sensitive=secret,
            min_tokens=self.min_tokens,
            # An error is shown by its first line and size: the bare sentence follows.
            preview=False if is_error else None,
        )
        if isinstance(result, ErrorArtifact):
            raise OffloadError(
                f"the output of {tool_name} could not be stored off-prompt: {result.value}",
                tool=tool_name,
            )
        if not isinstance(result, InfoArtifact) or "artifact_namespace" not in result.meta:
            return Offloaded(output, None)  # below min_tokens: unchanged
        reference = self._reference(result, output, tool_name, is_error, secret)
        text = str(result.value)
        if is_error:
            text = self._error_text(output, reference, text)
        return Offloaded(self._bound(text), reference)

    async def aoffload(
        self,
        tool_name: str,
        output: str,
        *,
        call_id: str | None = None,
        is_error: bool = False,
        sensitive: bool | None = None,
    ) -> Offloaded:
        """Async twin of :meth:`offload` (storage and counting run in a worker thread)."""
        return await asyncio.to_thread(
            self.offload,
            tool_name,
            output,
            call_id=call_id,
            is_error=is_error,
            sensitive=sensitive,
        )

    # -- helpers ------------------------------------------------------------------------

    def _reference(
        self, result: InfoArtifact, output: str, tool_name: str, is_error: bool, secret: bool
    ) -> StoredReference:
        stats = result.meta.get("stats")
        if isinstance(stats, dict):
            sizes: dict[str, Any] = {
                "kind": stats.get("kind", "text"),
                "bytes": int(stats.get("bytes", 0)),
                "lines": int(stats.get("lines", 0)),
                "tokens": int(stats.get("tokens", 0)),
                "tokens_estimated": bool(stats.get("tokens_estimated", False)),
            }
        else:  # a TaskMemory that reports no stats: count here
            meta = self.task_memory.namespace_metadata(result.meta["artifact_namespace"])
            sizes = {
                "bytes": int(meta.get("bytes", 0)) or len(output.encode("utf-8")),
                "lines": _line_count(output),
                "tokens": int(meta.get("tokens", 0)),
            }
        return StoredReference(
            memory_name=result.meta["memory_name"],
            namespace=result.meta["artifact_namespace"],
            tool=tool_name,
            activity=ACTIVITY,
            is_error=is_error,
            sensitive=secret,
            **sizes,
        )

    @staticmethod
    def _error_text(output: str, reference: StoredReference, reference_text: str) -> str:
        if reference.sensitive:
            # A sensitive tool's error is its output: the model sees its size, never a line.
            return (
                f"Error: the tool failed; its error ({reference.kind}, {_size(reference)}) "
                "was stored off-prompt because the tool is sensitive.\n"
                f"{reference_text}"
            )
        found = _NON_SPACE.search(output)
        start = found.start() if found else 0
        end = output.find("\n", start, start + ERROR_LINE_CHARS + 1)
        first = output[start : end if end >= 0 else start + ERROR_LINE_CHARS + 1].rstrip()
        if len(first) > ERROR_LINE_CHARS:
            first = first[:ERROR_LINE_CHARS] + "…"
        # Quoted as JSON: an error line cannot pass for a reference sentence.
        quoted = json.dumps(first, ensure_ascii=False)
        return (
            f"Error: the tool failed; first line of its error: {quoted}\n"
            f"The whole error ({_size(reference)}) was stored off-prompt.\n"
            f"{reference_text}"
        )

    def _bound(self, text: str) -> str:
        return bound_text(text, self.max_output_tokens, self.task_memory.tokenizer)
