"""One offload policy and one set of memory tools, seen through LangChain and LlamaIndex.

* The same tool wrapped by ``offprompt_langchain.offprompt_tool`` and by
  ``offprompt_llamaindex.offprompt_tool`` gives the same reference text and the same
  ``StoredReference`` (outputs and errors).
* ``task_memory_tools()``, ``TaskMemoryToolSpec`` and ``OffpromptMiddleware`` expose the
  same five tools: names, argument names, descriptions and answers.
* A real ``create_agent`` run and a real ``FunctionAgent`` run, with a scripted model
  that reads the card and picks ``json_memory``, ``grep_memory`` or ``query_memory``
  from it, get the answers without the outputs ever reaching the model.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import offprompt_langchain
import offprompt_llamaindex
import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException
from langchain_core.tools import tool as langchain_tool
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from offprompt_langchain import OffpromptMiddleware, task_memory_tools
from offprompt_langchain.testing import ScriptedChatModel
from offprompt_langchain.testing import tool_call as lc_tool_call
from offprompt_llamaindex import TaskMemoryToolSpec
from offprompt_llamaindex.testing import ScriptedFunctionLLM, text_of
from offprompt_llamaindex.testing import tool_call as li_tool_call

from offprompt.artifacts import BlobArtifact, ImageArtifact, TextArtifact
from offprompt.render.references import REFERENCE_PATTERN
from offprompt.task_memory import BlobArtifactStorage, InMemoryBlobStore, TaskMemory
from offprompt.task_memory.offload import OffloadPolicy, StoredReference
from offprompt.task_memory.tools import MEMORY_TOOL_NAMES

NEEDLE = "trace=0badc0de"
_LINES = [
    f"2026-11-30 03:{i // 60 % 60:02d}:{i % 60:02d} INFO GET /api/{i % 13} 200 trace={i * 7919:08x}\n"
    for i in range(6000)
]
_LINES[3100] = f"2026-11-30 03:51:40 {NEEDLE} ERROR upstream timeout after 30s\n"
LOGS = "".join(_LINES)
JOBS = json.dumps(
    {"jobs": [{"id": f"j{i}", "status": "failed" if i % 8 == 0 else "done"} for i in range(2000)]}
)
REPORT = (
    "".join(
        f"Paragraph {i}: the weekly metrics were within their usual range. " for i in range(900)
    )
    + "Root cause of the outage: a misconfigured load balancer dropped health checks. "
    + "".join(f"Appendix {i}: capacity figures for rack {i}. " for i in range(300))
)
QUESTIONS = {  # what the user wants from each tool's output
    "fetch_logs": NEEDLE,
    "list_jobs": "how many jobs failed",
    "fetch_report": "root cause of the outage",
}
ARGS = {
    "fetch_logs": {"night": "mon"},
    "list_jobs": {"queue": "q"},
    "fetch_report": {"week": "w48"},
}
ORDER = list(ARGS)
ANSWER_MARKS = ("upstream timeout", "250", "load balancer")


def fetch_logs(night: str) -> str:
    """Fetch the access log of one night."""
    return LOGS


def list_jobs(queue: str) -> str:
    """List every job of a queue as JSON."""
    return JOBS


def fetch_report(week: str) -> str:
    """Fetch the incident report of a week."""
    return REPORT


def choose(reference: str, question: str) -> tuple[str, dict[str, Any]]:
    """What the scripted model does with a reference: read the card, pick a memory tool."""
    found = REFERENCE_PATTERN.search(reference)
    assert found, f"no reference in {reference[:200]!r}"
    target = {"memory_name": found["memory"], "artifact_namespace": found["namespace"]}
    kind = re.search(r"kind: (\w+)", reference)
    assert kind, f"the card says no kind: {reference!r}"
    tools = re.search(r"tools: (.+)", reference)
    assert tools, f"the card names no tools: {reference!r}"
    if kind[1] in ("json", "ndjson") and "json_memory" in tools[1]:
        return "json_memory", {**target, "expression": "length(jobs[?status=='failed'])"}
    if re.fullmatch(r"[\w=.-]*\d[\w=.-]*", question):  # an id, a code: exact search
        return "grep_memory", {**target, "pattern": question}
    return "query_memory", {**target, "query": question, "top_n": 2}


# -- 1. one policy -----------------------------------------------------------------------


def _without_namespace(text: str, reference: StoredReference) -> tuple[str, dict[str, Any]]:
    return (
        text.replace(reference.namespace, "<ns>"),
        reference.model_copy(update={"namespace": "<ns>"}).to_artifact(),
    )


@pytest.mark.parametrize("fail", [False, True])
def test_same_tool_same_reference_in_both_frameworks(
    fail: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = TaskMemory(index="sync")
    # Random namespaces differ in token count, and the card fits what the sentence leaves
    # of the 300 tokens: give both calls namespaces of one shape to compare the texts.
    names = iter(["fetch_logs-ns-1", "fetch_logs-ns-2"])
    monkeypatch.setattr(OffloadPolicy, "namespace_for", staticmethod(lambda *a, **k: next(names)))

    def fetch_logs(night: str) -> str:
        """Fetch the access log of one night."""
        if fail:
            raise ToolException(LOGS)
        return LOGS

    lc = offprompt_langchain.offprompt_tool(
        langchain_tool(fetch_logs).model_copy(update={"handle_tool_error": True}),
        memory,
        min_tokens=500,
    )
    lc_message = lc.invoke(
        {"type": "tool_call", "id": "c1", "name": "fetch_logs", "args": {"night": "mon"}}
    )
    li = offprompt_llamaindex.offprompt_tool(fetch_logs, memory, min_tokens=500)
    li_output = li.call(night="mon")
    lc_ref = StoredReference.from_artifact(lc_message.artifact)
    li_ref = StoredReference.from_artifact(li_output.raw_output)
    assert lc_ref is not None and li_ref is not None and lc_ref.namespace != li_ref.namespace
    assert lc_ref.is_error is li_ref.is_error is fail
    assert (lc_message.status == "error") is li_output.is_error is fail
    assert _without_namespace(str(lc_message.content), lc_ref) == _without_namespace(
        li_output.content, li_ref
    )
    for ref in (lc_ref, li_ref):
        assert memory.load_artifacts(ref.namespace).value[0].value == LOGS


def test_the_same_memory_tools_in_every_adapter() -> None:
    memory = TaskMemory(index="sync")
    memory.process_output("fetch_logs", "call", TextArtifact(LOGS, name="logs-1"))
    langchain = task_memory_tools(memory)
    middleware = OffpromptMiddleware(memory).tools
    llamaindex = TaskMemoryToolSpec(memory).to_tool_list()
    assert [t.name for t in langchain] == [t.name for t in middleware] == list(MEMORY_TOOL_NAMES)
    assert [t.metadata.name for t in llamaindex] == list(MEMORY_TOOL_NAMES)
    for lc, mw, li in zip(langchain, middleware, llamaindex, strict=True):
        assert lc.description == mw.description == li.metadata.description
        li_props = li.metadata.get_parameters_dict()["properties"]
        assert list(lc.args) == list(mw.args) == list(li_props)
        for name, prop in lc.args.items():
            assert prop["description"] == li_props[name]["description"]
    calls: list[tuple[int, dict[str, Any]]] = [
        (1, {"artifact_namespace": "logs-1", "pattern": NEEDLE, "context": 1}),
        (2, {"artifact_namespace": "logs-1", "start_line": 10, "end_line": 12}),
        (3, {"artifact_namespace": "logs-1"}),  # not JSON: an error
        (1, {"artifact_namespace": "other-conversation", "pattern": "x"}),  # unknown
    ]
    for index, args in calls:
        lc_text = langchain[index].invoke(
            {"type": "tool_call", "id": "c", "name": langchain[index].name, "args": args}
        )
        li_out = llamaindex[index].call(**args)
        assert lc_text.content == li_out.content
        assert (lc_text.status == "error") is li_out.is_error


# -- 2. real agents that read the card ---------------------------------------------------


def _marks_found(text: str) -> list[str]:
    return [mark for mark in ANSWER_MARKS if mark in text]


def test_create_agent_reads_the_card_and_picks_its_tool() -> None:
    memory = TaskMemory()  # background indexing: query_memory waits for it
    answers: list[str] = []

    def step(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name in QUESTIONS:
            name, args = choose(str(last.content), QUESTIONS[last.name])
            return lc_tool_call(name, args)
        if isinstance(last, ToolMessage):
            answers.append(str(last.content))
        if len(answers) < len(ORDER):
            return lc_tool_call(ORDER[len(answers)], ARGS[ORDER[len(answers)]])
        return "Done: " + " | ".join(_marks_found("\n".join(answers)))

    model = ScriptedChatModel(script=[step] * 8)
    tools = [
        langchain_tool(fetch_logs),
        langchain_tool(list_jobs),
        langchain_tool(fetch_report),
    ]
    agent = create_agent(model, tools, middleware=[OffpromptMiddleware(memory, min_tokens=500)])
    state = agent.invoke({"messages": [HumanMessage("Investigate last night.")]})
    assert state["messages"][-1].content == "Done: upstream timeout | 250 | load balancer"
    called = [c["name"] for m in state["messages"] for c in getattr(m, "tool_calls", [])]
    assert called == [
        "fetch_logs", "grep_memory", "list_jobs", "json_memory", "fetch_report", "query_memory",
    ]  # fmt: skip
    for call in model.calls:  # no output ever reached the model, only references and answers
        assert all(len(str(m.content)) < 8_000 for m in call)
    assert memory.wait_indexed(timeout=60)


async def test_function_agent_reads_the_card_and_picks_its_tool() -> None:
    memory = TaskMemory()
    answers: list[str] = []
    pending: list[str] = []

    def step(messages: list[ChatMessage]) -> Any:
        last = messages[-1]
        if last.role.value == "tool" and pending:
            name, args = choose(last.content or "", QUESTIONS[pending.pop()])
            return li_tool_call(name, f"m{len(answers)}", **args)
        if last.role.value == "tool":
            answers.append(last.content or "")
        if len(answers) < len(ORDER):
            name = ORDER[len(answers)]
            pending.append(name)
            return li_tool_call(name, f"t{len(answers)}", **ARGS[name])
        return "Done: " + " | ".join(_marks_found("\n".join(answers)))

    llm = ScriptedFunctionLLM(script=[step] * 8)
    tools = [
        offprompt_llamaindex.offprompt_tool(fetch_logs, memory, min_tokens=500),
        offprompt_llamaindex.offprompt_tool(list_jobs, memory, min_tokens=500),
        offprompt_llamaindex.offprompt_tool(fetch_report, memory, min_tokens=500),
        *TaskMemoryToolSpec(memory).to_tool_list(),
    ]
    agent = FunctionAgent(tools=tools, llm=llm)
    result = await agent.run("Investigate last night.")
    assert str(result) == "Done: upstream timeout | 250 | load balancer"
    seen_tools = [
        b.tool_name for call in llm.calls for m in call for b in m.blocks if hasattr(b, "tool_name")
    ]
    assert [t for i, t in enumerate(seen_tools) if t not in seen_tools[:i]] == [
        "fetch_logs", "grep_memory", "list_jobs", "json_memory", "fetch_report", "query_memory",
    ]  # fmt: skip
    for call in llm.calls:
        assert len(text_of(call)) < 20_000 and LOGS[:2000] not in text_of(call)
    assert memory.wait_indexed(timeout=60)


# -- 3. the same arguments for the memory tools ------------------------------------------


async def test_tool_spec_takes_several_memories_and_summary_tokens_like_task_memory_tools() -> None:
    first, second = TaskMemory(name="first", index="sync"), TaskMemory(name="second", index="sync")
    first.process_output("fetch_logs", "call", TextArtifact(LOGS, name="logs-1"))
    second.process_output("fetch_report", "call", TextArtifact(REPORT, name="report-1"))
    langchain = task_memory_tools([first, second], summary_tokens=60)
    spec = TaskMemoryToolSpec([first, second], summary_tokens=60)
    assert spec.task_memories == [first, second]
    llamaindex = spec.to_tool_list()
    summary = {"memory_name": "second", "artifact_namespace": "report-1"}
    lc_summary = langchain[4].invoke(
        {"type": "tool_call", "id": "s", "name": "summarize_memory", "args": summary}
    )
    li_summary = llamaindex[4].call(**summary)
    assert not li_summary.is_error and lc_summary.content == li_summary.content
    default = TaskMemoryToolSpec([first, second]).to_tool_list()[4].call(**summary)
    assert memory_tokens(li_summary.content) <= 80 < memory_tokens(default.content)
    # A FunctionAgent reaches both memories through the one spec.
    llm = ScriptedFunctionLLM(
        script=[
            li_tool_call(
                "grep_memory",
                "g1",
                memory_name="first",
                artifact_namespace="logs-1",
                pattern=NEEDLE,
            ),
            li_tool_call("summarize_memory", "s1", **summary),
            "done",
        ]
    )
    await FunctionAgent(tools=llamaindex, llm=llm).run("Read both.")
    tool_answers = [m.content or "" for m in llm.calls[-1] if m.role.value == "tool"]
    assert "upstream timeout" in tool_answers[0]
    assert tool_answers[1] == li_summary.content


def memory_tokens(text: str) -> int:
    return TaskMemory().tokenizer.count(text)


# -- 4. images and failures: one rule in every adapter -------------------------------------


def _noise_png(side: int = 96) -> bytes:
    """A PNG that does not compress (noise), so it is large."""
    import io
    import random

    from PIL import Image

    pixels = random.Random(7).randbytes(side * side * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _noise_png()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
BLOB_LINE = "image/png, 96x96 pixels: kept in the blob store, not shown here."


def render_chart(metric: str) -> list[Any]:
    """Render the chart of a metric."""
    return [
        {"type": "text", "text": f"Chart of {metric}:"},
        {"type": "image", "base64": PNG_B64, "mime_type": "image/png"},
    ]


def li_render_chart(metric: str) -> list[Any]:
    """Render the chart of a metric."""
    return [TextBlock(text=f"Chart of {metric}:"), ImageBlock(image=PNG)]


def _stored_image(memory: TaskMemory, reference: StoredReference) -> bytes:
    (stored,) = memory.load_artifacts(reference.namespace).value
    assert isinstance(stored, ImageArtifact) and stored.mime_type == "image/png"
    return bytes(stored.value)


@pytest.mark.parametrize("wrap", ["offprompt_tool", "middleware"])
def test_create_agent_stores_a_tool_image_as_a_blob_not_as_text(wrap: str) -> None:
    memory = TaskMemory(index="sync")
    chart = langchain_tool(render_chart)
    model = ScriptedChatModel(script=[lc_tool_call("render_chart", {"metric": "p95"}), "ok"])
    if wrap == "offprompt_tool":
        agent = create_agent(
            model, [offprompt_langchain.offprompt_tool(chart, memory, min_tokens=200)]
        )
    else:
        agent = create_agent(
            model, [chart], middleware=[OffpromptMiddleware(memory, min_tokens=200)]
        )
    state = agent.invoke({"messages": [HumanMessage("Show p95.")]})
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert message.content[0] == {"type": "text", "text": "Chart of p95:"}  # small: inline
    (block,) = message.content[1:]
    assert block["type"] == "text" and block["text"].endswith(BLOB_LINE)
    reference = StoredReference.from_artifact(message.artifact)
    assert reference is not None and reference.kind == "image" and reference.bytes == len(PNG)
    assert _stored_image(memory, reference) == PNG
    assert all(PNG_B64[:200] not in str(m.content) for call in model.calls for m in call)


async def test_function_agent_stores_a_tool_image_as_a_blob_like_langchain() -> None:
    memory = TaskMemory(index="sync")
    tool = offprompt_llamaindex.offprompt_tool(
        FunctionTool.from_defaults(fn=li_render_chart, name="render_chart"), memory, min_tokens=200
    )
    llm = ScriptedFunctionLLM(script=[li_tool_call("render_chart", "c1", metric="p95"), "ok"])
    await FunctionAgent(tools=[tool], llm=llm).run("Show p95.")
    seen = llm.calls[-1][-1]
    assert seen.role.value == "tool" and BLOB_LINE in (seen.content or "")
    assert not any(isinstance(b, ImageBlock) for m in llm.calls[-1] for b in m.blocks)
    output = tool.call(metric="p95")
    assert [type(b) for b in output.blocks] == [TextBlock, TextBlock]
    assert output.blocks[0].text == "Chart of p95:"
    reference = StoredReference.from_artifact(output.raw_output)
    assert reference is not None and reference.kind == "image" and reference.bytes == len(PNG)
    assert _stored_image(memory, reference) == PNG
    # The same reference text as LangChain's (namespace aside).
    lc = offprompt_langchain.offprompt_tool(langchain_tool(render_chart), memory, min_tokens=200)
    lc_message = lc.invoke(lc_tool_call("render_chart", {"metric": "p95"}).tool_calls[0])
    lc_ref = StoredReference.from_artifact(lc_message.artifact)
    assert lc_ref is not None
    assert _without_namespace(lc_message.content[1]["text"], lc_ref) == _without_namespace(
        output.blocks[1].text, reference
    )


def test_a_failed_store_shows_the_same_failure_text_in_every_adapter() -> None:
    blobs_only = TaskMemory(storages={BlobArtifact: BlobArtifactStorage(InMemoryBlobStore())})
    expected = (
        "Error: the output of fetch_logs could not be stored off-prompt: "
        "no storage for TextArtifact"
    )
    lc = offprompt_langchain.offprompt_tool(langchain_tool(fetch_logs), blobs_only, min_tokens=0)
    lc_message = lc.invoke(lc_tool_call("fetch_logs", {"night": "mon"}).tool_calls[0])
    li_output = offprompt_llamaindex.offprompt_tool(fetch_logs, blobs_only, min_tokens=0).call(
        night="mon"
    )
    model = ScriptedChatModel(script=[lc_tool_call("fetch_logs", {"night": "mon"}), "ok"])
    agent = create_agent(
        model,
        [langchain_tool(fetch_logs)],
        middleware=[OffpromptMiddleware(blobs_only, min_tokens=0)],
    )
    state = agent.invoke({"messages": [HumanMessage("Logs?")]})
    (mw_message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert lc_message.status == mw_message.status == "error" and li_output.is_error
    assert lc_message.content.startswith(expected[:60])
    assert lc_message.content == mw_message.content == li_output.content
    assert LOGS[:100] not in lc_message.content


# -- 5. lone surrogates in a tool output: one rule ----------------------------------------

RAW_LOG = (b"boot ok\nsensor \xff\xfe garbage\n" * 400).decode("utf-8", "surrogateescape")
ESCAPED_LOG = RAW_LOG.replace("\udcff\udcfe", "\\udcff\\udcfe")


def read_raw_log(path: str) -> str:
    """Read a log file that is not valid UTF-8."""
    return RAW_LOG


def _stored_text(memory: TaskMemory, text: str) -> str:
    found = REFERENCE_PATTERN.search(text)
    assert found, text[:200]
    return str(memory.load_artifacts(found["namespace"]).value[0].value)


async def test_a_tool_output_with_lone_surrogates_is_stored_escaped_in_every_adapter() -> None:
    memory = TaskMemory(index="sync")
    seen: dict[str, str] = {}
    model = ScriptedChatModel(script=[lc_tool_call("read_raw_log", {"path": "/x"}), "ok"])
    tool = offprompt_langchain.offprompt_tool(langchain_tool(read_raw_log), memory, min_tokens=200)
    agent = create_agent(model, [tool])
    state = agent.invoke({"messages": [HumanMessage("Read it.")]})
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    seen["offprompt_tool"] = str(message.content)
    model = ScriptedChatModel(script=[lc_tool_call("read_raw_log", {"path": "/x"}), "ok"])
    agent = create_agent(
        model,
        [langchain_tool(read_raw_log)],
        middleware=[OffpromptMiddleware(memory, min_tokens=200, memory_tools=False)],
    )
    state = agent.invoke({"messages": [HumanMessage("Read it.")]})
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    seen["middleware"] = str(message.content)
    llm = ScriptedFunctionLLM(script=[li_tool_call("read_raw_log", "c1", path="/x"), "ok"])
    li_tool = offprompt_llamaindex.offprompt_tool(read_raw_log, memory, min_tokens=200)
    await FunctionAgent(tools=[li_tool], llm=llm).run("Read it.")
    seen["llamaindex"] = llm.calls[-1][-1].content or ""
    for where, text in seen.items():
        assert text.startswith('Output of "read_raw_log.call" was stored'), where
        assert _stored_text(memory, text) == ESCAPED_LOG, where
