"""Long-term memory, DB-GPT's model: fragments flow sensory -> short-term -> long-term.

* :class:`MemoryFragment` - one observation with a time-ordered id, importance,
  last-accessed time, insight flag and a :class:`Scope` (``offprompt.scope.Scope``:
  tenant / user / agent / session / run).
* :class:`SensoryMemory`, :class:`ShortTermMemory`, :class:`EnhancedShortTermMemory` -
  in-process buffers that decide what is worth keeping.
* :class:`LongTermMemory` - fragments in Qdrant, recalled from a hybrid (dense + BM25)
  pool by ``similarity + (1 - decay_rate) ** hours_since_last_access + importance``.
* :class:`HybridMemory` - the three together.
* :class:`ImportanceScorer` / :class:`InsightExtractor` with offline defaults
  (:class:`HeuristicImportanceScorer`, :class:`ExtractiveInsightExtractor`).
* :class:`PlanMemory` (plans per conversation) and :func:`format_memories` /
  :func:`render_write_memory` (prompt text in and out).
"""

from offprompt.longterm.fragment import Clock, DiscardedMemoryFragments, MemoryFragment, Scope
from offprompt.longterm.hybrid import HybridMemory
from offprompt.longterm.long_term import LongTermMemory, ScoredFragment
from offprompt.longterm.plans import PLAN_STATES, PlanMemory, SubTask
from offprompt.longterm.prompts import (
    DEFAULT_MEMORY_TEMPLATE,
    DEFAULT_WRITE_MEMORY_TEMPLATE,
    MemoryLike,
    format_memories,
    render_write_memory,
)
from offprompt.longterm.scoring import (
    DEFAULT_IMPORTANCE_PROMPT,
    DEFAULT_INSIGHT_PROMPT,
    ExtractiveInsightExtractor,
    HeuristicImportanceScorer,
    ImportanceScorer,
    InsightExtractor,
    MemoryModelError,
    PromptedImportanceScorer,
    PromptedInsightExtractor,
)
from offprompt.longterm.sensory import SensoryMemory
from offprompt.longterm.short_term import EnhancedShortTermMemory, ShortTermMemory

# The helpers behind these (``sigmoid``, ``cosine_similarity``, ``parse_rating``,
# ``parse_insights``, ``render_template``, ``new_fragment_id``, ``fragment_id_time``,
# ``merge_scopes``) stay in their modules: import them from there.
__all__ = [
    "DEFAULT_IMPORTANCE_PROMPT",
    "DEFAULT_INSIGHT_PROMPT",
    "DEFAULT_MEMORY_TEMPLATE",
    "DEFAULT_WRITE_MEMORY_TEMPLATE",
    "PLAN_STATES",
    "Clock",
    "DiscardedMemoryFragments",
    "EnhancedShortTermMemory",
    "ExtractiveInsightExtractor",
    "HeuristicImportanceScorer",
    "HybridMemory",
    "ImportanceScorer",
    "InsightExtractor",
    "LongTermMemory",
    "MemoryFragment",
    "MemoryLike",
    "MemoryModelError",
    "PlanMemory",
    "PromptedImportanceScorer",
    "PromptedInsightExtractor",
    "Scope",
    "ScoredFragment",
    "SensoryMemory",
    "ShortTermMemory",
    "SubTask",
    "format_memories",
    "render_write_memory",
]
