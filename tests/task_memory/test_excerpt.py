"""Issue 42 item 6: ``summarize_memory`` without a model answers an excerpt that says so.

Real data: Loghub's 2,000-line samples of BGL, HDFS and Apache (copied unchanged from the
development split into ``fixtures/loghub/``, gzipped) and the excerpts of them kept in
``gallery/``. Loghub's structured CSVs name every line's event, so whether a shown line
is rare is checked against Loghub's own parse, not against the excerpt's.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.summarizers import ExtractiveSummarizer
from offprompt.task_memory import TaskMemory, excerpt
from offprompt.task_memory.text_view import TextView
from offprompt.task_memory.tools import memory_tool_specs

HERE = Path(__file__).parent
GALLERY = HERE / "gallery"
LOGHUB = HERE / "fixtures" / "loghub"


def loghub(name: str, *, raw: bool = False) -> str:
    """A Loghub file of the development split, as ``read_text`` gives it (CRLF as LF), or
    ``raw`` as its bytes decode (for ``csv``)."""
    text = gzip.decompress((LOGHUB / f"{name}.gz").read_bytes()).decode("utf-8")
    return text if raw else text.replace("\r\n", "\n").replace("\r", "\n")


BOUND = 1000  # the memory tools' default bound
LINE = re.compile(r"(\d+)(?: \(\+([\d,]+) similar\))?: (.*)")
GAP = re.compile(r"\[\.\.\. ([\d,]+) lines? not shown \.\.\.\]")
HEADER = 'Excerpt of artifact_namespace "{}" (no model was given, so not a summary): '


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TaskMemory]:
    with TaskMemory(index="sync", path=tmp_path_factory.mktemp("excerpt")) as m:
        yield m


def _summarize(memory: TaskMemory, name: str, text: str, bound: int = BOUND) -> str:
    if not memory.has_namespace(name):
        memory.process_output("fetch", "call", TextArtifact(text, name=name))
    spec = memory_tool_specs(memory, max_output_tokens=bound)[-1]
    result = spec.call(artifact_namespace=name)
    assert not result.is_error, result.text
    assert memory.tokenizer.count(result.text) <= bound
    return result.text


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as the memory numbers them (a last line end ends no line)."""
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _shown(answer: str, lines: list[str]) -> dict[int, str]:
    """The numbered lines of a text excerpt, checked against the output: each one whole
    and on its number, the gaps counting exactly the lines between them."""
    shown: dict[int, str] = {}
    last = 0
    for row in answer.split("\n")[1:]:
        gap = GAP.fullmatch(row)
        if gap:
            last += int(gap.group(1).replace(",", ""))
            continue
        found = LINE.fullmatch(row)
        assert found, row
        number = int(found.group(1))
        assert number == last + 1, (number, last)  # a gap says how many lines it skips
        assert found.group(3) == lines[number - 1], number
        shown[number] = found.group(3)
        last = number
    assert last == len(lines)
    return shown


def _events(name: str) -> list[dict[str, str]]:
    return list(
        csv.DictReader(io.StringIO(loghub(f"{name}_2k.log_structured.csv", raw=True), newline=""))
    )


# ------------------------------------------------------------------------ logs


@pytest.mark.parametrize(("name", "levels"), [("BGL", {"FATAL", "ERROR"}), ("HDFS", {"WARN"})])
def test_a_log_shows_its_ends_and_its_rare_and_error_lines(
    memory: TaskMemory, name: str, levels: set[str]
) -> None:
    text = loghub(f"{name}_2k.log")
    lines = _lines(text)
    answer = _summarize(memory, name, text)
    assert answer.startswith(HEADER.format(name) + "the first and last lines")
    shown = _shown(answer, lines)
    assert {1, 2, len(lines) - 1, len(lines)} <= set(shown)  # head and tail
    events = _events(name)
    assert len(events) == len(lines)
    often = Counter(e["EventId"] for e in events)
    middle = [events[n - 1] for n in shown if 3 < n <= len(lines) - 3]
    # Loghub's own parse: lines of events seen at most 3 times in 2,000, and error lines
    rare = [e for e in middle if often[e["EventId"]] <= 3]
    assert len(rare) >= 2, [e["Content"] for e in middle]
    assert any(e["Level"] in levels for e in middle)
    if name == "BGL":  # 388 of its 2,000 lines are FATAL or ERROR: some rare ones show
        assert any(e["Level"] in levels for e in rare)
    assert answer == _summarize(memory, name, text)  # deterministic


def test_a_shape_is_counted_on_the_first_line_showing_it(memory: TaskMemory) -> None:
    text = loghub("Apache_2k.log")
    answer = _summarize(memory, "Apache", text)
    lines = _lines(text)
    shown = _shown(answer, lines)
    # "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/...":
    # its shape, dates and numbers masked, is Loghub's event E2.
    events = _events("Apache")
    e2 = sum(1 for e in events if e["EventId"] == "E2")
    assert events[0]["EventId"] == "E2"
    assert f"\n1 (+{e2 - 1:,} similar): {lines[0]}\n" in answer
    later = [n for n in shown if n > 1 and events[n - 1]["EventId"] == "E2"]
    assert later and all(f"\n{n}: {lines[n - 1]}" in answer for n in later)  # counted once


def test_the_gallery_logs_too(memory: TaskMemory) -> None:
    """The first 120 lines of each Loghub log (in the repository): whole, numbered lines."""
    for path in sorted(GALLERY.glob("loghub_*.log")):
        text = path.read_text(encoding="utf-8")
        name = f"gallery-{path.stem}"
        answer = _summarize(memory, name, text, bound=400)
        assert answer.startswith(HEADER.format(name) + "the first and last lines"), path
        lines = _lines(text)
        shown = _shown(answer, lines)
        assert {1, len(lines)} <= set(shown), path
        assert len(shown) < len(lines) and GAP.search(answer), path


def test_a_rare_error_deep_in_a_large_log_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        f"2026-11-30T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z INFO api GET "
        f"/items/{i} 200 {i % 97}ms"
        for i in range(120_000)
    ]
    lines[77_777] = "2026-11-30T21:36:17Z ERROR api GET /items/77777 500 disk quota exceeded"
    data = "\n".join(lines).encode()
    tokenizer = TaskMemory().tokenizer
    answer = excerpt.lines_excerpt(TextView(data), "big", 500, tokenizer)
    assert f"\n77778: {lines[77_777]}\n" in answer
    assert f"\n1 (+{len(lines) - 2:,} similar): {lines[0]}\n" in answer
    assert tokenizer.count(answer) <= 500
    _shown(answer, lines)
    # Larger than SCAN_BYTES: shapes counted in spread windows, and said; numbers still right.
    monkeypatch.setattr(excerpt, "SCAN_BYTES", 2 << 20)
    spread = excerpt.lines_excerpt(TextView(data), "big", 500, tokenizer)
    assert "\n(shapes counted on " in spread and f"of its {len(data):,} bytes, spread)" in spread
    assert tokenizer.count(spread) <= 500
    _shown("\n".join(row for row in spread.split("\n") if not row.startswith("(")), lines)


def test_one_huge_line_is_cut_and_the_cut_said(memory: TaskMemory) -> None:
    words = " ".join(f"w{i:07d}" for i in range(400_000))  # 3.6 MB, no line end
    answer = _summarize(memory, "huge-line", words, bound=300)
    header, shown = answer.split("\n")
    assert header.startswith(HEADER.format("huge-line"))
    assert shown.startswith("1: w0000000 w0000001 ")
    assert shown.endswith(f"… [line cut: {len(words):,} bytes in all]")
    assert words.startswith(shown[3 : shown.index("…")])


def test_a_short_output_is_shown_whole(memory: TaskMemory) -> None:
    answer = _summarize(memory, "tiny", "ok\n\n  done\n")
    assert answer.split("\n")[1:] == ["1: ok", "2: ", "3:   done"]
    empty = memory.summarize("tiny", max_tokens=20)
    assert memory.tokenizer.count(empty.value) <= 20
    assert empty.value.startswith("Excerpt of") and empty.meta["excerpt"] == "lines"


# ------------------------------------------------------------------------ data


def test_a_csv_gets_its_columns_row_count_and_first_rows(memory: TaskMemory) -> None:
    text = loghub("Apache_2k.log_structured.csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    answer = _summarize(memory, "apache-csv", text)
    lines = answer.split("\n")
    assert (
        lines[0]
        == HEADER.format("apache-csv") + "the structure of its CSV data, with the first rows:"
    )
    assert lines[1].startswith("2,000 rows, 6 fields (line 1 is the header); json_memory")
    expression = json.loads(lines[1].split("e.g. ", 1)[1])
    assert memory.json_query("apache-csv", expression) == sum(  # the example runs, and counts
        1 for r in rows if r["Level"] == expression.split("'")[1]
    )
    columns = [row.split(":", 1)[0].strip() for row in lines[2:8]]
    assert columns == list(rows[0])
    assert lines[2] == "  LineId: int 1 to 2,000, all distinct"
    levels = Counter(r["Level"] for r in rows).most_common()
    shown = ", ".join(f'"{level}" ({n:,})' for level, n in levels)
    assert lines[4] == f"  Level: str, {len(levels)} distinct: {shown}"
    events = Counter(r["EventId"] for r in rows)
    assert lines[6].startswith(f"  EventId: str, {len(events)} distinct: ")
    assert f'"{events.most_common(1)[0][0]}" ({events.most_common(1)[0][1]:,})' in lines[6]
    first = text.split("\n")[1]
    assert lines[lines.index("first rows (line 2 on):") + 1] == f"  2: {first}"


def test_json_lines_from_the_gallery(memory: TaskMemory) -> None:
    text = (GALLERY / "loghub_HDFS_records.ndjson").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    answer = _summarize(memory, "hdfs-records", text)
    assert "the structure of its JSON lines, with the first rows:" in answer.split("\n")[0]
    keys = list(dict.fromkeys(k for r in records for k in r))
    assert f"\n{len(records)} items, {len(keys)} fields; " in answer
    for key in keys:
        assert f"\n  {key}: " in answer
    missing = sum(1 for r in records if "Pid" not in r)
    if missing:
        assert re.search(rf"\n  Pid: [^\n]*missing in {missing}\b", answer)
    first = json.dumps(records[0], ensure_ascii=False, separators=(",", ":"))
    assert f"\n  {first[:100]}" in answer


JOBS = [
    {
        "id": i,
        "status": ("failed", "done", "done", "running")[i % 4],
        "owner": {"team": ("data", "sre")[i % 2]},
        "seconds": round(i * 1.5, 1),
        "note": "retried" if i % 10 == 0 else None,
    }
    for i in range(3000)
]


def _check_jobs(answer: str, count_line: str) -> None:
    assert count_line in answer
    assert "\n  id: int 0 to 2,999, all distinct\n" in answer
    assert (
        '\n  status: str, 3 distinct: "done" (1,500), "failed" (750), "running" (750)\n' in answer
    )
    assert '\n  owner.team: str, 2 distinct: "data" (1,500), "sre" (1,500)\n' in answer
    assert "\n  seconds: number 0 to 4,498.5, all distinct\n" in answer
    assert '\n  note: str, 1 distinct: "retried" (300); null in 2,700\n' in answer
    assert (
        '\n  {"id":0,"status":"failed","owner":{"team":"data"},"seconds":0.0,"note":"retried"}'
        in answer
    )


def test_a_json_array_of_objects(memory: TaskMemory) -> None:
    answer = _summarize(memory, "jobs", json.dumps(JOBS))
    assert "the structure of its JSON data, with the first rows:" in answer.split("\n")[0]
    _check_jobs(answer, "\n3,000 items, 5 fields; json_memory queries them, e.g. ")
    memory.process_output(
        "jobs", "call", JsonArtifact({"queue": "nightly", "jobs": JOBS}, name="doc")
    )
    nested = _summarize(memory, "doc", "")
    assert '\n    "queue": str\n    "jobs": array[3,000] of object (5 keys)\n' in nested
    _check_jobs(nested, '\n"jobs": 3,000 items, 5 fields; json_memory queries them, e.g. ')
    expression = json.loads(nested.split("e.g. ", 1)[1].split("\n")[0])
    assert memory.json_query("doc", expression) == 1500  # length(jobs[?status=='done'])


def test_text_lines_then_json(memory: TaskMemory) -> None:
    text = "Query executed in 1.2 s.\nshowing 3000 of 3000 rows\n" + json.dumps(JOBS, indent=2)
    answer = _summarize(memory, "query", text)
    assert "the structure of its JSON data" in answer.split("\n")[0]
    assert (
        "\nlines 1-2 are text, the JSON starts at line 3:\n1: Query executed in 1.2 s.\n" in answer
    )
    _check_jobs(answer, "\n3,000 items, 5 fields; ")


def test_data_that_does_not_fit_shrinks_to_the_budget(memory: TaskMemory) -> None:
    wide = [{f"field_{k}": f"value {i % (k + 2)}" for k in range(40)} for i in range(500)]
    answer = _summarize(memory, "wide", json.dumps(wide), bound=200)
    assert answer.startswith(HEADER.format("wide"))
    assert "\n500 items, 40 fields; " in answer and "more fields" in answer


# ------------------------------------------------------------- with a summarizer


async def test_a_given_summarizer_keeps_its_summary(memory: TaskMemory) -> None:
    text = (GALLERY / "loghub_HDFS.log").read_text(encoding="utf-8")
    memory.process_output("fetch", "call", TextArtifact(text, name="given"))
    spec = memory_tool_specs(memory, summarizer=ExtractiveSummarizer())[-1]
    assert spec.description.startswith("Summarize a tool output")
    summary = (await spec.acall(artifact_namespace="given")).text
    assert summary.startswith('Summary of artifact_namespace "given":\n')
    assert "Excerpt" not in summary
    default = memory_tool_specs(memory)[-1]
    assert "without a model (so not a summary)" in default.description
    assert (await default.acall(artifact_namespace="given")).text == default.run(
        artifact_namespace="given"
    )
    direct = await memory.asummarize("given")
    assert direct.value == memory.summarize("given").value
    assert direct.value.startswith(HEADER.format("given"))
