"""``memory_tools``: offprompt's memory tools as Strands tools.

The tools (``query_memory``, ``grep_memory``, ``read_memory``, ``json_memory``,
``summarize_memory`` ...) are defined once in the core
(:func:`offprompt.task_memory.tools.memory_tool_specs`): the same names, descriptions,
argument schemas and bounded answers as in every other adapter. Here each becomes a
Strands ``PythonAgentTool`` whose call runs the core's handler without blocking the
event loop. A block that ``ContextOffloader`` stored in an :class:`OffpromptStorage`
is readable with them under its reference (the reference is the namespace).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import ToolResult, ToolSpec, ToolUse

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import MemoryToolSpec, memory_tool_specs

__all__ = ["memory_tools"]


def _strands_tool(spec: MemoryToolSpec) -> PythonAgentTool:
    async def invoke(tool_use: ToolUse, **_invocation_state: Any) -> ToolResult:
        arguments = tool_use.get("input") or {}
        tool_use_id = tool_use["toolUseId"]
        if not isinstance(arguments, dict):
            text = f"Error: the arguments of {spec.name} must be a JSON object"
            return {"toolUseId": tool_use_id, "status": "error", "content": [{"text": text}]}
        answer = await spec.arun(**arguments)
        return {"toolUseId": tool_use_id, "status": "success", "content": [{"text": answer}]}

    tool_spec: ToolSpec = {
        "name": spec.name,
        "description": spec.description,
        "inputSchema": {"json": spec.parameters},
    }
    return PythonAgentTool(spec.name, tool_spec, invoke)


def memory_tools(
    task_memory: TaskMemory | Sequence[TaskMemory], **options: Any
) -> list[PythonAgentTool]:
    """The memory tools over ``task_memory``, for ``Agent(tools=[...])``.

    Args:
        task_memory: One memory (e.g. ``OffpromptStorage(...).memory``), or several told
            apart by their ``name``.
        **options: Passed to :func:`~offprompt.task_memory.tools.memory_tool_specs`
            (``summarizer``, ``max_output_tokens``, ``top_n``, ``summary_tokens``).

    Example:
        >>> memory = TaskMemory()
        >>> [tool.tool_name for tool in memory_tools(memory)][:3]
        ['query_memory', 'grep_memory', 'read_memory']
        >>> memory.close()
    """
    return [_strands_tool(spec) for spec in memory_tool_specs(task_memory, **options)]
