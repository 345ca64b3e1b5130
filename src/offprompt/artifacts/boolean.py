"""``BooleanArtifact``: a yes/no answer."""

from __future__ import annotations

from typing import Literal

from offprompt.artifacts.base import BaseArtifact
from offprompt.errors import ValidationError

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


class BooleanArtifact(BaseArtifact):
    """A boolean; :meth:`parse_bool` reads ``"true"``/``"false"`` (and yes/no, 1/0)."""

    type: Literal["BooleanArtifact"] = "BooleanArtifact"
    value: bool

    @classmethod
    def parse_bool(cls, value: str | bool) -> BooleanArtifact:
        """Parse a model's answer; anything that is not clearly true or false is an error."""
        if isinstance(value, bool):
            return cls(value=value)
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return cls(value=True)
            if word in _FALSE:
                return cls(value=False)
        raise ValidationError(f"cannot parse {value!r} as a boolean (expected true or false)")

    def to_text(self) -> str:
        return str(self.value)
