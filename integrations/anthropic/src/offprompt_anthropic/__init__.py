"""offprompt for Claude: the memory tool's ``/memories`` tree on offprompt storage.

``OffpromptMemoryTool`` (and ``AsyncOffpromptMemoryTool``) implement the Anthropic SDK's
``BetaAbstractMemoryTool``: the files Claude keeps are durable (SQLite, or any offprompt
store such as ``PostgresStore``), scoped per user or tenant, and deleted by
``offprompt.forget(scope)``.
"""

from offprompt_anthropic.memory_tool import (
    MEMORY_SESSION,
    ROOT,
    AsyncOffpromptMemoryTool,
    MemoryFiles,
    OffpromptMemoryTool,
)

__all__ = [
    "MEMORY_SESSION",
    "ROOT",
    "AsyncOffpromptMemoryTool",
    "MemoryFiles",
    "OffpromptMemoryTool",
]
