"""``ScriptedChatModel``: a scripted, recording chat model for offline examples and tests.

It is a real ``BaseChatModel`` (so it runs inside chains and ``create_agent``), but it
is not a language model: it replies with the next step of its script and records every
input it receives, which is how the tests prove what reached "the model".
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from offprompt.errors import ScriptExhaustedError, ValidationError

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "message_chars", "tool_call"]

Step = AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> AIMessage:
    """An ``AIMessage`` that calls one tool.

    Example:
        >>> tool_call("search", {"q": "x"}, id="c1").tool_calls[0]["name"]
        'search'
    """
    call_id = id or f"call_{uuid.uuid4().hex[:12]}"
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": dict(args or {}), "id": call_id}]
    )


def message_chars(message: BaseMessage) -> int:
    """Characters of a message as a model receives it: content plus tool-call arguments."""
    content = message.content
    size = (
        len(content)
        if isinstance(content, str)
        else len(json.dumps(content, ensure_ascii=False, default=str))
    )
    for call in getattr(message, "tool_calls", None) or []:
        size += len(call["name"]) + len(json.dumps(call["args"], ensure_ascii=False, default=str))
    return size


class ScriptedChatModel(BaseChatModel):
    """Replies with its script, one step per call, and records every input.

    A step is an ``AIMessage`` (e.g. from :func:`tool_call`), a string (a plain answer),
    or a function of the input messages returning either, for replies that depend on
    what the model was shown (e.g. the namespace in a reference sentence).

    Attributes:
        script: The replies, in order.
        default: The step for every call past the script (e.g. a function of the
            input, for a stand-in summarizer); ``None``: such a call raises
            :class:`ScriptExhaustedError`.
        calls: Every input received, in order (a copy of the message list).
        modes: How each call came in, parallel to ``calls``: ``"sync"`` or ``"async"``.
        bound_tools: The tool names bound for each call (``[]`` when none).

    Example:
        >>> model = ScriptedChatModel(script=["Hello!"])
        >>> model.invoke("hi").content, len(model.calls)
        ('Hello!', 1)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Any: pydantic would try to build an AIMessage out of a function in a union.
    script: list[Any] = Field(default_factory=list)
    default: Any = None
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[list[str]] = PrivateAttr(default_factory=list)
    _modes: list[str] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @field_validator("script")
    @classmethod
    def _steps(cls, script: list[Any]) -> list[Any]:
        for index, step in enumerate(script):
            if not isinstance(step, (AIMessage, str)) and not callable(step):
                raise ValidationError(
                    f"script[{index}] must be an AIMessage, a str or a function, "
                    f"got {type(step).__name__}"
                )
        return script

    @field_validator("default")
    @classmethod
    def _default_step(cls, step: Any) -> Any:
        if step is not None and not isinstance(step, (AIMessage, str)) and not callable(step):
            raise ValidationError(
                f"default must be an AIMessage, a str, a function or None, got {type(step).__name__}"
            )
        return step

    @property
    def _llm_type(self) -> str:
        return "offprompt-scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Every input received, in order (a copy of each message list)."""
        return self._calls

    @property
    def modes(self) -> list[str]:
        """How each call came in, parallel to :attr:`calls`: ``"sync"`` or ``"async"``."""
        return self._modes

    @property
    def bound_tools(self) -> list[list[str]]:
        """The tool names bound for each call (``[]`` when none)."""
        return self._tools

    def chars_sent(self) -> int:
        """Characters of every input received so far (see :func:`message_chars`)."""
        return sum(message_chars(m) for call in self._calls for m in call)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        names = [
            t.name if isinstance(t, BaseTool) else getattr(t, "__name__", str(t)) for t in tools
        ]
        return self.bind(offprompt_tool_names=names, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond("sync", messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond("async", messages, kwargs)

    def _respond(
        self, mode: str, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> ChatResult:
        with self._lock:
            position = len(self._calls)
            self._calls.append(list(messages))
            self._modes.append(mode)
            self._tools.append(list(kwargs.get("offprompt_tool_names", [])))
        if position < len(self.script):
            step: Step = self.script[position]
        elif self.default is not None:
            step = self.default
        else:
            raise ScriptExhaustedError(
                f"ScriptedChatModel was called {position + 1} times; its script has "
                f"{len(self.script)} steps"
            )
        reply = step(list(messages)) if callable(step) else step
        message = AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy()
        return ChatResult(generations=[ChatGeneration(message=message)])
