"""The card's statistics of a namespace (:class:`~offprompt.task_memory.card.OutputStats`)
and its public metadata: exact for small outputs at once, estimated (marked) for large
ones until indexing has run; a sensitive output's card shows only its shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from offprompt.artifacts import (
    BaseArtifact,
    JsonArtifact,
)
from offprompt.task_memory import (
    json_view,
    structured,
)
from offprompt.task_memory._namespace_meta import NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.task_memory._views import Views
from offprompt.task_memory.card import (
    OutputStats,
    csv_fields,
    shape_only,
    sniff_kind,
    tools_for,
)
from offprompt.task_memory.notices import (
    HEAD_LINES,
    NOTICE_SCAN_CHARS,
    TAIL_LINES,
    partial_notices,
)
from offprompt.task_memory.results import NamespaceMetadata
from offprompt.task_memory.storage import (
    ArtifactStorage,
)
from offprompt.task_memory.text_view import TextView

__all__ = ["CardStats", "chunks_per_page", "json_notices"]

# Outputs up to this size get exact token counts and a parsed JSON outline at once;
# larger ones get estimates (marked) until the background job has run.
_EXACT_AT_ONCE_BYTES = 256 * 1024
_PARSE_AT_ONCE_BYTES = 4 * 1024 * 1024
_SAMPLE_BYTES = 16 * 1024


def json_notices(kind: str, value: Any) -> list[str]:
    """The paging and total keys of JSON data: the document's, or for JSON lines those
    of the last line (where a stream states its end or its cursor)."""
    if kind == "ndjson":
        value = value[-1] if isinstance(value, list) and value else None
    return partial_notices([], value=value, lines_are_json=True)


def _structure_of_text(view: TextView, stats: OutputStats) -> dict[str, Any]:
    """The card's fields of a text output holding structure (a JSON body after text
    lines, YAML, a Markdown table), or none; its text lines' notices are kept. The
    value parsed here is the view's, so ``json_memory`` does not parse it again."""
    found = structured.structure_of_text(view.data.decode("utf-8"))
    if found is None:
        view.parsed = ("", None)
        return {}
    kind, value, body = found
    view.parsed = (kind, value)
    notices = list(stats.notices) + [n for n in json_notices(kind, value) if n not in stats.notices]
    return {
        "kind": kind,
        "body_line": body,
        **json_view.shape(kind, value),
        "notices": notices[: len(stats.notices) + 5],
    }


class CardStats:
    """The card's statistics and the public metadata of this memory's namespaces."""

    def __init__(self, parts: Parts, views: Views) -> None:
        self.parts = parts
        self.views = views

    def json(self, view: TextView, namespace: str, meta: NamespaceMeta) -> dict[str, Any]:
        """``kind`` and ``json_outline`` from parsing the whole text (kind text if it fails)."""
        parsed = self.views.parsed(view, namespace, meta)
        if parsed is None:
            return {"kind": "text", "json_outline": None, "tools": tools_for("text")}
        kind, value = parsed
        return {
            "kind": kind,
            **json_view.shape(kind, value),
            "notices": json_notices(kind, value),
            "tools": tools_for(kind),
        }

    def fresh(
        self,
        namespace: str,
        meta: NamespaceMeta,
        items: Sequence[BaseArtifact],
        fresh: Mapping[str, bytes] | None = None,
    ) -> dict[str, Any]:
        """The card's stats right after a write: exact for small outputs, estimated
        (tokens, pages; JSON unconfirmed) for large ones until the background job ran."""
        entries = meta.artifacts
        indexed = meta.fully_indexed
        if meta.storage != "text":
            kind = "image" if all(e.type == "ImageArtifact" for e in entries) else "binary"
            return OutputStats(
                kind=kind,
                bytes=meta.bytes,
                page_tokens=self.parts.page_tokens,
                pages=1,
                tools=tools_for(kind),
                artifacts=len(entries),
            ).model_dump()
        view = self.views.of(namespace, meta, fresh)
        data = view.data
        sample = data[:_SAMPLE_BYTES].decode("utf-8", errors="ignore")
        small = len(data) <= _EXACT_AT_ONCE_BYTES
        if indexed:
            tokens, estimated = meta.tokens, False
        elif small:
            tokens, estimated = self.parts.tokenizer.count(data.decode("utf-8")), False
        else:
            per_byte = self.parts.tokenizer.count(sample) / max(1, len(sample.encode("utf-8")))
            tokens, estimated = round(per_byte * len(data)), True
        # read()'s own page cuts (pages end at line ends, so not tokens/page_tokens): all of
        # them for a small output or one indexed already (its tokens are exact, so must its
        # pages be), else the first segment's scaled (the one estimate, marked "~").
        if small or indexed:
            pages = len(view.page_bounds(self.parts.tokenizer.encoding, self.parts.page_tokens)) - 1
        else:
            pages = view.estimated_pages(self.parts.tokenizer.encoding, self.parts.page_tokens)
        stats = OutputStats(
            bytes=len(data),
            lines=view.lines,
            tokens=tokens,
            tokens_estimated=estimated,
            pages=max(1, pages or math.ceil(tokens / self.parts.page_tokens)),
            page_tokens=self.parts.page_tokens,
            head=view.head(3),
            tail=view.tail(3) if view.lines > 3 else [],
            indexed=indexed,
            artifacts=len(entries),
            notices=partial_notices(
                view.head(HEAD_LINES, NOTICE_SCAN_CHARS), view.tail(TAIL_LINES, NOTICE_SCAN_CHARS)
            ),
        )
        all_json = all(e.type == "JsonArtifact" for e in entries)
        kind = "json" if all_json else sniff_kind(sample)
        stats.kind = kind
        if kind == "json" and (all_json or len(data) <= _PARSE_AT_ONCE_BYTES):
            values = [i.value for i in items if isinstance(i, JsonArtifact)]
            if all_json and len(entries) == len(values):  # no need to parse what we hold
                view.parsed = ("json", values[0]) if len(values) == 1 else ("ndjson", values)
            stats = stats.model_copy(update=self.json(view, namespace, meta))
        elif kind == "csv":
            stats = stats.model_copy(update=csv_fields(sample))
        elif kind == "text" and len(data) <= _PARSE_AT_ONCE_BYTES:
            stats = stats.model_copy(update=_structure_of_text(view, stats))
        stats.tools = tools_for(stats.kind)
        if meta.sensitive:
            # The card never shows a sensitive output's content, only its shape.
            return shape_only(stats.model_dump())
        return stats.model_dump()

    def public(self, namespace: str, meta: NamespaceMeta) -> NamespaceMetadata:
        """What :meth:`TaskMemory.namespace_metadata` returns for ``meta``."""
        pages = 0
        if meta.storage == "text":
            if meta.stats:  # read()'s page count (exact once the namespace is indexed)
                pages = int(meta.stats["pages"])
            else:
                storage = self.parts.kind_storage("text")
                per_page = chunks_per_page(storage, self.parts.page_tokens)
                pages = math.ceil(meta.chunks / per_page)
        return NamespaceMetadata(
            namespace=namespace,
            memory=self.parts.name,
            tenant=self.parts.tenant,
            tool=meta.tool,
            activity=meta.activity,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            bytes=meta.bytes,
            tokens=meta.tokens,
            chunks=meta.chunks,
            pages=pages,
            artifacts=len(meta.artifacts),
            storage=meta.storage,
            sensitive=meta.sensitive,
            subtasks=list(meta.subtasks),
            stats=dict(meta.stats or {}),
        )


def chunks_per_page(storage: ArtifactStorage, page_tokens: int) -> int:
    """Chunks of ``storage`` per page of ``page_tokens`` (at least 1)."""
    chunk_tokens = getattr(storage, "chunk_tokens", page_tokens)
    return max(1, page_tokens // chunk_tokens)
