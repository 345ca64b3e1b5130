"""``OffpromptPlugin``: an ADK plugin that keeps large tool results off the prompt.

ADK hands every tool's return value to each plugin's ``after_tool_callback`` before
the function response is built (and wraps a non-dict as ``{"result": value}`` after). This plugin measures the result there: one at or over
``min_tokens`` is stored in offprompt task memory, exactly as it was (a string as it
is, any other value as its JSON), and the model sees
``{"result": <reference + card>}`` in its place. :attr:`OffpromptPlugin.tools` are the
five memory tools (``query_memory``, ``grep_memory``, ``read_memory``, ``json_memory``,
``summarize_memory``) as ADK tools, for ``Agent(tools=[*plugin.tools])``; their own
answers are never stored again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from offprompt.errors import ValidationError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import OffloadPolicy
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES, MemoryToolSpec, memory_tool_specs

__all__ = ["MemoryTool", "OffpromptPlugin", "memory_tools"]


class MemoryTool(BaseTool):
    """One offprompt memory tool as an ADK ``BaseTool`` (the core's schema and handler).

    Args:
        spec: The framework-neutral tool (:func:`offprompt.task_memory.tools.memory_tool_specs`).
    """

    def __init__(self, spec: MemoryToolSpec) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self.spec = spec

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return types.FunctionDeclaration(
            name=self.spec.name,
            description=self.spec.description,
            parameters_json_schema=self.spec.parameters,
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the core's handler; its answer (errors included) is bounded text."""
        if not isinstance(args, dict):
            return f"Error: the arguments of {self.name} must be a JSON object"
        return await self.spec.arun(**args)


def memory_tools(
    task_memory: TaskMemory | Sequence[TaskMemory], **options: Any
) -> list[MemoryTool]:
    """The five memory tools over ``task_memory`` as ADK tools.

    Args:
        task_memory: One memory, or several told apart by their ``name``.
        **options: Passed to :func:`~offprompt.task_memory.tools.memory_tool_specs`
            (``summarizer``, ``max_output_tokens``, ``top_n``, ``summary_tokens``).

    Example:
        >>> memory = TaskMemory()
        >>> [tool.name for tool in memory_tools(memory)]
        ['query_memory', 'grep_memory', 'read_memory', 'json_memory', 'summarize_memory']
        >>> memory.close()
    """
    return [MemoryTool(spec) for spec in memory_tool_specs(task_memory, **options)]


def result_text(result: Any) -> str:
    """The text a tool result is stored as: a str itself (also as ``{"result": str}``),
    anything else as its JSON."""
    if isinstance(result, dict) and set(result) == {"result"}:
        result = result["result"]
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


class OffpromptPlugin(BasePlugin):
    """Stores large tool results in offprompt task memory; the model gets a reference.

    Pass it to ``Runner(plugins=[plugin])`` (or ``App(plugins=[...])``) and give the agent
    ``tools=[..., *plugin.tools]`` so the model can read the stored results back.

    Args:
        task_memory: Where results go.
        min_tokens: Results with at least this many tokens are stored
            (``task_memory.min_tokens`` by default; 0 stores every non-empty one).
        name: The plugin's name (unique among a runner's plugins).

    Attributes:
        policy: The offload policy.
        tools: The five memory tools as ADK tools.

    Raises:
        ValidationError: ``task_memory`` is not a ``TaskMemory``, or a bad ``min_tokens``.

    Example:
        >>> memory = TaskMemory()
        >>> plugin = OffpromptPlugin(memory, min_tokens=1000)
        >>> plugin.name, len(plugin.tools)
        ('offprompt', 5)
        >>> memory.close()
    """

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        min_tokens: int | None = None,
        name: str = "offprompt",
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValidationError(f"name must be a non-empty str, got {name!r}")
        super().__init__(name=name)
        self.policy = OffloadPolicy(task_memory, min_tokens=min_tokens)
        self.task_memory = task_memory
        self.tools: list[MemoryTool] = memory_tools(task_memory)

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """``{"result": reference}`` for a large result; ``None`` (unchanged) otherwise."""
        # ADK passes the tool's return value as it is (a str, a list...), though its
        # signature says dict; it wraps a non-dict as {"result": value} afterwards.
        if tool.name in MEMORY_TOOL_NAMES or result is None:
            return None
        is_error = isinstance(result, dict) and set(result) == {"error"}
        offloaded = await self.policy.aoffload(
            tool.name,
            result_text(result),
            call_id=tool_context.function_call_id,
            is_error=is_error,
        )
        if offloaded.reference is None:
            return None
        return {"result": offloaded.text}
