"""Structure in outputs that are not one JSON document (issue 42, item 3).

A text header then a JSON body (BigQuery), YAML (Snowflake), a Markdown table and a
CSV: the card names fields and row counts and ``json_memory`` answers over them; the
text stays as it was for grep and read. Text that only looks a little like YAML (a
log of ``LEVEL: message`` lines, prose, a traceback) stays text.
"""

from __future__ import annotations

import json

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotJsonError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.structured import parse_structured
from offprompt.task_memory.tools import memory_tool_specs


@pytest.fixture
def memory():
    with TaskMemory(index="sync") as memory:
        yield memory


def _json_tool(memory: TaskMemory, namespace: str, expression: str | None = None) -> str:
    tools = {t.name: t for t in memory_tool_specs(memory)}
    arguments = {"artifact_namespace": namespace}
    if expression is not None:
        arguments["expression"] = expression
    said = tools["json_memory"].call(**arguments)
    assert not said.is_error, said.text
    return said.text


ROWS = [{"id": i, "student": f"student_{i}", "score": i % 97} for i in range(1000)]


def test_a_json_body_after_text_lines(memory: TaskMemory) -> None:
    text = "Query executed.\nJob id: bq-17\nshowing 1000 of 9000 rows\n" + json.dumps(ROWS)
    memory.store_artifact("bq", TextArtifact(text))
    card = memory.describe("bq")
    assert "kind: json" in card and "JSON from line 4" in card
    assert '"student": str' in card and "array[1,000]" in card
    assert "showing 1000 of 9000 rows" in card  # the header's notice is kept
    assert _json_tool(memory, "bq", "length([?score > `90`])").endswith("\n60")
    assert memory.grep("bq", "Job id: bq-17").total_matches == 1  # the text is as it was
    assert memory.read("bq").value.startswith("Query executed.\n")


def test_yaml_is_queried_as_its_json_data(memory: TaskMemory) -> None:
    text = "warehouse: COMPUTE_WH\ntables:\n" + "".join(
        f"  - name: T{i}\n    rows: {i * 10}\n    created: 2024-01-0{i % 9 + 1}\n"
        for i in range(300)
    )
    memory.store_artifact("sf", TextArtifact(text))
    card = memory.describe("sf")
    assert "kind: yaml" in card and '"tables": array[300]' in card and '"rows": int' in card
    assert "json_memory" in card
    assert _json_tool(memory, "sf", "tables[?rows > `2980`].name").endswith('\n["T299"]')
    assert _json_tool(memory, "sf", "tables[0].created").endswith('\n"2024-01-01"')


def test_a_markdown_table_is_rows_with_numbers(memory: TaskMemory) -> None:
    text = "Products below threshold report\n\n| sku | stock | threshold |\n|---|---:|---|\n"
    text += "".join(f"| 00{i} | {i} | 50 |\n" for i in range(800))
    memory.store_artifact("md", TextArtifact(text))
    card = memory.describe("md")
    assert "kind: table" in card and "array[800]" in card and '"stock": int' in card
    assert _json_tool(memory, "md", "length([?stock < threshold])").endswith("\n50")
    assert _json_tool(memory, "md", "[0].sku").endswith('\n"000"')  # an id keeps its zeros


def test_csv_rows_answer_json_memory(memory: TaskMemory) -> None:
    text = "region,units,price\n" + "".join(f"r{i % 4},{i},{i * 1.5}\n" for i in range(3000))
    memory.store_artifact("csv", TextArtifact(text))
    assert "json_memory" in memory.describe("csv")
    assert _json_tool(memory, "csv", "length([?region == 'r2'])").endswith("\n750")
    assert _json_tool(memory, "csv", "max_by(@, &units).price").endswith("\n4498.5")


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"{level}: worker {i} finished" for i, level in
                  enumerate(["INFO", "ERROR", "INFO", "WARN", "INFO"] * 200)),
        "The job ran for 3 hours.\nIt wrote 12 files: see the log.\n" * 100,
        'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
        "    main()\nValueError: bad input\n" * 50,
        "2026-01-01 12:00:00 INFO started\n2026-01-01 12:00:01 INFO done\n" * 300,
        "".join(f"line {i}: request {i} served in {i % 90} ms\n" for i in range(2000)),
        "record malformed: {'password': 'x'}\nTraceback: line 7",
    ],
    ids=["level-log", "prose", "traceback", "timestamped-log", "numbered-log", "error"],
)  # fmt: skip
def test_text_that_is_not_structured_stays_text(memory: TaskMemory, text: str) -> None:
    assert parse_structured(text) is None
    memory.store_artifact("t", TextArtifact(text))
    assert "kind: text" in memory.describe("t")
    with pytest.raises(NotJsonError):
        memory.json_query("t", "length(@)")


def test_yaml_with_values_outside_json_becomes_json_data() -> None:
    found = parse_structured("when: 2024-05-01 10:00:00\n2: two\ntrue: yes\nblob: !!binary aGk=\n")
    assert found == (
        "yaml",
        {"when": "2024-05-01T10:00:00", "2": "two", "true": True, "blob": "aGk="},
    )
