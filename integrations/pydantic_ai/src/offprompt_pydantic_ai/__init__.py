"""offprompt for pydantic-ai: large tool returns kept off the prompt, run history kept whole.

``OffpromptOverflowStore`` is pydantic-ai-harness's ``OverflowStore`` (for
``ToolOutputLimits(store=...)``) on offprompt task memory.
"""

from offprompt_pydantic_ai.overflow import OVERFLOW_TOOL, OffpromptOverflowStore

__all__ = ["OVERFLOW_TOOL", "OffpromptOverflowStore"]
