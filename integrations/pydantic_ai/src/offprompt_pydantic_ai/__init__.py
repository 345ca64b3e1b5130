"""offprompt for pydantic-ai: large tool returns kept off the prompt, run history kept whole.

``OffpromptOverflowStore`` is pydantic-ai-harness's ``OverflowStore`` (for
``ToolOutputLimits(store=...)``) on offprompt task memory; ``OffpromptCapability`` is a
capability that stores large tool returns in task memory at ``after_tool_execute`` and
gives the model the five memory tools (``memory_tools`` gives them alone);
``OffpromptHistory`` records every run whole, is the harness's ``HistorySource``, and
saves and loads a whole ``pydantic_ai.Conversation``.
"""

from offprompt_pydantic_ai.capability import OFFLOAD_METADATA_KEY, OffpromptCapability, memory_tools
from offprompt_pydantic_ai.history import OffpromptHistory
from offprompt_pydantic_ai.overflow import OVERFLOW_TOOL, OffpromptOverflowStore

__all__ = [
    "OFFLOAD_METADATA_KEY",
    "OVERFLOW_TOOL",
    "OffpromptCapability",
    "OffpromptHistory",
    "OffpromptOverflowStore",
    "memory_tools",
]
