"""``ActionArtifact``: a tool call a model asked for."""

from __future__ import annotations

import json
from typing import Literal

from offprompt._tool_call import ToolCall
from offprompt.artifacts.base import BaseArtifact


class ActionArtifact(BaseArtifact):
    """A tool call (name and JSON-object arguments) as an artifact."""

    type: Literal["ActionArtifact"] = "ActionArtifact"
    value: ToolCall

    def to_text(self) -> str:
        return f"{self.value.name}({json.dumps(self.value.arguments, ensure_ascii=False)})"

    def __bool__(self) -> bool:
        return True
