"""``OffpromptBackend``: a deepagents ``BackendProtocol`` over offprompt task memory.

deepagents' ``FilesystemMiddleware`` evicts every tool result over its token limit
(20,000 tokens by default) to ``/large_tool_results/{tool_call_id}`` with
``backend.write``, and the model pages and searches it with ``read_file`` and ``grep``.
Routed there::

    CompositeBackend(default=StateBackend(), routes={"/large_tool_results/": OffpromptBackend(tm)})

the evicted results live in offprompt task memory: stored byte-identical (durable with
``TaskMemory(path=...)``, shared with ``store=``), scoped and forgettable like any other
output, and visible to offprompt's memory tools under their namespace.

Paths and namespaces: a file path (as the backend sees it, after ``CompositeBackend``
strips the route prefix) maps to the namespace ``{namespace_prefix}{path encoded}``,
where every character but ``A-Z a-z 0-9 _ -`` is written ``%XX`` (so a namespace never
holds a separator or ``..``, and the mapping is reversible). Paths with ``..`` or ``.``
segments, empty segments, backslashes or control characters are refused with a clear
error result (offprompt's one file-tree rule, :func:`offprompt.files.check_path`, which
Claude's memory tool applies too); nothing outside the prefix is ever read, listed or
deleted. Listing a directory and selecting a subtree to delete are the file tree's
(:func:`offprompt.files.children`, :func:`offprompt.files.subtree`).

Overwrites are atomic: a new version replaces the file's namespace in one commit
(``TaskMemory.store_artifact(replace=True)``), so a reader in any process sees the old
version or the new one, never both and never "not found" for a file that existed
throughout; of two processes overwriting one file at once, the one committed last is
what stays. A crash mid-overwrite leaves the old version. ``edit`` is a read, a
replacement and such an overwrite. (Files written before this release kept a second
slot ``ns~1``; it is read when it is the newer, and removed by the next overwrite.)
With ``immutable=True`` a stored file can be neither overwritten, edited nor deleted
(protocol error results say so); writing the same content again still succeeds, so a
replayed eviction is idempotent.

Lines are the ``\\n``-separated lines of the stored text, as offprompt's card and grep
count them (and as deepagents' own in-memory grep does); ``read`` turns ``\\r\\n`` into
``\\n`` in the window it returns, as deepagents' backends do.
"""

from __future__ import annotations

import asyncio
import base64
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import (
    FilePathError,
    NamespaceError,
    NotFoundError,
    OffpromptError,
    RangeError,
    ValidationError,
)
from offprompt.files import check_path, children, subtree
from offprompt.task_memory import TaskMemory

try:
    from deepagents.backends.protocol import (
        BackendProtocol,
        DeleteResult,
        EditResult,
        FileData,
        FileDownloadResponse,
        FileInfo,
        FileUploadResponse,
        GlobResult,
        GrepMatch,
        GrepResult,
        LsResult,
        ReadResult,
        WriteResult,
    )
    from deepagents.backends.utils import (
        InvalidGlobPatternError,
        compile_grep_include_glob,
        normalize_read_bounds,
        perform_string_replacement,
        sanitize_tool_call_id,
    )
    from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import AnyMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"OffpromptBackend needs deepagents: pip install 'offprompt-langchain[deepagents]' ({exc})"
    ) from exc

__all__ = ["DEFAULT_ROUTE", "OffpromptBackend"]

DEFAULT_ROUTE = "/large_tool_results/"
"""Where deepagents' ``FilesystemMiddleware`` evicts large tool results."""

_SAFE = re.compile(r"[A-Za-z0-9_-]")
_ESCAPE = re.compile(r"%([0-9A-F]{2})")
_SECOND_SLOT = "~1"
_TOOL = "deepagents"
# deepagents' eviction stub starts with this sentence (middleware/_message_eviction.py).
_STUB_START = "Tool result too large"
_MAX_GREP_MATCHES = 10_000  # offprompt's grep bound per namespace


def _path_error(path: object, why: str) -> FilePathError:
    return FilePathError(
        f"path {path!r} is not allowed in OffpromptBackend: {why}", name=str(path), why=why
    )


def _check_path(path: object, *, directory: bool = False) -> str:
    """``path`` if offprompt's file-tree rule (:func:`offprompt.files.check_path`)
    accepts it, as a file (or a directory when ``directory``).

    Raises:
        NamespaceError: Not a str, not absolute, or holding a ``..`` / ``.`` / empty
            segment, a backslash or a control character (worded for this backend).
    """
    try:
        return check_path(path, directory=directory)
    except FilePathError as exc:
        raise _path_error(path, exc.context["why"]) from None


def _encode(relative: str) -> str:
    return "".join(
        char if _SAFE.fullmatch(char) else "".join(f"%{b:02X}" for b in char.encode("utf-8"))
        for char in relative
    )


def _decode(encoded: str) -> str | None:
    """The relative path ``encoded`` stands for, or None if it is not one :func:`_encode` made."""
    data = bytearray()
    i = 0
    while i < len(encoded):
        char = encoded[i]
        if char == "%":
            if not _ESCAPE.match(encoded, i):
                return None
            data.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        elif _SAFE.fullmatch(char):
            data.append(ord(char))
            i += 1
        else:
            return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if _encode(text) == encoded else None


class OffpromptBackend(BackendProtocol):
    """A deepagents backend whose files are outputs stored in offprompt task memory.

    Args:
        task_memory: Where the files are stored (its tenant / scope applies to every
            call: ``ls`` and ``glob`` list only what that scope holds).
        namespace_prefix: Prefix of every namespace this backend writes; only
            namespaces with it are files here.
        immutable: Refuse overwriting, editing and deleting stored files (the protocol's
            error results say so); creating files and rewriting identical content still
            succeed.
        card_tokens: Bound of the card :meth:`card` returns (``task_memory``'s
            ``preview_tokens`` by default).

    Raises:
        ValidationError: ``task_memory`` is not a ``TaskMemory`` or a bad argument.

    Example:
        >>> from offprompt.task_memory import TaskMemory
        >>> backend = OffpromptBackend(TaskMemory())
        >>> backend.write("/call_1", "disk full on node 7\\nretrying\\n").error is None
        True
        >>> backend.read("/call_1", offset=1, limit=1).file_data["content"]
        'retrying\\n'
        >>> backend.grep("node 7").matches
        [{'path': '/call_1', 'line': 1, 'text': 'disk full on node 7'}]
    """

    def __init__(
        self,
        task_memory: TaskMemory,
        *,
        namespace_prefix: str = "deepagents-",
        immutable: bool = False,
        card_tokens: int | None = None,
    ) -> None:
        if not isinstance(task_memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
            )
        if not isinstance(namespace_prefix, str) or not namespace_prefix:
            raise ValidationError(
                f"namespace_prefix must be a non-empty str, got {namespace_prefix!r}"
            )
        from offprompt.names import validate_namespace

        validate_namespace(namespace_prefix, what="namespace_prefix")
        if card_tokens is not None and (not isinstance(card_tokens, int) or card_tokens < 1):
            raise ValidationError(f"card_tokens must be an int >= 1, got {card_tokens!r}")
        self.task_memory = task_memory
        self.namespace_prefix = namespace_prefix
        self.immutable = bool(immutable)
        self.card_tokens = card_tokens
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"OffpromptBackend({self.task_memory!r}, namespace_prefix={self.namespace_prefix!r})"

    # -- paths and namespaces ------------------------------------------------------------

    def namespace_for(self, file_path: str) -> str:
        """The namespace that holds (or will hold) ``file_path``'s first version.

        Raises:
            NamespaceError: A hostile or malformed path, or one too long for a namespace.
        """
        path = _check_path(file_path)
        namespace = self.namespace_prefix + _encode(path[1:])
        from offprompt.names import validate_namespace

        try:
            return validate_namespace(namespace + _SECOND_SLOT)[: -len(_SECOND_SLOT)]
        except NamespaceError as exc:
            raise _path_error(file_path, f"its namespace is not valid ({exc})") from None

    def _path_of(self, namespace: str) -> str | None:
        if not namespace.startswith(self.namespace_prefix):
            return None
        encoded = namespace[len(self.namespace_prefix) :].removesuffix(_SECOND_SLOT)
        relative = _decode(encoded)
        return None if relative is None else "/" + relative

    def _slots(self, file_path: str) -> tuple[str, str]:
        first = self.namespace_for(file_path)
        return first, first + _SECOND_SLOT

    def _newer(self, first: str, second: str) -> str:
        """Of two live slots (an older release's overwrite cut short), the newer."""

        def written(namespace: str) -> str:
            meta = self.task_memory.namespace_metadata(namespace, wait=False)
            return str(meta.get("updated_at") or meta["created_at"])

        try:
            return second if written(second) > written(first) else first
        except NotFoundError:  # one was removed meanwhile: the other is the file
            return first if self.task_memory.has_namespace(first) else second

    def _current(self, file_path: str) -> str | None:
        """The namespace holding ``file_path``'s content now, or None."""
        first, second = self._slots(file_path)
        has = self.task_memory.has_namespace
        if has(first) and has(second):
            return self._newer(first, second)
        if has(first):
            return first
        return second if has(second) else None

    def _files(self) -> dict[str, str]:
        """``{path: namespace}`` of every file in scope."""
        found: dict[str, list[str]] = {}
        for namespace in self.task_memory.namespaces():
            path = self._path_of(namespace)
            if path is not None:
                found.setdefault(path, []).append(namespace)
        return {
            path: names[0] if len(names) == 1 else self._newer(*sorted(names))
            for path, names in found.items()
        }

    def _info(self, path: str, namespace: str) -> FileInfo | None:
        """What ``ls`` and ``glob`` show of a file; None when it was deleted meanwhile."""
        try:
            meta = self.task_memory.namespace_metadata(namespace, wait=False)
        except NotFoundError:
            return None
        return {
            "path": path,
            "is_dir": False,
            "size": int(meta.get("bytes") or 0),
            "modified_at": str(meta.get("updated_at") or meta.get("created_at") or ""),
        }

    # -- reading -------------------------------------------------------------------------

    def _text(self, namespace: str) -> str:
        return "".join(str(a.value) for a in self.task_memory.load_artifacts(namespace).value)

    def _bytes(self, namespace: str) -> bytes:
        artifacts = self.task_memory.load_artifacts(namespace).value
        if self._is_blob(namespace):
            return b"".join(bytes(a.value) for a in artifacts)
        return "".join(str(a.value) for a in artifacts).encode("utf-8")

    def _is_blob(self, namespace: str) -> bool:
        return self.task_memory.namespace_metadata(namespace, wait=False)["storage"] != "text"

    def card(self, file_path: str) -> str | None:
        """What offprompt tells the model about ``file_path``: where it is kept, then the
        card (kind, size, lines, tokens, pages, first/last lines, JSON outline), or None
        when nothing is stored there.

        Raises:
            NamespaceError: A hostile or malformed path.
        """
        namespace = self._current(file_path)
        if namespace is None:
            return None
        memory = self.task_memory
        head = (
            f'[offprompt] Kept whole in offprompt task memory (memory_name "{memory.name}", '
            f'artifact_namespace "{namespace}"); read_file pages it by line, grep searches it.'
        )
        card = memory.describe(namespace, max_tokens=self.card_tokens)
        return f"{head}\n{card}" if card else head

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """The raw lines ``offset`` (0-based) to ``offset + limit`` of ``file_path``.

        Pagination fields are set as deepagents' middleware expects (``start_line``,
        ``end_line``, ``total_lines``, ``next_offset``); a binary file comes back whole,
        base64-encoded. An offset past the end is an error result that carries the card.
        """
        try:
            return self._read(file_path, offset, limit)
        except NamespaceError as exc:
            return ReadResult(error=str(exc))
        except NotFoundError:  # deleted meanwhile (by a delete in another process)
            return ReadResult(error=f"File '{file_path}' not found")
        except OffpromptError as exc:
            return ReadResult(error=f"Error: could not read '{file_path}': {exc}")

    def _read(self, file_path: str, offset: int, limit: int) -> ReadResult:
        namespace = self._current(file_path)
        if namespace is None:
            return ReadResult(error=f"File '{file_path}' not found")
        meta = self.task_memory.namespace_metadata(namespace, wait=False)
        created, modified = str(meta.get("created_at") or ""), str(meta.get("updated_at") or "")

        def data(content: str, encoding: str = "utf-8") -> FileData:
            return FileData(
                content=content, encoding=encoding, created_at=created, modified_at=modified
            )

        if meta["storage"] != "text":
            return ReadResult(
                file_data=data(base64.b64encode(self._bytes(namespace)).decode("ascii"), "base64")
            )
        offset, limit = normalize_read_bounds(offset, limit)
        if int(meta.get("bytes") or 0) == 0:
            return ReadResult(file_data=data(""))  # an empty file: no window to number
        if limit == 0:
            return ReadResult(file_data=data(""), no_lines_requested=True)
        try:
            window = self.task_memory.read_lines(namespace, offset + 1, offset + 1 + limit)
        except RangeError:
            # deepagents' own error text, exactly: an error string is part of a drop-in's
            # contract (its tests and middleware match it), and the line count it gives
            # is what the model needs to read again.
            total = int(self.task_memory.read_lines(namespace, 1, 2).meta["total_lines"])
            return ReadResult(error=f"Line offset {offset} exceeds file length ({total} lines)")
        total = int(window.meta["total_lines"])
        end = int(window.meta["stop"]) - 1
        return ReadResult(
            file_data=data(str(window.value).replace("\r\n", "\n")),
            total_lines=total,
            start_line=offset + 1,
            end_line=end,
            next_offset=end if end < total else None,
        )

    def ls(self, path: str) -> LsResult:
        """Files and subdirectories directly under ``path`` (sizes in bytes)."""
        try:
            return self._ls(path)
        except NamespaceError as exc:
            return LsResult(error=str(exc))
        except OffpromptError as exc:
            return LsResult(error=f"Error: could not list '{path}': {exc}")

    def _ls(self, path: str) -> LsResult:
        _check_path(path, directory=True)
        files = self._files()
        in_dir, subdirs = children(files, path)
        infos = [self._info(p, files[p]) for p in in_dir]
        entries = [i for i in infos if i is not None]
        entries.extend(FileInfo(path=d, is_dir=True, size=0, modified_at="") for d in subdirs)
        entries.sort(key=lambda e: e["path"])
        return LsResult(entries=entries)

    def _in_scope(self, path: str | None, glob: str | None) -> dict[str, str]:
        """The files under ``path`` (a directory or one file) that ``glob`` includes.

        Raises:
            NamespaceError: A hostile ``path``.
            InvalidGlobPatternError: A ``glob`` deepagents' matcher refuses.
        """
        root = _check_path(path or "/", directory=True).removesuffix("/") or "/"
        files = self._files()
        chosen = (
            {root: files[root]} if root in files else {p: files[p] for p in subtree(files, root)}
        )
        if glob:
            matcher = compile_grep_include_glob(glob)

            def relative(p: str) -> str:
                if root == "/":
                    return p[1:]
                return p.rsplit("/", 1)[-1] if p == root else p[len(root) + 1 :]

            chosen = {p: n for p, n in chosen.items() if matcher(relative(p))}
        return dict(sorted(chosen.items()))

    def grep(
        self,
        pattern: str,
        path: str | None = None,
        glob: str | None = None,
        *,
        max_count: int | None = None,
        regex: bool = False,
        ignore_case: bool = False,
        context_lines: int = 0,
    ) -> GrepResult:
        """Lines matching ``pattern`` in the files under ``path``, by offprompt's grep.

        Args:
            pattern: A literal string, as the protocol (and deepagents' ``grep`` tool)
                asks; an RE2 regex when ``regex``.
            path: A directory or one file; every file when None.
            glob: Include-glob on file paths (deepagents' matcher and semantics).
            max_count: Total cap on matches; ``truncated`` says when more exist.
            regex: Treat ``pattern`` as an RE2 regex (not reachable from the model's
                ``grep`` tool, which is literal by contract).
            ignore_case: Case-insensitive matching.
            context_lines: Lines of context per match (0..20), as ``context_before`` /
                ``context_after``.

        Long lines come back cut to a window around the match (offprompt's grep);
        binary files are skipped.
        """
        try:
            chosen = self._in_scope(path, glob)
        except (NamespaceError, InvalidGlobPatternError) as exc:
            return GrepResult(error=str(exc))
        except OffpromptError as exc:
            return GrepResult(error=f"grep {pattern!r}: {exc}")
        if not isinstance(pattern, str) or not pattern:
            return GrepResult(error="grep pattern must be a non-empty string")
        if max_count is not None and max_count < 1:
            return GrepResult(matches=[], truncated=True)
        matches: list[GrepMatch] = []
        truncated = False
        for file_path, namespace in chosen.items():
            room = _MAX_GREP_MATCHES if max_count is None else max_count - len(matches)
            try:
                if self._is_blob(namespace):
                    continue
                found = self.task_memory.grep(
                    namespace,
                    pattern,
                    regex=regex,
                    ignore_case=ignore_case,
                    context=context_lines,
                    max_matches=min(room, _MAX_GREP_MATCHES),
                )
            except NotFoundError:
                continue  # deleted meanwhile (a delete in another process)
            except OffpromptError as exc:
                return GrepResult(error=f"grep {pattern!r}: {exc}")
            for hit in found.matches:
                # deepagents needs Python 3.11 (typing.NotRequired); mypy, checking for 3.10,
                # reads its context keys as required.
                match: GrepMatch = {"path": file_path, "line": hit.line_number, "text": hit.line}  # type: ignore[typeddict-item,unused-ignore]
                if context_lines:
                    match["context_before"] = [{"line": n, "text": t} for n, t in hit.before]
                    match["context_after"] = [{"line": n, "text": t} for n, t in hit.after]
                matches.append(match)
            truncated = truncated or found.truncated
            if max_count is not None and len(matches) >= max_count:
                # Exactly max_count matches with none left is complete (the protocol's rule).
                later = list(chosen)[list(chosen).index(file_path) + 1 :]
                try:
                    truncated = truncated or any(
                        self._matches_any(chosen[p], pattern, regex, ignore_case) for p in later
                    )
                except OffpromptError:
                    truncated = True  # cannot tell: say some may be left out
                break
        return GrepResult(matches=matches, truncated=truncated)

    def _matches_any(self, namespace: str, pattern: str, regex: bool, ignore_case: bool) -> bool:
        if self._is_blob(namespace):
            return False
        found = self.task_memory.grep(
            namespace, pattern, regex=regex, ignore_case=ignore_case, max_matches=1
        )
        return found.total_matches > 0

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Files under ``path`` matching ``pattern`` (deepagents' glob semantics)."""
        try:
            chosen = self._in_scope(path, pattern)
            infos = [self._info(p, n) for p, n in chosen.items()]
        except (NamespaceError, InvalidGlobPatternError) as exc:
            return GlobResult(error=str(exc))
        except OffpromptError as exc:
            return GlobResult(error=f"Error: could not glob {pattern!r}: {exc}")
        return GlobResult(matches=[i for i in infos if i is not None])

    # -- writing -------------------------------------------------------------------------

    def _store(self, namespace: str, content: str | bytes) -> None:
        artifact = (
            TextArtifact(value=content, name=namespace)
            if isinstance(content, str)
            else BlobArtifact(value=content, name=namespace)
        )
        self.task_memory.store_artifact(
            namespace, artifact, tool=_TOOL, activity="write", replace=True
        )

    def _put(self, file_path: str, content: str | bytes) -> str | None:
        """Store ``content`` at ``file_path`` (create or overwrite); an error text or None.

        Creating and overwriting are one replacing commit of the file's namespace, so
        two processes creating or overwriting one file at once never glue their
        versions together: the one committed last stays.
        """
        with self._lock:
            current = self._current(file_path)
            if current is not None:
                data = content.encode("utf-8") if isinstance(content, str) else content
                try:
                    same_kind = self._is_blob(current) == isinstance(content, bytes)
                    if same_kind and self._bytes(current) == data:
                        return None  # a replayed write (the same eviction again): no change
                except NotFoundError:
                    pass  # deleted meanwhile: this write creates it again
                if self.immutable:
                    return (
                        f"Error: '{file_path}' is already stored in offprompt task memory and "
                        "this backend is immutable (stored outputs are not overwritten)"
                    )
            first, second = self._slots(file_path)
            self._store(first, content)
            self.task_memory.delete(second)  # an older release's second slot, if any
            return None

    def write(self, file_path: str, content: str) -> WriteResult:
        """Store ``content`` at ``file_path``, creating it or replacing what is there."""
        if not isinstance(content, str):
            return WriteResult(error=f"Error: content must be a str, got {type(content).__name__}")
        try:
            error = self._put(file_path, content)
        except OffpromptError as exc:
            return WriteResult(error=f"Error: could not store '{file_path}': {exc}")
        return WriteResult(error=error) if error else WriteResult(path=file_path)

    def edit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> EditResult:
        """Replace ``old_string`` (unique unless ``replace_all``) and store the new version."""
        try:
            with self._lock:
                namespace = self._current(file_path)
                if namespace is None:
                    return EditResult(error=f"Error: File '{file_path}' not found")
                if self._is_blob(namespace):
                    return EditResult(
                        error="Error: Cannot edit binary files with text replacements."
                    )
                if self.immutable:
                    return EditResult(
                        error=f"Error: '{file_path}' is stored in offprompt task memory and this "
                        "backend is immutable (stored outputs are not edited)"
                    )
                result = perform_string_replacement(
                    self._text(namespace), old_string, new_string, replace_all
                )
                if isinstance(result, str):
                    return EditResult(error=result)
                new_content, occurrences = result
                error = self._put(file_path, new_content)
        except OffpromptError as exc:
            return EditResult(error=f"Error: could not edit '{file_path}': {exc}")
        if error:
            return EditResult(error=error)
        return EditResult(path=file_path, occurrences=int(occurrences))

    def delete(self, file_path: str) -> DeleteResult:
        """Delete ``file_path``, or everything under it when it is a directory."""
        try:
            _check_path(file_path, directory=True)
        except NamespaceError as exc:
            return DeleteResult(error=str(exc))
        with self._lock:
            try:
                doomed = subtree(self._files(), file_path)
            except OffpromptError as exc:
                return DeleteResult(error=f"Error: could not delete '{file_path}': {exc}")
            if not doomed:
                return DeleteResult(error=f"Error: File '{file_path}' not found")
            if self.immutable:
                return DeleteResult(
                    error=f"Error: '{file_path}' is stored in offprompt task memory and this "
                    "backend is immutable (stored outputs are not deleted)"
                )
            try:
                for path in doomed:
                    for namespace in self._slots(path):
                        self.task_memory.delete(namespace)
            except OffpromptError as exc:
                return DeleteResult(error=f"Error: could not delete '{file_path}': {exc}")
        return DeleteResult(path=file_path)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Store each ``(path, bytes)``: UTF-8 text as text (greppable), other bytes as a blob."""
        responses: list[FileUploadResponse] = []
        for path, content in files:
            try:
                _check_path(path)
                try:
                    data: str | bytes = bytes(content).decode("utf-8")
                except UnicodeDecodeError:
                    data = bytes(content)
                error = self._put(path, data)
            except NamespaceError:
                responses.append(FileUploadResponse(path=path, error="invalid_path"))
                continue
            except OffpromptError as exc:
                responses.append(FileUploadResponse(path=path, error=str(exc)))
                continue
            responses.append(
                FileUploadResponse(path=path, error="permission_denied" if error else None)
            )
        return responses

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """The stored bytes of each path, exactly as written."""
        responses: list[FileDownloadResponse] = []
        for path in paths:
            try:
                namespace = self._current(path)
            except NamespaceError:
                responses.append(FileDownloadResponse(path=path, error="invalid_path"))
                continue
            except OffpromptError as exc:
                responses.append(FileDownloadResponse(path=path, error=f"Error: {exc}"))
                continue
            if namespace is None:
                base = path.rstrip("/") + "/"
                is_dir = any(p.startswith(base) for p in self._files())
                error = "is_directory" if is_dir else "file_not_found"
                responses.append(FileDownloadResponse(path=path, error=error))
                continue
            try:
                content = self._bytes(namespace)
            except NotFoundError:
                responses.append(FileDownloadResponse(path=path, error="file_not_found"))
                continue
            except OffpromptError as exc:
                responses.append(FileDownloadResponse(path=path, error=f"Error: {exc}"))
                continue
            responses.append(FileDownloadResponse(path=path, content=content))
        return responses

    # -- async twins: the core is sync, so each runs in a worker thread ----------------

    async def als(self, path: str) -> LsResult:
        """Async twin of :meth:`ls`."""
        return await asyncio.to_thread(self.ls, path)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """Async twin of :meth:`read`."""
        return await asyncio.to_thread(self.read, file_path, offset, limit)

    async def agrep(
        self,
        pattern: str,
        path: str | None = None,
        glob: str | None = None,
        *,
        max_count: int | None = None,
        regex: bool = False,
        ignore_case: bool = False,
        context_lines: int = 0,
    ) -> GrepResult:
        """Async twin of :meth:`grep`."""
        return await asyncio.to_thread(
            lambda: self.grep(
                pattern,
                path,
                glob,
                max_count=max_count,
                regex=regex,
                ignore_case=ignore_case,
                context_lines=context_lines,
            )
        )

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Async twin of :meth:`glob`."""
        return await asyncio.to_thread(self.glob, pattern, path)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        """Async twin of :meth:`write`."""
        return await asyncio.to_thread(self.write, file_path, content)

    async def aedit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> EditResult:
        """Async twin of :meth:`edit`."""
        return await asyncio.to_thread(self.edit, file_path, old_string, new_string, replace_all)

    async def adelete(self, file_path: str) -> DeleteResult:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, file_path)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Async twin of :meth:`upload_files`."""
        return await asyncio.to_thread(self.upload_files, files)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Async twin of :meth:`download_files`."""
        return await asyncio.to_thread(self.download_files, paths)

    # -- the card on eviction -------------------------------------------------------------

    def card_middleware(self, route: str = DEFAULT_ROUTE) -> AgentMiddleware[Any, Any, Any]:
        """Agent middleware that adds offprompt's card to deepagents' eviction messages.

        deepagents builds the eviction message itself (the protocol's ``write`` returns
        only a path), so the card cannot come from the backend alone. Pass this to
        ``create_deep_agent(middleware=[...])``: each model call then sees, under every
        eviction message whose file is stored here (mounted at ``route``), the card of
        :meth:`card`. The agent's state keeps deepagents' message unchanged. Works with
        the backend routed at ``route`` in a ``CompositeBackend`` or as the whole backend.
        """
        return _EvictionCards(self, route)


class _EvictionCards(AgentMiddleware[Any, Any, Any]):
    """Appends :meth:`OffpromptBackend.card` to deepagents' eviction stubs (model input only)."""

    def __init__(self, backend: OffpromptBackend, route: str) -> None:
        super().__init__()
        route = _check_path(route, directory=True)
        self.backend = backend
        self.route = route if route.endswith("/") else route + "/"

    @property
    def name(self) -> str:
        return "OffpromptEvictionCards"

    def _with_cards(self, messages: Iterable[AnyMessage]) -> list[AnyMessage] | None:
        out: list[AnyMessage] = []
        changed = False
        for message in messages:
            card = self._card_for(message)
            if card is not None:
                content = cast(str, message.content).rstrip("\n")
                message = message.model_copy(update={"content": f"{content}\n\n{card}"})
                changed = True
            out.append(message)
        return out if changed else None

    def _card_for(self, message: AnyMessage) -> str | None:
        if not isinstance(message, ToolMessage) or not message.tool_call_id:
            return None
        content = message.content
        if not isinstance(content, str) or not content.startswith(_STUB_START):
            return None
        name = sanitize_tool_call_id(message.tool_call_id)
        if f"{self.route}{name}" not in content or "[offprompt] Kept whole" in content:
            return None
        # Routed at ``route`` the backend sees "/{id}"; as the whole backend, the full path.
        for path in ("/" + name, self.route + name):
            try:
                card = self.backend.card(path)
            except NamespaceError:
                continue
            if card is not None:
                return card
        return None

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Send the model the messages with offprompt's card under each eviction stub."""
        messages = self._with_cards(request.messages)
        return handler(request if messages is None else request.override(messages=messages))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call` (the lookups run in a worker thread)."""
        messages = await asyncio.to_thread(self._with_cards, request.messages)
        return await handler(request if messages is None else request.override(messages=messages))
