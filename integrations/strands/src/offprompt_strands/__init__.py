"""offprompt for Strands Agents: ``ContextOffloader`` storage on offprompt task memory
and a durable ``SessionRepository``.

``OffpromptStorage`` is what ``ContextOffloader(storage=...)`` takes: every offloaded
block becomes a task-memory namespace that offprompt's memory tools can read, in any
process. ``OffpromptSessionRepository`` is what ``RepositorySessionManager`` takes.
"""

from offprompt_strands.storage import CONTENT_TYPE_META, OffpromptStorage
from offprompt_strands.tools import memory_tools

__all__ = ["CONTENT_TYPE_META", "OffpromptStorage", "memory_tools"]
