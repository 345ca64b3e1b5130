"""The card says what an output says about being partial (issue 42, item 2).

A cut result (a BigQuery "showing 1000 rows" on line 5, an Excel ``next_range``, a
``has_more`` in a nested page object) must not look complete on its card.
"""

from __future__ import annotations

import json

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.card import OutputStats, render_card
from offprompt.task_memory.notices import partial_notices
from offprompt.tokens import default_tokenizer


@pytest.fixture
def memory():
    with TaskMemory(index="sync") as memory:
        yield memory


def _rows(n: int) -> str:
    return "\n".join(f"| {i} | student_{i} | {i % 100} |" for i in range(n))


def test_a_notice_on_line_five_of_a_text_result_is_on_the_card(memory: TaskMemory) -> None:
    header = "Query executed.\nJob id: abc\nBytes processed: 12345\nColumns: id, name\n"
    memory.store_artifact("bq", TextArtifact(header + "showing 1000 rows\n" + _rows(1000)))
    card = memory.describe("bq")
    assert '"line 5: showing 1000 rows"' in card
    # The notice comes before the previews, which show lines 1-3 and the last three.
    assert card.index("showing 1000 rows") < card.index("first lines")


def test_a_notice_at_the_end_of_a_long_line_shows_its_words(memory: TaskMemory) -> None:
    """Found by bench_mcp_real: the card quoted the first 80 characters of a 160-character
    SQL line, so the notice at its end never reached the model."""
    query = (
        "Query: SELECT id, origin, destination, carrier, value FROM shipments WHERE year = "
        "2026 AND carrier IN ('Maersk','MSC','ONE') ORDER BY id; showing 1,000 of 9,000 rows"
    )
    memory.store_artifact("sql", TextArtifact(f"Shipment query result\n{query}\n" + _rows(1000)))
    card = memory.describe("sql")
    assert "showing 1,000 of 9,000 rows" in card
    (notice,) = [line for line in card.splitlines() if "line 2:" in line]
    assert notice.lstrip().startswith('"line 2: …') and len(notice) < 140


def test_a_notice_in_the_last_lines_is_on_the_card(memory: TaskMemory) -> None:
    memory.store_artifact("log", TextArtifact(_rows(2000) + "\n... 7,000 more rows truncated"))
    assert "line 2001: ... 7,000 more rows truncated" in memory.describe("log")


def test_json_paging_keys_at_any_depth_are_on_the_card(memory: TaskMemory) -> None:
    doc = {
        "values": [[i, f"v{i}", i * 2] for i in range(3000)],
        "next_range": "A49:AO61",
        "page": {"info": {"hasNextPage": True, "endCursor": "Y3Vyc29yOjQy"}},
    }
    memory.store_artifact("xl", TextArtifact(json.dumps(doc)))
    card = memory.describe("xl")
    assert "next_range = 'A49:AO61'" in card
    assert "page.info.hasNextPage = true" in card
    assert "page.info.endCursor = 'Y3Vyc29yOjQy'" in card


def test_json_lines_report_the_cursor_of_their_last_line(memory: TaskMemory) -> None:
    lines = [json.dumps({"id": i, "name": f"n{i}"}) for i in range(2000)]
    lines.append(json.dumps({"next_cursor": "c-2000", "has_more": True}))
    memory.store_artifact("nd", TextArtifact("\n".join(lines)))
    card = memory.describe("nd")
    assert "next_cursor = 'c-2000'" in card and "has_more = true" in card


def test_rows_own_fields_are_not_notices() -> None:
    rows = [{"name": f"p{i}", "count": i, "total": i * 2} for i in range(50)]
    assert partial_notices([], value={"items": rows}, lines_are_json=True) == []
    log = [(i, f"2026-01-01 worker-{i} ok, took {i} ms") for i in range(1, 21)]
    assert partial_notices(log, [(99, "ERROR disk full")]) == []


@pytest.mark.parametrize(
    "line",
    [
        "Showing 1000 of 9000 rows",
        "Results truncated at 50 items",
        "page 2 of 17",
        "12,345 more results",
        "next_page_token: abc",
        "(limited to 100)",
        "has_more: true",
    ],
)
def test_text_notices_found_by_one_rule(line: str) -> None:
    assert partial_notices([(1, "header"), (2, line)]) == [f"line 2: {line}"]


def test_a_sensitive_output_shows_no_notice(memory: TaskMemory) -> None:
    text = "secret header\nshowing 10 of 99 rows\n" + _rows(2000)
    memory.store_artifact("s", TextArtifact(text), sensitive=True)
    card = memory.describe("s")
    assert "showing" not in card and "the output says" not in card


def test_notices_survive_a_small_card_budget() -> None:
    stats = OutputStats(
        bytes=10**6,
        lines=9000,
        tokens=250_000,
        pages=270,
        head=[(1, "x" * 150), (2, "y" * 150), (3, "z" * 150)],
        tail=[(8998, "a" * 150), (8999, "b" * 150), (9000, "c" * 150)],
        notices=["line 5: showing 1000 of 9000 rows"],
        tools=["grep_memory"],
    )
    count = default_tokenizer().count
    card = render_card(stats, max_tokens=80, count=count)
    assert count(card) <= 80
    assert "showing 1000 of 9000 rows" in card
