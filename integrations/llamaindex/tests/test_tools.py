"""offprompt_tool and TaskMemoryToolSpec with real LlamaIndex tools and a real TaskMemory."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.types import AsyncBaseTool, BaseTool
from llama_index.core.workflow import Context
from offprompt_llamaindex import OffpromptTool, TaskMemoryToolSpec, offprompt_tool
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of, tool_call
from pydantic import BaseModel

from offprompt.errors import ValidationError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import StoredReference
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES
from offprompt.vectors import QdrantVectorStore

BIG = "The quarterly numbers were fine. " * 600  # ~4k tokens


@pytest.fixture(scope="module")
def vectors() -> QdrantVectorStore:
    return QdrantVectorStore()  # embedded, in memory; shared to keep the file fast


@pytest.fixture
def memory(vectors: QdrantVectorStore) -> TaskMemory:
    return TaskMemory(vector_store=vectors, tenant=uuid.uuid4().hex)  # a tenant per test


def report(quarter: str) -> str:
    """Return the full report of a quarter."""
    return BIG + f"Quarter {quarter} closed."


def small(x: int) -> str:
    """Return a short string."""
    return f"value {x}"


def test_large_output_is_stored_and_replaced_by_the_reference(memory: TaskMemory) -> None:
    tool = offprompt_tool(report, memory, min_tokens=500)
    assert isinstance(tool, OffpromptTool) and isinstance(tool, FunctionTool)
    out = tool.call(quarter="Q3")
    ref = out.raw_output
    namespace = ref["artifact_namespace"]
    assert out.content.split("\n")[0] == (  # the sentence first, then the card
        f'Output of "report.call" was stored in memory with memory_name "TaskMemory" '
        f'and artifact_namespace "{namespace}".'
    )
    assert ref["memory_name"] == "TaskMemory" and ref["tool"] == "report"
    assert ref["bytes"] == len((BIG + "Quarter Q3 closed.").encode())
    assert out.raw_input["kwargs"] == {"quarter": "Q3"} and not out.is_error
    stored = memory.load_artifacts(namespace)
    assert stored.value[0].value == BIG + "Quarter Q3 closed."
    assert memory.namespace_metadata(namespace)["tool"] == "report"


def test_small_output_passes_through_unchanged(memory: TaskMemory) -> None:
    tool = offprompt_tool(small, memory, min_tokens=500)
    out = tool.call(x=3)
    assert out.content == "value 3" and out.raw_output == "value 3"
    assert memory.namespaces() == []


def test_sensitive_output_is_always_stored(memory: TaskMemory) -> None:
    tool = offprompt_tool(small, memory, min_tokens=10_000, sensitive=True)
    out = tool.call(x=42)
    assert "value 42" not in out.content
    assert out.raw_output["sensitive"] is True
    namespace = out.raw_output["artifact_namespace"]
    assert memory.namespace_metadata(namespace)["sensitive"] is True
    assert memory.load_artifacts(namespace).value[0].value == "value 42"


def test_default_threshold_comes_from_the_task_memory(vectors: QdrantVectorStore) -> None:
    memory = TaskMemory(min_tokens=5, vector_store=vectors, tenant=uuid.uuid4().hex)
    tool = offprompt_tool(small, memory)
    assert tool.min_tokens == 5
    assert tool.call(x=1).content == "value 1"  # 3 tokens
    assert "stored in memory" in offprompt_tool(report, memory).call(quarter="Q1").content


def test_keeps_name_description_and_schema(memory: TaskMemory) -> None:
    class Args(BaseModel):
        city: str
        days: int = 3

    def forecast(city: str, days: int = 3) -> str:
        return f"sunny in {city} for {days} days"

    original = FunctionTool.from_defaults(
        fn=forecast,
        name="weather",
        description="Weather forecast.",
        fn_schema=Args,
        return_direct=True,
    )
    tool = offprompt_tool(original, memory, min_tokens=0)  # every output: this one is tiny
    assert tool.metadata.name == "weather"
    assert tool.metadata.description == "Weather forecast."
    assert tool.metadata.fn_schema is Args and tool.metadata.return_direct
    assert tool.metadata.get_parameters_dict() == original.metadata.get_parameters_dict()
    assert "stored in memory" in tool.call(city="Oslo").content


async def test_async_function_and_acall(memory: TaskMemory) -> None:
    async def afetch(n: int) -> str:
        """Fetch n lines."""
        await asyncio.sleep(0)
        return "line\n" * n

    tool = offprompt_tool(afetch, memory, min_tokens=100)
    big = await tool.acall(n=1000)
    namespace = big.raw_output["artifact_namespace"]
    assert (await memory.aload_artifacts(namespace)).value[0].value == "line\n" * 1000
    assert (await tool.acall(n=2)).content == "line\nline\n"
    assert "stored in memory" in tool.call(n=1000).content  # sync path of an async fn


class LegacyTool(BaseTool):
    """A plain BaseTool with a single ``input``, as old LlamaIndex tools are."""

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="legacy", description="Echo a lot.")

    def __call__(self, input: Any) -> ToolOutput:
        text = str(input) * 500
        return ToolOutput(
            content=text, tool_name="legacy", raw_input={"input": input}, raw_output=text
        )


class CustomAsyncTool(AsyncBaseTool):
    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="custom", description="Custom async tool.")

    def call(self, input: Any) -> ToolOutput:
        return ToolOutput(content="sync " * 400, tool_name="custom", raw_input={}, raw_output=None)

    async def acall(self, input: Any) -> ToolOutput:
        return ToolOutput(content="async " * 400, tool_name="custom", raw_input={}, raw_output=None)


async def test_any_base_tool_and_async_base_tool(memory: TaskMemory) -> None:
    legacy = offprompt_tool(LegacyTool(), memory, min_tokens=100)
    out = legacy.call(input="abc ")
    assert legacy.metadata.name == "legacy" and "stored in memory" in out.content
    assert (
        memory.load_artifacts(out.raw_output["artifact_namespace"]).value[0].value == "abc " * 500
    )
    out = await legacy.acall(input="xyz ")
    assert (
        memory.load_artifacts(out.raw_output["artifact_namespace"]).value[0].value == "xyz " * 500
    )

    custom = offprompt_tool(CustomAsyncTool(), memory, min_tokens=100)
    sync_ns = custom.call("q").raw_output["artifact_namespace"]
    async_ns = (await custom.acall("q")).raw_output["artifact_namespace"]
    assert memory.load_artifacts(sync_ns).value[0].value == "sync " * 400
    assert memory.load_artifacts(async_ns).value[0].value == "async " * 400


def test_short_errors_surface_like_llamaindex_tools(memory: TaskMemory) -> None:
    def broken(x: int) -> str:
        """Always fails."""
        raise RuntimeError(f"backend down for {x}")

    tool = offprompt_tool(broken, memory, min_tokens=100)
    with pytest.raises(RuntimeError, match="backend down for 1"):
        tool.call(x=1)
    out = offprompt_tool(ErrorTool(), memory, min_tokens=100).call("x")
    assert out.is_error and out.content == "bad request"
    assert memory.namespaces() == []


class ErrorTool(AsyncBaseTool):
    def __init__(self, text: str = "bad request") -> None:
        self.text = text

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="err", description="Reports an error output.")

    def call(self, input: Any) -> ToolOutput:
        return ToolOutput(
            content=self.text, tool_name="err", raw_input={}, raw_output=None, is_error=True
        )

    async def acall(self, input: Any) -> ToolOutput:
        return self.call(input)


HUGE_ERROR = "upstream rejected the batch: 500\n" + "".join(
    f"  row {i}: constraint violated on key k-{i}\n" for i in range(20_000)
)


async def test_large_or_sensitive_errors_go_off_prompt(memory: TaskMemory) -> None:
    def broken(x: int) -> str:
        """Always fails, at length."""
        raise RuntimeError(HUGE_ERROR)

    tool = offprompt_tool(broken, memory, min_tokens=200)
    for out in (
        tool.call(x=1),
        await tool.acall(x=1),
        offprompt_tool(ErrorTool(HUGE_ERROR), memory, min_tokens=200).call("x"),
    ):
        assert out.is_error and "row 1:" not in out.content
        reference = StoredReference.from_artifact(out.raw_output)
        assert reference is not None and reference.is_error and reference.lines == 20_001
        assert '"upstream rejected the batch: 500"' in out.content.split("\n")[0]
        assert memory.load_artifacts(reference.namespace).value[0].value == HUGE_ERROR
        assert memory.tokenizer.count(out.content) <= 400
    secret = offprompt_tool(ErrorTool(), memory, min_tokens=10_000, sensitive=True).call("x")
    assert secret.is_error and secret.raw_output["sensitive"] is True
    assert memory.load_artifacts(secret.raw_output["artifact_namespace"]).value[0].value == (
        "bad request"
    )


async def test_agent_reports_a_failing_wrapped_tool_as_an_error_result(memory: TaskMemory) -> None:
    def broken(x: int) -> str:
        """Always fails."""
        raise RuntimeError("backend down")

    llm = ScriptedFunctionLLM(script=[tool_call("broken", "c1", x=1), "It failed."])
    agent = FunctionAgent(tools=[offprompt_tool(broken, memory)], llm=llm)
    assert str(await agent.run("go")) == "It failed."
    tool_message = llm.calls[1][-1]
    assert tool_message.role.value == "tool" and "backend down" in (tool_message.content or "")


async def test_context_is_injected_through_the_wrapper(memory: TaskMemory) -> None:
    async def remember(ctx: Context, key: str) -> str:
        """Store a key in the workflow state and return a long text."""
        await ctx.store.set("seen", key)
        return f"{key} " * 2000

    # LlamaIndex spots the Context parameter by comparing the annotation object, which
    # `from __future__ import annotations` turns into a string: restore the class.
    remember.__annotations__["ctx"] = Context
    tool = offprompt_tool(remember, memory, min_tokens=100)
    assert tool.requires_context and tool.ctx_param_name == "ctx"
    llm = ScriptedFunctionLLM(script=[tool_call("remember", "c1", key="k9"), "done"])
    agent = FunctionAgent(tools=[tool], llm=llm)
    handler = agent.run("go")
    await handler
    assert await handler.ctx.store.get("seen") == "k9"
    assert "stored in memory" in (llm.calls[1][-1].content or "")


def test_small_non_text_blocks_pass_through(memory: TaskMemory, png: Any) -> None:
    def picture() -> list[Any]:
        """Return a caption and an image."""
        return [TextBlock(text="caption " * 600), ImageBlock(image=png())]

    # The image goes by its pixels: 3x2 costs 255 tokens, under min_tokens, so it passes.
    out = offprompt_tool(picture, memory, min_tokens=300).call()
    assert isinstance(out.blocks[0], TextBlock) and "stored in memory" in out.blocks[0].text
    assert isinstance(out.blocks[1], ImageBlock)


def test_bad_arguments(memory: TaskMemory) -> None:
    with pytest.raises(ValidationError, match="TaskMemory"):
        offprompt_tool(small, object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="min_tokens"):
        offprompt_tool(small, memory, min_tokens=-1)
    with pytest.raises(ValidationError, match="callable"):
        offprompt_tool("not a tool", memory)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="already"):
        offprompt_tool(offprompt_tool(small, memory), memory)


def test_storage_failure_never_leaks_the_output(memory: TaskMemory) -> None:
    # The same namespace used for a blob makes the text store fail (StorageMismatchError).
    from offprompt.artifacts import BlobArtifact

    tool = offprompt_tool(report, memory, min_tokens=10, sensitive=True)
    tool.policy.namespace_for = lambda *a, **k: "taken"  # type: ignore[method-assign]
    memory.store_artifact("taken", BlobArtifact(value=b"\x00\x01", name="taken"))
    out = tool.call(quarter="Q9")
    assert out.is_error and "could not store" in out.content
    assert "quarterly" not in out.content and "quarterly" not in str(out.raw_output)


# -- the tool spec ------------------------------------------------------------------------


@pytest.fixture
def stored(memory: TaskMemory) -> str:
    text = "".join(f"Section {i}: item {i} costs {i * 3} euros.\n" for i in range(2000))
    text += "The vault combination is 12-34-56.\n"
    out = offprompt_tool(lambda: text, memory, min_tokens=10).call()
    return str(out.raw_output["artifact_namespace"])


def test_tool_spec_lists_the_core_tools(memory: TaskMemory) -> None:
    spec = TaskMemoryToolSpec(memory)
    assert isinstance(spec, BaseToolSpec)
    tools = spec.to_tool_list()
    assert tuple(t.metadata.name for t in tools) == MEMORY_TOOL_NAMES
    schema = tools[0].metadata.get_parameters_dict()
    assert schema["required"] == ["artifact_namespace", "query"]
    assert "artifact_namespace" in (tools[0].metadata.description or "")


def test_query_read_summarize_are_bounded(memory: TaskMemory, stored: str) -> None:
    spec = TaskMemoryToolSpec(memory, max_output_tokens=300)
    tokenizer = memory.tokenizer
    hits = spec.query_memory(artifact_namespace=stored, query="vault combination", top_n=20)
    assert "12-34-56" in hits and tokenizer.count(hits) <= 300
    page = spec.read_memory(artifact_namespace=stored, page=1)
    assert page.startswith("Page 1 of ") and "Section 0:" in page
    assert tokenizer.count(page) <= 300
    summary = spec.summarize_memory(artifact_namespace=stored)
    assert summary and tokenizer.count(summary) <= 300


async def test_async_tools(memory: TaskMemory, stored: str) -> None:
    tools = {t.metadata.name: t for t in TaskMemoryToolSpec(memory).to_tool_list()}
    out = await tools["query_memory"].acall(artifact_namespace=stored, query="vault combination")
    assert "12-34-56" in out.content and not out.is_error
    page2 = await tools["read_memory"].acall(artifact_namespace=stored, page=2)
    assert page2.content.startswith("Page 2 of ")
    assert (await tools["summarize_memory"].acall(artifact_namespace=stored)).content


async def test_unknown_namespace_is_a_clear_error_naming_no_other(
    memory: TaskMemory, stored: str
) -> None:
    spec = TaskMemoryToolSpec(memory)
    tools = {t.metadata.name: t for t in spec.to_tool_list()}
    out = tools["query_memory"].call(artifact_namespace="nope", query="x")
    assert out.is_error and 'Unknown artifact_namespace "nope"' in out.content
    assert stored not in out.content  # another conversation's namespace is never listed
    assert 'Unknown artifact_namespace "nope"' in await spec.aread_memory(artifact_namespace="nope")
    past_end = tools["read_memory"].call(artifact_namespace=stored, page=10_000)
    assert past_end.is_error and "page" in past_end.content
    assert "top_n" in spec.query_memory(artifact_namespace=stored, query="x", top_n=0)
    # Through an agent the model gets the message as an error result, not a crash.
    llm = ScriptedFunctionLLM(
        script=[tool_call("read_memory", "c1", artifact_namespace="nope"), "ok"]
    )
    agent = FunctionAgent(tools=spec.to_tool_list(), llm=llm)
    await agent.run("go")
    seen = text_of(llm.calls[1][-1:])
    assert 'Unknown artifact_namespace "nope"' in seen and stored not in seen


def test_tool_spec_bad_arguments(memory: TaskMemory) -> None:
    with pytest.raises(ValidationError):
        TaskMemoryToolSpec(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_output_tokens"):
        TaskMemoryToolSpec(memory, max_output_tokens=0)


def test_large_documents_are_blobs_and_url_images_pass_through(memory: TaskMemory) -> None:
    from llama_index.core.base.llms.types import DocumentBlock

    from offprompt.artifacts import BlobArtifact
    from offprompt.task_memory.offload import StoredReference

    pdf = b"%PDF-1.7\n" + bytes(range(256)) * 40

    def attachments() -> list[Any]:
        """Return a document and a linked image."""
        return [
            DocumentBlock(data=pdf, document_mimetype="application/pdf"),
            ImageBlock(url="https://example.invalid/chart.png"),
        ]

    out = offprompt_tool(attachments, memory, min_tokens=100).call()
    first, second = out.blocks
    assert isinstance(first, TextBlock) and first.text.endswith(
        "application/pdf: kept in the blob store, not shown here."
    )
    assert isinstance(second, ImageBlock) and second.url is not None  # never downloaded
    reference = StoredReference.from_artifact(out.raw_output)
    assert reference is not None and reference.bytes == len(pdf)
    (stored,) = memory.load_artifacts(reference.namespace).value
    assert isinstance(stored, BlobArtifact) and bytes(stored.value) == pdf
