"""offprompt for Google ADK: services on offprompt stores, and large tool results kept
off the prompt.

``OffpromptPlugin`` (``Runner(plugins=[...])``) stores a large tool result in task memory
and gives the model a reference; its ``tools`` read it back. ``OffpromptSessionService``,
``OffpromptArtifactService`` and ``OffpromptMemoryService`` are ADK's session, artifact
and memory services on an offprompt store (a SQLite file by default). ``ScriptedLlm``
(in :mod:`offprompt_adk.testing`) is a scripted model for offline examples and tests.
"""

from offprompt_adk.artifacts import OffpromptArtifactService
from offprompt_adk.memory import OffpromptMemoryService
from offprompt_adk.plugin import MemoryTool, OffpromptPlugin, memory_tools
from offprompt_adk.sessions import OffpromptSessionService

__all__ = [
    "MemoryTool",
    "OffpromptArtifactService",
    "OffpromptMemoryService",
    "OffpromptPlugin",
    "OffpromptSessionService",
    "memory_tools",
]
