"""LangChain message dicts (the ``messages_to_dict`` shape), in and out. Never imports LangChain.

The shape is what ``langchain_core.messages.messages_to_dict`` writes (langchain-core 1.x):
a list of ``{"type": <message type>, "data": <the message's model_dump()>}``. Every
message type is covered: ``human``, ``ai``, ``system``, ``tool``, ``chat``, ``function``
and their chunk variants (``AIMessageChunk``, ``HumanMessageChunk``, ...).

Mapping to offprompt roles: ``human`` → user, ``ai`` → assistant, ``system`` → system,
``tool`` → tool, ``function`` → tool (the function's name in ``Message.name``, no
``tool_call_id``), ``chat`` → by its ``role`` (``user``/``human``, ``assistant``/``ai``,
``system``/``developer``, ``tool``/``function``; any other role → user).

Content parts:

* text blocks and bare strings → ``TextArtifact``;
* inline data (``image_url`` data URLs, v1 ``{"type": "image", "base64": ...}`` blocks,
  v0 ``source_type="base64"`` blocks, Anthropic ``source`` blocks, OpenAI
  ``input_audio`` / ``file`` blocks) → ``ImageArtifact`` for images pillow can read, else
  ``BlobArtifact``, so other frameworks can use the bytes;
* everything else (reasoning, ``tool_call`` blocks, citations, non-standard blocks, and
  images given by URL, which are never downloaded) → a ``JsonArtifact`` holding the block
  verbatim. An image given by URL also gets ``meta["image_url"]`` (see
  :data:`IMAGE_URL_META`), the framework-neutral way to say "an image at this URL".

What a ``Message`` has no field for (the LangChain type, ``additional_kwargs``,
``response_metadata``, ``invalid_tool_calls``, ``usage_metadata``, a tool message's
``status`` and ``artifact``, chunk fields, a chat message's custom ``role``, the exact
block layout) rides in a reserved ``meta["_langchain"]`` entry on the message and on each
part, and is restored on export. LangChain → ``Message`` → LangChain gives back an equal
dict; so does the same path through ``Message.to_dict()`` and JSON, which is what the
stores do. A LangChain message id becomes ``Message.id`` when it has one.

Exporting a message that did not come from LangChain picks the plain type for its role
and standard v1 content blocks (``{"type": "image", "base64": ..., "mime_type": ...}``).
What LangChain cannot carry (tool calls on a non-assistant message, artifacts with no
content-block equivalent, foreign ``meta``) is listed in the :class:`ConversionReport`
when one is given; artifacts without a block equivalent are sent as their text.

Example:
    >>> data = [{"type": "human", "data": {"content": "hi", "id": "m1"}}]
    >>> [m.role for m in messages_from_langchain_dicts(data)]
    ['user']
    >>> messages_to_langchain_dicts(messages_from_langchain_dicts(data))[0]["data"]["content"]
    'hi'
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from offprompt._validation import ensure_json
from offprompt.artifacts import (
    BaseArtifact,
    BlobArtifact,
    ImageArtifact,
    JsonArtifact,
    TextArtifact,
)
from offprompt.errors import (
    DeserializationError,
    SerializationError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "IMAGE_URL_META",
    "LANGCHAIN_TYPES",
    "message_from_langchain_dict",
    "message_to_langchain_dict",
    "messages_from_langchain_dicts",
    "messages_to_langchain_dicts",
]

#: Reserved key in ``Message.meta`` and artifact ``meta`` holding LangChain-only details.
_RESERVED = "_langchain"
#: ``meta`` key naming the URL of an image part that is not stored inline.
IMAGE_URL_META = "image_url"

_MISSING: Any = object()

_ROLE_OF_TYPE: dict[str, str | None] = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessageChunk": "tool",
    "chat": None,  # decided by the message's ``role``
    "ChatMessageChunk": None,
}
#: The LangChain message types this module reads and writes.
LANGCHAIN_TYPES: tuple[str, ...] = tuple(_ROLE_OF_TYPE)
_TYPE_OF_ROLE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
_CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}

_COMMON_DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "name": None,
    "id": None,
}
_AI_DEFAULTS: dict[str, Any] = {"tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None}
_TOOL_DEFAULTS: dict[str, Any] = {"artifact": None, "status": "success"}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "human": {},
    "HumanMessageChunk": {},
    "system": {},
    "SystemMessageChunk": {},
    "ai": _AI_DEFAULTS,
    "AIMessageChunk": {**_AI_DEFAULTS, "tool_call_chunks": [], "chunk_position": None},
    "tool": _TOOL_DEFAULTS,
    "ToolMessageChunk": _TOOL_DEFAULTS,
    "chat": {},
    "ChatMessageChunk": {},
    "function": {},
    "FunctionMessageChunk": {},
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "tool": ("tool_call_id",),
    "ToolMessageChunk": ("tool_call_id",),
    "chat": ("role",),
    "ChatMessageChunk": ("role",),
    "function": ("name",),
    "FunctionMessageChunk": ("name",),
}
_INLINE_KINDS = {"image", "audio", "video", "file"}


# -- LangChain -> Message ---------------------------------------------------------------


def messages_from_langchain_dicts(
    dicts: Sequence[Mapping[str, Any]], report: ConversionReport | None = None
) -> list[Message]:
    """Turn ``messages_to_dict`` output into offprompt messages.

    Args:
        dicts: ``[{"type": ..., "data": {...}}, ...]`` as LangChain writes them.
        report: If given, values that are not JSON (and so cannot be stored) are dropped
            and listed here; without it they raise :class:`SerializationError`.

    Returns:
        One :class:`Message` per dict, in order.

    Raises:
        DeserializationError: A dict is malformed (no ``type``/``data``, bad content).
        UnknownTypeError: ``type`` is no LangChain message type.
        SerializationError: A field holds a non-JSON value and no ``report`` was given.

    Example:
        >>> msgs = messages_from_langchain_dicts(
        ...     [{"type": "ai", "data": {"content": "4", "tool_calls": []}}]
        ... )
        >>> msgs[0].role, msgs[0].text
        ('assistant', '4')
    """
    if isinstance(dicts, (str, bytes, Mapping)) or not isinstance(dicts, Sequence):
        raise DeserializationError(
            f"LangChain messages must be a list of dicts, got {type(dicts).__name__}"
        )
    _begin(report, "langchain", "offprompt")
    return [
        message_from_langchain_dict(item, report, where=f"message {index}")
        for index, item in enumerate(dicts)
    ]


def message_from_langchain_dict(
    item: Mapping[str, Any],
    report: ConversionReport | None = None,
    *,
    where: str = "message",
) -> Message:
    """Turn one ``message_to_dict`` dict into a :class:`Message`.

    Args:
        item: ``{"type": ..., "data": {...}}``.
        report: See :func:`messages_from_langchain_dicts`.
        where: How errors and losses name this message.

    Example:
        >>> message_from_langchain_dict({"type": "human", "data": {"content": "hi"}}).text
        'hi'
    """
    type_, data = _split(item, where)
    full = {
        "content": data.get("content", _MISSING),
        **_COMMON_DEFAULTS,
        **_DEFAULTS[type_],
        **data,
        "type": type_,
    }
    if full["content"] is _MISSING:
        raise DeserializationError(f"LangChain {where} ({type_}) has no 'content'", where=where)
    for key in _REQUIRED.get(type_, ()):
        if not isinstance(full.get(key), str):
            raise DeserializationError(
                f"LangChain {where} ({type_}) needs a string {key!r}, got {full.get(key)!r}",
                where=where,
            )

    fields: dict[str, Any] = {}
    for key, value in full.items():
        if key in ("content", "type", "name", "id", "tool_call_id") or (
            key == "tool_calls" and _ROLE_OF_TYPE[type_] == "assistant"
        ):
            continue
        default = _DEFAULTS[type_].get(key, _COMMON_DEFAULTS.get(key, _MISSING))
        if default is not _MISSING and _same(value, default):
            continue
        fields[key] = value
    dropped = _json_fields(fields, report, where)

    message = _build_message(type_, full, fields, where)
    # Verify: what the export would write must equal the input. Anything the fields of
    # a Message could not carry exactly (a tool call without id, odd content) is kept
    # verbatim instead, so the round trip is lossless by construction.
    exported = message_to_langchain_dict(message)["data"]
    mismatched = [
        k for k in full if k not in dropped and not _same(exported.get(k, _MISSING), full[k])
    ]
    if mismatched:
        for key in mismatched:
            fields[key] = full[key]
        _json_fields(fields, report, where)
        message = _build_message(type_, full, fields, where)
        exported = message_to_langchain_dict(message)["data"]
        still = [k for k in full if k in fields and not _same(exported.get(k, _MISSING), full[k])]
        for key in still:
            reason = "its value changes when stored as JSON (e.g. non-string dict keys)"
            if report is None:
                raise SerializationError(
                    f"LangChain {where}: {key!r} cannot be stored losslessly: {reason}",
                    field=key,
                )
            report.lost(where, key, reason)
    if report is not None:
        report.converted += 1
    return message


def _split(item: Mapping[str, Any], where: str) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(item, Mapping):
        raise DeserializationError(
            f"LangChain {where} must be a dict with 'type' and 'data', got {type(item).__name__}",
            where=where,
        )
    type_ = item.get("type")
    data = item.get("data")
    if type_ == "remove":
        raise ValidationError(
            f"LangChain {where} is a RemoveMessage: an instruction to delete a message "
            "from a LangGraph state, not a chat message",
            where=where,
        )
    if not isinstance(type_, str) or type_ not in _ROLE_OF_TYPE:
        raise UnknownTypeError(
            f"LangChain {where} has unknown type {type_!r}; known: {', '.join(LANGCHAIN_TYPES)}",
            type=type_,
        )
    if not isinstance(data, Mapping):
        raise DeserializationError(
            f"LangChain {where} ({type_}) needs a 'data' dict, got {type(data).__name__}",
            where=where,
        )
    inner = data.get("type", type_)
    if inner != type_:
        raise DeserializationError(
            f"LangChain {where}: type {type_!r} but data.type {inner!r}", where=where
        )
    return type_, data


def _build_message(
    type_: str, full: Mapping[str, Any], fields: Mapping[str, Any], where: str
) -> Message:
    role = _ROLE_OF_TYPE[type_]
    if role is None:
        role = _CHAT_ROLES.get(full["role"], "user")
    tool_calls: list[ToolCall] = []
    if _ROLE_OF_TYPE[type_] == "assistant":
        tool_calls = _tool_calls_in(full.get("tool_calls"), where)
    # Parts and tool calls are built even when ``fields`` keeps the verbatim original,
    # so other frameworks still see the text, images and calls.
    content = _content_in(full["content"], where)
    lc_id = full.get("id")
    extra: dict[str, Any] = {"id": lc_id} if _id_marker(lc_id) else {}
    meta = {_RESERVED: {"type": type_, "fields": dict(fields), **extra}}
    if isinstance(full["content"], list):
        meta[_RESERVED]["list"] = True
    try:
        return Message(
            **({"id": lc_id} if isinstance(lc_id, str) and lc_id else {}),
            role=role,
            content=content,
            tool_calls=tool_calls,
            tool_call_id=full.get("tool_call_id") if role == "tool" else None,
            name=full.get("name"),
            meta=meta,
        )
    except ValidationError as exc:
        raise DeserializationError(f"LangChain {where} ({type_}): {exc}", where=where) from None


def _id_marker(lc_id: Any) -> bool:
    """Whether the LangChain id cannot be ``Message.id`` and must be kept in meta."""
    return not (isinstance(lc_id, str) and lc_id)


def _tool_calls_in(raw: Any, where: str) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DeserializationError(
            f"LangChain {where}: tool_calls must be a list, got {type(raw).__name__}",
            where=where,
        )
    calls: list[ToolCall] = []
    for index, call in enumerate(raw):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise DeserializationError(
                f"LangChain {where}: tool_calls[{index}] must be a dict with a 'name', got {call!r}",
                where=where,
            )
        if not call["name"]:
            # A streamed AIMessageChunk may hold a call whose name has not arrived yet. A
            # ToolCall needs a name; the verbatim list in meta keeps it.
            continue
        try:
            calls.append(
                ToolCall(
                    id=call.get("id") or "",
                    name=call["name"],
                    arguments=call.get("args") or {},
                )
            )
        except ValidationError as exc:
            raise DeserializationError(
                f"LangChain {where}: tool_calls[{index}]: {exc}", where=where
            ) from None
    return calls


def _content_in(content: Any, where: str) -> list[BaseArtifact]:
    if isinstance(content, str):
        return [TextArtifact(value=content)] if content else []
    if not isinstance(content, list):
        raise DeserializationError(
            f"LangChain {where}: content must be a string or a list, got {type(content).__name__}",
            where=where,
        )
    parts: list[BaseArtifact] = []
    for index, block in enumerate(content):
        if isinstance(block, str):
            parts.append(TextArtifact(value=block, meta={_RESERVED: {"str": True}}))
        elif isinstance(block, Mapping):
            parts.append(_block_in(dict(block), f"{where} content[{index}]"))
        else:
            raise DeserializationError(
                f"LangChain {where}: content[{index}] must be a string or a dict, "
                f"got {type(block).__name__}",
                where=where,
            )
    return parts


def _block_in(block: dict[str, Any], where: str) -> BaseArtifact:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        template = {k: v for k, v in block.items() if k != "text"}
        return TextArtifact(value=block["text"], meta=_part_meta(template, ["text"], where))
    inline = _inline_data(block)
    if inline is not None:
        path, encoding, mime = inline
        part = _inline_part(block, path, encoding, mime, where)
        if part is not None:
            return part
    meta: dict[str, Any] = {_RESERVED: {"raw": True}}
    url = _image_url(block)
    if url is not None:
        meta[IMAGE_URL_META] = url
    try:
        return JsonArtifact(value=block, meta=meta)
    except SerializationError as exc:
        raise SerializationError(f"LangChain {where}: the block is not JSON: {exc}") from None


def _inline_data(block: Mapping[str, Any]) -> tuple[list[str], str, str] | None:
    """Where a block keeps inline base64 data: (path, "base64" | "data_url", mime type)."""
    kind = block.get("type")
    mime = block.get("mime_type") if isinstance(block.get("mime_type"), str) else ""
    if kind == "image_url":
        inner = block.get("image_url")
        if isinstance(inner, Mapping) and _is_data_url(inner.get("url")):
            return ["image_url", "url"], "data_url", ""
        if _is_data_url(inner):
            return ["image_url"], "data_url", ""
        return None
    if kind in _INLINE_KINDS:
        if "source_type" in block:  # LangChain v0 multimodal block
            if block.get("source_type") == "base64" and isinstance(block.get("data"), str):
                return ["data"], "base64", mime or ""
            return None
        if isinstance(block.get("base64"), str):
            return ["base64"], "base64", mime or ""
        if _is_data_url(block.get("url")):
            return ["url"], "data_url", ""
        source = block.get("source")
        if (
            isinstance(source, Mapping)
            and source.get("type") == "base64"
            and isinstance(source.get("data"), str)
        ):
            media = source.get("media_type")
            return ["source", "data"], "base64", media if isinstance(media, str) else ""
        file = block.get("file")
        if kind == "file" and isinstance(file, Mapping) and _is_data_url(file.get("file_data")):
            return ["file", "file_data"], "data_url", ""
        return None
    if kind == "input_audio":
        audio = block.get("input_audio")
        if isinstance(audio, Mapping) and isinstance(audio.get("data"), str):
            fmt = audio.get("format")
            return ["input_audio", "data"], "base64", f"audio/{fmt}" if isinstance(fmt, str) else ""
    return None


def _is_data_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("data:") and ";base64," in value


def _image_url(block: Mapping[str, Any]) -> str | None:
    kind = block.get("type")
    if kind == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        return url if isinstance(url, str) else None
    if kind == "image":
        if block.get("source_type") == "url" and isinstance(block.get("url"), str):
            return str(block["url"])
        if "source_type" not in block and isinstance(block.get("url"), str):
            return str(block["url"])
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("type") == "url":
            url = source.get("url")
            return url if isinstance(url, str) else None
    return None


def _inline_part(
    block: dict[str, Any], path: list[str], encoding: str, mime: str, where: str
) -> BaseArtifact | None:
    """The block's data as an Image/BlobArtifact, or None if it would not round-trip."""
    raw = _get_path(block, path)
    prefix = ""
    if encoding == "data_url":
        head, _, raw = raw.partition(";base64,")
        prefix = head + ";base64,"
        mime = mime or head[len("data:") :].split(";")[0]
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(data).decode("ascii") != raw:
        return None  # non-canonical base64: only the verbatim block round-trips
    template = copy.deepcopy(block)
    _set_path(template, path, None)
    meta = _part_meta(template, path, where)
    if prefix:
        meta[_RESERVED]["prefix"] = prefix
    kind = block.get("type")
    if kind in ("image", "image_url") or mime.startswith("image/"):
        try:
            return ImageArtifact(value=data, meta=meta)
        except ValidationError:
            if kind in ("image", "image_url"):
                return None  # unreadable image bytes: keep the block as it is
    return BlobArtifact(value=data, mime_type=mime or "application/octet-stream", meta=meta)


def _part_meta(template: dict[str, Any], path: list[str], where: str) -> dict[str, Any]:
    try:
        return {_RESERVED: {"block": ensure_json(template, field=where), "path": path}}
    except SerializationError as exc:
        raise SerializationError(f"LangChain {where}: the block is not JSON: {exc}") from None


def _get_path(block: Mapping[str, Any], path: list[str]) -> Any:
    value: Any = block
    for key in path:
        value = value[key]
    return value


def _set_path(block: dict[str, Any], path: list[str], value: Any) -> None:
    target = block
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _json_fields(fields: dict[str, Any], report: ConversionReport | None, where: str) -> set[str]:
    """Normalise ``fields`` through JSON; return the keys dropped (reported) as non-JSON."""
    dropped: set[str] = set()
    for key in list(fields):
        try:
            fields[key] = ensure_json(fields[key], field=key)
        except SerializationError as exc:
            if report is None:
                raise SerializationError(
                    f"LangChain {where}: {key!r} is not JSON-serialisable and cannot be "
                    f"stored ({exc}); pass a ConversionReport to drop it instead",
                    field=key,
                ) from None
            report.lost(where, key, f"not JSON-serialisable: {exc}")
            del fields[key]
            dropped.add(key)
    return dropped


def _same(a: Any, b: Any) -> bool:
    """Equality that also tells ``1`` from ``True`` and ``1.0`` (JSON keeps them apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# -- Message -> LangChain ---------------------------------------------------------------


def messages_to_langchain_dicts(
    messages: Sequence[Message], report: ConversionReport | None = None
) -> list[dict[str, Any]]:
    """Turn offprompt messages into ``messages_to_dict`` output.

    Messages that came from LangChain come back exactly as they were; others get the
    plain type for their role and standard content blocks.

    Args:
        messages: The messages, in order.
        report: Collects what LangChain cannot carry (see the module docstring).

    Returns:
        ``[{"type": ..., "data": {...}}, ...]``, ready for ``messages_from_dict``.

    Example:
        >>> messages_to_langchain_dicts([Message.user("hi")])[0]["type"]
        'human'
    """
    _begin(report, "offprompt", "langchain")
    return [
        message_to_langchain_dict(m, report, where=f"message {i}") for i, m in enumerate(messages)
    ]


def message_to_langchain_dict(
    message: Message, report: ConversionReport | None = None, *, where: str = "message"
) -> dict[str, Any]:
    """Turn one :class:`Message` into a ``message_to_dict`` dict.

    Example:
        >>> message_to_langchain_dict(Message.assistant("ok"))["data"]["tool_calls"]
        []
    """
    if not isinstance(message, Message):
        raise ValidationError(f"{where} must be a Message, got {type(message).__name__}")
    raw_reserved = message.meta.get(_RESERVED)
    reserved: Mapping[str, Any] = raw_reserved if isinstance(raw_reserved, Mapping) else {}
    type_ = str(reserved.get("type", ""))
    native = type_ in _ROLE_OF_TYPE and _role_matches(type_, reserved, message.role)
    if native:
        fields: Mapping[str, Any] = reserved.get("fields") or {}
        lc_id = reserved.get("id", message.id)
        list_content = bool(reserved.get("list"))
    else:
        native, fields, lc_id, list_content = False, {}, message.id, False
        type_ = _TYPE_OF_ROLE[message.role]
        if message.role == "tool" and message.tool_call_id is None:
            if message.name:
                type_ = "function"
            elif report is not None:
                report.lost(where, "tool_call_id", "a LangChain ToolMessage needs one; '' used")
        if report is not None:
            for key in message.meta:
                if key != _RESERVED:
                    report.lost(where, f"meta[{key!r}]", "LangChain messages have no such field")

    data: dict[str, Any] = {
        "content": fields["content"]
        if "content" in fields
        else _content_out(message.content, list_content, native, report, where),
        **copy.deepcopy(_COMMON_DEFAULTS),
        "type": type_,
        "name": message.name,
        "id": lc_id,
    }
    data.update(copy.deepcopy(_DEFAULTS[type_]))
    if _ROLE_OF_TYPE[type_] == "assistant":
        data["tool_calls"] = [
            {"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
    elif message.tool_calls and report is not None:
        report.lost(where, "tool_calls", f"a LangChain {type_!r} message cannot carry tool calls")
    if type_ in ("tool", "ToolMessageChunk"):
        data["tool_call_id"] = message.tool_call_id or ""
    for key, value in fields.items():
        data[key] = copy.deepcopy(value)
    if report is not None:
        report.converted += 1
    return {"type": type_, "data": data}


def _role_matches(type_: str, reserved: Mapping[str, Any], role: str) -> bool:
    expected = _ROLE_OF_TYPE[type_]
    if expected is None:
        chat_role = (reserved.get("fields") or {}).get("role")
        expected = _CHAT_ROLES.get(chat_role, "user") if isinstance(chat_role, str) else None
    return expected == role


def _content_out(
    parts: Sequence[BaseArtifact],
    list_content: bool,
    native: bool,
    report: ConversionReport | None,
    where: str,
) -> str | list[Any]:
    plain_text = all(isinstance(p, TextArtifact) and _RESERVED not in p.meta for p in parts)
    if plain_text and not list_content and (native or len(parts) <= 1):
        return "".join(p.value for p in parts if isinstance(p, TextArtifact))
    return [_block_out(part, report, f"{where} content[{i}]") for i, part in enumerate(parts)]


def _block_out(part: BaseArtifact, report: ConversionReport | None, where: str) -> Any:
    reserved = part.meta.get(_RESERVED)
    if isinstance(reserved, Mapping):
        if reserved.get("str") and isinstance(part, TextArtifact):
            return part.value
        if reserved.get("raw") and isinstance(part, JsonArtifact):
            return copy.deepcopy(part.value)
        template, path = reserved.get("block"), reserved.get("path")
        if isinstance(template, dict) and isinstance(path, list) and path:
            block = copy.deepcopy(template)
            if isinstance(part, TextArtifact):
                _set_path(block, path, part.value)
                return block
            if isinstance(part, BlobArtifact):
                _set_path(block, path, str(reserved.get("prefix", "")) + part.base64)
                return block
    if isinstance(part, TextArtifact):
        return {"type": "text", "text": part.value}
    if isinstance(part, ImageArtifact):
        return {"type": "image", "base64": part.base64, "mime_type": part.mime_type}
    if isinstance(part, BlobArtifact):
        major = part.mime_type.split("/")[0]
        kind = major if major in ("audio", "video") else "file"
        return {"type": kind, "base64": part.base64, "mime_type": part.mime_type}
    url = part.meta.get(IMAGE_URL_META)
    if isinstance(url, str):
        return {"type": "image", "url": url}
    if report is not None:
        report.lost(where, type(part).__name__, "no LangChain content block; sent as its text")
    return {"type": "text", "text": part.to_text()}


def _begin(report: ConversionReport | None, source: str, target: str) -> None:
    if report is not None:
        report.source = report.source or source
        report.target = report.target or target
