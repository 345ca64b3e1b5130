"""Issue 26 items 1-4 on real outputs: a breadth-first outline, previews that carry
information, kind detection a log does not fool, sensitive errors that stay secret.

The files are the real excerpts of ``gallery/`` (sources in its README).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.task_memory import OutputStats, TaskMemory, json_view
from offprompt.task_memory import card as card_module
from offprompt.task_memory.card import sniff_kind
from offprompt.task_memory.json_view import outline
from offprompt.task_memory.offload import OffloadPolicy

GALLERY = Path(__file__).parent / "gallery"
LOGS = sorted(GALLERY.glob("loghub_*.log"))
CSVS = sorted(GALLERY.glob("*.csv"))


def _text(name: str) -> str:
    return (GALLERY / name).read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def memory() -> TaskMemory:
    with TaskMemory(min_tokens=0) as m:
        yield m  # type: ignore[misc]


def _card(memory: TaskMemory, name: str, text: str) -> tuple[str, OutputStats]:
    info = memory.process_output("fetch", "call", TextArtifact(text, name=name))
    return str(info.value), OutputStats.model_validate(info.meta["stats"])


# ------------------------------------------------------------- 1. breadth first


def test_the_top_level_is_named_before_any_second_level(memory: TaskMemory) -> None:
    card, stats = _card(memory, "twitter", _text("twitter_trimmed.json"))
    # twitter.json: 25 keys per status; the card used to list them and never reach
    # search_metadata.
    assert '"statuses": array[2] of object (25 keys)' in card
    assert '"search_metadata": object (9 keys)' in card
    assert memory.tokenizer.count(card) <= 300
    assert stats.json_outline is not None
    # The union of the statuses' keys, with how often the ones that vary occur.
    assert '"retweeted_status" (in 1 of 2): object (24 keys)' in stats.json_outline
    assert '"possibly_sensitive" (in 1 of 2): bool' in stats.json_outline


def test_id_keyed_objects_are_one_line_and_every_top_level_key_is_named(
    memory: TaskMemory,
) -> None:
    text = _text("citm_catalog_trimmed.json")
    card, _ = _card(memory, "citm", text)
    for key in json.loads(text):
        assert json.dumps(key) in card
    assert '"areaNames": object (17 keys like "205705993"): str' in card
    assert '"events": object (8 keys like "138586341"): object (8 keys)' in card
    assert '"205705994"' not in card  # ids are summarised, not listed


def test_thousands_of_top_level_keys_show_the_first_and_a_count() -> None:
    value = {f"field_{i}": i for i in range(5000)}
    shape = outline(value)
    lines = shape.split("\n")
    assert lines[0] == "object (5,000 keys)" and lines[1] == '  "field_0": int'
    assert "  … 4,975 more keys" in lines


def test_a_cut_outline_keeps_shallow_lines_and_their_parents() -> None:
    text = "root\n  a\n    a1\n      a11\n    a2\n  b\n    b1\n  c"
    kept, left = json_view.breadth_first(text, 5)
    assert kept == ["root", "  a", "    a1", "  b", "  c"] and left == 3


# --------------------------------------------------------------- 2. previews


def test_pretty_printed_json_shows_a_compact_first_item_not_its_brackets(
    memory: TaskMemory,
) -> None:
    card, stats = _card(memory, "twitter-preview", _text("twitter_trimmed.json"))
    assert stats.sample is not None and stats.sample[0] == "statuses[0]"
    assert "sample statuses[0] (compact JSON):" in card
    assert '{"metadata":{"result_type":"recent"' in card
    assert '1: "{"' not in card and '"  \\"statuses\\": ["' not in card
    assert json_view.sample([]) == ("@", "[]") and json_view.sample(3) is None
    assert json_view.sample({"values": [1, 2, 3]}) == ("values[:8]", "[1,2,3]")


def test_json_lines_of_arrays_with_a_header_row_show_the_column_names(
    memory: TaskMemory,
) -> None:
    card, stats = _card(memory, "rows", _text("loghub_Hadoop_rows.ndjson"))
    assert stats.kind == "ndjson" and stats.column_count == 9
    assert stats.columns[:3] == ["LineId", "Date", "Time"]
    assert 'columns: "LineId", "Date", "Time", "Level"' in card and "9 columns" in card
    assert '  1: "[\\"LineId\\"' not in card  # the header row is not shown twice


def test_csv_shows_its_header_and_column_count(memory: TaskMemory) -> None:
    card, stats = _card(memory, "csv", _text("loghub_Android_structured.csv"))
    assert stats.kind == "csv" and stats.column_count == 10
    assert '"Content", "EventI' in card and "| 10 columns |" in card
    assert "  2: " in card and "  1: " not in card


# ------------------------------------------------------------ 3. kind detection


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_a_real_log_is_never_csv_wherever_the_output_starts(log: Path) -> None:
    lines = log.read_bytes().decode("utf-8").splitlines(keepends=True)
    for start in range(len(lines) - 6):
        assert sniff_kind("".join(lines[start : start + 30])) != "csv", (log.name, start)


def test_a_timestamp_comma_is_not_a_csv() -> None:
    # The Windows CBS line of issue 26 (Loghub's Windows log is in the held-out split).
    cbs = "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\cbscore.dll\n"
    assert sniff_kind(cbs * 5) == "text"
    assert sniff_kind("id,name\n1,ada\n2,grace\n") == "csv"  # two columns are a table


@pytest.mark.parametrize("table", CSVS, ids=lambda p: p.name)
def test_a_real_csv_is_csv_with_its_column_count(table: Path) -> None:
    text = table.read_bytes().decode("utf-8")
    assert sniff_kind(text[:8192]) == "csv"
    found = card_module.csv_shape(text[:8192])
    assert found is not None
    assert found[0] == len(next(csv.reader(io.StringIO(text))))


# --------------------------------------------------------- 4. sensitive errors


def test_a_sensitive_error_shows_its_kind_size_and_reference_never_its_text(
    memory: TaskMemory,
) -> None:
    error = "record malformed: {'password': 'hunter2-s3cr3t'}\nTraceback: line 7"
    for policy in (OffloadPolicy(memory, sensitive=True), OffloadPolicy(memory)):
        stored = policy.offload("vault", error, is_error=True, sensitive=True)
        assert stored.reference is not None and stored.reference.sensitive
        for word in ("hunter2", "password", "malformed", "Traceback"):
            assert word not in stored.text
        assert f"text, {len(error.encode())} bytes, 2 lines" in stored.text
        assert memory.reference_text("vault", "call", stored.reference.namespace) in stored.text
        assert memory.load_artifacts(stored.reference.namespace).value[0].value == error
    # A large error of a tool that is not sensitive still shows its first line.
    plain = OffloadPolicy(memory, min_tokens=0).offload("fetch", "disk full\nx", is_error=True)
    assert '"disk full"' in plain.text
