"""offprompt_tool and task_memory_tools with real LangChain tools and a real TaskMemory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException, tool
from offprompt_langchain.tools import OffpromptTool, offprompt_tool, task_memory_tools
from pydantic import BaseModel, Field

from offprompt.artifacts import BlobArtifact, TextArtifact
from offprompt.errors import ValidationError
from offprompt.task_memory import BlobArtifactStorage, InMemoryBlobStore, TaskMemory
from offprompt.task_memory.offload import ACTIVITY, StoredReference
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES

BIG = "".join(
    f"line {i}: the quick brown fox jumps over node-{i % 97} — ünïcödé ✓\r\n" for i in range(3000)
)


def call(name: str, args: dict[str, Any], id: str = "call-1") -> dict[str, Any]:
    return {"type": "tool_call", "id": id, "name": name, "args": args}


@pytest.fixture(scope="module")
def memory() -> TaskMemory:
    return TaskMemory()


@tool
def report(size: int) -> str:
    """Return a report of `size` lines (0 means the big one)."""
    if size < 0:
        raise ToolException(f"size must be >= 0, got {size}")
    if size > 10_000:
        raise RuntimeError("boom")
    return BIG if size == 0 else "ok " * size


class SearchInput(BaseModel):
    query: str = Field(description="what to search")
    limit: int = Field(default=3, ge=1)


class SearchTool(BaseTool):
    name: str = "search"
    description: str = "Search the corpus."
    args_schema: type[BaseModel] = SearchInput
    return_direct: bool = True

    def _run(self, query: str, limit: int = 3) -> str:
        return f"{query}:{limit} " * 400


def stored_text(memory: TaskMemory, message: ToolMessage) -> str:
    loaded = memory.load_artifacts(message.artifact["artifact_namespace"])
    assert len(loaded.value) == 1
    return loaded.value[0].value


def test_large_output_is_stored_and_loads_back_byte_identical(memory: TaskMemory) -> None:
    wrapped = offprompt_tool(report, memory, min_tokens=200)
    message = wrapped.invoke(call("report", {"size": 0}))
    assert isinstance(message, ToolMessage)
    namespace = message.artifact["artifact_namespace"]
    # The reference sentence comes first, word for word (the card may follow).
    assert message.content.split("\n")[0] == memory.reference_text("report", ACTIVITY, namespace)
    assert message.status == "success" and message.name == "report"
    assert stored_text(memory, message) == BIG
    artifact = message.artifact
    assert artifact["offprompt"] == "stored" and artifact["memory_name"] == "TaskMemory"
    assert artifact["bytes"] == len(BIG.encode("utf-8"))
    assert artifact["tokens"] > 200 and artifact["tool"] == "report"
    assert artifact["lines"] == 3000 and artifact["activity"] == ACTIVITY == "call"
    assert artifact["is_error"] is False
    assert StoredReference.from_artifact(artifact).namespace == namespace
    assert len(json.dumps(artifact)) < 400  # small and serialisable


def test_small_output_passes_through_unchanged(memory: TaskMemory) -> None:
    before = set(memory.namespaces())
    message = offprompt_tool(report, memory, min_tokens=200).invoke(call("report", {"size": 3}))
    assert message.content == "ok ok ok "
    assert message.artifact == {"offprompt": "inline", "bytes": 9}
    assert set(memory.namespaces()) == before


def test_by_default_an_output_below_the_break_even_passes(memory: TaskMemory) -> None:
    # DEFAULT_MIN_TOKENS (1,200): card + one read cost more than ~700 tokens inline
    wrapped = offprompt_tool(report, memory)
    before = set(memory.namespaces())
    small = wrapped.invoke(call("report", {"size": 700}))
    assert 650 <= memory.tokenizer.count(small.content) < 1200
    assert small.content == "ok " * 700 and small.artifact["offprompt"] == "inline"
    assert set(memory.namespaces()) == before
    large = wrapped.invoke(call("report", {"size": 1500}))
    assert large.content.startswith("Output of ") and large.artifact["offprompt"] == "stored"


def test_sensitive_output_is_stored_however_small(memory: TaskMemory) -> None:
    wrapped = offprompt_tool(report, memory, min_tokens=10_000, sensitive=True)
    message = wrapped.invoke(call("report", {"size": 1}))
    assert message.content.startswith("Output of ") and '"ok' not in message.content
    assert message.artifact["sensitive"] is True
    assert stored_text(memory, message) == "ok "


def test_keeps_name_description_schema_and_return_direct(memory: TaskMemory) -> None:
    original = SearchTool()
    wrapped = offprompt_tool(original, memory)
    assert isinstance(wrapped, OffpromptTool) and isinstance(wrapped, BaseTool)
    assert (wrapped.name, wrapped.description) == (original.name, original.description)
    assert wrapped.args == original.args
    assert (
        wrapped.tool_call_schema.model_json_schema()
        == original.tool_call_schema.model_json_schema()
    )
    assert (
        wrapped.get_input_schema().model_json_schema()
        == original.get_input_schema().model_json_schema()
    )
    assert wrapped.return_direct is True
    assert wrapped.response_format == "content_and_artifact"
    message = wrapped.invoke(call("search", {"query": "fox"}))
    assert stored_text(memory, message) == "fox:3 " * 400


def test_plain_functions_sync_and_async(memory: TaskMemory) -> None:
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"{city} is sunny. " * 300

    async def alookup(city: str) -> str:
        """Weather of a city, async."""
        return f"{city} is rainy. " * 300

    sync_tool = offprompt_tool(lookup, memory, min_tokens=50)
    assert sync_tool.name == "lookup" and sync_tool.description == "Weather of a city."
    assert (
        stored_text(memory, sync_tool.invoke(call("lookup", {"city": "Oslo"})))
        == "Oslo is sunny. " * 300
    )
    described = offprompt_tool(lambda city: city, memory, description="Echo a city.")
    assert described.description == "Echo a city."
    async_tool = offprompt_tool(alookup, memory, min_tokens=50)
    assert async_tool.args == {"city": {"title": "City", "type": "string"}}


async def test_async_invoke_stores_and_passes_through(memory: TaskMemory) -> None:
    wrapped = offprompt_tool(report, memory, min_tokens=200)
    big = await wrapped.ainvoke(call("report", {"size": 0}))
    assert big.artifact["offprompt"] == "stored"
    assert (await memory.aload_artifacts(big.artifact["artifact_namespace"])).value[0].value == BIG
    small = await wrapped.ainvoke(call("report", {"size": 2}))
    assert small.content == "ok ok "


def test_string_input_tool(memory: TaskMemory) -> None:
    echo = Tool(name="echo", func=lambda text: text * 400, description="Repeat text.")
    wrapped = offprompt_tool(echo, memory, min_tokens=100)
    assert wrapped.args == echo.args
    reference = wrapped.invoke("héllo ")  # no tool call: the content only
    assert reference.startswith('Output of "echo.call" was stored')


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_small_errors_are_reported_like_the_tool_and_not_stored(
    memory: TaskMemory, mode: str
) -> None:
    handled = report.model_copy(update={"handle_tool_error": True, "handle_validation_error": True})
    # Since errors go through the offload policy, min_tokens decides for them too.
    wrapped = offprompt_tool(handled, memory, min_tokens=100)
    before = set(memory.namespaces())

    async def run(t: BaseTool, args: dict[str, Any]) -> Any:
        return (
            t.invoke(call("report", args))
            if mode == "sync"
            else await t.ainvoke(call("report", args))
        )

    for args in ({"size": -1}, {"size": "not a number"}):
        expected = await run(handled, args)
        got = await run(wrapped, args)
        assert got.status == expected.status == "error"
        assert got.content == expected.content
    assert (await run(wrapped, {"size": -1})).content == "size must be >= 0, got -1"
    assert set(memory.namespaces()) == before

    raising = offprompt_tool(report, memory, min_tokens=100)  # handle_tool_error=False: raises
    with pytest.raises(ToolException, match="size must be >= 0"):
        await run(raising, {"size": -1})
    with pytest.raises(RuntimeError, match="boom"):
        await run(wrapped, {"size": 20_000})
    assert set(memory.namespaces()) == before


HUGE_ERROR = "upstream rejected the batch: 500\n" + "".join(
    f"  row {i}: constraint violated on key k-{i}\n" for i in range(20_000)
)


@tool
def load_batch(kind: str) -> str:
    """Load a batch; it fails with a huge error message."""
    if kind == "tool":
        raise ToolException(HUGE_ERROR)
    if kind == "runtime":
        raise RuntimeError(HUGE_ERROR)
    raise ToolException("bad kind")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_large_errors_go_off_prompt(memory: TaskMemory, mode: str) -> None:
    handled = offprompt_tool(
        load_batch.model_copy(update={"handle_tool_error": True}), memory, min_tokens=200
    )

    async def run(t: BaseTool, args: dict[str, Any]) -> Any:
        message = call("load_batch", args)
        return t.invoke(message) if mode == "sync" else await t.ainvoke(message)

    for kind in ("tool", "runtime"):  # handled: an error message, whatever the exception
        message = await run(handled, {"kind": kind})
        assert message.status == "error" and message.artifact["is_error"] is True
    assert message.status == "error"
    reference = StoredReference.from_artifact(message.artifact)
    assert reference is not None and reference.is_error and reference.tool == "load_batch"
    assert stored_text(memory, message) == HUGE_ERROR  # the whole error, byte for byte
    first, size = message.content.split("\n")[:2]
    assert '"upstream rejected the batch: 500"' in first and "row 1:" not in message.content
    assert f"{len(HUGE_ERROR.encode()):,} bytes" in size and "20,001 lines" in size
    assert memory.reference_text("load_batch", ACTIVITY, reference.namespace) in message.content
    assert memory.tokenizer.count(message.content) <= 400

    # An error that is not handled is raised as the reference: whoever reports it
    # shows the model the reference, not 20,000 rows.
    raising = offprompt_tool(load_batch, memory, min_tokens=200)
    for kind in ("tool", "runtime"):
        with pytest.raises(ToolException) as raised:
            await run(raising, {"kind": kind})
        assert "row 1:" not in str(raised.value) and "stored in memory" in str(raised.value)

    # A small error of a sensitive tool is stored too.
    secret = offprompt_tool(
        load_batch.model_copy(update={"handle_tool_error": True}), memory, sensitive=True
    )
    small = await run(secret, {"kind": "other"})
    assert small.status == "error" and small.artifact["sensitive"] is True
    assert stored_text(memory, small) == "bad kind"


def test_storage_failure_is_a_tool_error_without_the_output() -> None:
    blobs_only = TaskMemory(storages={BlobArtifact: BlobArtifactStorage(InMemoryBlobStore())})
    handled = report.model_copy(update={"handle_tool_error": True})
    message = offprompt_tool(handled, blobs_only, min_tokens=0).invoke(call("report", {"size": 0}))
    assert message.status == "error"
    assert "could not be stored" in message.content
    assert "quick brown fox" not in message.content


def test_content_and_artifact_tool_keeps_its_artifact(memory: TaskMemory) -> None:
    def rows(n: int) -> tuple[str, dict[str, Any]]:
        """Rows as text, with the raw rows as artifact."""
        return "row " * n, {"rows": n}

    original = StructuredTool.from_function(rows, response_format="content_and_artifact")
    message = offprompt_tool(original, memory, min_tokens=100).invoke(call("rows", {"n": 500}))
    assert message.artifact["tool_artifact"] == {"rows": 500}
    assert stored_text(memory, message) == "row " * 500


def test_content_blocks_are_stored_as_text(memory: TaskMemory) -> None:
    def blocks() -> list[dict[str, Any]]:
        """Text blocks."""
        return [{"type": "text", "text": "a " * 400}, {"type": "text", "text": "b " * 400}]

    message = offprompt_tool(blocks, memory, min_tokens=100).invoke(call("blocks", {}))
    assert stored_text(memory, message) == "a " * 400 + "b " * 400


def test_bad_arguments_are_refused(memory: TaskMemory) -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ValidationError, match="docstring"):
        offprompt_tool(undocumented, memory)
    with pytest.raises(ValidationError, match="callable"):
        offprompt_tool(42, memory)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="TaskMemory"):
        offprompt_tool(report, object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="min_tokens"):
        offprompt_tool(report, memory, min_tokens=-1)
    with pytest.raises(ValidationError, match="already"):
        offprompt_tool(offprompt_tool(report, memory), memory)


# -- memory tools ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored(memory: TaskMemory) -> str:
    text = (
        "".join(f"Section {i}. Server node-{i} reported latency {i * 7} ms. " for i in range(2000))
        + "The vault code is AZURE-FALCON-42. "
        + "Trailing filler text. " * 500
    )
    memory.process_output("logs", "run", TextArtifact(value=text, name="logs-big"))
    return "logs-big"


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {t.name: t for t in tools}


def test_memory_tools_query_read_summarize(memory: TaskMemory, stored: str) -> None:
    tools = by_name(task_memory_tools(memory, max_output_tokens=400))
    assert tuple(tools) == MEMORY_TOOL_NAMES
    target = {"memory_name": "TaskMemory", "artifact_namespace": stored}
    found = tools["query_memory"].invoke({**target, "query": "vault code"})
    assert "AZURE-FALCON-42" in found
    page = tools["read_memory"].invoke({**target, "page": 1})
    assert page.startswith("Page 1 of ") and "Section 0." in page
    second = tools["read_memory"].invoke({**target, "page": 2})
    assert "Section 0." not in second
    summary = tools["summarize_memory"].invoke(target)
    assert summary.strip()
    for text in (found, page, summary):
        assert memory.tokenizer.count(text) <= 400 + 40  # the bound plus its notice


async def test_memory_tools_async(memory: TaskMemory, stored: str) -> None:
    tools = by_name(task_memory_tools(memory))
    target = {"memory_name": "TaskMemory", "artifact_namespace": stored}
    found = await tools["query_memory"].ainvoke({**target, "query": "vault code"})
    assert "AZURE-FALCON-42" in found
    page = await tools["read_memory"].ainvoke({**target, "page": 1})
    assert "Section 0." in page
    assert (await tools["summarize_memory"].ainvoke(target)).strip()


def test_memory_tools_explain_unknown_names(memory: TaskMemory, stored: str) -> None:
    tools = by_name(task_memory_tools(memory))
    wrong_memory = tools["query_memory"].invoke(
        call("query_memory", {"memory_name": "Other", "artifact_namespace": stored, "query": "x"})
    )
    assert wrong_memory.status == "error" and '"TaskMemory"' in wrong_memory.content
    wrong_ns = tools["read_memory"].invoke(
        call("read_memory", {"memory_name": "TaskMemory", "artifact_namespace": "nope", "page": 1})
    )
    assert wrong_ns.status == "error" and "Unknown artifact_namespace" in wrong_ns.content
    bad_ns = tools["summarize_memory"].invoke(
        call("summarize_memory", {"memory_name": "TaskMemory", "artifact_namespace": "../etc"})
    )
    assert bad_ns.status == "error"
    past_end = tools["read_memory"].invoke(
        call(
            "read_memory",
            {"memory_name": "TaskMemory", "artifact_namespace": stored, "page": 10_000},
        )
    )
    assert past_end.status == "error" and "page must be between 1 and" in past_end.content


def test_memory_tools_over_several_memories(memory: TaskMemory, stored: str) -> None:
    other = TaskMemory(name="Scratch")
    other.process_output(
        "notes", "run", TextArtifact(value="only in scratch: 🦊 fox", name="notes-1")
    )
    query = by_name(task_memory_tools([memory, other]))["query_memory"]
    assert "🦊" in query.invoke(
        {"memory_name": "Scratch", "artifact_namespace": "notes-1", "query": "fox"}
    )
    isolated = query.invoke(
        call(
            "query_memory",
            {"memory_name": "Scratch", "artifact_namespace": stored, "query": "vault"},
        )
    )
    assert isolated.status == "error"  # a namespace of one memory is not visible in another
    with pytest.raises(ValidationError, match="share a name"):
        task_memory_tools([memory, TaskMemory()])
    with pytest.raises(ValidationError, match="max_output_tokens"):
        task_memory_tools(memory, max_output_tokens=0)
    with pytest.raises(ValidationError, match="at least one"):
        task_memory_tools([])


def test_every_public_name_resolves() -> None:
    import offprompt_langchain

    for name in offprompt_langchain.__all__:
        assert getattr(offprompt_langchain, name) is not None, name
    with pytest.raises(AttributeError):
        offprompt_langchain.NoSuchThing  # noqa: B018
