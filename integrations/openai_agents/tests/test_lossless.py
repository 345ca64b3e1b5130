"""Items are stored losslessly: every kind the SDK writes comes back with the same JSON
bytes, from a SQLite file reopened by another session, from PostgreSQL, and through
offprompt ``Message`` s (which other frameworks read)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, SQLiteSession, function_tool
from offprompt_openai_agents import OffpromptSession
from offprompt_openai_agents.testing import ScriptedModel, function_call
from PIL import Image

from offprompt.artifacts import BlobArtifact, ImageArtifact, JsonArtifact, TextArtifact
from offprompt.errors import OffpromptError, ValidationError
from offprompt.interop.langchain import messages_from_langchain_dicts, messages_to_langchain_dicts
from offprompt.interop.openai_agents import (
    message_from_item,
    message_to_items,
    messages_from_items,
    messages_to_items,
)
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message, ToolCall
from offprompt.stores import InMemoryStore, PostgresStore


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (3, 2), (200, 10, 10)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


PNG = _png()
ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hi"},
    {"content": "", "role": "user"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "high"},
            {
                "type": "input_image",
                "image_url": "https://example.invalid/cat.png",
                "detail": "low",
            },
            {"type": "input_image", "file_id": "file-abc", "detail": "auto"},
            {
                "type": "input_file",
                "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                "filename": "a.pdf",
            },
            {"type": "input_image", "image_url": "data:image/png;base64,bm90IGFuIGltYWdl"},
        ],
        "type": "message",
    },
    {
        "id": "rs_1",
        "summary": [{"text": "**Thinking** about it", "type": "summary_text"}],
        "type": "reasoning",
        "encrypted_content": "gAAAAB...",
        "content": None,
        "status": None,
    },
    {"id": "rs_same_ts", "type": "reasoning"},
    {
        "id": "msg_1",
        "content": [
            {"annotations": [], "text": "A red square.", "type": "output_text", "logprobs": []}
        ],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    },
    {"id": "msg_same_ts", "type": "message", "role": "assistant", "content": []},
    {
        "arguments": '{"q":  "qdrant", "n": 1.0}',
        "call_id": "call_1",
        "name": "search",
        "type": "function_call",
        "id": "fc_1",
        "status": "completed",
    },
    {"call_id": "call_1", "output": "line 1\nline 2\n", "type": "function_call_output"},
    {"type": "function_call", "call_id": "call_2", "name": "odd", "arguments": "not json"},
    {
        "call_id": "call_2",
        "output": [
            {"type": "input_text", "text": "a chart:"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
        ],
        "type": "function_call_output",
    },
    {
        "type": "custom_tool_call",
        "call_id": "call_3",
        "name": "apply_patch",
        "input": "*** Begin Patch",
    },
    {"type": "custom_tool_call_output", "call_id": "call_3", "output": "done"},
    {
        "type": "computer_call_output",
        "call_id": "call_4",
        "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"},
    },
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    {"type": "item_reference", "id": "msg_0"},
    {"role": "assistant", "content": 'Ünïcödé 😊 and "quotes" and \\ backslashes'},
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "x"},
    },
    {"role": "user", "content": "n", "extra": {"nested": [1, True, None, 1.5]}},
]


def _dumps(items: list[Any]) -> list[str]:
    return [json.dumps(i) for i in items]


def test_every_kind_of_item_round_trips_through_a_message_and_its_json() -> None:
    messages = messages_from_items(ITEMS)
    assert len(messages) == len(ITEMS)
    stored = [Message.from_json(m.to_json()) for m in messages]
    assert _dumps(messages_to_items(stored)) == _dumps(ITEMS)


def test_the_neutral_view_is_what_other_frameworks_read() -> None:
    by_index = dict(enumerate(messages_from_items(ITEMS)))
    assert [by_index[i].role for i in (0, 1, 2)] == ["system", "system", "user"]
    picture = by_index[4]
    assert [type(p) for p in picture.content] == [
        TextArtifact,
        ImageArtifact,
        JsonArtifact,
        JsonArtifact,
        BlobArtifact,
        BlobArtifact,
    ]
    assert picture.content[1].value == base64.b64decode(PNG)
    assert picture.content[2].meta["image_url"] == "https://example.invalid/cat.png"
    assert picture.content[4].mime_type == "application/pdf"
    call = by_index[9]
    assert call.role == "assistant" and call.tool_calls == [
        ToolCall(id="call_1", name="search", arguments={"q": "qdrant", "n": 1.0})
    ]
    output = by_index[10]
    assert (
        output.role == "tool"
        and output.tool_call_id == "call_1"
        and output.text == "line 1\nline 2\n"
    )
    assert by_index[11].tool_calls == []  # arguments that are no JSON object stay in the item
    assert [type(p) for p in by_index[12].content] == [TextArtifact, ImageArtifact]
    assert by_index[13].tool_calls[0].arguments == {"input": "*** Begin Patch"}
    assert by_index[5].role == "assistant" and by_index[5].content == []  # reasoning
    # To LangChain and back to the SDK: text, calls and results survive; what LangChain
    # cannot carry is reported, not dropped silently.
    report = ConversionReport()
    langchain = messages_to_langchain_dicts([by_index[i] for i in (2, 9, 10)], report)
    assert [d["type"] for d in langchain] == ["human", "ai", "tool"]
    assert report.losses  # the SDK-only details are named
    back = messages_to_items(messages_from_langchain_dicts(langchain))
    assert back[0] == {"role": "user", "content": "hi"}
    assert back[1]["type"] == "function_call" and json.loads(back[1]["arguments"]) == {
        "q": "qdrant",
        "n": 1.0,
    }
    assert back[2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "line 1\nline 2\n",
    }


def test_messages_from_elsewhere_become_plain_items_and_losses_are_reported() -> None:
    image = ImageArtifact(value=base64.b64decode(PNG))
    report = ConversionReport()
    items = messages_to_items(
        [
            Message.system("Be brief."),
            Message.user(["Look:", image], name="alice"),
            Message.assistant(
                "Calling.", tool_calls=[ToolCall(id="c1", name="f", arguments={"x": 1})]
            ),
            Message.tool("done", tool_call_id="c1"),
        ],
        report,
    )
    assert items == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": image.to_data_url(), "detail": "auto"},
            ],
        },
        {"role": "assistant", "content": "Calling."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
    ]
    assert [str(loss) for loss in report.losses] == [
        "message 1: name not carried (an OpenAI Agents item has no author name)"
    ]


def test_bad_items_get_clear_errors() -> None:
    with pytest.raises(OffpromptError, match="must be a dict"):
        message_from_item(["not", "an", "item"])  # type: ignore[arg-type]
    with pytest.raises(OffpromptError, match="list of dicts"):
        messages_from_items({"role": "user"})  # type: ignore[arg-type]
    with pytest.raises(OffpromptError, match="lone surrogate"):
        message_from_item({"role": "user", "content": "x\ud800"})
    with pytest.raises(ValidationError, match="must be a Message"):
        message_to_items("hi")  # type: ignore[arg-type]


async def test_a_reopened_file_gives_back_every_item(db_path: Path) -> None:
    writer = OffpromptSession("kinds", path=db_path)
    await writer.add_items(ITEMS[:10])
    await writer.add_items(ITEMS[10:])
    writer.close()
    reader = OffpromptSession("kinds", path=db_path)
    try:
        assert _dumps(await reader.get_items()) == _dumps(ITEMS)
        assert _dumps(await reader.get_items(limit=3)) == _dumps(ITEMS[-3:])
        assert json.dumps(await reader.pop_item()) == json.dumps(ITEMS[-1])
    finally:
        reader.close()


async def test_on_postgresql_two_stores_share_one_session(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as a, PostgresStore(postgres_dsn) as b:
        await OffpromptSession("pg", store=a).add_items(ITEMS)
        reader = OffpromptSession("pg", store=b, session_settings={"limit": 4})
        assert _dumps(await reader.get_items(limit=None)) == _dumps(ITEMS[-4:])
        assert _dumps(await reader.get_stored_items(limit=len(ITEMS))) == _dumps(ITEMS)
        await reader.clear_session()
        assert await OffpromptSession("pg", store=a).get_items() == []


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_real_run_stores_what_sqlitesession_stores(tmp_path: Path, make_session) -> None:
    """The same scripted run into the SDK's SQLiteSession and into OffpromptSession
    leaves the same items (ids aside, which the scripted model makes fresh)."""
    sdk = SQLiteSession("run", tmp_path / "sdk.db")
    ours = make_session("run", store=InMemoryStore())
    for session in (sdk, ours):
        model = ScriptedModel([[function_call("add", {"a": 2, "b": 3}, call_id="call_add")], "5"])
        agent = Agent(name="calc", model=model, tools=[add])
        result = await Runner.run(agent, "2+3?", session=session)
        assert result.final_output == "5"
    theirs, mine = await sdk.get_items(), await ours.get_items()
    sdk.close()

    def without_ids(items: list[Any]) -> list[Any]:
        return [{k: v for k, v in i.items() if k != "id"} for i in items]

    assert without_ids(mine) == without_ids(theirs)
    assert [i.get("type", "message") for i in mine] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]


async def test_forgetting_a_tenant_deletes_only_its_items(db_path: Path) -> None:
    from agents import RunContextWrapper

    from offprompt.scope import Scope
    from offprompt.stores import SQLiteStore

    class Tenant:
        def __init__(self, name: str) -> None:
            self.name = name

    store = SQLiteStore(db_path)
    try:
        session = OffpromptSession("support", store=store, scope=lambda t: Scope(tenant=t.name))
        acme, globex = (RunContextWrapper(context=Tenant(n)) for n in ("acme", "globex"))
        await session.add_items([{"role": "user", "content": "acme secret"}], wrapper=acme)
        await session.add_items([{"role": "user", "content": "globex note"}], wrapper=globex)
        counts = store.forget_scope(Scope(tenant="acme"))
        assert counts.total >= 1
        assert await session.get_items(wrapper=acme) == []
        assert await session.get_items(wrapper=globex) == [
            {"role": "user", "content": "globex note"}
        ]
    finally:
        store.close()
