"""The token budgets every part of task memory shares, and :func:`bound_text`, which
holds a text to one.

Re-exported by :mod:`offprompt.task_memory.offload`, where adapters look for them.
"""

from __future__ import annotations

from offprompt.tokens import TokenCodec

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "DEFAULT_PAGE_TOKENS", "PAGE_HEADER_TOKENS", "bound_text"]

DEFAULT_MAX_OUTPUT_TOKENS = 1000
"""Bound of what one memory tool call or one offloaded reference may send the model."""

PAGE_HEADER_TOKENS = 64
"""Room ``read_memory`` keeps for its ``Page i of n of artifact_namespace "..."`` line."""

DEFAULT_PAGE_TOKENS = DEFAULT_MAX_OUTPUT_TOKENS - PAGE_HEADER_TOKENS
"""The one page unit: ``TaskMemory(page_tokens=)``'s default. :meth:`TaskMemory.read`,
``read_memory`` and the card's "N pages of T tokens" all count pages of the memory's
``page_tokens``; with this default one page and its header fit in
:data:`DEFAULT_MAX_OUTPUT_TOKENS`."""


def bound_text(text: str, max_tokens: int, tokenizer: TokenCodec, hint: str = "") -> str:
    """``text`` cut to at most ``max_tokens`` tokens, the cut said in a last line.

    ``tokenizer`` has ``encode``, ``decode`` and ``count`` (a ``TiktokenTokenizer``).
    The note is counted in the bound (a shorter note when the bound is tiny), and the
    result is re-counted, so it never exceeds ``max_tokens``.
    """
    tokens = tokenizer.encode(text)
    if len(tokens) <= max_tokens:
        return text
    for note in (f"\n[... cut: {len(tokens):,} tokens in all{hint}]", "\n[... cut]", ""):
        room = max_tokens - tokenizer.count(note)
        if note and room < max_tokens // 2:
            continue  # the note would crowd out the text
        keep = room
        while keep >= 0:
            # A cut inside a character decodes to a replacement that may count more.
            out = str(tokenizer.decode(tokens[:keep])).rstrip("\ufffd") + note
            over = tokenizer.count(out) - max_tokens
            if over <= 0:
                return out
            keep -= over
    return ""
