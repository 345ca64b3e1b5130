"""A scripted function-calling LLM for the LlamaIndex adapter tests (the only fake).

``ScriptedFunctionLLM`` is a real ``FunctionCallingLLM`` subclass: agents call it exactly
as they call OpenAI's. Each reply comes from ``script``: a ``ChatMessage``, a string (a
plain answer), or a function of the messages the model received (to react to tool
results). Every input is recorded in ``calls`` (deep copies), so tests can prove what
the model saw.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection

Step = ChatMessage | str | Callable[[list[ChatMessage]], ChatMessage | str]


def tool_call(name: str, call_id: str, **kwargs: Any) -> ChatMessage:
    """An assistant message calling ``name`` the way LlamaIndex 0.14 LLMs return it."""
    return ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=kwargs)],
    )


def text_of(messages: Sequence[ChatMessage]) -> str:
    """Everything a model would read in ``messages``, as one string."""
    parts: list[str] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolCallBlock):
                parts.append(json.dumps(block.tool_kwargs))
        parts.append(json.dumps(message.additional_kwargs, default=str))
    return "\n".join(parts)


class ScriptedFunctionLLM(FunctionCallingLLM):
    """Answers from ``script`` in turn; the last step repeats. Records every input."""

    script: list[Any] = Field(default_factory=list)
    calls: list[list[ChatMessage]] = Field(default_factory=list)
    tools_seen: list[list[str]] = Field(default_factory=list)
    context_window: int = 16000

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name="scripted",
        )

    def _reply(self, messages: Sequence[ChatMessage]) -> ChatResponse:
        received = copy.deepcopy(list(messages))
        self.calls.append(received)
        if not self.script:
            raise AssertionError("ScriptedFunctionLLM has no script")
        step = self.script[min(len(self.calls) - 1, len(self.script) - 1)]
        if callable(step):
            step = step(received)
        if isinstance(step, str):
            step = ChatMessage(role="assistant", content=step)
        return ChatResponse(message=step)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._reply(messages)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._reply(messages)

    def stream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> Generator[ChatResponse, None, None]:
        response = self._reply(messages)

        def gen() -> Generator[ChatResponse, None, None]:
            yield ChatResponse(message=response.message, delta=response.message.content or "")

        return gen()

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        response = self._reply(messages)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            yield ChatResponse(message=response.message, delta=response.message.content or "")

        return gen()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        response = self._reply([ChatMessage(role="user", content=prompt)])
        return CompletionResponse(text=response.message.content or "")

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return self.complete(prompt, formatted, **kwargs)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        response = self.complete(prompt)

        def gen() -> Generator[CompletionResponse, None, None]:
            yield CompletionResponse(text=response.text, delta=response.text)

        return gen()

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        response = self.complete(prompt)

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            yield CompletionResponse(text=response.text, delta=response.text)

        return gen()

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        self.tools_seen.append([t.metadata.name for t in tools])
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(
                user_msg
                if isinstance(user_msg, ChatMessage)
                else ChatMessage(role="user", content=user_msg)
            )
        return {"messages": messages}

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        calls = [b for b in response.message.blocks if isinstance(b, ToolCallBlock)]
        if not calls and error_on_no_tool_call:
            raise ValueError("no tool call in the response")
        return [
            ToolSelection(
                tool_id=c.tool_call_id or "",
                tool_name=c.tool_name,
                tool_kwargs=c.tool_kwargs if isinstance(c.tool_kwargs, dict) else {},
            )
            for c in calls
        ]
