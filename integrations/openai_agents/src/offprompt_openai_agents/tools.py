"""``memory_tools``: offprompt's memory tools as OpenAI Agents SDK ``FunctionTool`` s.

The five tools (``query_memory``, ``grep_memory``, ``read_memory``, ``json_memory``,
``summarize_memory``) are defined once in the core
(:func:`offprompt.task_memory.tools.memory_tool_specs`): the same names, descriptions,
argument schemas and bounded answers as in every other adapter. Here each becomes a
``FunctionTool`` whose call runs the core's handler in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents.tool import FunctionTool
from agents.tool_context import ToolContext

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import MemoryToolSpec, memory_tool_specs

__all__ = ["memory_tools"]


def _function_tool(spec: MemoryToolSpec) -> FunctionTool:
    async def invoke(_context: ToolContext[Any], arguments: str) -> str:
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"Error: the arguments of {spec.name} are not JSON: {exc}"
        if not isinstance(parsed, dict):
            return f"Error: the arguments of {spec.name} must be a JSON object"
        return await spec.arun(**parsed)

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=spec.parameters,
        on_invoke_tool=invoke,
        # The core's schemas have optional fields, which strict mode refuses.
        strict_json_schema=False,
    )


def memory_tools(
    task_memory: TaskMemory | Sequence[TaskMemory], **options: Any
) -> list[FunctionTool]:
    """The memory tools over ``task_memory``, for ``Agent(tools=[...])``.

    Args:
        task_memory: One memory, or several told apart by their ``name``.
        **options: Passed to :func:`~offprompt.task_memory.tools.memory_tool_specs`
            (``summarizer``, ``max_output_tokens``, ``top_n``, ``summary_tokens``).

    Example:
        >>> [tool.name for tool in memory_tools(TaskMemory())]
        ['query_memory', 'grep_memory', 'read_memory', 'json_memory', 'summarize_memory']
    """
    return [_function_tool(spec) for spec in memory_tool_specs(task_memory, **options)]
