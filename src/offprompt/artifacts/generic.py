"""``GenericArtifact``: the escape hatch for values no other artifact fits."""

from __future__ import annotations

from typing import Any, Literal

from offprompt._validation import ensure_json
from offprompt.artifacts.base import BaseArtifact


class GenericArtifact(BaseArtifact):
    """Any Python value. It serialises only if the value is JSON (otherwise a clear error)."""

    type: Literal["GenericArtifact"] = "GenericArtifact"
    value: Any

    def to_text(self) -> str:
        return str(self.value)

    def to_dict(self) -> dict[str, Any]:
        ensure_json(self.value, field="GenericArtifact.value")
        return super().to_dict()
