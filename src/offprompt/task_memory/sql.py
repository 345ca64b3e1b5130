"""SQL over stored outputs, on DuckDB in a sandbox (``offprompt[sql]``).

Each stored output becomes one table named by its ``artifact_namespace``:

- an output with JSON structure (JSON, JSON lines, YAML, a CSV or Markdown table: the
  data ``json_memory`` queries) is read by DuckDB's own JSON reader, which infers the
  columns and their types (nested arrays stay lists and structs, reachable with
  ``UNNEST`` and the JSON functions);
- any other output is a table of its lines, ``(line_number BIGINT, line VARCHAR)``,
  numbered from 1 like ``grep_memory`` and ``read_memory`` (a line's ``\\n`` or
  ``\\r\\n`` is not part of it).

The sandbox: the tables are loaded from a private temporary directory, then file,
network and extension access is switched off and the configuration locked, before the
query runs. The query must be one ``SELECT`` (read-only), runs on one thread under a
memory limit, and is interrupted past its time limit. Each call has its own in-memory
database, so nothing a query does outlives it.
"""

from __future__ import annotations

import json
import math
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offprompt.errors import OffpromptError, SqlError, ValidationError

__all__ = [
    "SqlError",
    "SqlLimits",
    "SqlResult",
    "SqlTable",
    "TableSource",
    "run_sql",
    "sql_available",
]

_INSTALL_HINT = 'SQL over stored outputs needs DuckDB: pip install "offprompt[sql]"'


def sql_available() -> bool:
    """Whether DuckDB (the ``offprompt[sql]`` extra) can be imported here."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class SqlLimits:
    """Bounds of one query.

    Args:
        timeout: Seconds before the query is interrupted.
        memory_limit: DuckDB's ``memory_limit`` (e.g. ``"512MB"``); a query past it fails.
        max_rows: Rows an answer holds; the total the query produced is counted and stated.
        max_cell_chars: Characters of one value shown; longer ones are cut, stated.
    """

    timeout: float = 10.0
    memory_limit: str = "512MB"
    max_rows: int = 50
    max_cell_chars: int = 200

    def __post_init__(self) -> None:
        if not (isinstance(self.timeout, int | float) and 0 < self.timeout <= 600):
            raise ValidationError(f"timeout must be seconds in (0, 600], got {self.timeout!r}")
        for label in ("max_rows", "max_cell_chars"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{label} must be an int >= 1, got {value!r}")


@dataclass(frozen=True)
class TableSource:
    """What one stored output contributes: its JSON ``value``, or else its ``text``."""

    name: str
    json_value: Any = None
    text: bytes | None = None


@dataclass(frozen=True)
class SqlTable:
    """A table the query could read: its name, columns and row count."""

    name: str
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type)
    rows: int
    kind: str  # "json" or "lines"


@dataclass(frozen=True)
class SqlResult:
    """The answer of one query: the first rows and the total the query produced."""

    query: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    total_rows: int
    tables: tuple[SqlTable, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Whether every row the query produced is in :attr:`rows`."""
        return len(self.rows) == self.total_rows

    def text(self, *, max_cell_chars: int = 200) -> str:
        """The answer as the model reads it: a header with the counts, then the rows."""
        names = ", ".join(f'"{t.name}"' for t in self.tables)
        shown = len(self.rows)
        if self.complete:
            head = f"{self.total_rows} row(s) from {names}:"
        else:
            head = (
                f"first {shown} of {self.total_rows} rows from {names} "
                "(add ORDER BY/LIMIT or aggregate to see the rest):"
            )
        if not self.columns:
            return head
        lines = [head, " | ".join(self.columns)]
        lines += [" | ".join(_cell(v, max_cell_chars) for v in row) for row in self.rows]
        return "\n".join(lines)


def _cell(value: Any, limit: int) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, float) and math.isfinite(value) and value == int(value):
        text = str(int(value)) if abs(value) < 1e15 else repr(value)
    elif not isinstance(value, list | tuple | dict):  # str, int, date, Decimal, UUID...
        text = str(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(value)
    text = text.replace("\n", "\\n")
    if len(text) > limit:
        text = f"{text[:limit]}… [{len(text) - limit} more characters]"
    return text


def _records(value: Any) -> list[Any]:
    """The rows DuckDB's JSON reader reads: objects as they are, anything else wrapped."""
    items = value if isinstance(value, list) else [value]
    return [item if isinstance(item, dict) else {"value": item} for item in items]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_query(connection: Any, query: str) -> None:
    import duckdb

    if not isinstance(query, str) or not query.strip():
        raise SqlError("query must be one SQL SELECT statement, got an empty query")
    try:
        statements = connection.extract_statements(query)
    except duckdb.Error as exc:
        raise SqlError(f"the query does not parse: {_first_line(exc)}") from exc
    if len(statements) != 1:
        raise SqlError(f"query must be exactly one SELECT statement, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise SqlError(
            f"only SELECT is allowed (the stored outputs are read-only), got {kind.name}"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _load(connection: Any, source: TableSource, folder: Path, index: int) -> SqlTable:
    import duckdb

    table = _quote(source.name)
    if source.json_value is not None:
        path = folder / f"{index}.json"
        path.write_text(json.dumps(_records(source.json_value), ensure_ascii=False), "utf-8")
        try:
            connection.execute(
                f"CREATE TABLE {table} AS SELECT * FROM read_json_auto(?, format='array')",
                [str(path)],
            )
        except duckdb.Error:  # shapes DuckDB cannot unify: one JSON column
            connection.execute(
                f"CREATE TABLE {table} AS SELECT json AS value FROM read_json_objects(?, "
                "format='array')",
                [str(path)],
            )
        kind = "json"
    else:
        path = folder / f"{index}.txt"
        data = source.text or b""
        path.write_bytes(data[:-1] if data.endswith(b"\n") else data)
        connection.execute(
            f"CREATE TABLE {table} AS SELECT i::BIGINT AS line_number, "
            "regexp_replace(parts[i], '\\r$', '') AS line FROM "
            "(SELECT string_split(content, chr(10)) AS parts FROM read_text(?)), "
            "range(1, len(parts) + 1) AS r(i) WHERE ? ORDER BY i",
            [str(path), bool(data)],
        )
        kind = "lines"
    described = connection.execute(f"DESCRIBE {table}").fetchall()
    columns = tuple((str(row[0]), str(row[1])) for row in described)
    (rows,) = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
    return SqlTable(source.name, columns, int(rows), kind)


def _open(limits: SqlLimits) -> Any:
    try:
        import duckdb
    except ImportError as exc:
        raise OffpromptError(_INSTALL_HINT) from exc
    return duckdb.connect(
        ":memory:",
        config={
            "threads": 1,
            "memory_limit": limits.memory_limit,
            "max_temp_directory_size": "0KiB",
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
        },
    )


def _seal(connection: Any) -> None:
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")


def _fetch(connection: Any, query: str, limits: SqlLimits) -> tuple[list[str], list[Any], int]:
    cursor = connection.execute(query)
    columns = [d[0] for d in cursor.description or ()]
    rows = cursor.fetchmany(limits.max_rows)
    total = len(rows)
    while True:  # count the rest without keeping it
        more = cursor.fetchmany(10_000)
        if not more:
            break
        total += len(more)
    return columns, rows, total


#: Seconds a query past its time limit has to stop once interrupted; after that the call
#: answers and the query's thread closes its database when DuckDB returns (one scalar
#: function call, e.g. a huge ``repeat()``, is interrupted only when it returns).
INTERRUPT_GRACE = 1.0


def run_sql(
    sources: Iterable[TableSource], query: str, *, limits: SqlLimits | None = None
) -> SqlResult:
    """Run ``query`` (one ``SELECT``) over ``sources``, each a table, in the sandbox.

    Raises:
        SqlError: Not one SELECT, two tables with one name, a query that fails, or one
            that ran past ``limits.timeout`` or ``limits.memory_limit``.
        OffpromptError: DuckDB is not installed (the ``offprompt[sql]`` extra).
    """
    bounds = limits or SqlLimits()
    sources = list(sources)
    lowered = [s.name.lower() for s in sources]
    if len(set(lowered)) != len(lowered):  # SQL names are case-insensitive
        raise SqlError(f"two references name the same table: {[s.name for s in sources]}")
    connection = _open(bounds)
    try:
        _check_query(connection, query)
        with tempfile.TemporaryDirectory(prefix="offprompt-sql-") as folder:
            tables = tuple(_load(connection, s, Path(folder), i) for i, s in enumerate(sources))
        _seal(connection)
    except BaseException:
        connection.close()
        raise
    columns, rows, total = _run_bounded(connection, query, bounds)
    return SqlResult(query, tuple(columns), tuple(tuple(r) for r in rows), total, tables)


def _run_bounded(
    connection: Any, query: str, limits: SqlLimits
) -> tuple[list[str], list[Any], int]:
    """The query on its own thread; interrupted at the time limit, abandoned after grace."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = _fetch(connection, query, limits)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            connection.close()

    worker = threading.Thread(target=work, name="offprompt-sql", daemon=True)
    worker.start()
    worker.join(limits.timeout)
    if worker.is_alive():
        connection.interrupt()
        worker.join(INTERRUPT_GRACE)
        if worker.is_alive() or "error" in outcome:
            raise _timeout_error(limits)
    if "error" in outcome:
        raise _query_error(outcome["error"], limits)
    return outcome["value"]  # type: ignore[no-any-return]


def _timeout_error(limits: SqlLimits) -> SqlError:
    return SqlError(
        f"the query ran past its time limit of {limits.timeout:g} s and was stopped; "
        "filter or aggregate earlier"
    )


def _query_error(exc: BaseException, limits: SqlLimits) -> BaseException:
    import duckdb

    if isinstance(exc, duckdb.InterruptException):
        return _timeout_error(limits)
    if isinstance(exc, duckdb.OutOfMemoryException):
        return SqlError(
            f"the query needed more than its memory limit ({limits.memory_limit}) and was "
            "stopped; aggregate or LIMIT earlier"
        )
    if isinstance(exc, duckdb.Error):
        return SqlError(f"the query failed: {_first_line(exc)}")
    return exc
