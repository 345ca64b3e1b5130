"""``Message``: the hub format every adapter and importer converts to and from."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, field_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._tool_call import ToolCall
from offprompt._validation import (
    check_json_depth,
    check_text,
    deserialization_error,
    ensure_json,
    loads_json,
    validation_error,
)
from offprompt.artifacts import BaseArtifact, ImageArtifact, TextArtifact
from offprompt.artifacts.base import new_id
from offprompt.errors import DeserializationError, ValidationError

__all__ = ["ROLES", "Message", "Role", "ToolCall"]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Message(BaseModel):
    """One chat message, framework-neutral.

    Attributes:
        id: A uuid4 hex string, stable across stores and adapters.
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: Parts, in order: mostly ``TextArtifact`` and ``ImageArtifact``.
        tool_calls: Tool calls an assistant message makes.
        tool_call_id: On a tool message, the id of the call it answers.
        name: The author's or the tool's name, if any.
        meta: JSON metadata; adapters keep framework-specific fields here.
        created_at: When the message was made (timezone-aware, UTC by default).

    Example:
        >>> Message.user("What is in the report?").text
        'What is in the report?'
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id, min_length=1)
    role: Role
    content: list[SerializeAsAny[BaseArtifact]] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=_utcnow)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error("Message", exc) from None

    @field_validator("role", mode="before")
    @classmethod
    def _known_role(cls, value: Any) -> Any:
        if value not in ROLES:
            raise ValidationError(f"unknown role {value!r}; expected one of {', '.join(ROLES)}")
        return value

    @field_validator("content", mode="before")
    @classmethod
    def _parts(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, (str, BaseArtifact, Mapping)):
            value = [value]
        if not isinstance(value, Sequence):
            raise ValidationError(
                f"Message.content must be a str, an artifact or a list of them, "
                f"got {type(value).__name__}"
            )
        parts: list[BaseArtifact] = []
        for index, part in enumerate(value):
            if isinstance(part, BaseArtifact):
                parts.append(part)
            elif isinstance(part, str):
                parts.append(TextArtifact(value=part))
            elif isinstance(part, Mapping):
                parts.append(BaseArtifact.from_dict(part))
            else:
                raise ValidationError(
                    f"Message.content[{index}] must be a str or an artifact, "
                    f"got {type(part).__name__}"
                )
        return parts

    @field_validator("meta", mode="after")
    @classmethod
    def _meta_is_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = ensure_json(value, field="Message.meta")
        return result

    @field_validator("id", "tool_call_id", "name", mode="after")
    @classmethod
    def _valid_unicode(cls, value: str | None) -> str | None:
        return value if value is None else check_text(value, what="Message field")

    @field_validator("created_at", mode="after")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)

    # -- convenience constructors -------------------------------------------------
    @classmethod
    def system(cls, content: Any, **fields: Any) -> Message:
        """A system message."""
        return cls(role="system", content=content, **fields)

    @classmethod
    def user(cls, content: Any, **fields: Any) -> Message:
        """A user message."""
        return cls(role="user", content=content, **fields)

    @classmethod
    def assistant(
        cls, content: Any = None, *, tool_calls: Sequence[ToolCall] = (), **fields: Any
    ) -> Message:
        """An assistant message, optionally calling tools."""
        return cls(role="assistant", content=content, tool_calls=list(tool_calls), **fields)

    @classmethod
    def tool(cls, content: Any, *, tool_call_id: str, **fields: Any) -> Message:
        """A tool's result for the call ``tool_call_id``."""
        return cls(role="tool", content=content, tool_call_id=tool_call_id, **fields)

    # -- views ----------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The text parts joined (as LangChain's ``.text`` does); images are left out."""
        return "".join(p.value for p in self.content if isinstance(p, TextArtifact))

    @property
    def images(self) -> list[ImageArtifact]:
        """The image parts of the content."""
        return [p for p in self.content if isinstance(p, ImageArtifact)]

    # -- serialisation -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; :meth:`from_dict` gives back an equal message."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """``to_dict()`` as a JSON string (non-ASCII kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Rebuild a message from ``to_dict()`` output; ``DeserializationError`` on a bad shape."""
        if not isinstance(data, Mapping):
            raise DeserializationError(
                f"a message must be a JSON object, got {type(data).__name__}"
            )
        check_json_depth(data, what="message")
        try:
            return cls.model_validate(dict(data))
        except PydanticValidationError as exc:
            raise deserialization_error("Message", exc) from None

    @classmethod
    def from_json(cls, text: str | bytes) -> Message:
        """Rebuild a message from ``to_json()`` output."""
        return cls.from_dict(loads_json(text, what="message JSON"))
