"""The stored text of a namespace as a :class:`TextView`, read through the view cache.

:class:`Views` is the one way every job reads a namespace's text or JSON value: the
indexer and the card's statistics as well as the reader. Each read is drawn from one
committed version (:meth:`Views.consistent`), never from half of a replacing write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from offprompt.artifacts import JsonArtifact
from offprompt.errors import NotFoundError, NotJsonError, StorageError, ValidationError
from offprompt.task_memory import json_view, structured
from offprompt.task_memory._namespace_meta import ArtifactEntry, NamespaceMeta
from offprompt.task_memory._parts import Parts
from offprompt.task_memory._view_cache import ViewCache
from offprompt.task_memory.catalog import missing_blob
from offprompt.task_memory.text_view import TextView

__all__ = ["READ_RETRIES", "Views"]

#: Times a read starts again when replacing writes keep landing while it is under way.
READ_RETRIES = 20

T = TypeVar("T")


class Views:
    """Namespace texts of one memory, decoded and cut, the last ones read kept in memory
    (at most ``cache_bytes``, see :class:`ViewCache`)."""

    def __init__(self, parts: Parts, cache_bytes: int) -> None:
        self.parts = parts
        self.cache = ViewCache(cache_bytes)

    def consistent(self, namespace: str, read: Callable[[NamespaceMeta], T]) -> T:
        """``read(meta)`` over the committed metadata of ``namespace``, started again when
        a replacing write (``store_artifact(replace=True)``, in any process) committed a
        new version and discarded the data of the one ``meta`` named while it was being
        read: the answer is drawn from one version, old or new, never "not found" for a
        namespace that existed throughout.

        Raises:
            NotFoundError: Unknown namespace, deleted meanwhile, or data missing from a
                version still committed (lost, not replaced).
            StorageError: :data:`READ_RETRIES` versions in a row replaced mid-read.
        """
        for _ in range(READ_RETRIES):
            meta = self.parts.require(namespace)
            try:
                return read(meta)
            except NotFoundError:
                now = self.parts.meta(namespace)
                if now is None or now.generations() == meta.generations():
                    raise
        raise StorageError(
            f"namespace {namespace!r}: replaced {READ_RETRIES} times in a row while it was being read",
            namespace=namespace,
        )

    def entry_bytes(
        self,
        namespace: str,
        entries: Sequence[ArtifactEntry],
        fresh: Mapping[str, bytes] | None = None,
    ) -> bytes:
        """The raw bytes of ``entries`` joined (``fresh``: bytes just written, by generation)."""
        parts = self.parts
        storage = parts.text_storage()
        found: list[bytes] = []
        for entry in entries:
            data = (fresh or {}).get(entry.generation)
            if data is None:
                try:
                    data = storage.raw_bytes(
                        namespace, entry.as_storage_entry(), tenant=parts.tenant
                    )
                except NotFoundError as exc:
                    raise self.gone_or(namespace, exc) from None
            found.append(data)
        return found[0] if len(found) == 1 else b"".join(found)

    def gone_or(self, namespace: str, exc: NotFoundError) -> NotFoundError:
        """``exc``, or the error that says the namespace was deleted by another process
        while it was being read (a shared store whose record is gone now)."""
        if self.parts.catalog.shared and self.parts.meta(namespace) is None:
            return missing_blob(namespace, exc)
        return exc

    def of(
        self, namespace: str, meta: NamespaceMeta, fresh: Mapping[str, bytes] | None = None
    ) -> TextView:
        """The namespace's text (its artifacts' texts concatenated, as pages join back),
        cached for the last few namespaces read. ``fresh``: bytes just written, by
        generation (not read back from the blob store)."""
        entries = meta.artifacts
        return self.cache.get(
            namespace, entries, lambda: self.entry_bytes(namespace, entries, fresh)
        )

    def cached(self, namespace: str, meta: NamespaceMeta) -> TextView | None:
        """The view of ``meta``'s text if it is in the cache (never reads the text)."""
        return self.cache.cached(namespace, meta.artifacts)

    def text(self, namespace: str) -> TextView:
        """The committed text of ``namespace``.

        Raises:
            NotFoundError: Unknown namespace.
            ValidationError: A blob namespace.
        """

        def view(meta: NamespaceMeta) -> TextView:
            if meta.storage != "text":
                raise ValidationError(
                    f"namespace {namespace!r} holds binary data, not text", namespace=namespace
                )
            return self.of(namespace, meta)

        return self.consistent(namespace, view)

    def parsed(
        self, view: TextView, namespace: str, meta: NamespaceMeta, kind: str = ""
    ) -> tuple[str, Any] | None:
        """``(kind, value)`` of a namespace's JSON data (parsed once per cached view), or
        None: a JSON document or JSON lines, or the structure of a mixed or non-JSON
        output (:func:`~offprompt.task_memory.structured.parse_structured`; ``kind`` is
        the card's kind of it, ``csv`` parsing CSV rows)."""
        if view.parsed is None:
            entries = meta.artifacts
            if entries and all(e.type == "JsonArtifact" for e in entries):
                loaded = self.parts.text_storage().load(
                    namespace, meta.entries(), tenant=self.parts.tenant
                )
                values = [a.value for a in loaded if isinstance(a, JsonArtifact)]
                view.parsed = ("json", values[0]) if len(values) == 1 else ("ndjson", values)
            else:
                found = structured.parse_structured(view.data.decode("utf-8"), kind)
                view.parsed = found if found is not None else ("", None)
        return None if view.parsed[0] == "" else view.parsed

    def json(self, namespace: str) -> tuple[str, Any]:
        """``(kind, value)`` of the committed JSON data of ``namespace``.

        Raises:
            NotFoundError: Unknown namespace.
            NotJsonError: The namespace does not hold JSON (or structure read as JSON).
        """

        def value(meta: NamespaceMeta) -> tuple[str, Any]:
            kind = str((meta.stats or {}).get("kind", "text"))
            if meta.storage != "text":
                json_view.require_json("binary data", namespace)
            json_view.require_json(kind if kind in json_view.JSON_KINDS else "text", namespace)
            parsed = self.parsed(self.of(namespace, meta), namespace, meta, kind)
            if parsed is None:
                raise NotJsonError(
                    f"namespace {namespace!r} does not parse as JSON", namespace=namespace
                )
            return parsed

        return self.consistent(namespace, value)
