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
  ``preview=True``). Smaller outputs pass through unchanged (``reference=None``). The
  default threshold is the measured break-even (:data:`DEFAULT_MIN_TOKENS`).
* A stored output that is not sensitive never reaches the model as something larger
  than itself: the card shrinks to stay below the output's tokens, and an output (or
  error, with its first line and size) that even the bare reference would not shrink
  passes unchanged. ``min_tokens=0`` asks for a reference to every output.
* An error goes through the same rule: a large (or sensitive) error is stored and the
  model sees the error's first line (quoted as data, at most :data:`ERROR_LINE_CHARS`
  characters), its size, then the bare reference sentence (no card). A sensitive
  tool's error shows no line at all: its kind, its size and the reference only. A short
  error of a tool that is not sensitive passes through.
* Every kind of tool content is decided here (:meth:`OffloadPolicy.decide`,
  :meth:`OffloadPolicy.offload_content`): adapters map their framework's blocks onto
  :class:`ToolContent` (``text``, ``json``, ``image``, ``blob``). Text and JSON are
  stored as text (by the token rule above); an image or other binary block is stored
  as a blob, never as text, when its base64 would cost ``min_tokens`` tokens or more
  (any, when ``sensitive``), and the model sees the blob's reference and card, then a
  line with its MIME type (and pixel size). Each block is decided on its own; LangChain
  and LlamaIndex give their text parts as one text block, the MCP proxy keeps the
  server's blocks.
* An output that cannot be stored raises :class:`OffloadError`, whose message never
  holds any of the output; every adapter shows the model :func:`failure_text` of it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import re
import struct
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from offprompt._validation import escape_in_run
from offprompt.artifacts import (
    BlobArtifact,
    ImageArtifact,
    TextArtifact,
)
from offprompt.errors import OffloadError, OffpromptError, ValidationError
from offprompt.task_memory.budgets import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_PAGE_TOKENS,
    PAGE_HEADER_TOKENS,
    bound_text,
)
from offprompt.task_memory.decision import TextDecision, decide_text, is_blank
from offprompt.task_memory.results import Stored, store_failure
from offprompt.tokens import image_tokens

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory

__all__ = [
    "ACTIVITY",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_PAGE_TOKENS",
    "ERROR_LINE_CHARS",
    "MAX_INLINE_IMAGE_BYTES",
    "PAGE_HEADER_TOKENS",
    "ContentKind",
    "OffloadError",
    "OffloadPolicy",
    "Offloaded",
    "StoredReference",
    "ToolContent",
    "binary_tokens",
    "bound_text",
    "failure_text",
]

ACTIVITY = "call"
"""The activity named in every reference: ``Output of "{tool}.call" was stored ...``."""

DEFAULT_MIN_TOKENS = 1200
"""The threshold LangChain's ``offprompt_tool``, the middleware and the MCP proxy default
to: the measured break-even of storing an output (``benchmarks/bench_break_even.py``,
``benchmarks/RESULTS_break_even.md``).

Storing costs the model the reference (sentence and card, about 250 tokens) plus, to
get a fact back, one memory-tool answer: a ``grep_memory`` for a line's key (about 120)
or a ``read_memory`` page 1 (the whole output up to a page, about 975). Over 41 real
outputs (Loghub logs and CSVs, LoCoMo JSON, directory listings, tables), card plus
the mean of those two reads is at most 0.75x the raw output for 97% of them at 1,200
tokens and for all from 1,500 on, but for 10% at 1,000 and none at 700 or below (at
500 storing costs 1.17x the output, median). Below this an output is cheaper inline."""

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
    def from_stored(
        cls, stored: Stored, *, tool: str, is_error: bool = False, sensitive: bool = False
    ) -> StoredReference:
        """The reference to what :meth:`TaskMemory.store_output` stored.

        Raises:
            ValidationError: ``stored`` holds no stored output (``verdict`` is not
                ``"stored"``).
        """
        if not stored.stored or stored.namespace is None or stored.stats is None:
            raise ValidationError(f"nothing was stored (verdict {stored.verdict!r})")
        stats = stored.stats
        return cls(
            memory_name=stored.memory_name,
            namespace=stored.namespace,
            tool=tool,
            activity=ACTIVITY,
            kind=stats.kind,
            bytes=stats.bytes,
            lines=stats.lines,
            tokens=stats.tokens,
            tokens_estimated=stats.tokens_estimated,
            is_error=is_error,
            sensitive=sensitive,
        )

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


ContentKind = Literal["text", "json", "image", "blob"]
"""The kinds of tool content the policy decides for: ``text`` and ``json`` are stored
as text, ``image`` and ``blob`` (audio, files, any other bytes) as blobs."""


MAX_INLINE_IMAGE_BYTES = 512 * 1024
"""An image larger than this (decoded) is stored whatever its pixel size: a client or
provider may refuse it, and some clients show it as base64 text."""


def _pixel_size(block: ToolContent) -> tuple[int, int] | None:
    """An image block's width and height from its header (pillow reads no pixels).

    A PNG that pillow refuses (a bad checksum in an ancillary chunk, as in
    server-everything's logo) still states its size in its first chunk.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        data = block.raw_bytes()
    except OffloadError:
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or len(data) < 24:
            return None
        width, height = struct.unpack(">II", data[16:24])
    return (width, height) if width > 0 and height > 0 else None


def binary_tokens(size: int) -> int:
    """What ``size`` bytes would cost the model as base64 text (about 4 characters a
    token, so one token per 3 bytes): the size :meth:`OffloadPolicy.decide` compares
    with ``min_tokens`` for an image or other binary block."""
    return -(-size // 3)


@dataclass(frozen=True)
class ToolContent:
    """One block of a tool's result, as an adapter maps its framework's block.

    Build it with :meth:`of_text`, :meth:`of_json`, :meth:`of_bytes` or
    :meth:`of_base64`; the policy never sees a framework type.

    Attributes:
        kind: ``"text"``, ``"json"``, ``"image"`` or ``"blob"``.
        text: The text (of ``json``: the JSON text, as it is stored).
        data: The bytes of a binary block (empty until decoded, for :meth:`of_base64`).
        base64: The base64 text of a binary block given as such (decoded only when it
            is stored, so a small block costs nothing and passes through unchanged).
        mime_type: The MIME type of a binary block.

    Example:
        >>> ToolContent.of_bytes(b"%PDF-1.7 ...", "application/pdf").kind
        'blob'
        >>> ToolContent.of_json({"jobs": [1, 2]}).text
        '{"jobs": [1, 2]}'
    """

    kind: ContentKind
    text: str = ""
    data: bytes = b""
    base64: str = ""
    mime_type: str = ""

    @classmethod
    def of_text(cls, text: str) -> ToolContent:
        """A text block."""
        return cls("text", text=text)

    @classmethod
    def of_json(cls, value: Any) -> ToolContent:
        """A JSON value (a dict block no other kind fits), stored as its JSON text."""
        return cls("json", text=json.dumps(value, ensure_ascii=False, default=str))

    @classmethod
    def of_bytes(cls, data: bytes, mime_type: str) -> ToolContent:
        """Binary content: ``image`` for an ``image/*`` MIME type, else ``blob``."""
        kind: ContentKind = "image" if mime_type.startswith("image/") else "blob"
        return cls(kind, data=bytes(data), mime_type=mime_type)

    @classmethod
    def of_base64(cls, data: str, mime_type: str) -> ToolContent:
        """Binary content given as base64 text (MCP, data URLs, LangChain blocks)."""
        kind: ContentKind = "image" if mime_type.startswith("image/") else "blob"
        return cls(kind, base64=data, mime_type=mime_type)

    @classmethod
    def of_data_url(cls, url: Any) -> ToolContent | None:
        """Binary content of a ``data:<mime>;base64,<data>`` URL; ``None`` for anything
        else (a remote URL, a path, a non-base64 data URL), which the adapter leaves as
        it is: offprompt never fetches a URL."""
        if not isinstance(url, str) or not url.startswith("data:"):
            return None
        header, comma, data = url[5:].partition(",")
        if not comma or not header.endswith(";base64"):
            return None
        return cls.of_base64(data, header[: -len(";base64")] or "application/octet-stream")

    @property
    def is_binary(self) -> bool:
        """Whether this block is stored as a blob (``image`` or ``blob``)."""
        return self.kind in ("image", "blob")

    def binary_size(self) -> int:
        """The size in bytes of a binary block (estimated from base64 before decoding)."""
        if self.data or not self.base64:
            return len(self.data)
        return len(self.base64) * 3 // 4

    def raw_bytes(self) -> bytes:
        """The bytes of a binary block.

        Raises:
            OffloadError: Its base64 text is not valid base64.
        """
        if self.data or not self.base64:
            return self.data
        try:
            return base64.b64decode(self.base64, validate=True)
        except (binascii.Error, ValueError):
            raise OffloadError(f"its {self.mime_type} content is not valid base64") from None


def failure_text(exc: BaseException) -> str:
    """What the model sees when a tool's output could not be stored: the one rule of
    every adapter (``Error:`` and the error's message, which never holds the output)."""
    return f"Error: {' '.join(str(exc).split())}"[:2000]


def _check_int(label: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{label} must be an int >= {low}, got {value!r}")
    return value


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
        sensitive: Store every non-empty output and error, whatever its size: True for
            every tool, or the names of the tools whose results are always stored.
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
        sensitive: bool | Collection[str] = False,
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
        if isinstance(sensitive, str) or not isinstance(sensitive, (bool, Collection)):
            raise ValidationError(
                f"sensitive must be a bool or a collection of tool names, got {sensitive!r}"
            )
        #: True (every tool), or the tools whose every result is stored.
        self.sensitive: bool | frozenset[str] = (
            sensitive if isinstance(sensitive, bool) else frozenset(sensitive)
        )
        self.max_output_tokens = _check_int("max_output_tokens", max_output_tokens, 16)

    def __repr__(self) -> str:
        return (
            f"OffloadPolicy({self.task_memory!r}, min_tokens={self.min_tokens}, "
            f"sensitive={self.sensitive})"
        )

    def is_sensitive(self, tool_name: str, sensitive: bool | None = None) -> bool:
        """Whether ``tool_name``'s results are always stored (``sensitive``, when given,
        decides for this call)."""
        if sensitive is not None:
            return bool(sensitive)
        if isinstance(self.sensitive, bool):
            return self.sensitive
        return tool_name in self.sensitive

    def decide_text(
        self, tool_name: str, text: str, *, sensitive: bool | None = None
    ) -> TextDecision:
        """Whether ``text``, a result of ``tool_name``, goes off-prompt: empty, small,
        large or sensitive (:func:`~offprompt.task_memory.decision.decide_text`; cheap:
        text far over the threshold is not counted)."""
        return decide_text(
            text,
            min_tokens=self.min_tokens,
            sensitive=self.is_sensitive(tool_name, sensitive),
            count=self.task_memory.tokenizer.count,
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
            output: Its text, exactly as it should load back (a lone surrogate, not
                valid Unicode, is stored as its ``\\udXXX`` escape and logged).
            call_id: The tool call's id (part of the namespace, for tracing).
            is_error: ``output`` is the tool's error message.
            sensitive: Overrides the policy's ``sensitive`` for this call.

        Raises:
            OffloadError: The output could not be stored (nothing of it is in the message).
            ValidationError: ``output`` is not a str.
        """
        if not isinstance(output, str):
            raise ValidationError(f"output must be a str, got {type(output).__name__}")
        # A tool output arrives inside an agent run: lone surrogates are escaped, not refused.
        output, _ = escape_in_run(output, what=f"the output of tool {tool_name!r}")
        secret = self.is_sensitive(tool_name, sensitive)
        if is_blank(output):
            return Offloaded(output, None)
        memory = self.task_memory
        namespace = self.namespace_for(tool_name, call_id)
        try:
            stored = memory.store_output(
                tool_name,
                ACTIVITY,
                TextArtifact(value=output, name=namespace),
                sensitive=secret,
                min_tokens=self.min_tokens,
                # An error is shown by its first line and size: the bare sentence follows.
                preview=False if is_error else None,
            )
        except OffpromptError as exc:
            raise OffloadError(
                f"the output of {tool_name} could not be stored off-prompt: "
                f"{store_failure(tool_name, ACTIVITY, exc)}",
                tool=tool_name,
            ) from exc
        if not stored.stored:
            return Offloaded(output, None)  # below min_tokens: unchanged
        reference = StoredReference.from_stored(
            stored, tool=tool_name, is_error=is_error, sensitive=secret
        )
        text = stored.text
        if is_error:
            text = self._error_text(output, reference, text)
            count = memory.tokenizer.count
            # Its first line and size come on top of the sentence, which alone was kept
            # below the error's size: a short error (a low min_tokens) could still come
            # out larger. It then passes as it is; the stored copy stays (nothing stored
            # is dropped, and the model has the whole error anyway).
            if (
                not secret
                and self.min_tokens > 0
                and len(output) < 32 * self.max_output_tokens
                and count(text) >= count(output)
            ):
                return Offloaded(output, None)
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

    def decide(
        self,
        kind: ContentKind,
        size: int,
        *,
        sensitive: bool | None = None,
        tool_name: str = "",
    ) -> bool:
        """Whether a block of ``kind`` and ``size`` goes off-prompt.

        ``size`` is in tokens for ``text`` and ``json`` and in bytes for ``image`` and
        ``blob`` (compared as :func:`binary_tokens`, what its base64 would cost). An
        empty block never goes; with ``sensitive`` (or a result of a sensitive
        ``tool_name``) every other one does.
        """
        if kind not in ("text", "json", "image", "blob"):
            raise ValidationError(f"unknown content kind {kind!r}")
        secret = self.is_sensitive(tool_name, sensitive)
        if size <= 0:
            return False
        if secret:
            return True
        tokens = binary_tokens(size) if kind in ("image", "blob") else size
        return tokens >= self.min_tokens

    def decide_block(
        self, block: ToolContent, *, sensitive: bool | None = None, tool_name: str = ""
    ) -> bool:
        """Whether one block of a result goes off-prompt (what every adapter asks).

        Text and JSON: :meth:`decide_text`. An image goes by
        what it costs the model, its pixels (:func:`offprompt.tokens.image_tokens`, the
        count the tokenizer gives an image in a message), not by its bytes: a 20x20 icon
        passes, a screenshot is stored. An image larger than :data:`MAX_INLINE_IMAGE_BYTES`
        is stored whatever its pixels, and one whose size cannot be read goes by bytes,
        like any other binary.
        """
        if not block.is_binary:
            return self.decide_text(tool_name, block.text, sensitive=sensitive).stores
        size = block.binary_size()
        if block.kind != "image" or size > MAX_INLINE_IMAGE_BYTES:
            return self.decide(block.kind, size, sensitive=sensitive, tool_name=tool_name)
        pixels = _pixel_size(block)
        if pixels is None:
            return self.decide(block.kind, size, sensitive=sensitive, tool_name=tool_name)
        secret = self.is_sensitive(tool_name, sensitive)
        if secret:
            return size > 0
        return image_tokens(*pixels) >= self.min_tokens

    def offload_content(
        self,
        tool_name: str,
        blocks: Sequence[ToolContent],
        *,
        call_id: str | None = None,
        is_error: bool = False,
        sensitive: bool | None = None,
    ) -> list[Offloaded]:
        """The policy on every block of one tool result: one :class:`Offloaded` per block.

        A block whose ``reference`` is ``None`` stays as the adapter had it; any other
        is replaced by a text block holding ``text`` (the reference the model sees).
        Text and JSON go through :meth:`offload`; images and other binaries are stored
        as blobs (:meth:`offload_binary`) when :meth:`decide` says so.

        Raises:
            OffloadError: A block could not be stored (nothing of it is in the message).
        """
        out: list[Offloaded] = []
        for block in blocks:
            if not isinstance(block, ToolContent):
                raise ValidationError(f"blocks must be ToolContent, got {type(block).__name__}")
            if not block.is_binary:
                out.append(
                    self.offload(
                        tool_name,
                        block.text,
                        call_id=call_id,
                        is_error=is_error,
                        sensitive=sensitive,
                    )
                )
            elif self.decide_block(block, sensitive=sensitive, tool_name=tool_name):
                out.append(
                    self.offload_binary(tool_name, block, call_id=call_id, sensitive=sensitive)
                )
            else:
                out.append(Offloaded("", None))
        return out

    async def aoffload_content(
        self,
        tool_name: str,
        blocks: Sequence[ToolContent],
        *,
        call_id: str | None = None,
        is_error: bool = False,
        sensitive: bool | None = None,
    ) -> list[Offloaded]:
        """Async twin of :meth:`offload_content` (storage runs in a worker thread)."""
        return await asyncio.to_thread(
            self.offload_content,
            tool_name,
            blocks,
            call_id=call_id,
            is_error=is_error,
            sensitive=sensitive,
        )

    def offload_binary(
        self,
        tool_name: str,
        block: ToolContent,
        *,
        call_id: str | None = None,
        sensitive: bool | None = None,
    ) -> Offloaded:
        """Store an image or other binary block as a blob, whatever its size.

        The model sees the reference sentence and the card (kind and size), then a line
        with the MIME type and, for an image, its pixel size. A block whose MIME type
        says image but whose bytes are no image is stored as a plain blob.

        Raises:
            OffloadError: The bytes could not be stored (or are not valid base64).
        """
        if not block.is_binary:
            raise ValidationError(f"offload_binary needs an image or blob block, got {block.kind}")
        mime_type = block.mime_type or "application/octet-stream"
        try:
            data = block.raw_bytes()
        except OffloadError as exc:
            raise OffloadError(
                f"the {mime_type} output of {tool_name} could not be stored off-prompt: {exc}",
                tool=tool_name,
            ) from None
        namespace = self.namespace_for(tool_name, call_id)
        artifact: BlobArtifact
        details = ""
        try:
            if block.kind != "image":
                raise ValidationError("not an image")
            artifact = ImageArtifact(value=data, mime_type=mime_type, name=namespace)
            details = f", {artifact.width}x{artifact.height} pixels"
        except ValidationError:
            artifact = BlobArtifact(value=data, mime_type=mime_type, name=namespace)
        secret = self.is_sensitive(tool_name, sensitive)
        try:
            stored = self.task_memory.store_output(
                tool_name, ACTIVITY, artifact, sensitive=secret, min_tokens=0
            )
        except OffpromptError as exc:
            raise OffloadError(
                f"the {mime_type} output of {tool_name} could not be stored off-prompt: "
                f"{store_failure(tool_name, ACTIVITY, exc)[:300]}",
                tool=tool_name,
            ) from exc
        assert stored.stats is not None  # min_tokens=0 stores every non-empty blob
        reference = StoredReference(
            memory_name=stored.memory_name,
            namespace=stored.namespace,
            tool=tool_name,
            kind=stored.stats.kind,
            bytes=len(data),
            sensitive=secret,
        )
        text = f"{stored.text}\n{mime_type}{details}: kept in the blob store, not shown here."
        return Offloaded(self._bound(text), reference)

    async def aoffload_binary(
        self,
        tool_name: str,
        block: ToolContent,
        *,
        call_id: str | None = None,
        sensitive: bool | None = None,
    ) -> Offloaded:
        """Async twin of :meth:`offload_binary`."""
        return await asyncio.to_thread(
            self.offload_binary, tool_name, block, call_id=call_id, sensitive=sensitive
        )

    # -- helpers ------------------------------------------------------------------------

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
