"""The memory tools defined once in the core: answers, bounds, errors, isolation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from offprompt.artifacts import BlobArtifact, JsonArtifact, TextArtifact
from offprompt.errors import ValidationError
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import DEFAULT_PAGE_TOKENS, PAGE_HEADER_TOKENS
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES, MemoryToolSpec, memory_tool_specs
from offprompt.vectors import QdrantVectorStore

LOGS = "".join(
    f"2026-11-30 10:{i // 60 % 60:02d}:{i % 60:02d} INFO req={i} ok trace={i * 7919:08x}\n"
    for i in range(3000)
).replace("req=1234 ok", "req=1234 FAILED code=E-4711")
JOBS = {
    "items": [
        {"id": i, "status": "failed" if i % 9 == 0 else "ok", "owner": {"name": f"u{i}"}}
        for i in range(900)
    ],
    "next": None,
}
BOUND = 300


@pytest.fixture(scope="module")
def memory() -> TaskMemory:
    # Pages sized so that one page and its header fit in BOUND (the tools' bound).
    memory = TaskMemory(index="sync", page_tokens=BOUND - PAGE_HEADER_TOKENS)
    memory.process_output("logs", "call", TextArtifact(LOGS, name="logs-1"))
    memory.process_output("jobs", "call", JsonArtifact(JOBS, name="jobs-1"))
    memory.process_output("pic", "call", BlobArtifact(b"\x89PNG\x00\x01", name="blob-1"))
    return memory


@pytest.fixture(scope="module")
def tools(memory: TaskMemory) -> dict[str, MemoryToolSpec]:
    return {s.name: s for s in memory_tool_specs(memory, max_output_tokens=BOUND)}


def run(tools: dict[str, MemoryToolSpec], name: str, **arguments: Any) -> str:
    result = tools[name].call(**arguments)
    assert not result.is_error, result.text
    return result.text


def error(tools: dict[str, MemoryToolSpec], name: str, **arguments: Any) -> str:
    result = tools[name].call(**arguments)
    assert result.is_error and result.text.startswith("Error: "), result.text
    return result.text


def test_the_five_tools_and_their_schemas(tools: dict[str, MemoryToolSpec]) -> None:
    assert tuple(tools) == MEMORY_TOOL_NAMES
    for spec in tools.values():
        props = spec.parameters["properties"]
        assert list(props)[:2] == ["memory_name", "artifact_namespace"]
        assert spec.parameters["required"][0] == "artifact_namespace"
        assert all(p.get("description") for p in props.values())
        assert "artifact_namespace" in spec.description
    assert tools["grep_memory"].parameters["required"] == ["artifact_namespace", "pattern"]
    assert json.dumps(tools["json_memory"].parameters)  # a plain JSON schema


def test_grep_finds_exact_strings_with_line_numbers(tools: dict[str, MemoryToolSpec]) -> None:
    found = run(tools, "grep_memory", artifact_namespace="logs-1", pattern="E-4711", context=1)
    lines = found.split("\n")
    assert lines[0] == '1 matching line(s) for the string "E-4711" in artifact_namespace "logs-1":'
    assert lines[2:] == [
        f"1234- {LOGS.splitlines()[1233]}",
        f"1235: {LOGS.splitlines()[1234]}",
        f"1236- {LOGS.splitlines()[1235]}",
    ]
    # A literal pattern is not a regex; regex=true is.
    assert "No line" in run(tools, "grep_memory", artifact_namespace="logs-1", pattern="req=1.34")
    assert "req=1234" in run(
        tools, "grep_memory", artifact_namespace="logs-1", pattern=r"req=1.34 F", regex=True
    )
    many = run(tools, "grep_memory", artifact_namespace="logs-1", pattern="INFO", max_matches=5)
    assert many.startswith("3000 matching line(s)") and "the first 5 shown" in many
    case = run(
        tools, "grep_memory", artifact_namespace="logs-1", pattern="failed", ignore_case=True
    )
    assert "1235:" in case


def test_read_pages_and_line_ranges(tools: dict[str, MemoryToolSpec]) -> None:
    page = run(tools, "read_memory", artifact_namespace="logs-1")
    assert page.startswith("Page 1 of ") and LOGS.splitlines()[0] in page
    lines = run(tools, "read_memory", artifact_namespace="logs-1", start_line=1234, end_line=1236)
    assert lines.split("\n") == [
        'Lines 1234-1236 of 3000 of artifact_namespace "logs-1":',
        *(f"{n}: {LOGS.splitlines()[n - 1]}" for n in (1234, 1235, 1236)),
    ]
    assert "Lines 3000-3000 of 3000" in run(
        tools, "read_memory", artifact_namespace="logs-1", start_line=3000
    )


def _card_pages(card: str) -> tuple[int, int]:
    found = re.search(r"\| (~?[\d,.]+[kM]?) pages of ([\d,]+) tokens", card)
    assert found is not None, card
    assert not found.group(1).startswith("~"), "exact counts expected here"
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


@pytest.mark.parametrize("lines", [700, 30_000])  # exact at once; exact once indexed
def test_a_page_number_from_the_card_reads_that_page(lines: int) -> None:
    text = "".join(
        f"line {i} of the report: node-{i % 97} answered {i * 13} ms\n" for i in range(lines)
    )
    cut = text.index(f"line {lines * 9 // 10} ")
    text = text[:cut] + "CRIT vault-9 rejected K-77421\n" + text[cut:]
    with TaskMemory() as memory:  # the defaults: one page unit for card and read_memory
        reference = memory.process_output("r", "call", TextArtifact(text, name="rep"))
        card = reference.value  # what the model sees
        if lines > 1000:
            assert "pages" in reference.value and "~" in reference.value  # an estimate first
            assert memory.wait_indexed("rep", timeout=120)
            card = memory.describe("rep")  # exact once indexed
        pages, page_tokens = _card_pages(card)
        assert page_tokens == memory.page_tokens == DEFAULT_PAGE_TOKENS
        read = {s.name: s for s in memory_tool_specs(memory)}["read_memory"]
        joined = []
        for page in range(1, pages + 1):
            answer = read.call(artifact_namespace="rep", page=page)
            assert not answer.is_error and answer.text.startswith(f"Page {page} of {pages} ")
            assert "[... cut" not in answer.text  # a whole page fits the default bound
            joined.append(answer.text.split(":\n", 1)[1])
        assert "".join(joined) == text  # the card's pages are exactly read_memory's
        past = read.call(artifact_namespace="rep", page=pages + 1)
        assert past.is_error and f"between 1 and {pages}" in past.text
        # query_memory's "(page N)" is that page too: the passage starts on page N.
        query = {s.name: s for s in memory_tool_specs(memory)}["query_memory"]
        found = query.call(artifact_namespace="rep", query="vault-9 rejected K-77421", top_n=1)
        header, passage = found.text.split("\n\n", 1)[1].split("\n", 1)
        page = int(re.fullmatch(r"\[1\] \(page (\d+)\)", header).group(1))  # type: ignore[union-attr]
        here, after = joined[page - 1], "".join(joined[page : page + 2])
        assert "K-77421" in passage and 0 <= (here + after).find(passage[:80]) < len(here)


def test_the_page_of_a_passage_in_non_ascii_text_is_where_it_starts() -> None:
    # Non-ASCII text: the page is estimated, not looked up. Long lines leave chunks
    # (which end at line ends) far from full, so counting chunk_tokens per chunk
    # placed this passage pages too late.
    line = "réponse du nœud {i} après {j} ms, état vérifié, file d'attente {k} " * 12
    text = "".join(line.format(i=i, j=i * 7, k=i % 13).rstrip() + "\n" for i in range(400))
    cut = text.index("réponse du nœud 350 ")
    text = text[:cut] + "CRIT vault-9 rejected K-77421\n" + text[cut:]
    with TaskMemory(index="sync") as memory:
        memory.process_output("r", "call", TextArtifact(text, name="rep"))
        hit = memory.query("rep", "vault-9 rejected K-77421", top_n=1, mode="sparse").value[0]
        assert "K-77421" in hit.value
        read = {s.name: s for s in memory_tool_specs(memory)}["read_memory"]
        page = read.call(artifact_namespace="rep", page=hit.meta["page"])
        before = read.call(artifact_namespace="rep", page=hit.meta["page"] - 1)
        # the passage starts on that page or just before it (an estimate)
        starts = hit.value[:60]
        assert starts in page.text.split(":\n", 1)[1] or starts in before.text


def test_query_header_counts_the_passages_delivered(memory: TaskMemory) -> None:
    found = memory.query("logs-1", "FAILED E-4711", top_n=5).value
    assert len(found) == 5
    two = sum(
        memory.tokenizer.count(f"[{i}] (page 0)\n{h.to_text()}") for i, h in enumerate(found[:2])
    )
    bound = two + 80  # room for the header and two whole passages, not three
    assert bound < two + memory.tokenizer.count(found[2].to_text())
    query = {s.name: s for s in memory_tool_specs(memory, max_output_tokens=bound)}["query_memory"]
    answer = query.run(artifact_namespace="logs-1", query="FAILED E-4711", top_n=5)
    assert answer.startswith('2 of 5 passages from artifact_namespace "logs-1"')
    assert "(the rest past the answer budget)" in answer.split("\n", 1)[0]
    assert "\n\n[2] (page " in answer and "\n\n[3] " not in answer
    assert "[... cut" not in answer and answer.endswith(found[1].to_text())
    assert memory.tokenizer.count(answer) <= bound
    # all five fit a large bound: all five counted, no note
    roomy = {s.name: s for s in memory_tool_specs(memory, max_output_tokens=20_000)}
    everything = roomy["query_memory"].run(
        artifact_namespace="logs-1", query="FAILED E-4711", top_n=5
    )
    assert everything.startswith('5 passage(s) from artifact_namespace "logs-1"')
    assert "\n\n[5] (page " in everything and "budget" not in everything.split("\n", 1)[0]


def test_json_outline_and_query(tools: dict[str, MemoryToolSpec]) -> None:
    outline = run(tools, "json_memory", artifact_namespace="jobs-1")
    assert outline.startswith('JSON outline of artifact_namespace "jobs-1":')
    assert '"items": array[900]' in outline
    count = run(
        tools,
        "json_memory",
        artifact_namespace="jobs-1",
        expression="length(items[?status=='failed'])",
    )
    assert count.split("\n")[1] == "100"
    assert run(
        tools, "json_memory", artifact_namespace="jobs-1", expression="items[5].owner.name"
    ).endswith('\n"u5"')


def test_query_and_summarize(tools: dict[str, MemoryToolSpec], memory: TaskMemory) -> None:
    hits = run(tools, "query_memory", artifact_namespace="logs-1", query="FAILED E-4711", top_n=2)
    best = memory.query("logs-1", "FAILED E-4711", top_n=2).value[0]
    # the answer is cut to BOUND tokens, less than a passage: it names the best
    # passage's page and starts with its text, and its header counts that one passage
    assert hits.startswith(
        '1 of 2 passages from artifact_namespace "logs-1" (memory_name "TaskMemory") '
        "(the rest past the answer budget), best first:"
    )
    assert "req=1234 FAILED" in best.value
    assert f"[1] (page {best.meta['page']})\n{best.value[:200]}" in hits
    # no summarizer given: an excerpt that says so, with the one failed request, numbered
    summary = run(tools, "summarize_memory", artifact_namespace="logs-1")
    assert summary.startswith('Excerpt of artifact_namespace "logs-1" (no model was given')
    assert f"\n1235: {LOGS.splitlines()[1234]}\n" in summary
    assert memory.tokenizer.count(summary) <= BOUND
    # a summarizer given: its summary, as before
    from offprompt.summarizers import ExtractiveSummarizer

    extractive = memory_tool_specs(
        memory, summarizer=ExtractiveSummarizer(), max_output_tokens=BOUND
    )
    summary = extractive[-1].call(artifact_namespace="logs-1").text
    assert summary.startswith('Summary of artifact_namespace "logs-1":\n') and len(summary) > 60


def test_every_answer_and_error_is_bounded(
    tools: dict[str, MemoryToolSpec], memory: TaskMemory
) -> None:
    huge = "x" * 200_000
    calls: list[tuple[str, dict[str, Any]]] = [
        ("grep_memory", {"artifact_namespace": "logs-1", "pattern": "INFO", "max_matches": 200}),
        ("grep_memory", {"artifact_namespace": "logs-1", "pattern": huge}),
        ("grep_memory", {"artifact_namespace": huge, "pattern": "x"}),
        ("read_memory", {"artifact_namespace": "logs-1", "start_line": 1, "end_line": 3000}),
        ("read_memory", {"artifact_namespace": "logs-1", "page": 2}),
        ("json_memory", {"artifact_namespace": "jobs-1", "expression": "items"}),
        ("json_memory", {"artifact_namespace": "jobs-1", "expression": huge}),
        ("query_memory", {"artifact_namespace": "logs-1", "query": huge, "top_n": 20}),
        ("summarize_memory", {"artifact_namespace": "logs-1", "extra": huge}),
    ]
    for name, arguments in calls:
        text = tools[name].run(**arguments)
        assert memory.tokenizer.count(text) <= BOUND, (name, text[:200])
    cut = tools["read_memory"].run(artifact_namespace="logs-1", start_line=1, end_line=3000)
    assert cut.endswith("; read fewer lines at a time]")


def test_mistakes_are_short_errors(tools: dict[str, MemoryToolSpec]) -> None:
    assert "invalid regex" in error(
        tools, "grep_memory", artifact_namespace="logs-1", pattern="(?<=a)b", regex=True
    )
    catastrophic = tools["grep_memory"].call(
        artifact_namespace="logs-1", pattern="(x+x+)+y", regex=True
    )
    assert catastrophic.text.startswith("No line")  # RE2: linear time, no hang
    assert "JMESPath" in error(
        tools, "json_memory", artifact_namespace="jobs-1", expression="items[?"
    )
    assert "not JSON" in error(tools, "json_memory", artifact_namespace="logs-1")
    assert "page" in error(tools, "read_memory", artifact_namespace="logs-1", page=10_000)
    assert "start" in error(tools, "read_memory", artifact_namespace="logs-1", start_line=5000)
    assert "not both" in error(
        tools, "read_memory", artifact_namespace="logs-1", page=1, start_line=2
    )
    assert "end_line" in error(
        tools, "read_memory", artifact_namespace="logs-1", start_line=9, end_line=3
    )
    assert "context" in error(
        tools, "grep_memory", artifact_namespace="logs-1", pattern="a", context=99
    )
    assert "top_n" in error(tools, "query_memory", artifact_namespace="logs-1", query="a", top_n=0)
    bad = error(tools, "grep_memory", artifact_namespace="logs-1")
    assert bad == "Error: bad arguments for grep_memory: pattern: Field required"
    assert "Extra inputs" in error(tools, "read_memory", artifact_namespace="logs-1", bogus=1)
    assert error(tools, "grep_memory", artifact_namespace="blob-1", pattern="PNG")


def test_unknown_namespace_names_no_other(tools: dict[str, MemoryToolSpec]) -> None:
    for name in MEMORY_TOOL_NAMES:
        args = {"query": "q", "pattern": "p"} if name in ("query_memory", "grep_memory") else {}
        args = {k: v for k, v in args.items() if k in tools[name].parameters["properties"]}
        text = error(tools, name, artifact_namespace="nope", **args)
        assert text == (
            'Error: Unknown artifact_namespace "nope" in memory "TaskMemory". Use the '
            "artifact_namespace quoted in the reference, exactly."
        )
    assert "Unknown artifact_namespace" in error(tools, "read_memory", artifact_namespace="../etc")
    assert "Unknown memory_name" in error(
        tools, "read_memory", memory_name="Other", artifact_namespace="logs-1"
    )


def test_a_tool_reaches_only_its_memory_and_scope() -> None:
    shared = QdrantVectorStore()
    alice = TaskMemory(vector_store=shared, scope=Scope(tenant="t1", user="alice"), index="sync")
    bob = TaskMemory(vector_store=shared, scope=Scope(tenant="t1", user="bob"), index="sync")
    other_tenant = TaskMemory(vector_store=shared, tenant="t2", index="sync")
    alice.process_output("notes", "call", TextArtifact("alice's secret: 42", name="notes-a"))
    for stranger in (bob, other_tenant):
        grep = memory_tool_specs(stranger)[1]
        result = grep.call(artifact_namespace="notes-a", pattern="secret")
        assert (
            result.is_error
            and "42" not in result.text
            and "Unknown artifact_namespace" in result.text
        )
    own = memory_tool_specs(alice)[1].call(artifact_namespace="notes-a", pattern="secret")
    assert not own.is_error and "42" in own.text


def test_several_memories_told_apart_by_name(memory: TaskMemory) -> None:
    scratch = TaskMemory(name="Scratch", index="sync")
    scratch.process_output("n", "call", TextArtifact("only in scratch: 🦊", name="n-1"))
    grep = memory_tool_specs([memory, scratch])[1]
    assert "🦊" in grep.run(memory_name="Scratch", artifact_namespace="n-1", pattern="🦊")
    assert "memory_name is required" in grep.run(artifact_namespace="n-1", pattern="x")
    assert grep.call(memory_name="Scratch", artifact_namespace="logs-1", pattern="x").is_error
    with pytest.raises(ValidationError, match="share a name"):
        memory_tool_specs([memory, TaskMemory()])
    with pytest.raises(ValidationError, match="at least one"):
        memory_tool_specs([])
    with pytest.raises(ValidationError, match="max_output_tokens"):
        memory_tool_specs(memory, max_output_tokens=2)
    with pytest.raises(ValidationError, match="TaskMemory"):
        memory_tool_specs([object()])  # type: ignore[list-item]


class FailingSummarizer:
    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        raise RuntimeError("LLM said: " + "no " * 20_000)

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        return self.summarize_text(text)


class RamblingSummarizer:
    def summarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        return "blah " * 20_000  # ignores its budget

    async def asummarize_text(self, text: str, *, max_tokens: int | None = None) -> str:
        return self.summarize_text(text)


async def test_a_failing_or_rambling_summarizer_stays_bounded(memory: TaskMemory) -> None:
    failing = memory_tool_specs(memory, summarizer=FailingSummarizer(), max_output_tokens=200)[-1]
    for result in (
        failing.call(artifact_namespace="logs-1"),
        await failing.acall(artifact_namespace="logs-1"),
    ):
        assert result.is_error and result.text.startswith(
            "Error: summarize_memory failed: RuntimeError"
        )
        assert memory.tokenizer.count(result.text) <= 200
    rambling = memory_tool_specs(memory, summarizer=RamblingSummarizer(), max_output_tokens=200)[-1]
    assert memory.tokenizer.count(await rambling.arun(artifact_namespace="logs-1")) <= 200


async def test_async_twins(tools: dict[str, MemoryToolSpec]) -> None:
    assert "1235:" in await tools["grep_memory"].arun(artifact_namespace="logs-1", pattern="E-4711")
    assert (await tools["json_memory"].acall(artifact_namespace="nope")).is_error
