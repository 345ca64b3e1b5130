"""The memory tools, defined once: how a model gets at outputs stored off-prompt.

:func:`memory_tool_specs` returns five framework-neutral :class:`MemoryToolSpec` s:

* ``query_memory``: the passages that best answer a question (hybrid retrieval);
* ``grep_memory``: exact search, matching lines with their line numbers;
* ``read_memory``: one page, or a range of lines;
* ``json_memory``: the outline of a JSON output, or a JMESPath query on it;
* ``summarize_memory``: a summary (with no summarizer given, an excerpt that says so:
  the first, last, rare and error lines, or the fields and first rows of data).

LangChain's ``task_memory_tools()``, LlamaIndex's ``TaskMemoryToolSpec`` and
``OffpromptMiddleware`` expose exactly these (same names, argument names, descriptions
and output text); they only translate types. Every output, errors included, is at most
``max_output_tokens`` tokens. A mistake of the model (unknown namespace, bad regex, bad
JMESPath, page out of range, wrong argument) is answered with a short ``Error: ...``
text (:attr:`ToolResult.is_error`), never raised. A tool reaches only the namespaces of
its own memories and their scope, and its unknown-namespace error names no other
namespace.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from offprompt.errors import ExpiredError, NamespaceError, OffpromptError, ValidationError
from offprompt.task_memory.offload import ACTIVITY, DEFAULT_MAX_OUTPUT_TOKENS, bound_text
from offprompt.task_memory.sql import sql_available
from offprompt.tokens import TokenCodec

if TYPE_CHECKING:
    from offprompt.artifacts import TextArtifact
    from offprompt.summarizers import TextSummarizer
    from offprompt.task_memory.task_memory import TaskMemory

__all__ = [
    "MEMORY_TOOL_NAMES",
    "SQL_MEMORY_TOOL",
    "MemoryToolSpec",
    "ToolResult",
    "memory_tool_specs",
]

MEMORY_TOOL_NAMES = (
    "query_memory",
    "grep_memory",
    "read_memory",
    "json_memory",
    "summarize_memory",
)

#: The sixth memory tool, SQL over stored outputs: offered with ``sql=True`` where DuckDB
#: (``offprompt[sql]``) is installed.
SQL_MEMORY_TOOL = "sql_memory"

LINE_CHARS = 500
"""Characters of one line a grep match or a line read shows; longer lines are cut."""

_MAX_TOP_N = 20
_MAX_CONTEXT = 10
_MAX_MATCHES = 200
_ECHO_CHARS = 120  # of a name the model gave, when an error repeats it

_WHERE = (
    "Use the memory_name and artifact_namespace quoted in a reference like "
    f'\'Output of "tool.{ACTIVITY}" was stored in memory with memory_name "..." and '
    'artifact_namespace "..."\'.'
)


class _ModelError(Exception):
    """A mistake of the model, answered as an error text."""


@dataclass(frozen=True)
class ToolResult:
    """What a memory tool answers: its text for the model, and whether it is an error."""

    text: str
    is_error: bool = False


# -- arguments (the JSON schemas the model sees) ----------------------------------------


class _Target(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_name: str | None = Field(
        default=None,
        description='The memory_name quoted in the reference, e.g. "TaskMemory".',
    )
    artifact_namespace: str = Field(
        description="The artifact_namespace quoted in the reference, exactly."
    )


class QueryMemoryArgs(_Target):
    """Arguments of ``query_memory``."""

    query: str = Field(description="What to look for in the stored output.")
    top_n: int | None = Field(
        default=None, description=f"How many passages to return (at most {_MAX_TOP_N})."
    )


class GrepMemoryArgs(_Target):
    """Arguments of ``grep_memory``."""

    pattern: str = Field(
        description="The text to find: an exact string, or a regular expression with regex=true."
    )
    regex: bool = Field(default=False, description="Treat pattern as a regular expression (RE2).")
    ignore_case: bool = Field(default=False, description="Match regardless of case.")
    context: int = Field(
        default=0, description=f"Lines shown before and after each match (0 to {_MAX_CONTEXT})."
    )
    max_matches: int = Field(
        default=20, description=f"Most matching lines returned (1 to {_MAX_MATCHES})."
    )


class ReadMemoryArgs(_Target):
    """Arguments of ``read_memory``."""

    page: int | None = Field(
        default=None, description="The page to read, from 1 (the default when no lines are given)."
    )
    start_line: int | None = Field(
        default=None, description="First line to read, from 1 (instead of a page)."
    )
    end_line: int | None = Field(
        default=None, description="Last line to read, included (with start_line)."
    )


class JsonMemoryArgs(_Target):
    """Arguments of ``json_memory``."""

    expression: str | None = Field(
        default=None,
        description=(
            "A JMESPath expression, e.g. \"length(items[?status=='failed'])\" or "
            '"items[0].id"; omit it for the outline (keys, types, array lengths).'
        ),
    )


class SummarizeMemoryArgs(_Target):
    """Arguments of ``summarize_memory``."""


class SqlMemoryArgs(BaseModel):
    """Arguments of ``sql_memory``."""

    model_config = ConfigDict(extra="forbid")

    memory_name: str | None = Field(
        default=None,
        description='The memory_name quoted in the references, e.g. "TaskMemory".',
    )
    references: list[str] = Field(
        description="The artifact_namespace of each stored output the query reads (1 to 8); "
        'each is a table of that name, to be double-quoted in the query: "name".',
    )
    query: str = Field(
        description="One DuckDB SQL SELECT. A JSON or CSV output is a table of its rows; "
        "any other output is a table of its lines (line_number, line).",
    )


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


# -- the spec ---------------------------------------------------------------------------


Handler = Callable[[Any], str]
AsyncHandler = Callable[[Any], Awaitable[str]]


class MemoryToolSpec:
    """One memory tool, framework-neutral: what the model sees, and how it runs.

    Attributes:
        name: The tool's name (one of :data:`MEMORY_TOOL_NAMES`).
        description: What the model reads about it.
        args_model: The pydantic model of its arguments (LlamaIndex's ``fn_schema``).
        parameters: Their JSON schema (LangChain's ``args_schema``, MCP's ``inputSchema``).
        max_output_tokens: Bound of every answer, errors included.
    """

    #: What a memory tool does to state, as MCP's tool annotations say it: it only reads
    #: what is stored (so clients that auto-approve read-only tools need not ask).
    annotations: ClassVar[dict[str, bool]] = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }

    def __init__(
        self,
        name: str,
        description: str,
        args_model: type[BaseModel],
        handler: Handler,
        *,
        max_output_tokens: int,
        tokenizer: TokenCodec,
        ahandler: AsyncHandler | None = None,
        hint: str = "",
    ) -> None:
        self.name = name
        self.description = description
        self.args_model = args_model
        self.parameters = _schema(args_model)
        self.max_output_tokens = max_output_tokens
        self._handler = handler
        self._ahandler = ahandler
        self._tokenizer = tokenizer
        self._hint = hint

    def __repr__(self) -> str:
        return f"MemoryToolSpec({self.name!r})"

    def _parse(self, arguments: dict[str, Any]) -> BaseModel:
        try:
            return self.args_model.model_validate(arguments)
        except PydanticValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise _ModelError(f"bad arguments for {self.name}: {problems}") from None

    def _error(self, exc: BaseException) -> ToolResult:
        if isinstance(exc, (_ModelError, OffpromptError)):
            message = str(exc)
        else:  # a summarizer or other caller-supplied code failed
            message = f"{self.name} failed: {type(exc).__name__}: {exc}"
        return ToolResult(self._bound(f"Error: {message}"), is_error=True)

    def _bound(self, text: str, hint: str = "") -> str:
        return bound_text(text, self.max_output_tokens, self._tokenizer, hint)

    def call(self, **arguments: Any) -> ToolResult:
        """Run the tool; its answer, bounded, with ``is_error`` for a mistake."""
        try:
            text = self._handler(self._parse(arguments))
        except (_ModelError, OffpromptError) as exc:
            return self._error(exc)
        except Exception as exc:
            if self.name != "summarize_memory":
                raise
            return self._error(exc)
        return ToolResult(self._bound(text, self._hint))

    async def acall(self, **arguments: Any) -> ToolResult:
        """Async twin of :meth:`call` (storage reads in a worker thread)."""
        if self._ahandler is None:
            return await asyncio.to_thread(lambda: self.call(**arguments))
        try:
            text = await self._ahandler(self._parse(arguments))
        except (_ModelError, OffpromptError) as exc:
            return self._error(exc)
        except Exception as exc:
            if self.name != "summarize_memory":
                raise
            return self._error(exc)
        return ToolResult(await asyncio.to_thread(self._bound, text, self._hint))

    def run(self, **arguments: Any) -> str:
        """The text of :meth:`call`."""
        return self.call(**arguments).text

    async def arun(self, **arguments: Any) -> str:
        """The text of :meth:`acall`."""
        return (await self.acall(**arguments)).text


# -- what the tools do -------------------------------------------------------------------


def _page_text(namespace: str, text: str, meta: dict[str, Any]) -> str:
    """A page as the model reads it: where it is (page and lines), then the page; a
    line longer than a page says, where it is cut, on which page it goes on."""
    page = meta.get("page", 1)
    pages = meta.get("pages", 1)
    about = "about " if meta.get("pages_estimated") else ""
    where = f"Page {page} of {about}{pages}"
    if "first_line" in meta:
        where += f" (lines {meta['first_line']:,}-{meta['last_line']:,} of {meta['lines']:,})"
    if meta.get("starts_mid_line"):
        text = f"[line {meta['first_line']:,} continued from page {page - 1}]\n{text}"
    if meta.get("ends_mid_line"):
        text = f"{text}\n[line {meta['last_line']:,} goes on at the start of page {page + 1}]"
    return f'{where} of artifact_namespace "{namespace}":\n{text}'


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]}… [{len(line):,} chars]"


def _echo(name: str) -> str:
    return name if len(name) <= _ECHO_CHARS else name[:_ECHO_CHARS] + "…"


def _bounded_int(label: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise _ModelError(f"{label} must be between {low} and {high}, got {value}")
    return value


class _Tools:
    """The five tools' behaviour over one or more memories (told apart by name)."""

    def __init__(
        self,
        memories: Sequence[TaskMemory],
        *,
        summarizer: TextSummarizer | None,
        max_output_tokens: int,
        top_n: int,
        summary_tokens: int | None,
    ) -> None:
        self.memories = {m.name: m for m in memories}
        self.summarizer = summarizer
        self.max_output_tokens = max_output_tokens
        self.top_n = top_n
        self.summary_tokens = summary_tokens

    def resolve(self, args: _Target) -> TaskMemory:
        return self.resolve_name(args.memory_name, args.artifact_namespace)

    def resolve_name(self, memory_name: str | None, namespace: str) -> TaskMemory:
        if memory_name is None:
            if len(self.memories) != 1:
                raise _ModelError(
                    "memory_name is required: use the memory_name quoted in the reference"
                )
            memory = next(iter(self.memories.values()))
        else:
            found = self.memories.get(memory_name)
            if found is None:
                known = ", ".join(f'"{n}"' for n in sorted(self.memories))
                raise _ModelError(
                    f'Unknown memory_name "{_echo(memory_name)}". Use the memory_name '
                    f"quoted in the reference ({known})."
                )
            memory = found
        try:
            known_namespace = memory.has_namespace(namespace)
        except NamespaceError:
            known_namespace = False
        else:
            missing = None if known_namespace else memory.lookup_error(namespace)
            if isinstance(missing, ExpiredError):
                raise _ModelError(f"{missing} (it was stored; it is gone, not misnamed).")
        if not known_namespace:
            # Never list the memory's namespaces: they may belong to other conversations.
            raise _ModelError(
                f'Unknown artifact_namespace "{_echo(namespace)}" in memory '
                f'"{memory.name}". Use the artifact_namespace quoted in the reference, exactly.'
            )
        return memory

    def query(self, args: QueryMemoryArgs) -> str:
        memory = self.resolve(args)
        top_n = self.top_n if args.top_n is None else _bounded_int("top_n", args.top_n, 1, 99)
        hits = list(memory.query(args.artifact_namespace, args.query, min(top_n, _MAX_TOP_N)).value)
        where = f'artifact_namespace "{args.artifact_namespace}" (memory_name "{memory.name}")'
        if not hits:
            return f"No passage of {where} matches the query."
        blocks = [
            f"[{i}] (page {h.meta.get('page')})\n{h.to_text()}" for i, h in enumerate(hits, 1)
        ]

        def answer(shown: int) -> str:
            if shown == len(hits):
                head = f"{shown} passage(s) from {where}, best first:"
            else:
                head = (
                    f"{shown} of {len(hits)} passages from {where} (the rest past the "
                    "answer budget), best first:"
                )
            return "\n\n".join([head, *blocks[:shown]])

        # The header counts what the model gets: the passages that fit the bound whole
        # (at least the best one, which the bound may then cut), not all that were found.
        whole = answer(len(hits))
        if memory.tokenizer.count(whole) <= self.max_output_tokens:
            return whole
        shown = 1
        while (
            shown + 1 < len(hits)
            and memory.tokenizer.count(answer(shown + 1)) <= self.max_output_tokens
        ):
            shown += 1
        return answer(shown)

    def grep(self, args: GrepMemoryArgs) -> str:
        memory = self.resolve(args)
        if not args.pattern:
            raise _ModelError("pattern must not be empty")
        context = _bounded_int("context", args.context, 0, _MAX_CONTEXT)
        limit = _bounded_int("max_matches", args.max_matches, 1, _MAX_MATCHES)
        found = memory.grep(
            args.artifact_namespace,
            args.pattern,
            regex=args.regex,
            ignore_case=args.ignore_case,
            context=context,
            max_matches=limit,
        )
        what = (
            f"{'regex' if args.regex else 'string'} {json.dumps(args.pattern, ensure_ascii=False)}"
        )
        where = f'artifact_namespace "{args.artifact_namespace}"'
        if not found.matches:
            return f"No line of {where} matches the {what}."
        shown = len(found.matches)
        head = f"{found.total_matches} matching line(s) for the {what} in {where}"
        head += (
            f", the first {shown} shown:" if found.truncated or shown < found.total_matches else ":"
        )
        lines = [head, "(line number: matching line; line number- context line)"]
        last = 0
        for match in found.matches:
            group = [
                *((n, "-", t) for n, t in match.before),
                (match.line_number, ":", match.line),
                *((n, "-", t) for n, t in match.after),
            ]
            for number, mark, text in group:
                if number <= last:
                    continue  # already shown as context of the previous match
                if context and last and number > last + 1:
                    lines.append("--")
                lines.append(f"{number}{mark} {_cut(text)}")
                last = number
        return "\n".join(lines)

    def read(self, args: ReadMemoryArgs) -> str:
        memory = self.resolve(args)
        namespace = args.artifact_namespace
        if args.start_line is None and args.end_line is None:
            page = 1 if args.page is None else args.page
            # The memory's page unit, the one its card counts in (a page number from the
            # card reads that page); the default page fits the default bound with this header.
            found = memory.read(namespace, page)
            return _page_text(namespace, found.value, found.meta)
        if args.page is not None:
            raise _ModelError("give either page or start_line/end_line, not both")
        start = 1 if args.start_line is None else args.start_line
        stop = None if args.end_line is None else args.end_line + 1
        if stop is not None and stop <= start:
            raise _ModelError(f"end_line must be >= start_line, got {args.end_line} < {start}")
        found = memory.read_lines(namespace, start, stop)
        total = found.meta.get("total_lines")
        lines = found.value.splitlines()
        last = start + len(lines) - 1
        body = "\n".join(f"{start + i}: {_cut(line)}" for i, line in enumerate(lines))
        return f'Lines {start}-{last} of {total} of artifact_namespace "{namespace}":\n{body}'

    def json(self, args: JsonMemoryArgs) -> str:
        memory = self.resolve(args)
        namespace = args.artifact_namespace
        if args.expression is None or not args.expression.strip():
            outline = memory.json_outline(namespace)
            return f'JSON outline of artifact_namespace "{namespace}":\n{outline}'
        result = memory.json_query(namespace, args.expression)
        text = json.dumps(result, ensure_ascii=False, default=str)
        quoted = json.dumps(args.expression, ensure_ascii=False)
        return f'Result of {quoted} on artifact_namespace "{namespace}":\n{text}'

    def sql(self, args: SqlMemoryArgs) -> str:
        if not args.references:
            raise _ModelError("references must name at least one artifact_namespace")
        memories = {self.resolve_name(args.memory_name, ns).name for ns in args.references}
        if len(memories) != 1:
            raise _ModelError("one query reads the outputs of one memory_name")
        memory = self.memories[memories.pop()]
        return memory.sql(args.references, args.query).text()

    def _budget(self) -> int:
        if self.summarizer is None:  # the excerpt's own header is in its budget
            return self.summary_tokens or self.max_output_tokens
        return self.summary_tokens or max(1, self.max_output_tokens - 40)

    @staticmethod
    def _summary_text(namespace: str, summary: TextArtifact) -> str:
        if summary.meta.get("excerpt"):  # says itself that it is an excerpt, of what
            return summary.value
        return f'Summary of artifact_namespace "{namespace}":\n{summary.value}'

    def summarize(self, args: SummarizeMemoryArgs) -> str:
        memory = self.resolve(args)
        summary = memory.summarize(
            args.artifact_namespace, self.summarizer, max_tokens=self._budget()
        )
        return self._summary_text(args.artifact_namespace, summary)

    async def asummarize(self, args: SummarizeMemoryArgs) -> str:
        memory = await asyncio.to_thread(self.resolve, args)
        summary = await memory.asummarize(
            args.artifact_namespace, self.summarizer, max_tokens=self._budget()
        )
        return self._summary_text(args.artifact_namespace, summary)


def memory_tool_specs(
    task_memory: TaskMemory | Sequence[TaskMemory],
    *,
    summarizer: TextSummarizer | None = None,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    top_n: int = 5,
    summary_tokens: int | None = None,
    sql: bool = False,
) -> list[MemoryToolSpec]:
    """The five memory tools over ``task_memory``, in the order of :data:`MEMORY_TOOL_NAMES`.

    With ``sql=True`` a sixth, ``sql_memory`` (:data:`SQL_MEMORY_TOOL`), follows them:
    SQL over stored outputs (see :meth:`TaskMemory.sql`). It is opt-in, and needs the
    ``offprompt[sql]`` extra (DuckDB): asked for without it, this raises.

    Args:
        task_memory: One memory, or several told apart by their ``name`` (the model
            passes the ``memory_name`` of the reference; it may omit it with one memory).
        summarizer: Used by ``summarize_memory``; without one, ``summarize_memory``
            answers an excerpt that says so (see :mod:`offprompt.task_memory.excerpt`).
        max_output_tokens: Bound of every answer, errors included.
        top_n: Passages ``query_memory`` returns when the model does not say.
        summary_tokens: Budget of a summary (about ``max_output_tokens`` by default; an
            excerpt's, with its header).
        sql: Add ``sql_memory``.

    Raises:
        ValidationError: No memory, two memories with one name, or a bad bound.
        OffpromptError: ``sql=True`` without DuckDB installed.

    Example:
        >>> from offprompt.artifacts import TextArtifact
        >>> from offprompt.task_memory import TaskMemory
        >>> memory = TaskMemory()
        >>> _ = memory.process_output("logs", "call", TextArtifact("disk full on node 7", name="logs-1"))
        >>> grep = memory_tool_specs(memory)[1]
        >>> print(grep.run(artifact_namespace="logs-1", pattern="node 7"))
        1 matching line(s) for the string "node 7" in artifact_namespace "logs-1":
        (line number: matching line; line number- context line)
        1: disk full on node 7
    """
    from offprompt.task_memory.task_memory import TaskMemory

    if isinstance(task_memory, TaskMemory):
        memories = [task_memory]
    elif isinstance(task_memory, Sequence) and not isinstance(task_memory, str):
        memories = list(task_memory)
    else:
        raise ValidationError(
            "task_memory must be an offprompt TaskMemory or a list of them, "
            f"got {type(task_memory).__name__}"
        )
    if not memories:
        raise ValidationError("the memory tools need at least one TaskMemory")
    for memory in memories:
        if not isinstance(memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(memory).__name__}"
            )
    names = [m.name for m in memories]
    if len(set(names)) != len(names):
        raise ValidationError(f"two task memories share a name: {names}")
    for label, value, low in (("max_output_tokens", max_output_tokens, 16), ("top_n", top_n, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValidationError(f"{label} must be an int >= {low}, got {value!r}")
    if summary_tokens is not None and (
        isinstance(summary_tokens, bool)
        or not isinstance(summary_tokens, int)
        or summary_tokens < 1
    ):
        raise ValidationError(f"summary_tokens must be an int >= 1 or None, got {summary_tokens!r}")
    tools = _Tools(
        memories,
        summarizer=summarizer,
        max_output_tokens=max_output_tokens,
        top_n=top_n,
        summary_tokens=summary_tokens,
    )
    common: dict[str, Any] = {
        "max_output_tokens": max_output_tokens,
        "tokenizer": memories[0].tokenizer,
    }
    if sql and not sql_available():
        raise OffpromptError('sql=True needs DuckDB: pip install "offprompt[sql]"')
    specs = [
        MemoryToolSpec(
            "query_memory",
            "Search a tool output that was stored in memory instead of being shown, and return "
            f"the passages that best answer `query`, with their page numbers. {_WHERE}",
            QueryMemoryArgs,
            tools.query,
            hint="; read_memory shows whole pages",
            **common,
        ),
        MemoryToolSpec(
            "grep_memory",
            "Find the lines of a stored tool output that contain an exact string (an id, an "
            "error code, a name) or match a regular expression: each with its line number, "
            f"and the total count. {_WHERE}",
            GrepMemoryArgs,
            tools.grep,
            hint="; narrow the pattern or lower max_matches",
            **common,
        ),
        MemoryToolSpec(
            "read_memory",
            "Read a stored tool output in its original order: one page (from 1), or the lines "
            f"start_line to end_line (numbered from 1, e.g. around a grep_memory match). {_WHERE}",
            ReadMemoryArgs,
            tools.read,
            hint="; read fewer lines at a time",
            **common,
        ),
        MemoryToolSpec(
            "json_memory",
            "Look into a stored JSON (or JSON lines) tool output without reading it: without "
            "`expression`, its outline (keys, value types, array lengths); with a JMESPath "
            f"`expression`, just the value it selects (a count, a field, a filtered list). {_WHERE}",
            JsonMemoryArgs,
            tools.json,
            hint="; select fewer fields or use length(...)",
            **common,
        ),
        MemoryToolSpec(
            "summarize_memory",
            f"Summarize a tool output that was stored in memory. {_WHERE}"
            if summarizer is not None
            else "Overview of a tool output that was stored in memory, without a model (so "
            "not a summary): its first, last, rare and error lines, numbered; for tabular or "
            f"JSON data its fields, their values and the first rows. {_WHERE}",
            SummarizeMemoryArgs,
            tools.summarize,
            ahandler=tools.asummarize if summarizer is not None else None,
            **common,
        ),
    ]
    if sql:
        specs.append(
            MemoryToolSpec(
                SQL_MEMORY_TOOL,
                "Answer a question about stored tool outputs with one SQL SELECT (DuckDB): "
                "counts, sums, grouping, dates, joins across outputs, without reading them. "
                "Each reference is a table named by its artifact_namespace (double-quote it); "
                "a JSON, JSON lines or CSV output has one row per record, any other output "
                f"one row per line (line_number, line). {_WHERE}",
                SqlMemoryArgs,
                tools.sql,
                hint="; aggregate, or add LIMIT",
                **common,
            )
        )
    return specs
