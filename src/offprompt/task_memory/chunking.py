"""Token-aware chunking that keeps the original text reconstructable exactly.

Chunks are consecutive, non-overlapping spans of the text (``text[start:end]``), each
of ``chunk_tokens`` tokens, cut only at character boundaries: a BPE token can end inside
a multi-byte UTF-8 character, and then the cut moves forward to the next whole
character (so a chunk can hold up to 3 extra tokens). Joining the chunks gives the original back. The overlap only enriches
``embed_text`` (the tail of the previous chunk plus the chunk), so nothing is stored
twice.

Large texts are processed in segments of ``segment_chars`` characters, so tokenising
a 100 MB output holds one segment's tokens at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from offprompt.errors import ValidationError

__all__ = ["Chunk", "iter_chunks"]


@dataclass
class Chunk:
    """One span ``text[start:end]`` of the chunked text."""

    index: int
    start: int
    end: int
    text: str
    embed_text: str
    token_ids: npt.NDArray[np.int64]

    @property
    def tokens(self) -> int:
        return int(self.token_ids.size)


@lru_cache(maxsize=4)
def _token_byte_lengths(encoding: Any) -> npt.NDArray[np.int64]:
    lengths = np.zeros(encoding.max_token_value + 1, dtype=np.int64)
    for token in range(encoding.max_token_value + 1):
        try:
            lengths[token] = len(encoding.decode_single_token_bytes(token))
        except KeyError:
            lengths[token] = 0
    return lengths


def iter_chunks(
    text: str,
    encoding: Any,
    *,
    chunk_tokens: int = 512,
    overlap_tokens: int = 64,
    segment_chars: int = 1_000_000,
) -> Iterator[Chunk]:
    """Yield the chunks of ``text`` in order (see the module docs).

    Args:
        text: The text; it must be encodable as UTF-8 (no lone surrogates).
        encoding: A tiktoken ``Encoding``.
        chunk_tokens: Maximum tokens per chunk.
        overlap_tokens: Tokens of the previous chunk prepended to ``embed_text``.
        segment_chars: Characters tokenised at a time.

    Raises:
        ValidationError: Bad sizes, or text that is not valid Unicode.
    """
    if chunk_tokens < 1 or overlap_tokens < 0 or overlap_tokens >= chunk_tokens:
        raise ValidationError(
            f"need chunk_tokens >= 1 and 0 <= overlap_tokens < chunk_tokens "
            f"(got {chunk_tokens}, {overlap_tokens})"
        )
    lengths = _token_byte_lengths(encoding)
    index = 0
    offset = 0  # characters of ``text`` already emitted
    previous = ""
    previous_tokens = 0
    segment_chars = max(segment_chars, chunk_tokens * 16)
    while offset < len(text):
        segment = text[offset : offset + segment_chars]
        last = offset + len(segment) >= len(text)
        try:
            data = segment.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(
                f"text is not valid Unicode at character {offset + exc.start}: {exc.reason}"
            ) from None
        ids = np.asarray(encoding.encode_ordinary(segment), dtype=np.int64)
        ends = np.cumsum(lengths[ids])
        n_full = ids.size // chunk_tokens
        bounds = list(range(chunk_tokens, ids.size + 1, chunk_tokens))
        if last and ids.size % chunk_tokens:
            bounds.append(ids.size)
        if not last and n_full > 1:
            bounds = bounds[:-1]  # the tail is re-tokenised with the next segment
        byte_pos = 0
        char_pos = 0
        token_pos = 0
        for bound in bounds:
            if bound <= token_pos:
                continue  # an earlier cut already moved past this boundary
            cut = int(ends[bound - 1])
            while cut < len(data) and (data[cut] & 0xC0) == 0x80:
                cut += 1
            # A character split across tokens stays whole: take the tokens up to the cut.
            stop = int(np.searchsorted(ends, cut, side="left")) + 1
            piece = data[byte_pos:cut].decode("utf-8")
            overlap = ""
            if overlap_tokens and previous:
                keep = max(1, round(len(previous) * overlap_tokens / max(previous_tokens, 1)))
                overlap = previous[-keep:]
            chunk_ids = ids[token_pos:stop]
            start = offset + char_pos
            yield Chunk(index, start, start + len(piece), piece, overlap + piece, chunk_ids)
            index += 1
            previous, previous_tokens = piece, max(int(chunk_ids.size), 1)
            byte_pos, char_pos, token_pos = cut, char_pos + len(piece), stop
        if char_pos == 0 and not last:
            # A segment too short for one full chunk (cannot happen with the floor
            # above, but never loop forever): emit it whole.
            char_pos = len(segment)
            yield Chunk(index, offset, offset + char_pos, segment, segment, ids)
            index += 1
        offset += char_pos
        if last:
            break
