"""What a framework adapter takes from the core, in one public place.

Every adapter in ``integrations/`` (and one written outside this project) builds on the
same few rules: a tool output arrives inside an agent run, so a lone surrogate is
escaped, not refused (:func:`escape_in_run`), and the message says so under
:data:`ESCAPED_SURROGATES_META`; a framework's pydantic error is retold as one line
(:func:`describe_pydantic_error`). The offload itself is
:class:`~offprompt.task_memory.OffloadPolicy`, and what a failed store shows the model
is :func:`failure_text`.

Example:
    >>> from offprompt.adapter_kit import escape_in_run, has_lone_surrogate
    >>> text, escaped = escape_in_run("caf\\udce9", what="a tool output")
    >>> text, escaped, has_lone_surrogate(text)
    ('caf\\\\udce9', True, False)
"""

from __future__ import annotations

from offprompt._validation import (
    ESCAPED_SURROGATES_META,
    describe_pydantic_error,
    escape_in_run,
    has_lone_surrogate,
)
from offprompt.task_memory.offload import OffloadPolicy, ToolContent, failure_text

__all__ = [
    "ESCAPED_SURROGATES_META",
    "OffloadPolicy",
    "ToolContent",
    "describe_pydantic_error",
    "escape_in_run",
    "failure_text",
    "has_lone_surrogate",
]
