"""``ScriptedLlm``: an ADK ``BaseLlm`` that answers from a script, for offline runs.

It is a real ``google.adk.models.BaseLlm`` (what ``LlmAgent(model=...)`` takes), built
like the ``MockModel`` of ADK's own unit tests: each model turn pops the next step of
the script and records the ``LlmRequest`` it was given, so a test can check what the
model saw. A step is an ``LlmResponse``, a ``types.Part``, a str (a text answer), or a
function of the request returning one of those (to answer from what a tool returned).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

__all__ = ["ScriptedLlm", "Step", "function_call", "function_responses"]

#: One model turn of the script.
Step = LlmResponse | types.Part | str | Callable[[LlmRequest], Any]


def function_call(name: str, args: dict[str, Any] | None = None) -> types.Part:
    """A model part calling ``name`` with ``args``."""
    return types.Part.from_function_call(name=name, args=args or {})


def function_responses(request: LlmRequest) -> list[dict[str, Any]]:
    """Every function response the request carries, oldest first (what the model saw)."""
    found: list[dict[str, Any]] = []
    for content in request.contents:
        for part in content.parts or []:
            if part.function_response is not None:
                found.append(dict(part.function_response.response or {}))
    return found


def _as_response(step: Any) -> LlmResponse:
    if isinstance(step, LlmResponse):
        return step
    if isinstance(step, str):
        step = types.Part.from_text(text=step)
    if isinstance(step, types.Part):
        return LlmResponse(content=types.Content(role="model", parts=[step]))
    raise TypeError(f"a script step must be an LlmResponse, Part or str, got {step!r}")


class ScriptedLlm(BaseLlm):
    """A model that plays ``script`` one step per turn and records every request.

    Args:
        script: The turns, in order.
        model: The model name ADK reports.

    Attributes:
        requests: Every turn's ``LlmRequest`` so far (its model and a copy of its
            contents: what the model saw).

    Example:
        >>> llm = ScriptedLlm(script=["hello"])
        >>> llm.model
        'scripted'
    """

    model: str = "scripted"
    script: list[Any] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer the next step of the script (an error once it is used up)."""
        # The contents only: the request's config holds the tools, callables and all.
        contents = [content.model_copy(deep=True) for content in llm_request.contents]
        self.requests.append(LlmRequest(model=llm_request.model, contents=contents))
        if not self.script:
            raise RuntimeError(f"the script is used up after {len(self.requests) - 1} turns")
        step = self.script.pop(0)
        if callable(step) and not isinstance(step, (LlmResponse, types.Part)):
            step = step(llm_request)
        yield _as_response(step)
