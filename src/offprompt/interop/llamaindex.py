"""LlamaIndex ``ChatMessage`` dicts and ``SimpleChatStore`` files, without importing LlamaIndex.

The dict shape is what ``ChatMessage.model_dump(mode="json")`` produces in
llama-index-core 0.14: ``{"role": ..., "additional_kwargs": {...}, "blocks": [...]}``,
each block tagged by ``block_type``. The older shape with ``"content"`` instead of
``"blocks"`` (files written by llama-index < 0.12) is read too.

Mapping to :class:`~offprompt.messages.Message`:

* Roles: ``system``/``developer`` → system, ``user`` → user,
  ``assistant``/``chatbot``/``model`` → assistant, ``tool``/``function`` → tool. The
  original role is kept in ``meta["llamaindex"]["role"]`` when it is not the plain one,
  so the round trip restores it.
* Blocks: ``TextBlock`` → :class:`TextArtifact`; ``ImageBlock`` with inline bytes →
  :class:`ImageArtifact` (or :class:`BlobArtifact` when pillow cannot read them);
  ``ImageBlock`` with only a ``url`` or ``path`` → a :class:`JsonArtifact`
  ``{"type": "image", "url": ...}`` / ``{"type": "image", "path": ...}`` with
  ``reference`` set. Nothing is downloaded or read from disk; the reference round-trips
  as it came; a URL also goes to ``meta["image_url"]``, the key the LangChain converter
  uses for the same thing. Audio, video and document blocks with inline data → :class:`BlobArtifact`.
  Every other block (``ThinkingBlock``, ``CachePoint``, ``CitableBlock``,
  ``CitationBlock``, blocks of future versions) is kept verbatim in a
  :class:`JsonArtifact` marked ``meta["llamaindex"]["verbatim"]``.
  Block fields that the artifact does not imply (a ``detail``, a mimetype that differs
  from the one pillow reads) ride in the artifact's ``meta["llamaindex"]``.
* Tool calls: ``ToolCallBlock`` blocks (llama-index-core 0.14's own representation,
  used by ``FunctionAgent`` with ``MockFunctionCallingLLM``) and
  ``additional_kwargs["tool_calls"]`` (OpenAI ``{"id", "function": {...}}`` dicts,
  ``ToolSelection`` dicts, ``{"id", "name", "input"}`` dicts) become
  :attr:`Message.tool_calls`; they are written back in the representation they came in,
  at the same block positions. Tool results: ``additional_kwargs["tool_call_id"]`` ↔
  :attr:`Message.tool_call_id`, ``additional_kwargs["name"]`` ↔ :attr:`Message.name`.
* All other ``additional_kwargs`` are kept in ``meta["llamaindex"]["additional_kwargs"]``.

LlamaIndex → Message → LlamaIndex gives back an equal ``ChatMessage``. The other way,
what a ``ChatMessage`` cannot carry (``Message.meta`` outside ``"llamaindex"``,
artifact types other than text/image/blob, artifact metadata) is listed in the
:class:`ConversionReport`; message ids and timestamps are not carried and not reported.
Nothing is smuggled into ``additional_kwargs``: LLM integrations (OpenAI's among them)
send those keys to the provider's API, which rejects unknown ones.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from offprompt._validation import ensure_json, loads_json
from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    GenericArtifact,
    ImageArtifact,
    JsonArtifact,
    TextArtifact,
)
from offprompt.errors import (
    DeserializationError,
    NotFoundError,
    OffpromptError,
    StorageError,
    ValidationError,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "LLAMAINDEX_ROLES",
    "message_from_llamaindex_dict",
    "message_to_llamaindex_dict",
    "messages_from_llamaindex_dicts",
    "messages_to_llamaindex_dicts",
    "read_simple_chat_store",
    "simple_chat_store_dict",
    "write_simple_chat_store",
]

#: Every ``MessageRole`` value of llama-index-core 0.14 and the offprompt role it maps to.
LLAMAINDEX_ROLES: dict[str, str] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "function": "tool",
    "tool": "tool",
    "chatbot": "assistant",
    "model": "assistant",
}
#: ``meta`` key naming the URL of an image part that is not inline; shared with
#: :mod:`offprompt.interop.langchain` so URL images cross between frameworks.
IMAGE_URL_META = "image_url"
_PLAIN_ROLE = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

_KEY = "llamaindex"  # where LlamaIndex-only fields live in Message.meta / artifact meta
_PAYLOAD_FIELD = {"image": "image", "audio": "audio", "video": "video", "document": "data"}
_AUDIO_FORMATS = {"mpeg": "mp3", "x-wav": "wav", "wave": "wav", "x-flac": "flac"}


# -- small helpers ----------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _decode_payload(value: Any, where: str) -> bytes:
    """The raw bytes of a block payload, which LlamaIndex stores base64-encoded."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return raw  # python-mode dump of raw bytes: LlamaIndex does the same guess
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise DeserializationError(
                f"{where}: block payload is not base64 ({len(value)} characters)", where=where
            ) from None
    raise DeserializationError(
        f"{where}: block payload must be a base64 string, got {type(value).__name__}",
        where=where,
    )


def _jsonable(value: Any, where: str) -> Any:
    try:
        return ensure_json(value, field=where)
    except OffpromptError as exc:
        raise DeserializationError(f"{where}: {exc}", where=where) from None


def _diff(original: Mapping[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """What turns ``default`` back into ``original``: changed fields and absent keys."""
    fields = {k: v for k, v in original.items() if k not in default or default[k] != v}
    absent = [k for k in default if k not in original]
    out: dict[str, Any] = {}
    if fields:
        out["fields"] = fields
    if absent:
        out["absent"] = absent
    return out


def _apply(default: dict[str, Any], residual: Mapping[str, Any]) -> dict[str, Any]:
    block = dict(default)
    fields = residual.get("fields")
    if isinstance(fields, Mapping):
        block.update(fields)
    absent = residual.get("absent")
    if isinstance(absent, list):
        for key in absent:
            block.pop(key, None)
    return block


def _li_meta(obj: Message | BaseArtifact) -> dict[str, Any]:
    value = obj.meta.get(_KEY)
    return value if isinstance(value, dict) else {}


# -- blocks -----------------------------------------------------------------------------


def _image_reference(value: Any) -> dict[str, Any] | None:
    """A URL/path image part (ours, or the OpenAI ``image_url`` shape) as block fields."""
    if not isinstance(value, Mapping):
        return None
    kind = value.get("type")
    if kind == "image" and ("url" in value or "path" in value):
        return {
            "url": value.get("url"),
            "path": value.get("path"),
            "mime_type": value.get("mime_type"),
        }
    if kind == "image_url":
        inner = value.get("image_url")
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        if isinstance(url, str):
            detail = inner.get("detail") if isinstance(inner, Mapping) else None
            return {"url": url, "path": None, "mime_type": None, "detail": detail}
    return None


def _default_block(part: BaseArtifact) -> dict[str, Any] | None:
    """The LlamaIndex block a part becomes without any stored residual; None if none fits."""
    detail = part.meta.get("detail")
    if isinstance(part, TextArtifact):
        return {"block_type": "text", "text": part.value}
    if isinstance(part, BlobArtifact):  # ImageArtifact included
        payload = _b64(part.value)
        major, _, minor = part.mime_type.partition("/")
        if isinstance(part, ImageArtifact) or major == "image":
            return {
                "block_type": "image",
                "image": payload,
                "path": None,
                "url": None,
                "image_mimetype": part.mime_type or None,
                "detail": detail,
            }
        if major == "audio":
            return {
                "block_type": "audio",
                "audio": payload,
                "path": None,
                "url": None,
                "format": _AUDIO_FORMATS.get(minor, minor) or None,
            }
        if major == "video":
            return {
                "block_type": "video",
                "video": payload,
                "path": None,
                "url": None,
                "video_mimetype": part.mime_type,
                "detail": detail,
                "fps": None,
            }
        return {
            "block_type": "document",
            "data": payload,
            "path": None,
            "url": None,
            "title": "input_document",
            "document_mimetype": part.mime_type or None,
        }
    if isinstance(part, (JsonArtifact, GenericArtifact)):
        if _li_meta(part).get("verbatim") and isinstance(part.value, Mapping):
            return dict(part.value)
        ref = _image_reference(part.value)
        url = part.meta.get(IMAGE_URL_META)
        if ref is None and isinstance(url, str):  # e.g. a LangChain URL image block
            ref = {"url": url, "path": None, "mime_type": None}
        if ref is not None:
            return {
                "block_type": "image",
                "image": None,
                "path": ref["path"],
                "url": ref["url"],
                "image_mimetype": ref["mime_type"],
                "detail": ref.get("detail", detail),
            }
    return None


def _part_from_block(block: Mapping[str, Any], where: str) -> BaseArtifact:
    kind = block.get("block_type")
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise DeserializationError(
                f"{where}: TextBlock.text must be a string, got {type(text).__name__}",
                where=where,
            )
        part: BaseArtifact = TextArtifact(value=text)
    elif kind in _PAYLOAD_FIELD and block.get(_PAYLOAD_FIELD[kind]):
        raw = _decode_payload(block[_PAYLOAD_FIELD[kind]], where)
        part = _blob_part(kind, raw, block)
    elif kind == "image":
        url, path = block.get("url"), block.get("path")
        value: dict[str, Any] = {"type": "image"}
        if path is not None:
            value["path"] = str(path)
        if url is not None or path is None:
            value["url"] = None if url is None else str(url)
        if block.get("image_mimetype"):
            value["mime_type"] = block["image_mimetype"]
        part = JsonArtifact(value=value, reference=value.get("url") or value.get("path"))
        if value.get("url"):
            part.meta[IMAGE_URL_META] = value["url"]
        if block.get("detail") is not None:
            part.meta["detail"] = block["detail"]
    else:  # thinking, cache, citable, citation, payload-less media, future block types
        return JsonArtifact(value=_jsonable(dict(block), where), meta={_KEY: {"verbatim": True}})
    default = _default_block(part)
    residual = _diff(block, default or {})
    if residual:
        part.meta[_KEY] = _jsonable(residual, where)
    return part


def _blob_part(kind: str, raw: bytes, block: Mapping[str, Any]) -> BaseArtifact:
    if kind == "image":
        detail = block.get("detail")
        meta = {"detail": detail} if detail is not None else {}
        try:
            return ImageArtifact(value=raw, meta=meta)
        except ValidationError:  # SVG, truncated or unknown format: keep the bytes as a blob
            mime = block.get("image_mimetype") or "application/octet-stream"
            return BlobArtifact(value=raw, mime_type=str(mime), meta=meta)
    if kind == "audio":
        fmt = block.get("format")
        mime = mimetypes.guess_type(f"x.{fmt}")[0] if fmt else None
        mime = mime or (f"audio/{fmt}" if fmt else "audio/octet-stream")
        return BlobArtifact(value=raw, mime_type=mime)
    if kind == "video":
        mime = block.get("video_mimetype") or "video/octet-stream"
        return BlobArtifact(value=raw, mime_type=str(mime))
    mime = block.get("document_mimetype") or "application/octet-stream"
    return BlobArtifact(value=raw, mime_type=str(mime))


def _block_from_part(
    part: BaseArtifact, where: str, report: ConversionReport | None
) -> dict[str, Any]:
    residual = _li_meta(part)
    default = _default_block(part)
    if default is None:
        if report is not None:
            report.lost(where, type(part).__name__, "a ChatMessage has no such block; sent as text")
        return {"block_type": "text", "text": part.to_text()}
    if report is not None:
        dropped = sorted(k for k in part.meta if k not in (_KEY, "detail", IMAGE_URL_META))
        if dropped:
            report.lost(where, f"meta keys {dropped}", "LlamaIndex blocks carry no metadata")
    if residual and not residual.get("verbatim"):
        return _apply(default, residual)
    return default


# -- tool calls -------------------------------------------------------------------------


def _tool_call_from_entry(entry: Any) -> ToolCall:
    """One entry of ``additional_kwargs["tool_calls"]`` in any of the known shapes."""
    if not isinstance(entry, Mapping):
        raise ValidationError(f"tool call must be an object, got {type(entry).__name__}")
    if isinstance(entry.get("function"), Mapping):
        return ToolCall.from_openai(dict(entry))
    if "tool_name" in entry:  # llama_index ToolSelection
        return ToolCall(
            id=entry.get("tool_id") or "",
            name=entry.get("tool_name") or "",
            arguments=entry.get("tool_kwargs"),
        )
    if "name" in entry:  # Anthropic-style {"id", "name", "input"}
        args = entry.get("input", entry.get("arguments", entry.get("args")))
        return ToolCall(id=entry.get("id") or "", name=entry.get("name") or "", arguments=args)
    raise ValidationError(f"unknown tool-call shape with keys {sorted(entry)}")


def _tool_call_from_block(block: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        id=block.get("tool_call_id") or "",
        name=block.get("tool_name") or "",
        arguments=block.get("tool_kwargs"),
    )


def _tool_call_block(call: ToolCall) -> dict[str, Any]:
    return {
        "block_type": "tool_call",
        "tool_call_id": call.id,
        "tool_name": call.name,
        "tool_kwargs": call.arguments,
    }


def _parse_all(entries: Any, parse: Any) -> list[ToolCall] | None:
    try:
        return [parse(entry) for entry in entries]
    except (ValidationError, DeserializationError):
        return None


# -- messages ---------------------------------------------------------------------------


def message_from_llamaindex_dict(
    data: Mapping[str, Any], *, report: ConversionReport | None = None, where: str = "message"
) -> Message:
    """One ``ChatMessage.model_dump(mode="json")`` dict → :class:`Message`.

    Args:
        data: The dict. The legacy ``{"role", "content", "additional_kwargs"}`` shape works too.
        report: Collects what could not be understood (kept verbatim in ``meta``).
        where: Label used in error messages and the report.

    Raises:
        DeserializationError: ``data`` is not an object, has an unknown role, a malformed
            block or a payload that is not base64.

    Example:
        >>> m = message_from_llamaindex_dict(
        ...     {"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": "hi"}]}
        ... )
        >>> (m.role, m.text)
        ('user', 'hi')
    """
    if not isinstance(data, Mapping):
        raise DeserializationError(
            f"{where}: a LlamaIndex ChatMessage must be a JSON object, got {type(data).__name__}",
            where=where,
        )
    li: dict[str, Any] = {}
    role_name = _role_name(data, where)
    role = LLAMAINDEX_ROLES[role_name]
    if role_name != role:
        li["role"] = role_name
    extra_kwargs = _additional_kwargs(data, where)
    blocks = _blocks(data, where)
    extra_fields = {
        k: v for k, v in data.items() if k not in ("role", "additional_kwargs", "blocks", "content")
    }
    if extra_fields:
        li["extra"] = _jsonable(extra_fields, f"{where} extra fields")

    parts, tool_calls, call_blocks, positions = _split_blocks(blocks, where, report)
    if call_blocks:
        li["tool_calls_in"] = "blocks"
        if [_tool_call_block(c) for c in tool_calls] != call_blocks:
            li["tool_call_blocks"] = call_blocks
        if positions != list(range(len(blocks) - len(positions), len(blocks))):
            li["tool_call_positions"] = positions
    elif isinstance(extra_kwargs.get("tool_calls"), list) and extra_kwargs["tool_calls"]:
        tool_calls = _tool_calls_in_kwargs(extra_kwargs, li, where, report)

    tool_call_id = _pop_str(extra_kwargs, "tool_call_id")
    name = _pop_str(extra_kwargs, "name")
    if extra_kwargs:
        li["additional_kwargs"] = _jsonable(extra_kwargs, f"{where} additional_kwargs")

    if report is not None:
        report.converted += 1
    return Message(
        role=role,
        content=parts,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        name=name,
        meta={_KEY: li} if li else {},
    )


def _role_name(data: Mapping[str, Any], where: str) -> str:
    """The LlamaIndex role of ``data`` (``"user"`` when it has none), a known one."""
    raw_role = data.get("role", "user")
    role_name = getattr(raw_role, "value", raw_role)
    if not isinstance(role_name, str) or role_name not in LLAMAINDEX_ROLES:
        raise DeserializationError(
            f"{where}: unknown LlamaIndex role {raw_role!r}; expected one of "
            f"{', '.join(LLAMAINDEX_ROLES)}",
            where=where,
        )
    return role_name


def _additional_kwargs(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A copy of ``data``'s ``additional_kwargs`` (empty when missing or null)."""
    kwargs_in = data.get("additional_kwargs")
    if kwargs_in is None:
        kwargs_in = {}
    if not isinstance(kwargs_in, Mapping):
        raise DeserializationError(
            f"{where}: additional_kwargs must be an object, got {type(kwargs_in).__name__}",
            where=where,
        )
    return dict(kwargs_in)


def _blocks(data: Mapping[str, Any], where: str) -> list[Any]:
    """``data``'s blocks; a legacy ``content`` string is one text block."""
    if "blocks" in data:
        blocks = data["blocks"] if data["blocks"] is not None else []
    else:
        content = data.get("content")
        if content is None:
            blocks = []
        elif isinstance(content, str):
            blocks = [{"block_type": "text", "text": content}]
        else:
            blocks = content
    if not isinstance(blocks, list):
        raise DeserializationError(
            f"{where}: blocks must be a list, got {type(blocks).__name__}", where=where
        )
    return blocks


def _split_blocks(
    blocks: list[Any], where: str, report: ConversionReport | None
) -> tuple[list[BaseArtifact], list[ToolCall], list[dict[str, Any]], list[int]]:
    """The content parts, and the tool calls among the blocks: the calls, their blocks as
    given and their positions. A tool-call block that cannot be read stays a part."""
    parts: list[BaseArtifact] = []
    tool_calls: list[ToolCall] = []
    call_blocks: list[dict[str, Any]] = []
    positions: list[int] = []
    for index, block in enumerate(blocks):
        at = f"{where} block {index}"
        if not isinstance(block, Mapping) or not isinstance(block.get("block_type"), str):
            raise DeserializationError(
                f"{at}: a block must be an object with a string 'block_type', got {block!r:.80}",
                where=at,
            )
        if block["block_type"] == "tool_call":
            parsed = _parse_all([block], _tool_call_from_block)
            if parsed:
                tool_calls += parsed
                call_blocks.append(_jsonable(dict(block), at))
                positions.append(index)
                continue
            if report is not None:
                report.lost(
                    at, "ToolCallBlock", "no tool name or non-object arguments; kept verbatim"
                )
        parts.append(_part_from_block(block, at))
    return parts, tool_calls, call_blocks, positions


def _tool_calls_in_kwargs(
    extra_kwargs: dict[str, Any], li: dict[str, Any], where: str, report: ConversionReport | None
) -> list[ToolCall]:
    """The tool calls of ``additional_kwargs.tool_calls`` (taken out of ``extra_kwargs``,
    with what rebuilds them exactly noted in ``li``); none when their shape is unknown,
    and then they stay in ``extra_kwargs``."""
    entries = _jsonable(extra_kwargs["tool_calls"], f"{where} additional_kwargs.tool_calls")
    parsed = _parse_all(entries, _tool_call_from_entry)
    if parsed is None:
        if report is not None:
            report.lost(
                where, "additional_kwargs.tool_calls", "unknown shape; kept verbatim in meta"
            )
        return []
    del extra_kwargs["tool_calls"]
    li["tool_calls_in"] = "additional_kwargs"
    if [c.dict() for c in parsed] != entries:
        li["tool_calls"] = entries
    return parsed


def _pop_str(extra_kwargs: dict[str, Any], key: str) -> str | None:
    """``extra_kwargs[key]`` taken out when it is a str; any other value stays there."""
    value = extra_kwargs.pop(key, None)
    if value is not None and not isinstance(value, str):
        extra_kwargs[key] = value
        return None
    return value


def message_to_llamaindex_dict(
    message: Message, *, report: ConversionReport | None = None, where: str = "message"
) -> dict[str, Any]:
    """:class:`Message` → a dict that ``ChatMessage.model_validate`` accepts.

    Args:
        message: The message.
        report: Collects what a ``ChatMessage`` cannot carry.
        where: Label used in the report.

    Example:
        >>> message_to_llamaindex_dict(Message.user("hi"))
        {'role': 'user', 'additional_kwargs': {}, 'blocks': [{'block_type': 'text', 'text': 'hi'}]}
    """
    if not isinstance(message, Message):
        raise ValidationError(f"{where}: expected a Message, got {type(message).__name__}")
    li = _li_meta(message)
    role = li.get("role")
    if not (isinstance(role, str) and LLAMAINDEX_ROLES.get(role) == message.role):
        role = _PLAIN_ROLE[message.role]

    kwargs_out: dict[str, Any] = dict(li.get("additional_kwargs") or {})
    if message.tool_call_id is not None:
        kwargs_out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        kwargs_out["name"] = message.name

    blocks = [
        _block_from_part(part, f"{where} content[{i}]", report)
        for i, part in enumerate(message.content)
    ]
    calls = message.tool_calls
    if calls and li.get("tool_calls_in") == "additional_kwargs":
        stored = li.get("tool_calls")
        unchanged = isinstance(stored, list) and _parse_all(stored, _tool_call_from_entry) == calls
        kwargs_out["tool_calls"] = stored if unchanged else [c.dict() for c in calls]
    elif calls:
        stored = li.get("tool_call_blocks")
        call_blocks: list[dict[str, Any]] = [_tool_call_block(c) for c in calls]
        if isinstance(stored, list) and _parse_all(stored, _tool_call_from_block) == calls:
            call_blocks = stored
        positions = li.get("tool_call_positions")
        if (
            isinstance(positions, list)
            and len(positions) == len(call_blocks)
            and all(isinstance(p, int) for p in positions)
            and positions == sorted(positions)
            and positions[-1] < len(blocks) + len(call_blocks)
        ):
            for position, block in zip(positions, call_blocks, strict=True):
                blocks.insert(position, block)
        else:
            blocks.extend(call_blocks)

    if report is not None:
        dropped = sorted(k for k in message.meta if k != _KEY)
        if dropped:
            report.lost(where, f"meta keys {dropped}", "a ChatMessage has no place for them")
        report.converted += 1
    out: dict[str, Any] = {"role": role, "additional_kwargs": kwargs_out, "blocks": blocks}
    extra = li.get("extra")
    if isinstance(extra, Mapping):
        out.update({k: v for k, v in extra.items() if k not in out})
    return out


def messages_from_llamaindex_dicts(
    dicts: Sequence[Mapping[str, Any]], report: ConversionReport | None = None
) -> list[Message]:
    """A list of ``ChatMessage`` dicts → messages (see :func:`message_from_llamaindex_dict`).

    Example:
        >>> [m.role for m in messages_from_llamaindex_dicts(
        ...     [{"role": "developer", "blocks": []}, {"role": "chatbot", "blocks": []}])]
        ['system', 'assistant']
    """
    if isinstance(dicts, (str, bytes, Mapping)) or not isinstance(dicts, Sequence):
        raise DeserializationError(
            f"expected a list of ChatMessage dicts, got {type(dicts).__name__}"
        )
    if report is not None and not report.source:
        report.source, report.target = "llamaindex", "offprompt"
    return [
        message_from_llamaindex_dict(d, report=report, where=f"message {i}")
        for i, d in enumerate(dicts)
    ]


def messages_to_llamaindex_dicts(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Messages → ``ChatMessage`` dicts (see :func:`message_to_llamaindex_dict`).

    Example:
        >>> messages_to_llamaindex_dicts([Message.system("be brief")])[0]["role"]
        'system'
    """
    if report is not None and not report.source:
        report.source, report.target = "offprompt", "llamaindex"
    return [
        message_to_llamaindex_dict(m, report=report, where=f"message {i}")
        for i, m in enumerate(messages)
    ]


# -- SimpleChatStore files --------------------------------------------------------------


def read_simple_chat_store(
    source: str | os.PathLike[str] | Mapping[str, Any], report: ConversionReport | None = None
) -> dict[str, list[Message]]:
    """Read the sessions of a ``SimpleChatStore.persist()`` file (or its parsed JSON).

    The file is ``{"store": {key: [ChatMessage dict, ...]}, "class_name": "SimpleChatStore"}``;
    a JSON string holding that document (what some older versions wrote) is read too.

    Args:
        source: A path to the file, or the already-parsed document.
        report: Collects what could not be understood; item labels name the session.

    Returns:
        Session key → messages, in file order.

    Raises:
        NotFoundError: The path does not exist.
        StorageError: The path cannot be read.
        DeserializationError: The file is not a SimpleChatStore document.

    Example:
        >>> read_simple_chat_store({"store": {"s1": [{"role": "user", "blocks": []}]}})["s1"][0].role
        'user'
    """
    if isinstance(source, Mapping):
        document: Any = source
    else:
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no SimpleChatStore file at {path}", path=str(path)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StorageError(f"cannot read SimpleChatStore file {path}: {exc}") from None
        document = loads_json(text, what=f"SimpleChatStore file {path}")
        if isinstance(document, str):
            document = loads_json(document, what=f"SimpleChatStore file {path}")
    if not isinstance(document, Mapping) or not isinstance(document.get("store"), Mapping):
        raise DeserializationError(
            "not a SimpleChatStore document: expected a JSON object with a 'store' object"
        )
    class_name = document.get("class_name", "SimpleChatStore")
    if class_name != "SimpleChatStore":
        raise DeserializationError(f"not a SimpleChatStore document: class_name {class_name!r}")
    if report is not None and not report.source:
        report.source, report.target = "llamaindex SimpleChatStore", "offprompt"
    sessions: dict[str, list[Message]] = {}
    for key, dicts in document["store"].items():
        if not isinstance(dicts, list):
            raise DeserializationError(
                f"session {key!r}: expected a list of messages, got {type(dicts).__name__}"
            )
        sessions[key] = [
            message_from_llamaindex_dict(d, report=report, where=f"session {key!r} / message {i}")
            for i, d in enumerate(dicts)
        ]
    return sessions


def simple_chat_store_dict(
    sessions: Mapping[str, Sequence[Message]], report: ConversionReport | None = None
) -> dict[str, Any]:
    """The document ``SimpleChatStore.persist()`` writes, for these sessions.

    Example:
        >>> simple_chat_store_dict({"s1": []})
        {'store': {'s1': []}, 'class_name': 'SimpleChatStore'}
    """
    if not isinstance(sessions, Mapping):
        raise ValidationError(f"sessions must be a mapping, got {type(sessions).__name__}")
    if report is not None and not report.source:
        report.source, report.target = "offprompt", "llamaindex SimpleChatStore"
    store: dict[str, list[dict[str, Any]]] = {}
    for key, messages in sessions.items():
        if not isinstance(key, str):
            raise ValidationError(f"session keys must be strings, got {key!r}")
        store[key] = [
            message_to_llamaindex_dict(m, report=report, where=f"session {key!r} / message {i}")
            for i, m in enumerate(messages)
        ]
    return {"store": store, "class_name": "SimpleChatStore"}


def write_simple_chat_store(
    sessions: Mapping[str, Sequence[Message]],
    path: str | os.PathLike[str],
    report: ConversionReport | None = None,
) -> Path:
    """Write sessions as a file ``SimpleChatStore.from_persist_path`` loads.

    The file is replaced atomically (temporary file in the same directory, fsync,
    rename): a reader sees the old file or the new one, never half of one. Parent
    directories are created. The whole document is built before anything is written,
    so bad input leaves an existing file untouched.

    Args:
        sessions: Session key → messages. Every session in the file is replaced.
        path: Where to write.
        report: Collects what a ``ChatMessage`` cannot carry.

    Returns:
        The path written.

    Raises:
        ValidationError: A key is not a string or an item is not a :class:`Message`.
        StorageError: The file cannot be written.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "chat_store.json"
        >>> _ = write_simple_chat_store({"s1": [Message.user("hi")]}, p)
        >>> read_simple_chat_store(p)["s1"][0].text
        'hi'
    """
    document = simple_chat_store_dict(sessions, report)
    # Compact and non-ASCII as-is, like pydantic's model_dump_json that persist() uses.
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise StorageError(f"cannot write SimpleChatStore file {target}: {exc}") from None
    return target
