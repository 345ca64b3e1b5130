"""``ScriptedModel``: a real Strands ``Model`` that answers from a script (no network).

Adapted from strands-agents 1.62 ``tests/fixtures/mocked_model_provider.py``
(Apache-2.0): the same stream of events for text and tool-use turns. A turn of the
script is a message, or a function of the messages sent (to use a reference the run
produced); every call's messages are recorded in ``calls``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any

from strands.models import Model
from strands.types.content import Message, Messages
from strands.types.tools import ToolSpec

Turn = Message | Callable[[Messages], Message]


class ScriptedModel(Model):
    """Answers each ``stream`` call with the next turn of ``script``."""

    def __init__(self, script: Sequence[Turn]) -> None:
        self.script = list(script)
        self.calls: list[Messages] = []

    def format_request(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def format_chunk(self, event: Any) -> Any:
        return event

    def get_config(self) -> Any:
        return {}

    def update_config(self, **model_config: Any) -> None:
        pass

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        self.calls.append(copy.deepcopy(messages))
        turn = self.script[len(self.calls) - 1]
        message = turn(messages) if callable(turn) else turn
        for event in _events(message):
            yield event

    def sent_text(self) -> str:
        """Everything the model was sent, as one JSON text."""
        return json.dumps(self.calls, default=repr)


def _events(message: Message) -> Iterable[dict[str, Any]]:
    stop_reason = "end_turn"
    yield {"messageStart": {"role": "assistant"}}
    for content in message["content"]:
        if "text" in content:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": content["text"]}}}
            yield {"contentBlockStop": {}}
        if "toolUse" in content:
            stop_reason = "tool_use"
            use = content["toolUse"]
            start = {"toolUse": {"name": use["name"], "toolUseId": use["toolUseId"]}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}}
            yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": stop_reason}}


def tool_call(name: str, tool_use_id: str, **arguments: Any) -> Message:
    """An assistant turn that calls one tool."""
    use = {"toolUseId": tool_use_id, "name": name, "input": arguments}
    return {"role": "assistant", "content": [{"toolUse": use}]}  # type: ignore[typeddict-item]


def say(text: str) -> Message:
    """An assistant turn of text."""
    return {"role": "assistant", "content": [{"text": text}]}
