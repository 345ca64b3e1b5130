"""``ToolCall``: one call of a tool by a model, shared by messages, artifacts and steps."""

from __future__ import annotations

import builtins
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._validation import (
    MAX_JSON_DEPTH,
    check_text,
    json_too_deep,
    loads_json,
    validation_error,
)
from offprompt.errors import ValidationError


class ToolCall(BaseModel):
    """A model's request to call a tool.

    Attributes:
        id: The call id that the tool's result message refers back to.
        name: The tool's name.
        arguments: The arguments, always a JSON object (a JSON string is parsed).

    Example:
        >>> ToolCall(id="call_1", name="search", arguments='{"q": "qdrant"}').dict()
        {'id': 'call_1', 'type': 'function', 'function': {'name': 'search', 'arguments': '{"q": "qdrant"}'}}
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str = Field(min_length=1)
    arguments: builtins.dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error("ToolCall", exc) from None

    @field_validator("arguments", mode="before")
    @classmethod
    def _parse_arguments(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = loads_json(value, what="tool-call arguments") if value.strip() else {}
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValidationError(
                f"tool-call arguments must be a JSON object, got {type(value).__name__}: {value!r}"
            )
        if json_too_deep(value):
            raise ValidationError(
                f"tool-call arguments nest deeper than {MAX_JSON_DEPTH} levels, "
                "offprompt's limit for JSON"
            )
        try:
            text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"tool-call arguments must be JSON: {exc}") from None
        check_text(text, what="tool-call arguments (as JSON text)")
        return json.loads(text)

    @field_validator("id", "name", mode="after")
    @classmethod
    def _valid_unicode(cls, value: str) -> str:
        return check_text(value, what="ToolCall field")

    def dict(self) -> builtins.dict[str, Any]:  # type: ignore[override]
        """The OpenAI function-call shape (arguments as a JSON string)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(self.arguments, ensure_ascii=False),
            },
        }

    @classmethod
    def from_openai(cls, data: builtins.dict[str, Any]) -> ToolCall:
        """Inverse of :meth:`dict`: read the OpenAI function-call shape."""
        function = data.get("function")
        if not isinstance(function, dict):
            raise ValidationError(f"OpenAI tool call has no 'function' object: {data!r}")
        return cls(
            id=data.get("id", ""),
            name=function.get("name", ""),
            arguments=function.get("arguments") or {},
        )
