"""What a ``TaskMemory`` keeps of namespace text in memory, bounded in bytes.

* :class:`ViewCache`: the decoded and cut text of the namespaces read last
  (:class:`~offprompt.task_memory.text_view.TextView`, LRU by bytes), so a large output
  read twice (a grep, then a page) is fetched from the store once. Every stored
  output passes through it (its card is computed from it).
* :class:`PendingTexts`: the text of raw writes not yet indexed, by generation, so the
  background indexer starts from the ``str`` it was given instead of decoding the
  stored bytes again; bounded by the same budget.

Both are keyed by what the committed metadata says, so a namespace written again (new
generations) is never served from an older view.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from offprompt.task_memory._namespace_meta import ArtifactEntry
from offprompt.task_memory.text_view import TextView

__all__ = ["DEFAULT_CACHE_BYTES", "PendingTexts", "ViewCache"]

#: Bytes of namespace text a memory keeps decoded and cut (LRU by bytes; the view last
#: read stays even when it alone is larger). Every stored output passes through it (its
#: card is computed from it), so this is what a process keeps of what it stored. A miss
#: under ``path=`` costs a page-cache read and one newline pass, about as much again as
#: the grep it serves; a larger default kept little more than that in a process storing
#: many large logs, for much more anonymous memory (benchmarks/bench_shared.py). It also
#: bounds :class:`PendingTexts`: an output larger than it is read back from the raw store
#: when indexed, a small cost beside the indexing itself.
DEFAULT_CACHE_BYTES = 32 * 1024 * 1024

ViewKey = tuple[str, tuple[tuple[Any, ...], ...]]


def view_key(namespace: str, entries: Sequence[ArtifactEntry]) -> ViewKey:
    """The cache key of a namespace's text: its artifacts as committed, in order."""
    return (namespace, tuple((e.generation, e.id, e.first_seq) for e in entries))


class ViewCache:
    """The :class:`TextView` of the namespaces read last, at most ``cache_bytes`` of text
    (but the view just read, whatever its size)."""

    def __init__(self, cache_bytes: int) -> None:
        self.cache_bytes = cache_bytes
        self.views: OrderedDict[ViewKey, TextView] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.views)

    def get(
        self, namespace: str, entries: Sequence[ArtifactEntry], fetch: Callable[[], bytes]
    ) -> TextView:
        """The view of ``entries``' text, from the cache or from ``fetch()`` (then cached)."""
        key = view_key(namespace, entries)
        with self._lock:
            view = self.views.get(key)
            if view is not None:
                self.views.move_to_end(key)
                return view
        view = TextView(fetch())
        with self._lock:
            if key not in self.views:
                self.views[key] = view
                self.bytes += len(view.data)
            # LRU by bytes: a 50 MB output read twice is fetched once, and the cache never
            # holds more than cache_bytes (but the view just read, whatever its size).
            while self.bytes > self.cache_bytes and len(self.views) > 1:
                _, dropped = self.views.popitem(last=False)
                self.bytes -= len(dropped.data)
        return view

    def cached(self, namespace: str, entries: Sequence[ArtifactEntry]) -> TextView | None:
        """The view if it is in the cache (never reads the text)."""
        with self._lock:
            return self.views.get(view_key(namespace, entries))


class PendingTexts:
    """The texts of raw writes waiting for the indexer, at most ``cache_bytes`` in all.

    When the indexer falls behind a stream of large outputs, the later ones are read
    back from the raw store instead of all being held here (ten 20 MB logs stored at
    once held 200 MB until indexed).
    """

    def __init__(self, cache_bytes: int) -> None:
        self.cache_bytes = cache_bytes
        self.texts: dict[str, tuple[str, int]] = {}
        self.bytes = 0
        self._lock = threading.Lock()

    def keep(self, texts: Mapping[str, str], sizes: Mapping[str, bytes]) -> None:
        """Keep each new text while it fits (with those kept before); the others are
        read back when indexed."""
        with self._lock:
            for generation, text in texts.items():
                size = len(sizes[generation])
                if self.bytes + size <= self.cache_bytes:
                    self.texts[generation] = (text, size)
                    self.bytes += size

    def take(self, generation: str) -> str | None:
        """The text kept for ``generation`` (removed), or None."""
        with self._lock:
            kept = self.texts.pop(generation, None)
            if kept is None:
                return None
            self.bytes -= kept[1]
            return kept[0]

    def clear(self) -> None:
        """Drop every kept text."""
        with self._lock:
            self.texts.clear()
            self.bytes = 0
