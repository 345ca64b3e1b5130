"""``ScriptedModel``: a scripted, recording stand-in for a model, for offline examples and tests.

It is a real ``agents.models.interface.Model`` (so ``Runner.run``, ``run_sync`` and
``run_streamed`` drive it as they drive OpenAI's models), but it is not a language
model: each call answers with the next step of its script and records the input it was
given, which is how the tests prove what reached "the model". Nothing goes over the
network.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agents.items import (
    ModelResponse,
    TResponseInputItem,
    TResponseOutputItem,
    TResponseStreamEvent,
)
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)

from offprompt.errors import ScriptExhaustedError, ValidationError

__all__ = ["ScriptExhaustedError", "ScriptedModel", "function_call", "text_message"]

Step = str | Sequence[TResponseOutputItem] | Callable[[list[TResponseInputItem]], Any]


def text_message(text: str) -> ResponseOutputMessage:
    """An assistant message output item saying ``text``.

    Example:
        >>> text_message("hi").content[0].text
        'hi'
    """
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:12]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def function_call(
    name: str, arguments: dict[str, Any] | None = None, *, call_id: str | None = None
) -> ResponseFunctionToolCall:
    """A function-call output item calling ``name`` with ``arguments``.

    Example:
        >>> function_call("search", {"q": "x"}, call_id="c1").arguments
        '{"q": "x"}'
    """
    return ResponseFunctionToolCall(
        id=f"fc_{uuid.uuid4().hex[:12]}",
        type="function_call",
        call_id=call_id or f"call_{uuid.uuid4().hex[:12]}",
        name=name,
        arguments=json.dumps(arguments or {}),
        status="completed",
    )


class ScriptedModel(Model):
    """Answers each model call with the next step of ``script``; records every input.

    Args:
        script: Steps, in order. A step is a string (an assistant message), a list of
            output items (see :func:`text_message`, :func:`function_call`), or a function
            of the call's input items returning either.

    Attributes:
        inputs: The input items of every call, in order (strings wrapped as a user item).
        instructions: The system instructions of every call.

    Raises:
        ScriptExhaustedError: A call came after the last step.

    Example:
        >>> import asyncio
        >>> from agents import Agent, Runner
        >>> model = ScriptedModel(["Hello!"])
        >>> asyncio.run(Runner.run(Agent(name="a", model=model), "hi")).final_output
        'Hello!'
    """

    def __init__(self, script: Sequence[Step]) -> None:
        if isinstance(script, (str, bytes)) or not isinstance(script, Sequence):
            raise ValidationError(f"script must be a list of steps, got {type(script).__name__}")
        self._script = list(script)
        self._lock = threading.Lock()
        self.inputs: list[list[TResponseInputItem]] = []
        self.instructions: list[str | None] = []

    def _next(
        self, system_instructions: str | None, input: str | list[TResponseInputItem]
    ) -> list[Any]:
        items: list[TResponseInputItem] = (
            [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        )
        with self._lock:
            self.inputs.append(json.loads(json.dumps(items, default=str)))
            self.instructions.append(system_instructions)
            if not self._script:
                raise ScriptExhaustedError(
                    f"ScriptedModel was called {len(self.inputs)} times but its script has "
                    f"only {len(self.inputs) - 1} steps"
                )
            step = self._script.pop(0)
        if callable(step):
            step = step(items)
        if isinstance(step, str):
            return [text_message(step)]
        return list(step)

    async def get_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        output = self._next(system_instructions, input)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    async def stream_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        output = self._next(system_instructions, input)
        response = Response(
            id=f"resp_{uuid.uuid4().hex[:12]}",
            created_at=0,
            model="scripted",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=False,
        )
        number = 0
        yield ResponseCreatedEvent(
            type="response.created", response=response, sequence_number=number
        )
        for index, item in enumerate(output):
            number += 1
            yield ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                item=item,
                output_index=index,
                sequence_number=number,
            )
            number += 1
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                item=item,
                output_index=index,
                sequence_number=number,
            )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=number + 1
        )
