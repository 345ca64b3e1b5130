"""Exceptions raised by offprompt.

Every error offprompt raises for the programmer derives from :class:`OffpromptError`;
errors meant for a language model are returned as ``ErrorArtifact`` values instead.
Each message names the offending value or field, so a log line is enough to act on.

Tree::

    OffpromptError
    ├── ValidationError          bad input: a field, role, argument or name is wrong
    │   ├── NamespaceError       a namespace / session / tenant name is not allowed
    │   │   └── FilePathError    a file path a ``FileTree`` refuses (``..``, NUL, ...)
    │   ├── FileConflictError    a file tree command clashes with what is there
    │   ├── FileEditError        a string to replace is absent, or not unique
    │   ├── StorageMismatchError a task-memory namespace holds another storage's artifacts
    │   ├── PatternError         a grep pattern that is empty or not a valid regex
    │   ├── JsonQueryError       a JMESPath expression that does not parse or run
    │   ├── NotJsonError         a task-memory namespace that does not hold JSON
    │   ├── SqlError             a SQL query refused, failed, or past its limits
    │   └── RangeError           a page or line range outside the stored output
    ├── DeserializationError     a payload cannot be turned back into an object
    │   └── UnknownTypeError     a ``type`` discriminator nobody registered
    ├── SerializationError       an object holds a value that cannot be serialised
    ├── TokenizerError           a tokenizer (encoding) cannot be loaded
    ├── StorageError             a store cannot read or write (corrupt file, I/O)
    │   ├── NotAStoreError       a path exists but is not an offprompt store
    │   └── ForgetError          ``forget`` could not finish (``report`` says what it did)
    ├── NotFoundError            a session, namespace or item does not exist
    │   └── ExpiredError         it existed, but is older than the retention keeps
    ├── OffloadError             a tool output could not be stored off-prompt
    ├── ModelError               a language model's reply cannot be used
    │   ├── SummarizationError   no usable summary (empty or non-text output)
    │   └── MemoryModelError     no usable rating or insight in the reply
    ├── ScriptExhaustedError     a scripted test model was called past its script
    ├── CLIError                 a command cannot be carried out (exit code 1)
    ├── UsageError               the command line itself is wrong (exit code 2)
    ├── DemoError                a step of ``offprompt demo`` did not produce what it should
    └── UpstreamError            ``offprompt mcp proxy``'s server cannot start or keep running
        └── RemoteError          one request to it got no result (its error, a timeout, its exit)
            └── NoAnswer         no answer came: it timed out or exited first

Every public exception is defined here, once; the modules that raise one re-export it
from here (``from offprompt.errors import ForgetError``), so one ``except`` catches it
wherever it comes from (the LangChain and LlamaIndex summarizers raise the same
``SummarizationError``).

``ValidationError`` and ``DeserializationError`` also derive from :class:`ValueError`
and ``NotFoundError`` from :class:`KeyError`, so code written against the builtin
exceptions keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: errors sit below every other module
    from offprompt.forget import ForgetReport

__all__ = [
    "CLIError",
    "DemoError",
    "DeserializationError",
    "ExpiredError",
    "FileConflictError",
    "FileEditError",
    "FilePathError",
    "ForgetError",
    "JsonQueryError",
    "MemoryModelError",
    "ModelError",
    "NamespaceError",
    "NoAnswer",
    "NotAStoreError",
    "NotFoundError",
    "NotJsonError",
    "OffloadError",
    "OffpromptError",
    "PatternError",
    "RangeError",
    "RemoteError",
    "ScriptExhaustedError",
    "SerializationError",
    "SqlError",
    "StorageError",
    "StorageMismatchError",
    "SummarizationError",
    "TokenizerError",
    "UnknownTypeError",
    "UpstreamError",
    "UsageError",
    "ValidationError",
]


class OffpromptError(Exception):
    """Base class of every exception raised by offprompt.

    Attributes:
        context: Structured details (``field``, ``namespace``, ``session_id`` ...)
            that the message also spells out, for programs that handle the error.
    """

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __str__(self) -> str:
        return self.message


class ValidationError(OffpromptError, ValueError):
    """Input that offprompt refuses: a wrong field value, role, argument or name."""


class NamespaceError(ValidationError):
    """A namespace, session id or tenant name that is empty, too long or unsafe."""


class FilePathError(NamespaceError):
    """A path a :class:`~offprompt.files.FileTree` refuses.

    ``context`` holds ``path`` (the value given) and ``why`` (the rule it breaks, as a
    clause: ``"it has a '..' segment"``), so an adapter can word its own error.
    """


class FileConflictError(ValidationError):
    """A file-tree command that clashes with what the tree holds.

    ``context["reason"]`` says which clash: ``"exists"`` (a file or directory is at
    ``path``), ``"is_directory"`` (``path`` is a directory, a file was expected),
    ``"parent_is_file"`` (``context["parent"]`` is a file, so nothing can go below
    it) or ``"into_itself"`` (a directory moved below itself).
    """


class FileEditError(ValidationError):
    """A ``str_replace`` whose old string is not in the file, or not unique in it.

    ``context`` holds ``path``, ``occurrences`` and ``lines`` (the 1-based lines where
    each occurrence starts).
    """


class PatternError(ValidationError):
    """A grep pattern that is empty, or a regex RE2 rejects (syntax, backreferences)."""


class JsonQueryError(ValidationError):
    """A JMESPath expression that does not parse, or fails on the stored value."""


class NotJsonError(ValidationError):
    """A task-memory namespace whose output is not JSON (nor JSON lines)."""


class SqlError(ValidationError):
    """A query ``sql_memory`` refused, or that failed or ran out of time or memory."""


class RangeError(ValidationError):
    """A page or a line range outside the stored output."""


class DeserializationError(OffpromptError, ValueError):
    """A payload (dict, JSON, bytes) that cannot be turned back into an object."""


class UnknownTypeError(DeserializationError):
    """A ``type`` discriminator that names no registered class."""


class SerializationError(OffpromptError, ValueError):
    """An object whose value cannot be serialised (e.g. a non-JSON generic value)."""


class TokenizerError(OffpromptError):
    """A tokenizer that cannot be loaded, e.g. a tiktoken encoding not available offline."""


class StorageError(OffpromptError):
    """A store that cannot read or write: corrupt data, I/O failure, schema mismatch."""


class NotAStoreError(StorageError):
    """A path that exists but is not an offprompt store; the file is left untouched."""


class NotFoundError(OffpromptError, KeyError):
    """A session, namespace or item that does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class ExpiredError(NotFoundError):
    """A stored output that existed but is older than its memory's retention keeps.

    Until ``prune`` deletes it, reading it says so; after, it is unknown
    (:class:`NotFoundError`), as if it never was.
    """


class StorageMismatchError(ValidationError):
    """A namespace already holds another storage's artifacts (e.g. text then a blob)."""


class ForgetError(StorageError):
    """``forget`` could not finish; ``report`` says what was deleted. Safe to re-run."""

    def __init__(self, message: str, report: ForgetReport) -> None:
        super().__init__(message)
        self.report = report


class ModelError(OffpromptError):
    """A language model's reply that offprompt cannot use."""


class SummarizationError(ModelError):
    """A model gave no usable summary (empty or non-text output)."""


class MemoryModelError(ModelError):
    """A model's reply could not be used for memory (no rating in it, not text)."""


class ScriptExhaustedError(OffpromptError):
    """A scripted test model was called more times than its script has steps."""


class CLIError(OffpromptError):
    """A command that cannot be carried out (exit code 1); the message is one line."""


class UsageError(OffpromptError):
    """The command line itself is wrong (exit code 2)."""


class OffloadError(OffpromptError):
    """A tool output could not be stored off-prompt; the message names why, never the output."""


class DemoError(OffpromptError):
    """A step of the demo did not produce what it should (a bug, reported in one line)."""


class UpstreamError(OffpromptError):
    """The upstream MCP server could not be started, initialized, or kept running."""


class RemoteError(UpstreamError):
    """A request to the upstream MCP server that got no result: its JSON-RPC error, a
    timeout, or its exit. ``code`` and ``message`` are the JSON-RPC error's."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message, code=code)
        self.code = code
        self.data = data


class NoAnswer(RemoteError):
    """No answer came: the upstream did not answer in time (JSON-RPC code ``408``, the
    proxy's request timeout) or exited first (``-32000``, connection closed).

    A :class:`RemoteError` that is not one is the upstream's own JSON-RPC error, whatever
    its code: a server may answer with ``-32000`` or ``408`` too.
    """
