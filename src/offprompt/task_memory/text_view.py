"""Exact reads over a stored output's raw UTF-8 bytes: grep, line ranges, token pages.

:class:`TextView` wraps the bytes of one namespace and answers without the vector
index, so it works the moment the raw output is durable. Line numbers are 1-based and
lines end at ``\\n``. Line lookups use a sparse index (the newline count at every 64 KiB
block), built in one NumPy pass, so a 100 MB output costs a few kilobytes
of index rather than one offset per line.

Regexes run on RE2 (``google-re2``): matching is linear in the text, so a pattern that
backtracks catastrophically in ``re`` (``(a+)+$``) cannot hang the process; RE2 refuses
what it cannot run in linear time (backreferences, look-around) with a
:class:`~offprompt.errors.PatternError`. Case-sensitive literal search is
``bytes.find`` (memchr-based, well above 1 GB/s).
"""

from __future__ import annotations

import itertools
import operator
import threading
from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from offprompt.errors import PatternError, RangeError, ValidationError
from offprompt.task_memory.card import LINE_PREVIEW_CHARS

__all__ = ["GrepMatch", "GrepResult", "TextView"]

_BLOCK = 1 << 16
#: Characters shown of a matching line (a window around the match on longer lines).
GREP_LINE_CHARS = 400
MAX_CONTEXT = 20
MAX_MATCHES = 10_000
_SEGMENT = 1 << 20
#: The first segment a page cut tokenises: segments grow from this size to
#: ``_SEGMENT`` (each as long as the text before it), so page 1 of a huge output
#: tokenises 64 KiB, not 1 MiB, while later pages keep tiktoken's calls large.
_FIRST_SEGMENT = 1 << 16


class GrepMatch(BaseModel):
    """One matching line: its 1-based number, the line (cut around the match when long)
    and ``before`` / ``after`` context lines as ``(line number, line)``."""

    line_number: int
    line: str
    before: list[tuple[int, str]] = Field(default_factory=list)
    after: list[tuple[int, str]] = Field(default_factory=list)


class GrepResult(BaseModel):
    """Matching lines, the total number of matching lines, and whether ``matches`` was cut
    at ``max_matches``."""

    matches: list[GrepMatch] = Field(default_factory=list)
    total_matches: int = 0
    truncated: bool = False


def _decode(data: bytes) -> str:
    # Cuts made on byte offsets may split a character at either end: drop the pieces.
    return data.decode("utf-8", errors="ignore")


def compile_pattern(pattern: str, *, regex: bool, ignore_case: bool) -> Any:
    """An RE2 regexp for ``pattern`` (``regex=False``: the literal string).

    Raises:
        PatternError: An empty pattern, or one RE2 rejects (named in the message).
    """
    import re2

    if not isinstance(pattern, str) or not pattern:
        raise PatternError("grep pattern must be a non-empty string")
    options = re2.Options()
    options.never_nl = True  # a match never spans lines
    options.case_sensitive = not ignore_case
    options.literal = not regex
    options.log_errors = False
    options.max_mem = 64 << 20
    try:
        # (?m): ^ and $ match at line ends, as in grep
        return re2.compile(f"(?m){pattern}" if regex else pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise PatternError(f"invalid regex {pattern[:80]!r}: {reason}", pattern=pattern) from None


def _newline_counts(data: bytes) -> list[int]:
    """Newlines before each ``_BLOCK``-byte block, and in all (the last item).

    NumPy compares a block at a time into one reused buffer and counts with SIMD:
    about 3x faster than ``bytes.count`` per block, whose single-byte loop is scalar.
    """
    counts = [0]
    if not data:
        return counts
    view = np.frombuffer(data, dtype=np.uint8)
    hits = np.empty(min(_BLOCK, len(data)), dtype=bool)
    total = 0
    for offset in range(0, len(data), _BLOCK):
        block = view[offset : offset + _BLOCK]
        found = hits[: len(block)]
        np.equal(block, 10, out=found)
        total += int(np.count_nonzero(found))
        counts.append(total)
    return counts


#: The text the literal count of :meth:`TextView.grep` splits at once (bounds its copy).
_COUNT_WINDOW = 8 << 20


def _count_lines_with(data: bytes, literal: bytes, pos: int) -> int:
    """Lines of ``data`` from line start ``pos`` on that contain ``literal`` (no newline
    in it): each window ends at a line end, so no line spans two, and an occurrence is
    on a new line exactly when the text since the previous one holds a newline."""
    total = 0
    size = len(data)
    newline = itertools.repeat(b"\n")
    while pos < size:
        stop = min(size, pos + _COUNT_WINDOW)
        if stop < size:
            cut = data.find(b"\n", stop - 1)
            stop = size if cut == -1 else cut + 1
        pieces = data[pos:stop].split(literal)
        if len(pieces) > 1:
            total += 1 + sum(map(operator.contains, pieces[1:-1], newline))
        pos = stop
    return total


def _check_grep_bounds(context: Any, max_matches: Any) -> None:
    """``ValidationError`` unless ``context`` and ``max_matches`` are ints in range."""
    if not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
        raise ValidationError(f"context must be an int in 0..{MAX_CONTEXT}, got {context!r}")
    if not isinstance(max_matches, int) or not 1 <= max_matches <= MAX_MATCHES:
        raise ValidationError(
            f"max_matches must be an int in 1..{MAX_MATCHES}, got {max_matches!r}"
        )


class TextView:
    """Read-only exact access to ``data`` (UTF-8 text); thread-safe.

    Args:
        data: The namespace's text as UTF-8.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._counts = _newline_counts(data)  # newlines before block i
        counts = self._counts
        newlines = counts[-1]
        self.lines = 0 if not data else newlines + (0 if data.endswith(b"\n") else 1)
        self._pages: dict[tuple[int, int], list[int]] = {}
        # Pages cut so far and the byte offset reached, for outputs not cut to the end.
        self._partial_pages: dict[tuple[int, int], tuple[list[int], int]] = {}
        self._lock = threading.Lock()
        self._chars: list[int] | None = None  # characters before each block, once asked
        #: ``(kind, value)`` once parsed as JSON (``("", None)``: it is not JSON).
        self.parsed: tuple[str, Any] | None = None

    # ------------------------------------------------------------------ lines

    def line_start(self, number: int) -> int:
        """Byte offset where line ``number`` (1-based) starts; ``len(data)`` past the end."""
        if number <= 1:
            return 0
        wanted = number - 1  # newlines before the line
        if wanted > self._counts[-1]:
            return len(self.data)
        block = bisect_left(self._counts, wanted) - 1
        pos = block * _BLOCK
        seen = self._counts[block]
        data = self.data
        while seen < wanted:
            pos = data.index(b"\n", pos) + 1
            seen += 1
        return pos

    def byte_offset(self, char_offset: int) -> int:
        """The byte offset of character ``char_offset`` (0-based; past the end: the end).

        The characters before each block are counted once (UTF-8 lead bytes, with
        NumPy), so a lookup decodes at most one block.
        """
        chars = self._char_counts()
        block = max(0, bisect_right(chars, char_offset) - 1)
        start = block * _BLOCK
        data = self.data
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1  # the rest of a character counted in the block before
        if start >= len(data):
            return len(data)
        piece = data[start : start + _BLOCK + 4].decode("utf-8", errors="ignore")
        inside = piece[: char_offset - chars[block]]
        return min(len(data), start + len(inside.encode("utf-8")))

    def char_offset(self, byte_offset: int) -> int:
        """The characters before byte ``byte_offset`` (a character boundary)."""
        block = min(byte_offset, len(self.data)) // _BLOCK
        piece = np.frombuffer(self.data, dtype=np.uint8)[block * _BLOCK : byte_offset]
        return self._char_counts()[block] + int(np.count_nonzero((piece & 0xC0) != 0x80))

    def _char_counts(self) -> list[int]:
        """Characters before each block (UTF-8 lead bytes), counted once."""
        if self._chars is None:
            view = np.frombuffer(self.data, dtype=np.uint8)
            counts, total = [0], 0
            for offset in range(0, len(self.data), _BLOCK):
                total += int(np.count_nonzero((view[offset : offset + _BLOCK] & 0xC0) != 0x80))
                counts.append(total)
            self._chars = counts
        return self._chars

    def line_number(self, offset: int) -> int:
        """The 1-based line holding byte ``offset``."""
        block = offset // _BLOCK
        return self._counts[block] + self.data.count(b"\n", block * _BLOCK, offset) + 1

    def _line_at(self, start: int) -> tuple[int, int]:
        end = self.data.find(b"\n", start)
        return start, len(self.data) if end == -1 else end

    def read_lines(self, start: int, stop: int | None = None) -> tuple[str, int, int]:
        """Lines ``start`` (inclusive) to ``stop`` (exclusive), newlines kept.

        Returns ``(text, start, stop)`` with ``stop`` clamped to the end.

        Raises:
            RangeError: ``start`` outside ``1..lines`` or ``stop <= start``.
        """
        for name, value in (("start", start), ("stop", stop)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValidationError(f"{name} must be an int, got {value!r}")
        if self.lines == 0:
            raise RangeError("the output has no lines")
        if not 1 <= start <= self.lines:
            raise RangeError(f"start must be between 1 and {self.lines}, got {start}")
        end = self.lines + 1 if stop is None else min(stop, self.lines + 1)
        if end <= start:
            raise RangeError(f"stop must be greater than start ({start}), got {stop}")
        first = self.line_start(start)
        last = self.line_start(end)
        return self.data[first:last].decode("utf-8"), start, end

    def _context_line(self, start: int, end: int, chars: int = LINE_PREVIEW_CHARS) -> str:
        piece = self.data[start : min(end, start + chars * 4)]
        text = _decode(piece)
        cut = end - start > len(piece)
        if len(text) > chars or cut:
            return text[:chars] + "…"
        return text

    def head(self, n: int, chars: int = LINE_PREVIEW_CHARS) -> list[tuple[int, str]]:
        """The first ``n`` lines, each cut to ``chars`` characters."""
        out: list[tuple[int, str]] = []
        pos = 0
        for number in range(1, min(n, self.lines) + 1):
            start, end = self._line_at(pos)
            out.append((number, self._context_line(start, end, chars)))
            pos = end + 1
        return out

    def tail(self, n: int, chars: int = LINE_PREVIEW_CHARS) -> list[tuple[int, str]]:
        """The last ``n`` lines, each cut to ``chars`` characters."""
        out: list[tuple[int, str]] = []
        end = len(self.data) - (1 if self.data.endswith(b"\n") else 0)
        number = self.lines
        while number >= 1 and len(out) < n:
            start = self.data.rfind(b"\n", 0, end) + 1
            out.append((number, self._context_line(start, end, chars)))
            end = start - 1
            number -= 1
        return out[::-1]

    # ------------------------------------------------------------------- grep

    def _window(self, start: int, end: int, hit: int, hit_end: int) -> str:
        if end - start <= GREP_LINE_CHARS:
            return self.data[start:end].decode("utf-8", errors="replace")
        half = GREP_LINE_CHARS // 2
        lo = max(start, hit - half)
        hi = min(end, max(hit_end, hit) + half)
        text = _decode(self.data[lo:hi])
        prefix = f"…({lo - start:,} bytes) " if lo > start else ""
        suffix = f" …({end - hi:,} bytes)" if hi < end else ""
        return prefix + text + suffix

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = True,
        ignore_case: bool = False,
        context: int = 0,
        max_matches: int = 50,
    ) -> GrepResult:
        """Lines matching ``pattern`` (see :meth:`TaskMemory.grep`)."""
        _check_grep_bounds(context, max_matches)
        data = self.data
        literal = None
        if not regex and not ignore_case:
            if not isinstance(pattern, str) or not pattern:
                raise PatternError("grep pattern must be a non-empty string")
            literal = pattern.encode("utf-8", errors="surrogatepass")
            if b"\n" in literal:
                return GrepResult()  # lines never contain a newline
        else:
            import re2

            # RE2's own matcher, below its Python API, finds a match without a copy of
            # the line; the wrapper has no public way to (private-ok: third party).
            compiled = compile_pattern(pattern, regex=regex, ignore_case=ignore_case)
            matcher = compiled._regexp.Match  # private-ok: google-re2's matcher
            anchor = re2._Anchor.UNANCHORED  # private-ok: google-re2's matcher
        matches: list[GrepMatch] = []
        total = 0
        pos = 0
        last_offset, last_line = 0, 1
        size = len(data)
        find = data.find
        # An empty match after the last newline is not a line.
        end_of_text = size if size and data.endswith(b"\n") else -1
        full = False  # max_matches lines found: the rest is only counted
        while pos <= size:
            if len(matches) == max_matches:
                full = True
                break
            if literal is not None:
                hit = find(literal, pos)
                if hit == -1:
                    break
                hit_end = hit + len(literal)
            else:
                # The raw RE2 call: the re-like wrapper costs several times more per match.
                hit, hit_end = matcher(anchor, data, pos, size)[0]
                if hit == -1 or hit == end_of_text:
                    break
            newline = data.rfind(b"\n", pos, hit)  # pos is always a line start
            start = pos if newline == -1 else newline + 1
            end = find(b"\n", hit)
            end = size if end == -1 else end
            total += 1
            number = last_line + data.count(b"\n", last_offset, start)
            last_offset, last_line = start, number
            matches.append(
                GrepMatch(
                    line_number=number,
                    line=self._window(start, end, hit, hit_end),
                    before=self._before(start, number, context),
                    after=self._after(end, number, context),
                )
            )
            pos = end + 1
        # The rest is only counted. A literal is counted a window at a time in C (split,
        # then which pieces hold a newline), without running Python per line: a loop of
        # finds gives the GIL away every few ms, and an indexing thread of this process
        # then holds it for tens of ms each time (benchmarks/bench_shared.py measures a
        # grep beside indexing).
        if full and literal is not None:
            total += _count_lines_with(data, literal, pos)
        elif full:
            while pos <= size:
                hit = matcher(anchor, data, pos, size)[0][0]
                if hit == -1 or hit == end_of_text:
                    break
                total += 1
                pos = find(b"\n", hit) + 1
                if pos == 0:
                    break
        return GrepResult(matches=matches, total_matches=total, truncated=total > len(matches))

    def _before(self, start: int, number: int, context: int) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        end = start - 1
        while context and end >= 0 and len(out) < context:
            begin = self.data.rfind(b"\n", 0, end) + 1
            number -= 1
            out.append((number, self._context_line(begin, end)))
            end = begin - 1
        return out[::-1]

    def _after(self, end: int, number: int, context: int) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        pos = end + 1
        while context and pos < len(self.data) and len(out) < context:
            start, stop = self._line_at(pos)
            number += 1
            out.append((number, self._context_line(start, stop)))
            pos = stop + 1
        return out

    # ------------------------------------------------------------------ pages

    def cached_page_bounds(self, encoding: Any, page_tokens: int) -> list[int] | None:
        """:meth:`page_bounds` if already computed, else None (never tokenises)."""
        with self._lock:
            return self._pages.get((id(encoding), page_tokens))

    def page_bounds(self, encoding: Any, page_tokens: int) -> list[int]:
        """Byte offsets ``[0, b1, ..., len(data)]`` of pages of at most ``page_tokens``.

        Each page is counted again on its own (tokenising a piece can differ from the
        tokens it had inside the whole), so a page never exceeds ``page_tokens`` - except
        a single character that alone takes more tokens. A page ends at a line end;
        only a line longer than a page is cut inside (at a character boundary). Pages
        never span the segments the text is tokenised in; joined
        back they give the text byte for byte. Cached per encoding and page size.
        (The segments start at 64 KiB and grow to 1 MiB, so the bounds depend only on
        the text, not on which page was asked for first.)
        """
        return self.page_bounds_until(encoding, page_tokens, None)[0]

    def estimated_pages(self, encoding: Any, page_tokens: int) -> int:
        """The page count of :meth:`page_bounds` without cutting them all: exact when
        they are cut, else the pages cut so far (at least the first segment's) scaled
        by bytes to the whole text. The one estimate the card, ``read`` and the tools
        state until the exact count is known."""
        bounds, complete = self.page_bounds_until(encoding, page_tokens, 1)
        cut = len(bounds) - 1
        if complete:
            return cut
        return max(cut + 1, -(-cut * len(self.data) // max(1, bounds[-1])))

    def page_bounds_until(
        self, encoding: Any, page_tokens: int, page: int | None
    ) -> tuple[list[int], bool]:
        """The first bounds of :meth:`page_bounds`, cut only as far as page ``page``
        needs (every page when None), and whether they are all of them.

        Segments are cut independently, so the work resumes where the last call stopped:
        page 1 of a 100 MB output tokenises its first segment, not the whole output.
        """
        key = (id(encoding), page_tokens)
        with self._lock:
            cached = self._pages.get(key)
            partial = self._partial_pages.get(key)
        if cached is not None:
            return cached, True
        bounds, offset = (list(partial[0]), partial[1]) if partial else ([0], 0)
        from offprompt.task_memory.chunking import token_byte_lengths

        lengths = token_byte_lengths(encoding)
        data = self.data
        while offset < len(data) and (page is None or len(bounds) - 1 < page):
            size = min(_SEGMENT, max(_FIRST_SEGMENT, offset))
            end = min(len(data), offset + size)
            if end < len(data):
                newline = data.rfind(b"\n", offset + size // 2, end)
                end = newline + 1 if newline != -1 else end
                while end > offset and end < len(data) and (data[end] & 0xC0) == 0x80:
                    end -= 1
            segment = data[offset:end]
            ids = encoding.encode_to_numpy(segment.decode("utf-8"), disallowed_special=())
            ends = np.cumsum(lengths[ids])
            pos, token = 0, 0
            while pos < len(segment):
                take = page_tokens
                while True:
                    stop_token = min(token + take, len(ids))
                    cut = len(segment) if stop_token >= len(ids) else int(ends[stop_token - 1])
                    while pos < cut < len(segment) and (segment[cut] & 0xC0) == 0x80:
                        cut -= 1
                    if cut <= pos:  # one character longer than a page: take it whole
                        cut = pos + 1
                        while cut < len(segment) and (segment[cut] & 0xC0) == 0x80:
                            cut += 1
                        break
                    counted = len(encoding.encode_ordinary(segment[pos:cut].decode("utf-8")))
                    if counted <= page_tokens or take == 1:
                        break
                    take = max(1, take - (counted - page_tokens))
                if cut < len(segment):
                    # A page ends at a line end; only a line longer than a page is split.
                    newline = segment.rfind(b"\n", pos, cut)
                    if newline != -1:
                        cut = newline + 1
                bounds.append(offset + cut)
                pos = cut
                token = int(np.searchsorted(ends, cut, side="right"))
            offset = end
        complete = offset >= len(data)
        with self._lock:
            if complete:
                self._pages[key] = bounds
                self._partial_pages.pop(key, None)
            elif key not in self._pages and offset > self._partial_pages.get(key, ([], 0))[1]:
                self._partial_pages[key] = (bounds, offset)
        return bounds, complete
