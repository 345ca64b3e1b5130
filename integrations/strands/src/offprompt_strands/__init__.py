"""offprompt for Strands Agents: ``ContextOffloader`` storage on offprompt task memory
and a durable ``SessionRepository``.

``OffpromptStorage`` is what ``ContextOffloader(storage=...)`` takes: every offloaded
block becomes a task-memory namespace that offprompt's memory tools (``memory_tools``)
can read, in any process. ``OffpromptSessionRepository`` is what
``RepositorySessionManager(session_repository=...)`` takes.
"""

from offprompt_strands.session import SESSION_PREFIX, OffpromptSessionRepository
from offprompt_strands.storage import CONTENT_TYPE_META, OffpromptStorage
from offprompt_strands.tools import memory_tools

__all__ = [
    "CONTENT_TYPE_META",
    "SESSION_PREFIX",
    "OffpromptSessionRepository",
    "OffpromptStorage",
    "memory_tools",
]
