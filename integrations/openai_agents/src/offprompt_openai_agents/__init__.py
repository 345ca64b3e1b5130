"""offprompt for the OpenAI Agents SDK: a durable, lossless ``Session`` on offprompt
conversation memory, with large tool outputs kept off the prompt.

``OffpromptSession`` is what ``Runner.run(..., session=...)`` takes; ``memory_tools``
gives an agent the tools to read what was kept off the prompt; ``ScriptedModel``
(in :mod:`offprompt_openai_agents.testing`) is a scripted stand-in for a model, for
offline examples and tests.
"""

from offprompt_openai_agents.session import OFFLOAD_META, OffpromptSession, ScopeResolver
from offprompt_openai_agents.tools import memory_tools

__all__ = ["OFFLOAD_META", "OffpromptSession", "ScopeResolver", "memory_tools"]
