"""Griptape ``ConversationMemory`` / ``SummaryConversationMemory`` JSON, in and out.

The shape is what ``griptape.memory.structure.ConversationMemory.to_json()`` writes
(griptape 1.x): ``{"type": "ConversationMemory", "runs": [{"type": "Run", "id", "meta",
"input": artifact, "output": artifact}], "meta", "max_runs"}``, plus ``offset``,
``summary`` and ``summary_index`` for ``SummaryConversationMemory``. Griptape artifacts
serialise almost as offprompt's do (``type``, ``id``, ``name``, ``value``, ``meta``,
``reference``), so each run becomes a user message (its input) and an assistant message
(its output) whose content parts are the artifacts themselves.

Griptape-only details (a ``Reference`` object, a ``ToolAction``'s ``path``, artifact types
offprompt has no class for, such as ``UrlArtifact`` or ``AudioArtifact``) ride in a
reserved ``meta["_griptape"]`` entry and are restored on export, so a Griptape → offprompt
→ Griptape round trip gives back the same JSON. Griptape runs carry no system prompts,
tool calls or tool results: exporting those is reported in the :class:`ConversionReport`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offprompt._validation import loads_json
from offprompt.artifacts import (
    ActionArtifact,
    BaseArtifact,
    GenericArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import DeserializationError, OffpromptError
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall

__all__ = [
    "GriptapeConversation",
    "artifact_from_griptape",
    "artifact_to_griptape",
    "conversation_from_griptape",
    "conversation_to_griptape",
]

_RESERVED = "_griptape"
_MEMORY_TYPES = ("ConversationMemory", "SummaryConversationMemory")
#: Griptape artifact types with an offprompt class of the same name and shape.
_SAME_SHAPE = {
    "TextArtifact",
    "JsonArtifact",
    "BlobArtifact",
    "ImageArtifact",
    "ErrorArtifact",
    "InfoArtifact",
    "BooleanArtifact",
    "GenericArtifact",
}


@dataclass
class GriptapeConversation:
    """A Griptape conversation memory read into offprompt terms.

    Attributes:
        messages: A user and an assistant message per run, in order.
        memory_type: ``"ConversationMemory"`` or ``"SummaryConversationMemory"``.
        summary: The running summary (summary memory only).
        summary_index: Index of the first run not folded into the summary.
        offset: How many recent runs the summary memory keeps verbatim.
        max_runs: Griptape's run limit, if one was set.
        meta: The memory's own ``meta``.
    """

    messages: list[Message]
    memory_type: str = "ConversationMemory"
    summary: str | None = None
    summary_index: int | None = None
    offset: int | None = None
    max_runs: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def artifact_from_griptape(data: Mapping[str, Any]) -> BaseArtifact:
    """One Griptape artifact dict as an offprompt artifact (lossless; see module docs)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise DeserializationError(f"not a Griptape artifact (no 'type'): {str(data)[:120]}")
    kind = data["type"]
    meta = dict(data.get("meta") or {})
    extra: dict[str, Any] = {}
    reference = data.get("reference")
    if reference is not None:
        extra["reference"] = reference
    common = {"meta": meta, "id": data.get("id") or None, "name": data.get("name") or ""}
    common = {k: v for k, v in common.items() if v is not None}
    try:
        if kind in _SAME_SHAPE:
            fields = {k: v for k, v in data.items() if k not in ("reference", "meta")}
            if kind == "ErrorArtifact":
                fields.pop("exception", None)
            if extra:
                fields["meta"] = {**meta, _RESERVED: extra}
            else:
                fields["meta"] = meta
            return BaseArtifact.from_dict(fields)
        if kind == "ListArtifact":
            items = [artifact_from_griptape(item) for item in data.get("value") or []]
            extra["validate_uniform_types"] = data.get("validate_uniform_types", False)
            return ListArtifact(
                value=items,
                item_separator=data.get("item_separator", "\n\n"),
                **{**common, "meta": {**meta, _RESERVED: extra}},
            )
        if kind == "ActionArtifact":
            action = data.get("value") or {}
            extra["action"] = {k: v for k, v in action.items() if k not in ("tag", "input")}
            call = ToolCall(
                id=str(action.get("tag", "")),
                name=_action_name(action),
                arguments=action.get("input") or {},
            )
            return ActionArtifact(value=call, **{**common, "meta": {**meta, _RESERVED: extra}})
    except OffpromptError as exc:
        raise DeserializationError(f"Griptape {kind} {data.get('id')!r}: {exc}") from None
    # A type offprompt has no class for: carried whole, restored verbatim on export.
    return GenericArtifact(
        value=copy.deepcopy(dict(data)), **{**common, "meta": {**meta, _RESERVED: {"raw": True}}}
    )


def _action_name(action: Mapping[str, Any]) -> str:
    name, path = str(action.get("name", "")), action.get("path")
    return f"{name}_{path}" if path else name


def artifact_to_griptape(
    artifact: BaseArtifact, report: ConversionReport | None = None
) -> dict[str, Any]:
    """An offprompt artifact as a Griptape artifact dict (inverse of the import)."""
    meta = dict(artifact.meta)
    extra = meta.pop(_RESERVED, {}) or {}
    if isinstance(artifact, GenericArtifact) and extra.get("raw"):
        return copy.deepcopy(dict(artifact.value))
    base: dict[str, Any] = {
        "type": artifact.type,
        "id": artifact.id,
        "reference": extra.get("reference"),
        "meta": meta,
        "name": artifact.name,
    }
    if isinstance(artifact, ListArtifact):
        base["value"] = [artifact_to_griptape(item, report) for item in artifact.value]
        base["item_separator"] = artifact.item_separator
        base["validate_uniform_types"] = extra.get("validate_uniform_types", False)
        return base
    if isinstance(artifact, ActionArtifact):
        action = dict(extra.get("action") or {"type": "ToolAction", "name": artifact.value.name})
        base["value"] = {
            **action,
            "tag": artifact.value.id,
            "input": artifact.value.arguments,
        }
        base["value"] = {
            k: base["value"][k]
            for k in ("type", "tag", "name", "path", "input")
            if k in base["value"]
        }
        return base
    dumped = artifact.to_dict()
    for key in ("type", "id", "name", "meta", "reference"):
        dumped.pop(key, None)
    if artifact.type == "BlobArtifact":
        dumped.pop("mime_type", None)
    if artifact.type == "ImageArtifact":
        dumped.pop("mime_type", None)
    if artifact.type == "ErrorArtifact":
        dumped.pop("exception", None)
    if artifact.type not in _SAME_SHAPE:
        if report is not None:
            report.lost(
                artifact.name,
                artifact.type,
                "Griptape has no such artifact type; sent as GenericArtifact",
            )
        return {**base, "type": "GenericArtifact", "value": artifact.to_dict()}
    return {**base, **dumped}


def conversation_from_griptape(
    data: str | bytes | Mapping[str, Any], report: ConversionReport | None = None
) -> GriptapeConversation:
    """Read Griptape conversation-memory JSON (a string, bytes or the parsed dict).

    Raises:
        DeserializationError: malformed JSON, a document of another type, a run without
            ``input``/``output``, or an artifact that cannot be read; the message names it.
    """
    if isinstance(data, (str, bytes)):
        data = loads_json(data, what="Griptape conversation memory")
    if not isinstance(data, Mapping):
        raise DeserializationError(
            f"Griptape conversation memory must be a JSON object, got {type(data).__name__}"
        )
    memory_type = data.get("type")
    if memory_type not in _MEMORY_TYPES:
        raise DeserializationError(
            f"not a Griptape conversation memory: type is {memory_type!r}, expected one of {', '.join(_MEMORY_TYPES)}"
        )
    runs = data.get("runs")
    if not isinstance(runs, list):
        raise DeserializationError("Griptape conversation memory has no 'runs' list")
    messages: list[Message] = []
    for index, run in enumerate(runs):
        if not isinstance(run, Mapping) or "input" not in run or "output" not in run:
            raise DeserializationError(f"Griptape run {index} lacks 'input' or 'output'")
        run_meta = {"griptape_run": {"id": run.get("id"), "meta": run.get("meta")}}
        messages.append(Message.user([artifact_from_griptape(run["input"])], meta=run_meta))
        messages.append(Message.assistant([artifact_from_griptape(run["output"])], meta=run_meta))
    if report is not None:
        report.source, report.target = report.source or "griptape", report.target or "offprompt"
        report.converted += len(runs)
    return GriptapeConversation(
        messages=messages,
        memory_type=str(memory_type),
        summary=data.get("summary"),
        summary_index=data.get("summary_index"),
        offset=data.get("offset"),
        max_runs=data.get("max_runs"),
        meta=dict(data.get("meta") or {}),
    )


def conversation_to_griptape(
    messages: Sequence[Message] | GriptapeConversation,
    *,
    report: ConversionReport | None = None,
    summary: str | None = None,
    summary_index: int | None = None,
    offset: int | None = None,
    max_runs: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Messages as Griptape conversation-memory JSON (``ConversationMemory.from_dict`` reads it).

    Each user message and the last assistant message before the next user message form
    one run. What Griptape cannot hold — system prompts, tool calls, tool results, a user
    turn with no answer — is listed in ``report``. A summary makes it a
    ``SummaryConversationMemory``.
    """
    if isinstance(messages, GriptapeConversation):
        conversation = messages
        messages = conversation.messages
        summary = summary if summary is not None else conversation.summary
        summary_index = summary_index if summary_index is not None else conversation.summary_index
        offset = offset if offset is not None else conversation.offset
        max_runs = max_runs if max_runs is not None else conversation.max_runs
        meta = meta if meta is not None else conversation.meta
        is_summary = conversation.memory_type == "SummaryConversationMemory"
    else:
        is_summary = summary is not None or offset is not None
    report = report if report is not None else ConversionReport()
    report.source, report.target = report.source or "offprompt", report.target or "griptape"
    runs: list[dict[str, Any]] = []
    pending: Message | None = None
    answer: Message | None = None

    def flush() -> None:
        if pending is None:
            return
        if answer is None:
            report.lost(
                f"message {pending.id}",
                "user turn",
                "it has no assistant answer; Griptape runs need one",
            )
            return
        run_info = pending.meta.get("griptape_run") or {}
        runs.append(
            {
                "type": "Run",
                "id": run_info.get("id") or pending.id,
                "meta": run_info.get("meta"),
                "input": artifact_to_griptape(_as_one_artifact(pending), report),
                "output": artifact_to_griptape(_as_one_artifact(answer), report),
            }
        )
        report.converted += 1

    for position, message in enumerate(messages):
        if message.role == "user":
            flush()
            pending, answer = message, None
        elif message.role == "assistant":
            if message.tool_calls:
                report.lost(
                    f"message {position}",
                    "tool_calls",
                    "Griptape conversation memory holds no tool calls",
                )
            if message.content:
                answer = message
        elif message.role == "system":
            report.lost(
                f"message {position}",
                "system message",
                "Griptape keeps the system prompt outside memory",
            )
        else:
            report.lost(
                f"message {position}",
                "tool result",
                "Griptape conversation memory holds no tool results",
            )
    flush()
    document: dict[str, Any] = {
        "type": "SummaryConversationMemory" if is_summary else "ConversationMemory",
        "runs": runs,
        "meta": dict(meta or {}),
        "max_runs": max_runs,
    }
    if is_summary:
        document.update(
            {
                "offset": offset if offset is not None else 1,
                "summary": summary,
                "summary_index": summary_index or 0,
            }
        )
    return document


def _as_one_artifact(message: Message) -> BaseArtifact:
    """A message's content as the single artifact a Griptape run side holds."""
    if len(message.content) == 1:
        return message.content[0]
    return ListArtifact(value=list(message.content)) if message.content else TextArtifact(value="")
