"""The one rule that says whether a text output goes off-prompt.

``TaskMemory.process_output``, :class:`~offprompt.task_memory.offload.OffloadPolicy`
(every adapter) and the MCP proxy all ask :func:`decide_text`, so an output is empty,
small, large or sensitive in the same way everywhere.

Example:
    >>> from offprompt.tokens import default_tokenizer
    >>> count = default_tokenizer().count
    >>> decide_text("  ", min_tokens=10, sensitive=False, count=count).verdict
    'empty'
    >>> decide_text("disk full", min_tokens=10, sensitive=False, count=count).verdict
    'small'
    >>> decide_text("disk full", min_tokens=10, sensitive=True, count=count).stores
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BYTES_PER_CHAR_MAX",
    "CHARS_PER_TOKEN_MAX",
    "TextDecision",
    "Verdict",
    "decide_text",
    "is_blank",
]

Verdict = Literal["empty", "small", "large", "sensitive"]

#: No tokenizer in use cuts a token of more characters than this from real text, so a
#: text this many times longer than a bound has more tokens than it without counting.
CHARS_PER_TOKEN_MAX = 32
#: A token is at least one byte and a character at most four: a text of fewer than
#: ``bound / 4`` characters has fewer than ``bound`` tokens (CJK text has more tokens
#: than characters, so a character count alone is not a lower bound).
BYTES_PER_CHAR_MAX = 4


@dataclass(frozen=True)
class TextDecision:
    """What :func:`decide_text` found: the verdict, and the tokens it counted (None when
    it decided without counting)."""

    verdict: Verdict
    tokens: int | None = None

    @property
    def stores(self) -> bool:
        """Whether the output goes off-prompt (large or sensitive)."""
        return self.verdict in ("large", "sensitive")


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or whitespace only (``isspace`` stops at the first other
    character, where ``strip`` would copy a 50 MB output)."""
    return not text or text.isspace()


def decide_text(
    text: str,
    *,
    min_tokens: int,
    sensitive: bool,
    count: Callable[[str], int],
    reference_tokens: int = 0,
    preview_tokens: int = 0,
) -> TextDecision:
    """Whether ``text`` goes off-prompt.

    Args:
        text: The output.
        min_tokens: Outputs with fewer tokens stay (0: every non-empty output goes).
        sensitive: Every non-empty output goes, whatever its size.
        count: The tokenizer's count.
        reference_tokens: The tokens of the bare reference sentence: an output that is
            not larger than it stays, since storing it would show the model more.
        preview_tokens: The most tokens the reference may have (sentence and card): a
            text longer than ``CHARS_PER_TOKEN_MAX`` times this and ``min_tokens`` is
            large without being counted.

    Empty (:func:`is_blank`) is checked first and never goes.
    """
    if is_blank(text):
        return TextDecision("empty")
    if sensitive:
        return TextDecision("sensitive")
    if min_tokens <= 0:
        return TextDecision("large")
    if len(text) * BYTES_PER_CHAR_MAX < min_tokens:
        return TextDecision("small")
    if len(text) >= max(min_tokens, reference_tokens, preview_tokens) * CHARS_PER_TOKEN_MAX:
        return TextDecision("large")
    tokens = count(text)
    if tokens < min_tokens or reference_tokens >= tokens:
        return TextDecision("small", tokens)
    return TextDecision("large", tokens)
