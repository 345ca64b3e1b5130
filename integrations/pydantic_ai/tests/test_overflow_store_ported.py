"""pydantic-ai-harness's own ``OverflowStore`` tests, ported.

From the harness's ``tests/tool_output_limits/test_tool_output_limits.py`` (``TestStore``,
``TestSpill``, ``TestContentReduction``): each runs on the harness's own
``LocalFileOverflowStore`` first (the ``overflow_store`` fixture), then on
``OffpromptOverflowStore``, so what is asserted is the framework's behaviour. The
hook is driven with a real ``RunContext`` instead of the harness's ad-hoc stand-in.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness.tool_output_limits import (
    READ_TOOL_NAME,
    Band,
    Spill,
    ToolOutputLimits,
    json_lines,
)


def _ctx(*, run_id: str = "run-1", retry: int = 0) -> RunContext[None]:
    return RunContext(
        deps=None,
        model=TestModel(),
        usage=RunUsage(),
        run_id=run_id,
        retry=retry,
        tool_call_id="call-1",
        run_step=1,
    )


async def _run(cap: ToolOutputLimits[None], result: Any, *, ctx: Any = None) -> Any:
    return await cap.after_tool_execute(
        ctx if ctx is not None else _ctx(),
        call=ToolCallPart(tool_name="big_tool", args="{}", tool_call_id="call-1"),
        tool_def=ToolDefinition(name="big_tool"),
        args={},
        result=result,
    )


# -- TestStore -------------------------------------------------------------------------


async def test_write_read_roundtrip(overflow_store: Any) -> None:
    handle = await overflow_store.write("run-1/call-1.0", b"payload")
    assert handle == "run-1/call-1.0"
    assert await overflow_store.read(handle) == b"payload"


async def test_empty_key(overflow_store: Any) -> None:
    handle = await overflow_store.write("", b"data")
    assert await overflow_store.read(handle) == b"data"


async def test_read_missing_raises(overflow_store: Any) -> None:
    with pytest.raises(FileNotFoundError):
        await overflow_store.read("nope/x.0")


async def test_dotdot_handle_stays_in_root(overflow_store: Any) -> None:
    await overflow_store.write("run/c.0", b"inside")
    with pytest.raises(FileNotFoundError):
        await overflow_store.read("../c.0")


async def test_rewrite_of_a_key_replaces_it(overflow_store: Any) -> None:
    # The protocol: "treat a repeated write of a key as an overwrite" (durable replay).
    handle = await overflow_store.write("run-1/call-1.0", b"first, and longer")
    assert await overflow_store.write("run-1/call-1.0", b"second") == handle
    assert await overflow_store.read(handle) == b"second"


# -- TestSpill ---------------------------------------------------------------------------


async def test_spill_roundtrip(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=10, action=Spill(preview_chars=20))], store=overflow_store
    )
    text = "line\n" * 1000
    out = await _run(cap, text)
    assert isinstance(out, ToolReturn)
    assert isinstance(out.return_value, str) and "too large" in out.return_value
    handle = out.metadata["overflow_handle"]
    assert handle == "run-1/call-1.0"
    assert await overflow_store.read(handle) == text.encode("utf-8")


async def test_spill_binary_verbatim(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=1, action=Spill())], store=overflow_store
    )
    data = b"\x00\xff" * 100
    out = await _run(cap, data)
    assert isinstance(out, ToolReturn)
    assert "binary" in out.return_value
    assert await overflow_store.read(out.metadata["overflow_handle"]) == data


async def test_spill_serializer_json_lines_is_pageable(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=5, action=Spill(preview_chars=80))],
        serializer=json_lines,
        store=overflow_store,
    )
    records = [{"record_id": record_id, "item": f"item-{record_id}"} for record_id in range(10)]
    out = await _run(cap, records)
    assert isinstance(out, ToolReturn)
    handle = out.metadata["overflow_handle"]
    assert await overflow_store.read(handle) == json_lines(records).encode("utf-8")
    toolset = cap.get_toolset()
    assert toolset is not None
    read = toolset.tools[READ_TOOL_NAME].function  # type: ignore[attr-defined]
    page_1 = await read(_ctx(), handle, offset=0, limit=1)
    page_2 = await read(_ctx(), handle, offset=1, limit=1)
    assert '"record_id":0' in page_1 and '"record_id":1' not in page_1
    assert '"record_id":1' in page_2 and '"record_id":0' not in page_2


async def test_spill_serializer_inside_tool_return_envelope(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=5, action=Spill())], serializer=json_lines, store=overflow_store
    )
    out = await _run(
        cap, ToolReturn(return_value=[{"record_id": 1}, {"record_id": 2}], metadata={"orig": True})
    )
    assert isinstance(out, ToolReturn)
    assert out.metadata["orig"] is True
    assert (
        await overflow_store.read(out.metadata["overflow_handle"])
        == b'{"record_id":1}\n{"record_id":2}'
    )


async def test_handle_distinct_per_retry(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=5, action=Spill())], store=overflow_store
    )
    out0 = await _run(cap, "a" * 100, ctx=_ctx(retry=0))
    out1 = await _run(cap, "b" * 100, ctx=_ctx(retry=1))
    assert out0.metadata["overflow_handle"] != out1.metadata["overflow_handle"]
    assert await overflow_store.read(out0.metadata["overflow_handle"]) == b"a" * 100
    assert await overflow_store.read(out1.metadata["overflow_handle"]) == b"b" * 100


async def test_spill_merges_existing_metadata(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=5, action=Spill())], store=overflow_store
    )
    out = await _run(cap, ToolReturn(return_value="a" * 100, metadata={"orig": True}))
    assert isinstance(out, ToolReturn)
    assert out.metadata["orig"] is True
    assert "overflow_handle" in out.metadata


# -- TestContentReduction ----------------------------------------------------------------


async def test_large_content_spilled(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=100, action=Spill(preview_chars=20))], store=overflow_store
    )
    out = await _run(cap, ToolReturn(return_value="small", content="C" * 5000))
    assert isinstance(out, ToolReturn)
    assert out.return_value == "small"
    assert isinstance(out.content, str) and "too large" in out.content
    handle = out.metadata["overflow_content_handle"]
    assert await overflow_store.read(handle) == ("C" * 5000).encode("utf-8")


async def test_both_value_and_content_reduced(overflow_store: Any) -> None:
    cap: ToolOutputLimits[None] = ToolOutputLimits(
        bands=[Band(over=50, action=Spill())], store=overflow_store
    )
    out = await _run(cap, ToolReturn(return_value="v" * 500, content="c" * 500))
    assert isinstance(out, ToolReturn)
    assert out.metadata["overflow_handle"] != out.metadata["overflow_content_handle"]
    assert await overflow_store.read(out.metadata["overflow_handle"]) == b"v" * 500
    assert await overflow_store.read(out.metadata["overflow_content_handle"]) == b"c" * 500
