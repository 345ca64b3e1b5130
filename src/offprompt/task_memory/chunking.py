"""Token-aware chunking that keeps the original text reconstructable exactly.

Chunks are consecutive, non-overlapping spans of the text (``text[start:end]``), each
of ``chunk_tokens`` tokens, cut only at character boundaries: a BPE token can end inside
a multi-byte UTF-8 character, and then the cut moves forward to the next whole
character (so a chunk can hold up to 3 extra tokens). Joining the chunks gives the
original back. The overlap only enriches ``embed_text`` (the tail of the previous
chunk plus the chunk), so nothing is stored twice.

Large texts are processed in segments of up to ``segment_chars`` characters, so
tokenising a 100 MB output holds one segment's tokens at a time. Chunking runs in two stages:
*planning* a segment (tokenising it and finding the cuts; tiktoken releases the GIL) and
*cutting* the planned chunks out of it. With ``ahead=True`` planning runs in a
background thread, one segment ahead of the caller, which keeps the GIL-free
tokenising off the caller's critical path.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from offprompt.errors import ValidationError

__all__ = ["Chunk", "iter_chunks", "prefetch"]

T = TypeVar("T")
_DONE = object()


@dataclass
class Chunk:
    """One span ``text[start:end]`` of the chunked text."""

    index: int
    start: int
    end: int
    text: str
    embed_text: str
    token_ids: npt.NDArray[np.uint32]
    sparse: Any = None  # what ``span_encoder`` made of this chunk's tokens, if given

    @property
    def tokens(self) -> int:
        return int(self.token_ids.size)


@dataclass
class _Plan:
    """A tokenised segment and where its chunks end (UTF-8 byte cut, token stop)."""

    offset: int
    data: bytes
    ids: npt.NDArray[np.uint32]
    cuts: list[tuple[int, int]]
    encoded: list[Any] | None


@lru_cache(maxsize=4)
def _token_byte_lengths(encoding: Any) -> npt.NDArray[np.int64]:
    lengths = np.zeros(encoding.max_token_value + 1, dtype=np.int64)
    for token in range(encoding.max_token_value + 1):
        try:
            lengths[token] = len(encoding.decode_single_token_bytes(token))
        except KeyError:
            lengths[token] = 0
    return lengths


def prefetch(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` in a background thread, up to ``depth`` items ahead.

    An exception raised by ``items`` is re-raised in the consumer; a consumer that stops
    early (or fails) stops the producer.
    """
    buffer: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    failure: list[BaseException] = []

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            failure.append(exc)
        put(_DONE)

    worker = threading.Thread(target=produce, name="offprompt-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = buffer.get()
            if item is _DONE:
                break
            yield item
        if failure:
            raise failure[0]
    finally:
        stop.set()
        worker.join()


SpanEncoder = Callable[[npt.NDArray[np.uint32], list[int]], Sequence[Any]]


def _plan(
    text: str,
    encoding: Any,
    chunk_tokens: int,
    segment_chars: int,
    span_encoder: SpanEncoder | None,
) -> Iterator[_Plan]:
    lengths = _token_byte_lengths(encoding)
    offset = 0  # characters of ``text`` already planned
    # Segments start small and double: the first chunks are ready within milliseconds,
    # so a consumer in another thread does not wait for a whole segment to tokenise.
    size = max(segment_chars // 16, chunk_tokens * 16)
    while offset < len(text):
        segment = text[offset : offset + size]
        size = min(size * 2, segment_chars)
        last = offset + len(segment) >= len(text)
        try:
            data = segment.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(
                f"text is not valid Unicode at character {offset + exc.start}: {exc.reason}"
            ) from None
        # Ordinary text: special-token strings in a tool output are just text.
        ids = encoding.encode_to_numpy(segment, disallowed_special=())
        ends = np.cumsum(lengths[ids])
        n_full = ids.size // chunk_tokens
        bounds = list(range(chunk_tokens, ids.size + 1, chunk_tokens))
        if last and ids.size % chunk_tokens:
            bounds.append(ids.size)
        if not last and n_full > 1:
            bounds = bounds[:-1]  # the tail is re-tokenised with the next segment
        cuts: list[tuple[int, int]] = []
        token_pos = 0
        for bound in bounds:
            if bound <= token_pos:
                continue  # an earlier cut already moved past this boundary
            cut = int(ends[bound - 1])
            while cut < len(data) and (data[cut] & 0xC0) == 0x80:
                cut += 1
            # A character split across tokens stays whole: take the tokens up to the cut.
            token_pos = int(np.searchsorted(ends, cut, side="left")) + 1
            cuts.append((cut, token_pos))
        if not cuts:
            if last:
                break
            # A segment too short for one full chunk (cannot happen with the floor on
            # segment_chars, but never loop forever): emit it whole.
            cuts.append((len(data), int(ids.size)))
        stops = [stop for _, stop in cuts]
        encoded = list(span_encoder(ids, stops)) if span_encoder is not None else None
        yield _Plan(offset, data, ids, cuts, encoded)
        consumed = np.frombuffer(data, dtype=np.uint8, count=cuts[-1][0])
        offset += int(np.count_nonzero((consumed & 0xC0) != 0x80))  # characters in the cut
        if last:
            break


def iter_chunks(
    text: str,
    encoding: Any,
    *,
    chunk_tokens: int = 512,
    overlap_tokens: int = 64,
    segment_chars: int = 1_000_000,
    ahead: bool = False,
    span_encoder: SpanEncoder | None = None,
) -> Iterator[Chunk]:
    """Yield the chunks of ``text`` in order (see the module docs).

    Args:
        text: The text; it must be encodable as UTF-8 (no lone surrogates).
        encoding: A tiktoken ``Encoding``.
        chunk_tokens: Maximum tokens per chunk.
        overlap_tokens: Tokens of the previous chunk prepended to ``embed_text``.
        segment_chars: Characters tokenised at a time.
        ahead: Tokenise the next segment in a background thread while the caller
            works on this one's chunks.
        span_encoder: Called with a segment's token ids and its chunks' token stops
            while planning (so in the background thread when ``ahead``); its results
            become the chunks' ``sparse``. ``BM25SparseEncoder.encode_spans`` fits.

    Raises:
        ValidationError: Bad sizes, or text that is not valid Unicode.
    """
    if chunk_tokens < 1 or overlap_tokens < 0 or overlap_tokens >= chunk_tokens:
        raise ValidationError(
            f"need chunk_tokens >= 1 and 0 <= overlap_tokens < chunk_tokens "
            f"(got {chunk_tokens}, {overlap_tokens})"
        )
    plans = _plan(text, encoding, chunk_tokens, max(segment_chars, chunk_tokens * 16), span_encoder)
    if ahead:
        plans = prefetch(plans)
    index = 0
    previous = ""
    previous_tokens = 0
    for plan in plans:
        byte_pos = token_pos = 0
        start = plan.offset
        for k, (cut, stop) in enumerate(plan.cuts):
            piece = plan.data[byte_pos:cut].decode("utf-8")
            overlap = ""
            if overlap_tokens and previous:
                keep = max(1, round(len(previous) * overlap_tokens / max(previous_tokens, 1)))
                overlap = previous[-keep:]
            chunk_ids = plan.ids[token_pos:stop]
            sparse = plan.encoded[k] if plan.encoded is not None else None
            yield Chunk(index, start, start + len(piece), piece, overlap + piece, chunk_ids, sparse)
            index += 1
            start += len(piece)
            previous, previous_tokens = piece, max(int(chunk_ids.size), 1)
            byte_pos, token_pos = cut, stop
