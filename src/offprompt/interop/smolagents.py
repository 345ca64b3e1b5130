"""smolagents step dicts (``AgentMemory.get_full_steps()``), in and out.

smolagents keeps a run in memory as step objects; ``get_full_steps()`` turns them into
plain dicts, one per step, told apart by their keys (``task``, ``plan``,
``step_number``, ``output``, ``system_prompt``). Messages inside steps are smolagents
``ChatMessage`` dicts (``role`` may be ``tool-call`` / ``tool-response``; ``content`` a
string, ``None`` or a list of ``{"type": "text" | "image", ...}`` blocks). Images are
pillow images in memory; in JSON files they may be data URLs or base64 strings.

Importing gives an :class:`offprompt.steps.AgentMemory`. Everything a ChatMessage holds
that offprompt's :class:`~offprompt.messages.Message` has no field for (the original
role, content form, ``raw``, ``token_usage``, code-string tool arguments) rides in
``meta["smolagents"]`` and is restored on export, so smolagents → offprompt → smolagents
gives back equal dicts. ``raw`` (a provider response) is kept only if it is JSON;
otherwise the report lists it.

smolagents' own ``ActionStep.dict()`` is lossy for images: observation images become
``image.tobytes()`` (raw pixels without size or mode) and images inside messages become
a dict of the pillow object's internals. Neither can be turned back into an image; the
importer lists each one in the report and leaves it out. Task images (kept as pillow
images) and images given as pillow objects, encoded bytes, data URLs or base64 import
fully, and :func:`steps_to_smolagents` exports images as pillow images or data URLs.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from offprompt._validation import loads_json
from offprompt.artifacts import BaseArtifact, ImageArtifact, JsonArtifact, TextArtifact
from offprompt.errors import (
    DeserializationError,
    OffpromptError,
    SerializationError,
    UnknownTypeError,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall
from offprompt.steps import (
    ActionStep,
    AgentMemory,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
    SystemPromptStep,
    TaskStep,
)

__all__ = [
    "chat_message_from_smolagents",
    "chat_message_to_smolagents",
    "steps_from_smolagents",
    "steps_to_smolagents",
]

_KEY = "smolagents"
_ROLES = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "tool-call": "assistant",
    "tool-response": "user",
}
#: The key that tells each step dict's type, in the order they are checked.
_STEP_KEYS: tuple[tuple[str, type[MemoryStep]], ...] = (
    ("step_number", ActionStep),
    ("plan", PlanningStep),
    ("task", TaskStep),
    ("system_prompt", SystemPromptStep),
    ("output", FinalAnswerStep),
)
_IMAGE_FIELDS = {"task_images", "observations_images"}


class _UnrecoverableImage(Exception):
    """smolagents wrote an image in a form that holds no decodable picture."""


def _image_in(value: Any, where: str) -> ImageArtifact:
    if isinstance(value, ImageArtifact):
        return value
    if hasattr(value, "save") and hasattr(value, "mode"):  # a pillow image
        return ImageArtifact.from_pil(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return ImageArtifact(value=bytes(value))
        except OffpromptError:
            raise _UnrecoverableImage(
                "raw pixel bytes without size or mode (smolagents writes image.tobytes())"
            ) from None
    if isinstance(value, Mapping) and value.get("_type") == "Image":
        raise _UnrecoverableImage(
            "a dict of a pillow image's internals (smolagents' make_json_serializable)"
        )
    if isinstance(value, str):
        data = value.split(",", 1)[1] if value.startswith("data:") else value
        try:
            return ImageArtifact(value=base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError, OffpromptError):
            pass
    if isinstance(value, Mapping) and value.get("type") == "ImageArtifact":
        return ImageArtifact.from_dict(value)
    raise DeserializationError(
        f"{where}: not an image (pillow image, bytes, data URL or base64 expected), got "
        f"{type(value).__name__}: {str(value)[:60]}"
    )


def _report_image(report: ConversionReport | None, where: str, lost: _UnrecoverableImage) -> None:
    if report is None:
        raise DeserializationError(
            f"{where}: image cannot be read back: {lost}; pass a ConversionReport to import the rest"
        )
    report.lost(where, "image", str(lost))


def _image_out(image: ImageArtifact, images: str) -> Any:
    # copy(): a plain Image, as smolagents holds, not the PngImageFile decoding made
    return image.to_pil().copy() if images == "pil" else image.to_data_url()


def chat_message_from_smolagents(
    data: Mapping[str, Any], report: ConversionReport | None = None, *, where: str = "message"
) -> Message:
    """One smolagents ``ChatMessage`` dict as a :class:`Message` (see module docs)."""
    if not isinstance(data, Mapping) or "role" not in data:
        raise DeserializationError(f"{where}: a smolagents ChatMessage dict needs a 'role'")
    role = str(getattr(data["role"], "value", data["role"]))
    if role not in _ROLES:
        raise DeserializationError(
            f"{where}: unknown smolagents role {role!r}; expected one of {', '.join(_ROLES)}"
        )
    extra: dict[str, Any] = {"role": role}
    extra["content"], parts = _content_in(data.get("content"), where, report)
    raw_calls = data.get("tool_calls")
    extra["tool_calls"] = None if raw_calls is None else copy.deepcopy(list(raw_calls))
    calls = [] if raw_calls is None else [_tool_call_in(c, i) for i, c in enumerate(raw_calls)]
    for key in ("raw", "token_usage"):
        value = data.get(key)
        if value is None:
            continue
        try:
            json.dumps(value, allow_nan=False)
            extra[key] = value
        except (TypeError, ValueError):
            if report is not None:
                report.lost(
                    where,
                    key,
                    "not JSON-serialisable; smolagents keeps the provider's raw object here",
                )
    return Message(role=_ROLES[role], content=parts, tool_calls=calls, meta={_KEY: extra})


def _content_in(
    content: Any, where: str, report: ConversionReport | None
) -> tuple[str, list[BaseArtifact]]:
    """The form of a smolagents content (``"none"``, ``"str"`` or ``"list"``, so the
    export gives it back as it was) and its parts."""
    if content is None:
        return "none", []
    if isinstance(content, str):
        return "str", [TextArtifact(value=content)]
    if not isinstance(content, list):
        raise DeserializationError(
            f"{where}: content must be a string, a list or None, got {type(content).__name__}"
        )
    parts: list[BaseArtifact] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and set(block) == {"type", "text"}:
            parts.append(TextArtifact(value=str(block["text"])))
        elif kind == "image" and set(block) == {"type", "image"}:
            try:
                parts.append(_image_in(block["image"], f"{where} content[{index}]"))
            except _UnrecoverableImage as lost:
                _report_image(report, f"{where} content[{index}]", lost)
        else:
            try:
                parts.append(JsonArtifact(value=block, meta={_KEY: "block"}))
            except OffpromptError as exc:
                raise DeserializationError(f"{where} content[{index}]: {exc}") from None
    return "list", parts


def _tool_call_in(call: Mapping[str, Any], index: int) -> ToolCall:
    """One smolagents tool call; arguments that are no JSON object are wrapped in one."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else {"code": arguments}
    elif not isinstance(arguments, dict):
        arguments = {"value": arguments}
    return ToolCall(
        id=str(call.get("id") or f"call_{index}"),
        name=str(function.get("name")),
        arguments=arguments,
    )


def chat_message_to_smolagents(
    message: Message,
    *,
    images: str = "pil",
    report: ConversionReport | None = None,
    where: str = "message",
) -> dict[str, Any]:
    """A :class:`Message` as a smolagents ``ChatMessage`` dict (inverse of the import)."""
    extra = dict(message.meta.get(_KEY) or {})
    role = extra.get("role") or message.role
    if role == "tool":
        role = "tool-response"
    form = extra.get("content") or (
        "str"
        if len(message.content) == 1 and isinstance(message.content[0], TextArtifact)
        else "list"
    )
    content: Any
    if form == "none":
        content = None
    elif form == "str":
        content = message.text
    else:
        content = []
        for part in message.content:
            if isinstance(part, TextArtifact):
                content.append({"type": "text", "text": part.value})
            elif isinstance(part, ImageArtifact):
                content.append({"type": "image", "image": _image_out(part, images)})
            elif isinstance(part, JsonArtifact) and part.meta.get(_KEY) == "block":
                content.append(copy.deepcopy(part.value))
            else:
                content.append({"type": "text", "text": part.to_text()})
                if report is not None:
                    report.lost(
                        where,
                        f"{part.type} part",
                        "smolagents messages hold text and images; sent as text",
                    )
    if "tool_calls" in extra:
        tool_calls = copy.deepcopy(extra["tool_calls"])
    else:
        tool_calls = [call.dict() for call in message.tool_calls] or None
    return {
        "role": role,
        "content": content,
        "tool_calls": tool_calls,
        "raw": extra.get("raw"),
        "token_usage": extra.get("token_usage"),
    }


def _step_kind(data: Mapping[str, Any], where: str) -> type[MemoryStep]:
    if isinstance(data.get("type"), str):
        known = MemoryStep.registered_types()
        if data["type"] not in known:
            raise UnknownTypeError(
                f"{where}: unknown step type {data['type']!r}; known types: {', '.join(sorted(known))}"
            )
        return known[data["type"]]
    for key, cls in _STEP_KEYS:
        if key in data:
            return cls
    raise DeserializationError(
        f"{where}: cannot tell the step type from its keys {sorted(data)}; expected one of "
        + ", ".join(key for key, _ in _STEP_KEYS)
    )


def steps_from_smolagents(
    steps: Sequence[Mapping[str, Any]] | str | bytes,
    *,
    system_prompt: str = "",
    report: ConversionReport | None = None,
) -> AgentMemory:
    """Read ``get_full_steps()`` output (dicts, or their JSON) into an :class:`AgentMemory`.

    Raises:
        DeserializationError: malformed JSON, a step whose type cannot be told from its
            keys, or a field that does not fit; the message names the step.
    """
    if isinstance(steps, (str, bytes)):
        steps = loads_json(steps, what="smolagents steps")
    if not isinstance(steps, Sequence):
        raise DeserializationError(f"smolagents steps must be a list, got {type(steps).__name__}")
    memory = AgentMemory(system_prompt)
    for index, raw in enumerate(steps):
        where = f"step {index}"
        if not isinstance(raw, Mapping):
            raise DeserializationError(f"{where}: must be an object, got {type(raw).__name__}")
        cls = _step_kind(raw, where)
        fields = {k: v for k, v in raw.items() if k != "type"}
        for key in ("model_input_messages",):
            if fields.get(key) is not None:
                fields[key] = [
                    chat_message_from_smolagents(m, report, where=f"{where} {key}[{i}]")
                    for i, m in enumerate(fields[key])
                ]
        if fields.get("model_output_message") is not None:
            fields["model_output_message"] = chat_message_from_smolagents(
                fields["model_output_message"], report, where=f"{where} model_output_message"
            )
        for key in _IMAGE_FIELDS & set(fields):
            if fields[key] is not None:
                kept = []
                for i, value in enumerate(fields[key]):
                    try:
                        kept.append(_image_in(value, f"{where} {key}[{i}]"))
                    except _UnrecoverableImage as lost:
                        _report_image(report, f"{where} {key}[{i}]", lost)
                fields[key] = kept or None
        if cls is SystemPromptStep:
            memory.system_prompt = SystemPromptStep(**fields)
            continue
        try:
            step = cls(**fields)
        except OffpromptError as exc:
            raise DeserializationError(f"{where} ({cls.__name__}): {exc}") from None
        memory.steps.append(step)
    if report is not None:
        report.source, report.target = report.source or "smolagents", report.target or "offprompt"
        report.converted += len(steps)
    return memory


def steps_to_smolagents(
    memory: AgentMemory | Sequence[MemoryStep],
    *,
    images: str = "pil",
    report: ConversionReport | None = None,
) -> list[dict[str, Any]]:
    """Steps as ``get_full_steps()``-shaped dicts.

    Args:
        images: ``"pil"`` for pillow images (what smolagents holds in memory) or
            ``"data_url"`` for JSON-ready strings.
    """
    if images not in ("pil", "data_url"):
        raise SerializationError(f"images must be 'pil' or 'data_url', got {images!r}")
    steps = list(memory.steps) if isinstance(memory, AgentMemory) else list(memory)
    out: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        where = f"step {index}"
        data = step.dict()
        if isinstance(step, (ActionStep, PlanningStep)):
            if step.model_input_messages is not None:
                data["model_input_messages"] = [
                    chat_message_to_smolagents(
                        m, images=images, report=report, where=f"{where} input[{i}]"
                    )
                    for i, m in enumerate(step.model_input_messages)
                ]
            if step.model_output_message is not None:
                data["model_output_message"] = chat_message_to_smolagents(
                    step.model_output_message, images=images, report=report, where=f"{where} output"
                )
        for key in _IMAGE_FIELDS:
            value = getattr(step, key, None)
            if value:
                data[key] = [_image_out(image, images) for image in value]
        out.append(data)
    if report is not None:
        report.source, report.target = report.source or "offprompt", report.target or "smolagents"
        report.converted += len(out)
    return out
