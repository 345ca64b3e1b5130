"""How ``TaskMemory`` serves reads of a stored output: grep, lines, pages, JSON, query
hits with their passages and pages, the artifacts themselves, and the page plan of a
summary.

Every read goes through the committed metadata and :class:`~offprompt.task_memory._views.Views`,
and is marked as running for the indexer, which yields to it between batches.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offprompt.artifacts import (
    BaseArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import (
    NotFoundError,
    NotJsonError,
    RangeError,
    StorageError,
    ValidationError,
)
from offprompt.task_memory import json_view
from offprompt.task_memory._index_jobs import Indexer
from offprompt.task_memory._namespace_meta import ArtifactEntry, NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.task_memory._views import Views
from offprompt.task_memory.sql import TableSource
from offprompt.task_memory.storage import (
    TextArtifactStorage,
)
from offprompt.task_memory.text_view import GrepResult, TextView
from offprompt.vectors import Hit

__all__ = ["Reader", "SummaryPlan"]

#: A summary reads the output in pages this many times the memory's page unit.
SUMMARY_PAGE_FACTOR = 8


@dataclass(frozen=True)
class SummaryPlan:
    """The pages a summary reads, shared by ``summarize`` and ``asummarize``.

    Page 1 is read when the plan is made (it tells how many pages there are); the
    others are read one at a time through :attr:`rest`. Each page is summarized, and
    the page summaries are summarized together when there is more than one. One page
    or several, the result carries ``meta = {"pages": n, "tool": ...}``.
    """

    namespace: str
    tool: str | None
    page_tokens: int
    pages: int
    first: str

    @classmethod
    def start(
        cls,
        namespace: str,
        tool: str | None,
        page_tokens: int,
        read: Callable[[str, int, int], TextArtifact],
    ) -> SummaryPlan:
        """The plan for ``namespace``: reads its page 1 with ``read(namespace, page, size)``."""
        size = page_tokens * SUMMARY_PAGE_FACTOR
        first = last = read(namespace, 1, size)
        # A count still estimated (the output not cut to its end) is not a plan: cut on
        # (each read resumes where the last stopped) until the count is exact.
        while last.meta.get("pages_estimated"):
            last = read(namespace, int(last.meta["page"]) + 1, size)
        return cls(namespace, tool, size, int(last.meta["pages"]), first.value)

    @property
    def rest(self) -> range:
        """The page numbers after the first."""
        return range(2, self.pages + 1)

    @property
    def combine(self) -> bool:
        """Whether the page summaries are summarized together (more than one page)."""
        return self.pages > 1

    @staticmethod
    def joined(parts: Sequence[str]) -> str:
        """The page summaries as the text of the combined summary."""
        return "\n\n".join(parts)

    def result(self, value: str) -> TextArtifact:
        """The summary artifact."""
        return TextArtifact(
            value=value, name=self.namespace, meta={"pages": self.pages, "tool": self.tool}
        )


class Reader:
    """The reads of one memory's stored outputs (the facade's docstrings say what each
    answers)."""

    def __init__(self, parts: Parts, views: Views, indexer: Indexer) -> None:
        self.parts = parts
        self.views = views
        self.indexer = indexer

    def text(self, namespace: str) -> TextView:
        """The committed text of ``namespace`` (a read, see :meth:`Indexer.reading`)."""
        return self.views.text(namespace)

    def json(self, namespace: str) -> tuple[str, Any]:
        """``(kind, value)`` of the committed JSON data of ``namespace``."""
        return self.views.json(namespace)

    def grep(self, namespace: str, pattern: str, **options: Any) -> GrepResult:
        """Lines of ``namespace`` matching ``pattern`` (:meth:`TextView.grep`'s options)."""
        with self.indexer.reading():
            return self.views.text(namespace).grep(pattern, **options)

    def read_lines(self, namespace: str, start: int, stop: int | None) -> TextArtifact:
        """Lines ``start`` to ``stop`` (exclusive) of ``namespace``."""
        with self.indexer.reading():
            view = self.views.text(namespace)
            text, first, stop_at = view.read_lines(start, stop)
        return TextArtifact(
            value=text,
            name=namespace,
            meta={"start": first, "stop": stop_at, "total_lines": view.lines},
        )

    def sql_source(self, namespace: str) -> TableSource:
        """``namespace`` as a SQL table: its JSON data, or else its text as lines."""
        with self.indexer.reading():
            try:
                _, value = self.views.json(namespace)
            except NotJsonError:
                return TableSource(namespace, text=self.views.text(namespace).data)
            if value is None:  # JSON null: one row, one NULL value
                return TableSource(namespace, json_value={"value": None})
            return TableSource(namespace, json_value=value)

    def json_outline(self, namespace: str, depth: int) -> str:
        """The shape of ``namespace``'s JSON data."""
        if not isinstance(depth, int) or not 1 <= depth <= 10:
            raise ValidationError(f"depth must be an int in 1..10, got {depth!r}")
        with self.indexer.reading():  # the walk over the value is the read's cost too
            kind, value = self.views.json(namespace)
            return json_view.outline(value, depth=depth, kind=kind)

    def json_query(self, namespace: str, expression: str) -> Any:
        """The JMESPath ``expression`` over ``namespace``'s JSON data."""
        with self.indexer.reading():  # JMESPath over 100k items is seconds of Python
            _, value = self.views.json(namespace)
            return json_view.query(value, expression)

    def load_artifacts(self, namespace: str) -> ListArtifact:
        """Every artifact stored in ``namespace``, byte-identical; empty if unknown."""
        parts = self.parts
        if parts.meta(namespace) is None:
            return ListArtifact(value=[], name=namespace)

        def load(meta: NamespaceMeta) -> list[BaseArtifact]:
            storage = parts.kind_storage(meta.storage)
            return storage.load(namespace, meta.entries(), tenant=parts.tenant)

        try:
            return ListArtifact(value=self.views.consistent(namespace, load), name=namespace)
        except NotFoundError:
            if parts.meta(namespace) is None:  # deleted meanwhile: unknown now
                return ListArtifact(value=[], name=namespace)
            raise

    def read_page(self, namespace: str, page: int, page_tokens: int | None) -> TextArtifact:
        """Page ``page`` of ``namespace``'s text."""
        with self.indexer.reading():
            return self.read(namespace, page, page_tokens)

    def fill_passages(
        self,
        namespace: str,
        meta: NamespaceMeta,
        hits: Sequence[Hit],
        storage: TextArtifactStorage,
    ) -> None:
        """Read the text of every hit whose chunk holds only its location in the raw text
        (``byte_start``/``byte_end`` of its artifact, see :class:`TextArtifactStorage`).

        From the view cache when the namespace's text is there; else one ranged read per
        hit when the raw store can (files: a few KB each); else the whole text once,
        through the view cache (bounded by ``cache_bytes``).
        """
        located = [h for h in hits if not h.text and "byte_start" in h.payload]
        if not located:
            return
        where: dict[str, tuple[int, ArtifactEntry]] = {}
        offset = 0  # of each artifact in the view's text, as namespace_view joins them
        for entry in meta.artifacts:
            where[entry.generation] = (offset, entry)
            offset += entry.bytes
        view = self.views.cached(namespace, meta)
        for hit in located:
            found = where.get(str(hit.payload.get("generation")))
            if found is None:  # not in this metadata: cannot happen for a filtered search
                raise StorageError(
                    f"namespace {namespace!r}: a chunk of generation "
                    f"{hit.payload.get('generation')!r} is not in its metadata",
                    namespace=namespace,
                )
            at, entry = found
            start, stop = int(hit.payload["byte_start"]), int(hit.payload["byte_end"])
            data = None
            if view is None:
                try:
                    data = storage.read_span(
                        namespace, entry.as_storage_entry(), start, stop, tenant=self.parts.tenant
                    )
                except NotFoundError as exc:
                    raise self.views.gone_or(namespace, exc) from None
                if data is None:
                    view = self.views.of(namespace, meta)
            if data is None:
                assert view is not None
                data = view.data[at + start : at + stop]
            hit.text = data.decode("utf-8")

    def _passage_tokens(self, hit: Hit) -> int:
        """The tokens of a passage ``query`` returns: its chunk's count from the index (the
        chunker counted them when it cut the chunk), or counted here if the index has none."""
        if not hit.text:
            return 0
        tokens = hit.payload.get("tokens")
        return int(tokens) if tokens is not None else self.parts.tokenizer.count(hit.text)

    def page_finder(
        self, namespace: str, meta: NamespaceMeta, storage: TextArtifactStorage
    ) -> Callable[[Mapping[str, Any]], int]:
        """``page_of(chunk payload)``: the :meth:`read` page holding the chunk's start.

        Exact when the namespace's pages are already cut (the memory tools cut them
        before they query): the chunk's character offset becomes a byte offset in the
        view (directly for ASCII text); otherwise estimated from its token position.
        """
        pages = max(1, int((meta.stats or {}).get("pages") or 1))
        starts, offset = [], 0  # (first seq, byte offset in the view's text) per artifact
        # (first seq, tokens before it, its tokens per character): the estimate's scale
        scales, tokens_before = [], 0
        for entry in meta.artifacts:
            starts.append((entry.first_seq, offset))
            offset += entry.bytes
            tokens, chars = entry.tokens, entry.chars or 0
            scales.append((entry.first_seq, tokens_before, tokens / max(chars, 1)))
            tokens_before += tokens
        starts.sort()
        scales.sort()
        firsts = [first for first, _ in starts]
        ascii_only = all(e.chars is not None and e.bytes == e.chars for e in meta.artifacts)
        bounds = view = None
        if meta.pages_exact:
            view = self.views.cached(namespace, meta)
            if view is not None:
                bounds = view.cached_page_bounds(
                    self.parts.tokenizer.encoding, self.parts.page_tokens
                )

        def page_of(payload: Mapping[str, Any]) -> int:
            seq = int(payload.get("seq", 0))
            if bounds is not None and view is not None and starts:
                first = starts[max(bisect_right(firsts, seq) - 1, 0)][1]
                at = first + int(payload.get("start", 0))
                if not ascii_only:  # a character offset inside the artifact at byte `first`
                    at = view.byte_offset(view.char_offset(first) + at - first)
                return min(len(bounds) - 1, max(1, bisect_right(bounds, at)))
            if tokens_before > 0 and "start" in payload:
                # Chunks end at line ends (fewer than chunk_tokens tokens) and so do pages
                # (fewer than page_tokens): the chunk's share of the namespace's tokens,
                # from its character offset, times the pages.
                _, before, per_char = scales[max(bisect_right(firsts, seq) - 1, 0)]
                share = (before + int(payload["start"]) * per_char) / tokens_before
                return min(pages, max(1, int(share * pages) + 1))
            return min(pages, seq * storage.chunk_tokens // self.parts.page_tokens + 1)

        return page_of

    def read(self, namespace: str, page: int, page_tokens: int | None) -> TextArtifact:
        """Page ``page`` of ``namespace``, drawn from one committed version."""
        return self.views.consistent(
            namespace, lambda meta: self._page(namespace, meta, page, page_tokens)
        )

    def _page(
        self, namespace: str, meta: NamespaceMeta, page: int, page_tokens: int | None
    ) -> TextArtifact:
        size = self.parts.page_tokens if page_tokens is None else page_tokens
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValidationError(f"page_tokens must be an int >= 1, got {size!r}")
        if meta.storage != "text":
            loaded = self.parts.kind_storage(meta.storage).load(
                namespace, meta.entries(), tenant=self.parts.tenant
            )
            text = ListArtifact(value=loaded, name=namespace).to_text()
            return TextArtifact(value=text, name=namespace, meta={"page": 1, "pages": 1})
        view = self.views.of(namespace, meta)
        valid = isinstance(page, int) and not isinstance(page, bool) and page >= 1
        # Cut only up to the page asked for: page 1 of a huge output answers at once.
        bounds, complete = view.page_bounds_until(
            self.parts.tokenizer.encoding, size, page if valid else 1
        )
        cut = max(1, len(bounds) - 1)
        pages = cut
        stated = int((meta.stats or {}).get("pages") or 0) if size == self.parts.page_tokens else 0
        if not complete and meta.pages_exact and stated:
            pages, complete = stated, True  # cut by another process (pages_job)
        elif not complete:  # the rest is not cut yet: the card's estimate, at least one more
            pages = max(
                cut + 1, stated or view.estimated_pages(self.parts.tokenizer.encoding, size)
            )
        if not valid or page > cut:
            about = "" if complete else "about "
            raise RangeError(
                f"page must be between 1 and {about}{pages} for namespace {namespace!r}, got {page!r}",
                namespace=namespace,
            )
        start, end = bounds[page - 1], bounds[page]
        data = view.data
        found: dict[str, Any] = {
            "page": page,
            "pages": pages,
            "namespace": namespace,
            # The lines the page holds (1-based, inclusive), in the count of read_lines.
            "first_line": view.line_number(start),
            "last_line": view.line_number(max(start, end - 1)),
            "lines": view.lines,
            # Only a line longer than a page is cut: where it goes on, and where it came from.
            "starts_mid_line": start > 0 and data[start - 1 : start] != b"\n",
            "ends_mid_line": end < len(data) and data[end - 1 : end] != b"\n",
        }
        if not complete:
            found["pages_estimated"] = True
        return TextArtifact(
            value=data[start:end].decode("utf-8"),
            name=namespace,
            meta=found,
        )

    def query(
        self, namespace: str, query: str, top_n: int = 5, *, mode: str = "hybrid"
    ) -> ListArtifact:
        """What :meth:`TaskMemory.query` answers (its docstring says what it does)."""
        if not isinstance(top_n, int) or top_n < 1:
            raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
        meta = self.parts.meta(namespace)
        if meta is None or meta.storage != "text":
            return ListArtifact(value=[], name=namespace)
        self.indexer.maybe_sweep()
        # Never answer from part of an output: index it (or wait for its index) first.
        meta = self.indexer.hold_whole(namespace, meta)
        storage = self.parts.kind_storage("text")
        assert isinstance(storage, TextArtifactStorage)
        page_of = self.page_finder(namespace, meta, storage)
        if self.parts.catalog.shared:
            # What this index holds, at the positions it holds them.
            held = self.parts.catalog.held(namespace, meta)
            indexed = [
                {**e.as_storage_entry(), "first_seq": held[e.generation]}
                for e in meta.artifacts
                if e.generation in held
            ]
        else:
            indexed = [e.as_storage_entry() for e in meta.indexed_artifacts()]
        hits = storage.query(namespace, indexed, query, top_n, tenant=self.parts.tenant, mode=mode)
        self.fill_passages(namespace, meta, hits, storage)
        hits = storage.narrow(hits, query, top_n, tenant=self.parts.tenant)
        self.parts.trace(
            "query",
            tokens=sum(self._passage_tokens(h) for h in hits),
            scores={str(h.id): float(h.score) for h in hits},
            included=[{"id": h.id, "chunk_index": h.payload.get("chunk_index")} for h in hits],
            detail={"namespace": namespace, "query": query[:200], "top_n": top_n},
        )
        return ListArtifact(
            value=[
                TextArtifact(
                    value=h.text,
                    name=namespace,
                    meta={
                        "score": h.score,
                        "artifact_id": h.payload.get("artifact_id"),
                        "chunk_index": h.payload.get("chunk_index"),
                        "page": page_of(h.payload),
                    },
                )
                for h in hits
            ],
            name=namespace,
        )
