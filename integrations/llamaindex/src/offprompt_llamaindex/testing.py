"""``ScriptedFunctionLLM``: a scripted, recording LlamaIndex LLM for offline examples and tests.

It is a real ``FunctionCallingLLM`` subclass, so chat engines, ``FunctionAgent`` and
``ReActAgent`` call it exactly as they call a provider's; but it is not a language
model: each reply is the next step of its script, and every input is recorded (deep
copies), which is how the tests prove what reached "the model" and through which method.
"""

from __future__ import annotations

import asyncio
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

from offprompt.errors import ScriptExhaustedError

__all__ = ["ScriptExhaustedError", "ScriptedFunctionLLM", "Step", "text_of", "tool_call"]

#: A script step: a reply message, a plain answer, or a function of the input messages.
Step = ChatMessage | str | Callable[[list[ChatMessage]], ChatMessage | str]


def tool_call(name: str, call_id: str, **kwargs: Any) -> ChatMessage:
    """An assistant message calling ``name`` the way LlamaIndex 0.14 LLMs return it.

    Example:
        >>> tool_call("search", "c1", q="x").blocks[0].tool_name
        'search'
    """
    return ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=kwargs)],
    )


def text_of(messages: Sequence[ChatMessage]) -> str:
    """Everything a model would read in ``messages`` (text, tool arguments, extras), as one string."""
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
    """Answers from ``script`` in turn (the last step repeats) and records every input.

    Attributes:
        script: The steps: a ``ChatMessage`` (e.g. from :func:`tool_call`), a string (a
            plain answer) or a function of the messages received returning either.
        calls: Every input received, in order (deep copies of the message lists).
        methods: The method each input came through (``"chat"``, ``"achat"``,
            ``"complete"``...), parallel to ``calls``.
        tools_seen: The tool names offered on each ``*_with_tools`` call.
        context_window: What ``metadata`` reports.

    Example:
        >>> llm = ScriptedFunctionLLM(script=["Hello!"])
        >>> llm.chat([ChatMessage(role="user", content="hi")]).message.content
        'Hello!'
        >>> llm.methods
        ['chat']
    """

    script: list[Any] = Field(default_factory=list)
    calls: list[list[ChatMessage]] = Field(default_factory=list)
    methods: list[str] = Field(default_factory=list)
    tools_seen: list[list[str]] = Field(default_factory=list)
    context_window: int = 16000

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this class under."""
        return "ScriptedFunctionLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """A chat, function-calling model named ``scripted`` with ``context_window``."""
        return LLMMetadata(
            context_window=self.context_window,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name="scripted",
        )

    def _reply(self, method: str, messages: Sequence[ChatMessage]) -> ChatResponse:
        received = copy.deepcopy(list(messages))
        self.calls.append(received)
        self.methods.append(method)
        if not self.script:
            raise ScriptExhaustedError("ScriptedFunctionLLM was called but has no script")
        step = self.script[min(len(self.calls) - 1, len(self.script) - 1)]
        if callable(step):
            step = step(received)
        if isinstance(step, str):
            step = ChatMessage(role="assistant", content=step)
        return ChatResponse(message=step)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """The next step of the script, as a chat response."""
        return self._reply("chat", messages)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Async twin of :meth:`chat` (it yields to the loop once, as a real call would)."""
        response = self._reply("achat", messages)
        await asyncio.sleep(0)
        return response

    def stream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> Generator[ChatResponse, None, None]:
        """The next step of the script, as a stream of one response."""
        response = self._reply("stream_chat", messages)

        def gen() -> Generator[ChatResponse, None, None]:
            yield ChatResponse(message=response.message, delta=response.message.content or "")

        return gen()

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        """Async twin of :meth:`stream_chat`."""
        response = self._reply("astream_chat", messages)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            yield ChatResponse(message=response.message, delta=response.message.content or "")

        return gen()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The next step of the script for ``prompt`` (as one user message), as text."""
        response = self._reply("complete", [ChatMessage(role="user", content=prompt)])
        return CompletionResponse(text=response.message.content or "")

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """Async twin of :meth:`complete`."""
        response = self._reply("acomplete", [ChatMessage(role="user", content=prompt)])
        return CompletionResponse(text=response.message.content or "")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        """:meth:`complete` as a stream of one response."""
        response = self._reply("stream_complete", [ChatMessage(role="user", content=prompt)])
        text = response.message.content or ""

        def gen() -> Generator[CompletionResponse, None, None]:
            yield CompletionResponse(text=text, delta=text)

        return gen()

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        """Async twin of :meth:`stream_complete`."""
        response = self._reply("astream_complete", [ChatMessage(role="user", content=prompt)])
        text = response.message.content or ""

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            yield CompletionResponse(text=text, delta=text)

        return gen()

    def _prepare_chat_with_tools(  # noqa: PLR0917 LlamaIndex's own signature
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
        """The tool calls of ``response`` (its ``ToolCallBlock`` s) as ``ToolSelection`` s."""
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
