"""Step memory: smolagents' structured record of an agent run.

An :class:`AgentMemory` holds a :class:`SystemPromptStep` and a list of steps
(:class:`TaskStep`, :class:`ActionStep`, :class:`PlanningStep`,
:class:`FinalAnswerStep`). The steps are variants of one record, so they live together
here, as they do in smolagents' ``memory.py``.

Three views of a step:

* ``dict()`` -- smolagents' shape (the keys ``get_full_steps()`` returns), JSON-ready;
  images become ``ImageArtifact`` dicts where smolagents gives raw pixel bytes, and
  messages are offprompt ``Message`` dicts where smolagents gives ``ChatMessage`` dicts.
* ``to_dict()`` / ``MemoryStep.from_dict()`` -- lossless JSON with a ``type``
  discriminator; an unknown ``type`` is an :class:`~offprompt.errors.UnknownTypeError`.
* ``to_messages(summary_mode)`` -- the messages smolagents writes into the model's
  input for the step, as :class:`~offprompt.messages.Message`. smolagents' own
  ``tool-call`` / ``tool-response`` roles are mapped the way its default
  ``tool_role_conversions`` maps them (to ``assistant`` / ``user``); the original role is
  kept in ``message.meta["smolagents_role"]``.

Persistence: :meth:`AgentMemory.save` / :meth:`AgentMemory.load` write a run to any
conversation store with the state API (``get_state``, ``set_state``, ``delete_state``,
``state_keys``), and :meth:`AgentMemory.attach` writes each step as it is appended, so a
run can be reloaded, replayed and continued after a restart. Layout, per session::

    steps/{run_id}/meta        {"format": 1, "count": n, "system_prompt": "..."}
    steps/{run_id}/{i:08d}     the i-th step's to_dict()

``meta.count`` is written after the steps it counts, so an append interrupted by a crash
leaves the run as it was before the append.
"""

from offprompt.steps.memory import AgentMemory, CallbackRegistry, StepList
from offprompt.steps.persistence import AsyncStateStore, StateStore
from offprompt.steps.records import (
    PLAN_FOLLOW_UP,
    RETRY_GUIDANCE,
    ActionStep,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
    StepError,
    SystemPromptStep,
    TaskStep,
    Timing,
    TokenUsage,
    ToolCall,
)

__all__ = [
    "PLAN_FOLLOW_UP",
    "RETRY_GUIDANCE",
    "ActionStep",
    "AgentMemory",
    "AsyncStateStore",
    "CallbackRegistry",
    "FinalAnswerStep",
    "MemoryStep",
    "PlanningStep",
    "StateStore",
    "StepError",
    "StepList",
    "SystemPromptStep",
    "TaskStep",
    "Timing",
    "TokenUsage",
    "ToolCall",
]
