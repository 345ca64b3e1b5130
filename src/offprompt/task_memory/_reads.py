"""How ``TaskMemory`` serves reads of a stored text: the namespace's view, pages, JSON,
query hits with their passages and pages, and the page plan of a summary.

Every read goes through the committed metadata (the facade looks the namespace up)
and the :class:`~offprompt.task_memory._view_cache.ViewCache`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from offprompt.artifacts import (
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
from offprompt.task_memory import (
    _card_stats,
    _index_jobs,
    json_view,
)
from offprompt.task_memory._namespace_meta import ArtifactEntry, NamespaceMeta
from offprompt.task_memory.catalog import missing_blob
from offprompt.task_memory.storage import (
    TextArtifactStorage,
)
from offprompt.task_memory.text_view import TextView
from offprompt.trace import TraceEvent, emit_safely
from offprompt.vectors import Hit

if TYPE_CHECKING:
    from offprompt.task_memory.task_memory import TaskMemory

__all__ = ["SummaryPlan"]

#: A summary reads the output in pages this many times the memory's page unit.
SUMMARY_PAGE_FACTOR = 8
#: Times a read starts again when replacing writes keep landing while it is under way.
READ_RETRIES = 20

T = TypeVar("T")


def consistent(memory: TaskMemory, namespace: str, read: Callable[[NamespaceMeta], T]) -> T:
    """``read(meta)`` over the committed metadata of ``namespace``, started again when a
    replacing write (``store_artifact(replace=True)``, in any process) committed a new
    version and discarded the data of the one ``meta`` named while it was being read:
    the answer is drawn from one version, old or new, never "not found" for a namespace
    that existed throughout.

    Raises:
        NotFoundError: Unknown namespace, deleted meanwhile, or data missing from a
            version still committed (lost, not replaced).
        StorageError: :data:`READ_RETRIES` versions in a row replaced mid-read.
    """
    for _ in range(READ_RETRIES):
        meta = memory._require(namespace)
        try:
            return read(meta)
        except NotFoundError:
            now = memory._meta(namespace)
            if now is None or now.generations() == meta.generations():
                raise
    raise StorageError(
        f"namespace {namespace!r}: replaced {READ_RETRIES} times in a row while it was being read",
        namespace=namespace,
    )


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


def entry_bytes(
    memory: TaskMemory,
    namespace: str,
    entries: Sequence[ArtifactEntry],
    fresh: Mapping[str, bytes] | None = None,
) -> bytes:
    storage = memory._text_storage()
    parts: list[bytes] = []
    for entry in entries:
        data = (fresh or {}).get(entry.generation)
        if data is None:
            try:
                data = storage.raw_bytes(namespace, entry.as_storage_entry(), tenant=memory.tenant)
            except NotFoundError as exc:
                if memory._catalog.shared and memory._meta(namespace) is None:
                    raise missing_blob(namespace, exc) from None
                raise
        parts.append(data)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def namespace_view(
    memory: TaskMemory,
    namespace: str,
    meta: NamespaceMeta,
    fresh: Mapping[str, bytes] | None = None,
) -> TextView:
    """The namespace's text (its artifacts' texts concatenated, as :meth:`read` pages
    join back), cached for the last few namespaces read. ``fresh``: bytes just
    written, by generation (not read back from the blob store)."""
    entries = meta.artifacts
    return memory._view_cache.get(
        namespace, entries, lambda: entry_bytes(memory, namespace, entries, fresh)
    )


def text_view(memory: TaskMemory, namespace: str) -> TextView:
    def view(meta: NamespaceMeta) -> TextView:
        if meta.storage != "text":
            raise ValidationError(
                f"namespace {namespace!r} holds binary data, not text", namespace=namespace
            )
        return namespace_view(memory, namespace, meta)

    return consistent(memory, namespace, view)


def fill_passages(
    memory: TaskMemory,
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
    view = memory._view_cache.cached(namespace, meta.artifacts)
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
                    namespace, entry.as_storage_entry(), start, stop, tenant=memory.tenant
                )
            except NotFoundError as exc:
                if memory._catalog.shared and memory._meta(namespace) is None:
                    raise missing_blob(namespace, exc) from None
                raise
            if data is None:
                view = namespace_view(memory, namespace, meta)
        if data is None:
            assert view is not None
            data = view.data[at + start : at + stop]
        hit.text = data.decode("utf-8")


def _passage_tokens(memory: TaskMemory, hit: Hit) -> int:
    """The tokens of a passage ``query`` returns: its chunk's count from the index (the
    chunker counted them when it cut the chunk), or counted here if the index has none."""
    if not hit.text:
        return 0
    tokens = hit.payload.get("tokens")
    return int(tokens) if tokens is not None else memory.tokenizer.count(hit.text)


def page_finder(
    memory: TaskMemory, namespace: str, meta: NamespaceMeta, storage: TextArtifactStorage
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
        view = memory._view_cache.cached(namespace, meta.artifacts)
        if view is not None:
            bounds = view.cached_page_bounds(memory.tokenizer.encoding, memory.page_tokens)

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
        return min(pages, seq * storage.chunk_tokens // memory.page_tokens + 1)

    return page_of


def read_page(
    memory: TaskMemory, namespace: str, page: int, page_tokens: int | None
) -> TextArtifact:
    return consistent(
        memory, namespace, lambda meta: _page(memory, namespace, meta, page, page_tokens)
    )


def _page(
    memory: TaskMemory, namespace: str, meta: NamespaceMeta, page: int, page_tokens: int | None
) -> TextArtifact:
    size = memory.page_tokens if page_tokens is None else page_tokens
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValidationError(f"page_tokens must be an int >= 1, got {size!r}")
    if meta.storage != "text":
        loaded = memory._kind_storage(meta.storage).load(
            namespace, meta.entries(), tenant=memory.tenant
        )
        text = ListArtifact(value=loaded, name=namespace).to_text()
        return TextArtifact(value=text, name=namespace, meta={"page": 1, "pages": 1})
    view = namespace_view(memory, namespace, meta)
    valid = isinstance(page, int) and not isinstance(page, bool) and page >= 1
    # Cut only up to the page asked for: page 1 of a huge output answers at once.
    bounds, complete = view.page_bounds_until(memory.tokenizer.encoding, size, page if valid else 1)
    cut = max(1, len(bounds) - 1)
    pages = cut
    stated = int((meta.stats or {}).get("pages") or 0) if size == memory.page_tokens else 0
    if not complete and meta.pages_exact and stated:
        pages, complete = stated, True  # cut by another process (pages_job)
    elif not complete:  # the rest is not cut yet: the card's estimate, at least one more
        pages = max(cut + 1, stated or view.estimated_pages(memory.tokenizer.encoding, size))
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


def read_json(memory: TaskMemory, namespace: str) -> tuple[str, Any]:
    return consistent(memory, namespace, lambda meta: _json(memory, namespace, meta))


def _json(memory: TaskMemory, namespace: str, meta: NamespaceMeta) -> tuple[str, Any]:
    kind = str((meta.stats or {}).get("kind", "text"))
    if meta.storage != "text":
        json_view.require_json("binary data", namespace)
    json_view.require_json(kind if kind in json_view.JSON_KINDS else "text", namespace)
    parsed = _card_stats.parsed_value(
        memory, namespace_view(memory, namespace, meta), namespace, meta, kind
    )
    if parsed is None:
        raise NotJsonError(f"namespace {namespace!r} does not parse as JSON", namespace=namespace)
    return parsed


def query(
    memory: TaskMemory, namespace: str, query: str, top_n: int = 5, *, mode: str = "hybrid"
) -> ListArtifact:
    """The body of :meth:`TaskMemory.query` (its docstring says what it does)."""
    if not isinstance(top_n, int) or top_n < 1:
        raise ValidationError(f"top_n must be an int >= 1, got {top_n!r}")
    meta = memory._meta(namespace)
    if meta is None or meta.storage != "text":
        return ListArtifact(value=[], name=namespace)
    _index_jobs.maybe_sweep(memory)
    # Never answer from part of an output: index it (or wait for its index) first.
    meta = _index_jobs.hold_whole(memory, namespace, meta)
    storage = memory._kind_storage("text")
    assert isinstance(storage, TextArtifactStorage)
    page_of = page_finder(memory, namespace, meta, storage)
    if memory._catalog.shared:
        # What this index holds, at the positions it holds them.
        held = memory._catalog.held(namespace, meta)
        indexed = [
            {**e.as_storage_entry(), "first_seq": held[e.generation]}
            for e in meta.artifacts
            if e.generation in held
        ]
    else:
        indexed = [e.as_storage_entry() for e in meta.indexed_artifacts()]
    hits = storage.query(namespace, indexed, query, top_n, tenant=memory.tenant, mode=mode)
    fill_passages(memory, namespace, meta, hits, storage)
    hits = storage.narrow(hits, query, top_n, tenant=memory.tenant)
    emit_safely(
        memory.tracer,
        TraceEvent(
            "query",
            scope=memory._scope_fields(),
            tokens=sum(_passage_tokens(memory, h) for h in hits),
            scores={str(h.id): float(h.score) for h in hits},
            included=[{"id": h.id, "chunk_index": h.payload.get("chunk_index")} for h in hits],
            detail={"namespace": namespace, "query": query[:200], "top_n": top_n},
        ),
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
