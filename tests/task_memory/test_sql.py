"""SQL over stored outputs on DuckDB (issue 48, items 1, 2 and 5): ``TaskMemory.sql``,
the ``sql_memory`` tool, and the sandbox it runs in.

The answers are checked against the same aggregate computed in Python over the data
that was stored; the sandbox against the attacks the issue lists, each followed by a
query that still answers (the process keeps serving).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotFoundError, OffpromptError, ValidationError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.sql import SqlError, SqlLimits, TableSource, run_sql
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES, SQL_MEMORY_TOOL, memory_tool_specs

LOGHUB = Path(__file__).parent / "fixtures" / "loghub"  # real Loghub samples, gzipped

TEAMS = [f"team_{i}" for i in range(6)]
SCHEDULE = [
    {"game": i, "team": TEAMS[i % 6], "date": f"2024-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}"}
    for i in range(600)
]
PRODUCTS = [
    {
        "sku": f"P{i:04d}",
        "stock": (i * 37) % 50,
        "threshold": 10 + i % 7,
        "tags": ["a", "b"][: i % 3],
    }
    for i in range(300)
]


@pytest.fixture
def memory():
    with TaskMemory(index="sync") as memory:
        memory.process_output(
            "sheets", "schedule", TextArtifact(json.dumps(SCHEDULE), name="schedule-1")
        )
        memory.process_output(
            "shop", "products", TextArtifact(json.dumps(PRODUCTS), name="products.p1")
        )
        yield memory


def test_an_aggregate_over_a_json_array_matches_python(memory):
    result = memory.sql(
        "schedule-1",
        'SELECT team, count(*) AS games FROM "schedule-1" GROUP BY team ORDER BY team',
    )
    expected = sorted(Counter(row["team"] for row in SCHEDULE).items())
    assert [tuple(r) for r in result.rows] == expected
    assert result.complete and result.total_rows == 6
    (table,) = result.tables
    assert table.kind == "json" and table.rows == 600
    assert dict(table.columns)["date"] == "DATE"  # DuckDB inferred it, no schema written here


def test_dates_and_window_functions_answer_a_back_to_back_question(memory):
    result = memory.sql(
        ["schedule-1"],
        "SELECT team, count(*) FROM (SELECT team, date - lag(date) OVER (PARTITION BY team "
        'ORDER BY date) AS gap FROM "schedule-1") WHERE gap = 1 GROUP BY team ORDER BY team',
    )
    by_team: dict[str, list] = {}
    from datetime import date

    for row in SCHEDULE:
        by_team.setdefault(row["team"], []).append(date.fromisoformat(row["date"]))
    expected = []
    for team in sorted(by_team):
        days = sorted(by_team[team])
        count = sum(1 for a, b in itertools.pairwise(days) if (b - a).days == 1)
        if count:
            expected.append((team, count))
    assert [tuple(r) for r in result.rows] == expected


def test_two_references_join(memory):
    memory.process_output(
        "shop",
        "orders",
        TextArtifact(
            json.dumps([{"sku": "P0003", "qty": 2}, {"sku": "P0005", "qty": 1}]), name="orders"
        ),
    )
    result = memory.sql(
        ["orders", "products.p1"],
        'SELECT o.sku, o.qty, p.stock FROM orders o JOIN "products.p1" p USING (sku) ORDER BY o.sku',
    )
    stock = {p["sku"]: p["stock"] for p in PRODUCTS}
    assert [tuple(r) for r in result.rows] == [
        ("P0003", 2, stock["P0003"]),
        ("P0005", 1, stock["P0005"]),
    ]


def test_nested_arrays_unnest(memory):
    result = memory.sql(
        "products.p1", 'SELECT count(*) FROM (SELECT unnest(tags) FROM "products.p1")'
    )
    assert result.rows == ((sum(len(p["tags"]) for p in PRODUCTS),),)


def test_json_lines_csv_and_yaml_are_tables_of_their_records():
    with TaskMemory(index="sync") as memory:
        lines = "\n".join(json.dumps(r) for r in PRODUCTS[:40])
        memory.process_output("t", "ndjson", TextArtifact(lines, name="nd"))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["sku", "stock"])
        writer.writeheader()
        writer.writerows({"sku": p["sku"], "stock": p["stock"]} for p in PRODUCTS[:40])
        memory.process_output("t", "csv", TextArtifact(buffer.getvalue(), name="rows.csv"))
        yaml = "items:\n" + "".join(
            f"  - sku: {p['sku']}\n    stock: {p['stock']}\n" for p in PRODUCTS[:5]
        )
        memory.process_output("t", "yaml", TextArtifact(yaml, name="doc.yaml"))
        low = sum(1 for p in PRODUCTS[:40] if p["stock"] < p["threshold"])
        assert memory.sql("nd", "SELECT count(*) FROM nd WHERE stock < threshold").rows == ((low,),)
        total = sum(p["stock"] for p in PRODUCTS[:40])
        assert memory.sql("rows.csv", 'SELECT sum(stock) FROM "rows.csv"').rows == ((total,),)
        answer = memory.sql("doc.yaml", 'SELECT len(items) FROM "doc.yaml"')
        assert answer.rows == ((5,),)


def test_a_text_output_is_a_table_of_its_numbered_lines():
    text = gzip.decompress((LOGHUB / "Apache_2k.log.gz").read_bytes()).decode("utf-8")
    with TaskMemory(index="sync") as memory:
        memory.process_output("logs", "apache", TextArtifact(text, name="apache"))
        result = memory.sql(
            "apache",
            "SELECT min(line_number), count(*) FROM apache WHERE line LIKE '%[error]%'",
        )
        lines = [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]
        numbers = [i for i, line in enumerate(lines, 1) if "[error]" in line]
        assert result.rows == ((numbers[0], len(numbers)),)
        (first,) = memory.sql("apache", "SELECT line FROM apache WHERE line_number = 1").rows
        assert first == (lines[0],)
        assert memory.sql("apache", "SELECT count(*) FROM apache").rows == ((len(lines),),)
        # the stored bytes are what they were
        assert memory.load_artifacts("apache").value[0].value == text


def test_a_real_structured_csv_groups_like_python():
    text = gzip.decompress((LOGHUB / "HDFS_2k.log_structured.csv.gz").read_bytes()).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    with TaskMemory(index="sync") as memory:
        memory.process_output("logs", "hdfs", TextArtifact(text, name="hdfs.csv"))
        result = memory.sql(
            "hdfs.csv",
            'SELECT Level, count(*) FROM "hdfs.csv" GROUP BY Level ORDER BY 2 DESC, 1',
        )
    expected = sorted(Counter(r["Level"] for r in rows).items(), key=lambda kv: (-kv[1], kv[0]))
    assert [tuple(r) for r in result.rows] == expected


def test_the_answer_is_bounded_and_states_the_total(memory):
    result = memory.sql("schedule-1", 'SELECT * FROM "schedule-1"', limits=SqlLimits(max_rows=7))
    assert len(result.rows) == 7 and result.total_rows == 600 and not result.complete
    assert result.text().startswith('first 7 of 600 rows from "schedule-1"')


def test_long_cells_are_cut_and_say_so():
    text = run_sql([TableSource("t", {"v": "x" * 1000})], "SELECT v FROM t").text(max_cell_chars=50)
    assert "x" * 50 + "… [950 more characters]" in text


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "file system operations are disabled"),
        ("SELECT * FROM read_text('/etc/passwd')", "file system operations are disabled"),
        ("SELECT * FROM glob('/etc/*')", "file system operations are disabled"),
        ("COPY (SELECT 1) TO '/tmp/offprompt-sql-escape.csv'", "only SELECT is allowed"),
        ("ATTACH '/tmp/offprompt-sql-escape.db'", "only SELECT is allowed"),
        ("INSTALL httpfs", "only SELECT is allowed"),
        ("LOAD httpfs", "only SELECT is allowed"),
        ("SET enable_external_access = true", "only SELECT is allowed"),
        ("CREATE TABLE t AS SELECT 1", "only SELECT is allowed"),
        ('DROP TABLE "schedule-1"', "only SELECT is allowed"),
        ("SELECT 1; SELECT 2", "exactly one SELECT statement, got 2"),
        ("", "empty query"),
        ("SELEC 1", "does not parse"),
        ("SELECT * FROM nowhere", "the query failed"),
    ],
)
def test_the_sandbox_refuses(memory, query, said):
    with pytest.raises(SqlError, match=said):
        memory.sql("schedule-1", query)
    assert not Path("/tmp/offprompt-sql-escape.csv").exists()
    assert memory.sql("schedule-1", 'SELECT count(*) FROM "schedule-1"').rows == ((600,),)


def test_the_configuration_is_locked_and_external_access_off(memory):
    result = memory.sql(
        "schedule-1",
        "SELECT name, value FROM duckdb_settings() WHERE name IN "
        "('enable_external_access', 'lock_configuration', 'threads') ORDER BY name",
    )
    assert dict(result.rows) == {
        "enable_external_access": "false",
        "lock_configuration": "true",
        "threads": "1",
    }


def test_a_runaway_query_is_stopped_and_the_process_keeps_serving(memory):
    runaway = "SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b"
    with pytest.raises(SqlError, match=r"time limit of 0\.5 s"):
        memory.sql("schedule-1", runaway, limits=SqlLimits(timeout=0.5))
    with pytest.raises(SqlError, match=r"memory limit|time limit"):
        memory.sql(
            "schedule-1",
            "SELECT length(repeat('x', 2000000000))",
            limits=SqlLimits(timeout=0.5, memory_limit="64MB"),
        )
    assert memory.sql("schedule-1", 'SELECT max(game) FROM "schedule-1"').rows == ((599,),)


def test_bad_references_are_named(memory):
    with pytest.raises(NotFoundError):
        memory.sql("no-such-output", "SELECT 1")
    with pytest.raises(ValidationError, match="1 to 8"):
        memory.sql([], "SELECT 1")
    with pytest.raises(SqlError, match="same table"):
        run_sql([TableSource("A", [1]), TableSource("a", [2])], "SELECT 1")
    with pytest.raises(ValidationError, match="timeout"):
        SqlLimits(timeout=0)


def test_sql_memory_is_a_sixth_tool_only_when_asked(memory):
    assert [t.name for t in memory_tool_specs(memory)] == list(MEMORY_TOOL_NAMES)
    tools = {t.name: t for t in memory_tool_specs(memory, sql=True)}
    assert list(tools) == [*MEMORY_TOOL_NAMES, SQL_MEMORY_TOOL]
    sql = tools[SQL_MEMORY_TOOL]
    assert sql.parameters["required"] == ["references", "query"]
    said = sql.call(
        references=["products.p1"],
        query='SELECT count(*) AS n FROM "products.p1" WHERE stock < threshold',
    )
    assert not said.is_error
    low = sum(1 for p in PRODUCTS if p["stock"] < p["threshold"])
    assert said.text == f'1 row(s) from "products.p1":\nn\n{low}'
    for arguments, error in [
        ({"references": ["nope"], "query": "SELECT 1"}, 'Unknown artifact_namespace "nope"'),
        ({"references": ["products.p1"], "query": "DROP TABLE x"}, "only SELECT"),
        ({"references": [], "query": "SELECT 1"}, "at least one"),
        ({"query": "SELECT 1"}, "references"),
    ]:
        said = sql.call(**arguments)
        assert said.is_error and error in said.text, said.text


def test_without_duckdb_the_tool_is_refused_with_the_extra_named():
    code = (
        "import sys; sys.modules['duckdb'] = None\n"
        "from offprompt.task_memory import TaskMemory, memory_tool_specs\n"
        "from offprompt.task_memory.sql import sql_available\n"
        "assert not sql_available()\n"
        "m = TaskMemory()\n"
        "assert len(memory_tool_specs(m)) == 5\n"
        "try:\n    memory_tool_specs(m, sql=True)\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip() == 'OffpromptError sql=True needs DuckDB: pip install "offprompt[sql]"'
    )
    assert issubclass(SqlError, OffpromptError)


def test_importing_task_memory_does_not_import_duckdb():
    code = "import sys, offprompt.task_memory; from offprompt.task_memory import TaskMemory; TaskMemory(); print('duckdb' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_the_docs_example_prints_what_the_page_says(capsys):
    page = (Path(__file__).parents[2] / "docs" / "concepts" / "task-memory.md").read_text("utf-8")
    section = page[page.index("## Aggregates in one call") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "task-memory.md", "exec"), {})
    assert capsys.readouterr().out == shown
