"""``JsonArtifact``: a JSON value, normalised on the way in."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import field_validator

from offprompt._validation import ensure_json
from offprompt.artifacts.base import BaseArtifact
from offprompt.errors import ValidationError


class JsonArtifact(BaseArtifact):
    """Any JSON value. Tuples become lists; sets, objects, NaN and infinity are refused."""

    type: Literal["JsonArtifact"] = "JsonArtifact"
    value: Any

    @field_validator("value", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        try:
            return ensure_json(value, field="JsonArtifact.value")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None

    def to_text(self) -> str:
        return json.dumps(self.value, ensure_ascii=False)

    def __bool__(self) -> bool:
        return self.value is not None and self.value != "" and self.value != [] and self.value != {}
