"""``offprompt mcp proxy`` end to end: real processes over stdio, the SDK's client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_testing import (
    cancel_a_call,
    connect,
    initialize_over,
    load_upstream,
    proxy_command,
    text_of,
    upstream_command,
    wire,
)

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.mcp import ProxyConfig, UpstreamError, run_proxy
from offprompt.mcp._sdk import MAJOR, MCPError
from offprompt.mcp.proxy import schema_with_reference
from offprompt.scope import Scope
from offprompt.task_memory import TaskMemory


def children() -> dict[int, str]:
    """This process's child processes (Linux ``/proc``): pid -> command line."""
    found: dict[int, str] = {}
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                found[int(pid)] = command.decode(errors="replace")
    return found


REFERENCE_START = 'Output of "{tool}.call" was stored in memory with memory_name "TaskMemory" and artifact_namespace "'
MEMORY_TOOLS = {"query_memory", "grep_memory", "read_memory", "json_memory", "summarize_memory"}


def stored_references(result: Any) -> list[dict[str, Any]]:
    return list((result.meta or {}).get("offprompt/references", []))


def load_text(home: Path, namespace: str, scope: Scope | None = None) -> str:
    with TaskMemory(path=home / "qdrant", scope=scope) as memory:
        return "".join(
            item.value
            for item in memory.load_artifacts(namespace).value
            if isinstance(item, TextArtifact)
        )


async def test_a_5mb_log_becomes_a_reference_the_memory_tools_can_search(home, call_memory):
    upstream = load_upstream()
    async with connect(proxy_command(home)) as session:
        result = await session.call_tool("logs", {"megabytes": 5})
        text = text_of(result)
        assert text.startswith(REFERENCE_START.format(tool="logs"))
        assert "kind: text | 5,000,052 bytes" in text  # the card: what the output holds
        assert len(text) < 2_000 and text.count("GET /api/items") <= 4  # first/last lines only
        assert not wire(result)["isError"]
        # FastMCP repeats a text result as {"result": text}: the reference replaces it there too
        assert wire(result)["structuredContent"] == {"result": text}
        (reference,) = stored_references(result)
        assert reference["tool"] == "logs" and reference["activity"] == "call"
        assert reference["bytes"] >= 5_000_000 and reference["kind"] == "text"
        namespace = reference["artifact_namespace"]
        assert f'artifact_namespace "{namespace}"' in text

        needle_id, needle_code = upstream.NEEDLES
        grep = await call_memory(session, "grep_memory", namespace, pattern=needle_id)
        assert grep.startswith(f'1 matching line(s) for the string "{needle_id}"')
        assert f"20000: 2026-12-01T08:00:20Z ERROR node-3 request {needle_id} failed" in grep
        query = await call_memory(session, "query_memory", namespace, query=needle_code)
        assert needle_id in query
        page = await call_memory(session, "read_memory", namespace, page=1)
        assert page.startswith("Page 1 of ") and "GET /api/items" in page
        assert len(page) < 12_000  # bounded by max_output_tokens (1000)
    # after the proxy exits, the home holds the log byte for byte
    assert load_text(home, namespace) == upstream.log_text(5)


async def test_a_20mb_result_reaches_the_client_as_a_reference_and_is_stored_whole(home):
    # The SDK's own stdio reader is quadratic in a line's length (20 MB: seconds, 100 MB:
    # minutes); the proxy reads its upstream linearly. 100 MB: benchmarks/bench_mcp.py.
    upstream = load_upstream()
    with anyio.fail_after(180):  # a guard against a hang, not a timing
        async with connect(proxy_command(home)) as session:
            result = await session.call_tool("logs", {"megabytes": 20})
            text = text_of(result)
            assert not wire(result)["isError"] and text.startswith(
                REFERENCE_START.format(tool="logs")
            )
            assert "kind: text | 20,000,024 bytes | 308,786 lines" in text
            assert wire(result)["structuredContent"] == {"result": text}
            (reference,) = stored_references(result)
            assert text_of(await session.call_tool("echo", {"text": "next"})) == "next"
    assert load_text(home, reference["artifact_namespace"]) == upstream.log_text(20)


async def test_an_answer_over_the_message_limit_is_an_error_and_nothing_is_kept(home):
    with anyio.fail_after(120):
        async with connect(proxy_command(home, "--max-message-mb", "1")) as session:
            result = await session.call_tool("logs", {"megabytes": 2})
            assert wire(result)["isError"] and not stored_references(result)
            assert text_of(result) == (
                "the upstream MCP server's answer is 4.1 MB, over the proxy's limit of 1 MB "
                "(--max-message-mb); none of it was kept"
            )
            small = await session.call_tool("logs", {"megabytes": 0.2})
            assert text_of(small).startswith(REFERENCE_START.format(tool="logs"))
            (reference,) = stored_references(small)
    with TaskMemory(path=home / "qdrant") as memory:
        assert memory.namespaces() == [reference["artifact_namespace"]]


async def test_small_results_and_listings_pass_through_unchanged(home):
    text = "  small: ünïcode, \t tabs, 🎉 and a trailing newline\n"
    async with connect(upstream_command()) as direct, connect(proxy_command(home)) as proxied:
        tools_direct = (await direct.list_tools()).tools
        tools_proxied = (await proxied.list_tools()).tools
        # Names, descriptions and input schemas as they were; an output schema admits
        # the reference object too, so a stored structured result stays valid.
        for proxied_tool, direct_tool in zip(
            tools_proxied[: len(tools_direct)], tools_direct, strict=True
        ):
            listed, original = wire(proxied_tool), wire(direct_tool)
            if original["outputSchema"] is not None:
                assert listed["outputSchema"] == schema_with_reference(original["outputSchema"])
                listed["outputSchema"] = original["outputSchema"]
            assert listed == original
        assert {t.name for t in tools_proxied[len(tools_direct) :]} == MEMORY_TOOLS
        for name, arguments in [("echo", {"text": text}), ("weather", {"city": "Oslo"})]:
            expected = await direct.call_tool(name, arguments)
            got = await proxied.call_tool(name, arguments)
            assert got.model_dump_json() == expected.model_dump_json()
        assert (await proxied.list_resources()) == (await direct.list_resources())
        assert (await proxied.read_resource("fixture://readme")) == (
            await direct.read_resource("fixture://readme")
        )
        assert (await proxied.list_prompts()) == (await direct.list_prompts())
        assert (await proxied.get_prompt("triage", {"service": "api"})) == (
            await direct.get_prompt("triage", {"service": "api"})
        )
    assert not (home / "qdrant").exists() or not TaskMemory(path=home / "qdrant").namespaces()


async def test_tool_errors_timeouts_and_bad_lines_leave_the_proxy_working(
    home, call_memory, tmp_path
):
    stderr = tmp_path / "stderr.txt"
    errors = stderr.open("w")
    async with connect(proxy_command(home, "--timeout", "2"), errlog=errors) as session:
        small = await session.call_tool("fail", {"message": "disk full"})
        assert wire(small)["isError"] and text_of(small) == "Error executing tool fail: disk full"
        assert not stored_references(small)

        large = await session.call_tool(
            "fail", {"message": "Traceback line ERR_42", "repeat": 3000}
        )
        assert wire(large)["isError"]
        text = text_of(large)
        assert text.startswith(
            'Error: the tool failed; first line of its error: "Error executing tool fail: '
            'Traceback line ERR_42"\nThe whole error ('
        )
        assert REFERENCE_START.format(tool="fail") in text and len(text) < 2_000
        (reference,) = stored_references(large)
        assert reference["is_error"] is True
        grep = await call_memory(
            session, "grep_memory", reference["artifact_namespace"], pattern="ERR_42"
        )
        assert grep.startswith('3000 matching line(s) for the string "ERR_42"')

        # the upstream writes a line that is not JSON-RPC, then answers
        garbage = await session.call_tool("garbage", {"text": "still fine"})
        assert text_of(garbage) == "still fine" and not wire(garbage)["isError"]

        started = time.monotonic()
        hung = await session.call_tool("hang", {})
        assert time.monotonic() - started < 20
        assert wire(hung)["isError"] and "did not answer the call to 'hang' within 2 s" in text_of(
            hung
        )
        assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"
    errors.close()
    assert "offprompt mcp proxy: skipped a message of the upstream: " in stderr.read_text()


async def test_progress_reaches_the_client_and_cancellations_reach_the_upstream(home, tmp_path):
    stderr = tmp_path / "stderr.txt"
    errors = stderr.open("w")

    async def cancelled_upstream(times: int) -> None:
        while stderr.read_text().count("fixture-upstream: hang was cancelled") < times:
            await anyio.sleep(0.1)

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with anyio.fail_after(90):
        async with connect(proxy_command(home, "--timeout", "5"), errlog=errors) as session:
            result = await session.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            assert text_of(result) == "done after 3 steps"
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

            # The client cancels a call: the proxy stops it and tells the upstream.
            error = await cancel_a_call(session, "hang", after=1)
            if MAJOR == 1:  # the 1.x server answers a cancelled request
                assert str(error) == "Request cancelled"
            else:  # 2.x answers none (as the spec says); the SDK's client stops waiting
                assert error is None
            await cancelled_upstream(1)

            # A call that times out in the proxy is cancelled upstream too.
            hung = await session.call_tool("hang", {})
            assert "did not answer the call to 'hang' within 5 s" in text_of(hung)
            await cancelled_upstream(2)
            assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"


async def test_structured_output_stays_and_images_become_blobs_with_a_card(home):
    async with connect(proxy_command(home, "--min-tokens", "200")) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "weather")
        assert wire(tool)["outputSchema"] is not None
        result = await session.call_tool("weather", {"city": "Oslo", "report_lines": 300})
        assert text_of(result).startswith(REFERENCE_START.format(tool="weather"))
        (weather,) = stored_references(result)
        # The large structured value is the text block's JSON, stored once: the client
        # gets a reference object there too (the SDK's client validated it).
        structured = wire(result)["structuredContent"]
        assert structured == {**weather, "reference": text_of(result)}
        small_weather = await session.call_tool("weather", {"city": "Oslo"})
        assert wire(small_weather)["structuredContent"]["report"] == "Oslo: hour 0 sunny and mild"
        assert not stored_references(small_weather)

        # An image goes by its pixels: 4x4 costs 255 tokens, stored at --min-tokens 200.
        small = await session.call_tool("image", {"width": 4, "height": 4})
        assert text_of(small).startswith(REFERENCE_START.format(tool="image"))
        (icon,) = stored_references(small)
        result = await session.call_tool("image", {"width": 256, "height": 256})
        text = text_of(result)
        assert text.startswith(REFERENCE_START.format(tool="image"))
        assert (
            "kind: image | " in text and "image/png, 256x256 pixels: kept in the blob store" in text
        )
        (image,) = stored_references(result)
        assert image["kind"] == "image"

        blob = await session.call_tool("blob", {"kilobytes": 64})
        text = text_of(blob)
        assert text.startswith(REFERENCE_START.format(tool="blob"))
        assert "application/octet-stream: kept in the blob store, not shown here." in text
        (binary,) = stored_references(blob)

        bad = await session.call_tool("bad_image", {})
        assert wire(bad)["isError"] and not stored_references(bad)
        assert text_of(bad) == (
            "Error: the image/png output of bad_image could not be stored off-prompt: "
            "its image/png content is not valid base64"
        )
    upstream = load_upstream()
    with TaskMemory(path=home / "qdrant") as memory:
        (stored,) = memory.load_artifacts(binary["artifact_namespace"]).value
        assert stored.value == upstream.blob_bytes(64) and stored.mime_type == (
            "application/octet-stream"
        )
        assert sorted(memory.namespaces()) == sorted(
            r["artifact_namespace"] for r in (weather, icon, image, binary)
        )  # nothing of the bad image
    assert json.loads(load_text(home, weather["artifact_namespace"])) == {
        "city": "Oslo",
        "celsius": 21.5,
        "report": "\n".join(f"Oslo: hour {i} sunny and mild" for i in range(300)),
    }
    with TaskMemory(path=home / "qdrant") as memory:
        (blob,) = memory.load_artifacts(image["artifact_namespace"]).value
    assert isinstance(blob, ImageArtifact) and (blob.width, blob.height) == (256, 256)
    assert len(blob.value) == image["bytes"]


async def test_sensitive_tools_are_stored_and_memory_tools_reach_only_their_scope(
    home, call_memory
):
    proxy = proxy_command(home, "--tenant", "acme", "--sensitive", "echo")
    async with connect(proxy) as session:
        result = await session.call_tool("echo", {"text": "acme's api key 1234"})
        assert "api key" not in text_of(result)
        (reference,) = stored_references(result)
        namespace = reference["artifact_namespace"]
        assert "api key 1234" in await call_memory(session, "read_memory", namespace)
    async with connect(proxy_command(home, "--tenant", "globex")) as session:
        missing = await call_memory(session, "read_memory", namespace)
        assert missing.startswith(f'Error: Unknown artifact_namespace "{namespace}"')
        assert "acme" not in missing.replace(namespace, "")
        bad = await session.call_tool("grep_memory", {"memory_name": "TaskMemory"})
        assert wire(bad)["isError"] and text_of(bad).startswith(
            "Error: bad arguments for grep_memory"
        )
    assert load_text(home, namespace, Scope(tenant="acme")) == "acme's api key 1234"


async def test_an_upstream_that_exits_mid_call_gives_an_error_then_the_proxy_exits(home, tmp_path):
    errors = (tmp_path / "stderr.txt").open("w")
    with anyio.fail_after(60):
        async with connect(proxy_command(home), errlog=errors) as session:
            result = await session.call_tool("die", {})
            assert wire(result)["isError"]
            assert "upstream MCP server exited during the call to 'die'" in text_of(result)
            with pytest.raises(MCPError):
                await session.call_tool("echo", {"text": "anyone?"})
    errors.close()
    log = (tmp_path / "stderr.txt").read_text()
    assert "fixture-upstream: dying now" in log  # the upstream's stderr reaches ours
    assert "offprompt: error: the upstream MCP server exited" in log


async def test_an_upstream_that_exits_halfway_through_its_answer_stores_nothing(home, tmp_path):
    errors = (tmp_path / "stderr.txt").open("w")
    with anyio.fail_after(60):
        async with connect(proxy_command(home), errlog=errors) as session:
            result = await session.call_tool("half_answer", {"megabytes": 2})
            assert wire(result)["isError"] and not stored_references(result)
            assert text_of(result) == (
                "offprompt mcp proxy: the upstream MCP server exited during the call to "
                "'half_answer'; no result"
            )
    errors.close()
    assert (
        "offprompt: error: the upstream MCP server exited" in (tmp_path / "stderr.txt").read_text()
    )
    assert not (home / "qdrant").exists() or not TaskMemory(path=home / "qdrant").namespaces()


async def test_a_proxy_killed_while_indexing_leaves_the_output_whole(home):
    upstream = load_upstream()
    with anyio.fail_after(120):
        async with connect(proxy_command(home)) as session:
            result = await session.call_tool("logs", {"megabytes": 2})
            (reference,) = stored_references(result)
            (proxy_pid,) = [pid for pid, command in children().items() if " mcp proxy " in command]
            # right after the reference: the indexing of 2 MB is all but surely still running
            os.kill(proxy_pid, signal.SIGKILL)
            with pytest.raises(MCPError):
                await session.call_tool("echo", {"text": "anyone?"})
    # the output is whole (its indexing resumes when the memory is next opened)
    assert load_text(home, reference["artifact_namespace"]) == upstream.log_text(2)


def test_a_malformed_line_from_the_client_is_skipped_and_closing_stdin_stops_both(home, tmp_path):
    pid_file = tmp_path / "upstream.pid"
    errors = tmp_path / "stderr.txt"
    process = subprocess.Popen(
        proxy_command(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors.open("w"),
        env={**os.environ, "FIXTURE_PID_FILE": str(pid_file)},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"{this is not json\n")  # skipped: the handshake still answers
    process.stdin.flush()
    initialized_result = initialize_over(process)
    assert initialized_result["serverInfo"]["name"] == "offprompt-proxy (fixture-upstream)"
    upstream_pid = int(pid_file.read_text())
    # mid-session: junk, a request with bad params, then a good call
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    bad_params = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}}
    good = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "still here"}},
    }
    lines = [json.dumps(initialized), "[1, 2", "\u0000\xff garbage", json.dumps(bad_params)]
    process.stdin.write("\n".join([*lines, json.dumps(good), ""]).encode())
    process.stdin.flush()
    by_id: dict[int, Any] = {}
    while 3 not in by_id:
        line = process.stdout.readline()
        assert line, "the proxy closed stdout"
        message = json.loads(line)
        if "id" in message:
            by_id[message["id"]] = message
    assert by_id[2]["error"]["code"] == -32602  # invalid params, for that request only
    assert by_id[3]["result"]["content"] == [{"type": "text", "text": "still here"}]
    process.stdin.close()
    assert process.wait(timeout=30) == 0, errors.read_text()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(upstream_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the upstream server outlived the proxy")


async def test_an_upstream_that_never_answers_initialize_is_an_error_in_bounded_time(
    home, tmp_path
):
    pid_file = tmp_path / "mute.pid"
    mute = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)",
    ]
    config = ProxyConfig(command=mute, home=home, timeout=1, init_timeout=2)
    with anyio.fail_after(60), pytest.raises(UpstreamError) as raised:
        await run_proxy(config)
    assert str(raised.value) == "the upstream MCP server did not answer initialize within 2 s"
    with pytest.raises(ProcessLookupError):  # stopped, not left behind
        os.kill(int(pid_file.read_text()), 0)


def test_the_command_line_names_what_is_missing(home):
    run = subprocess.run(
        [sys.executable, "-m", "offprompt.cli", "--home", str(home), "mcp", "proxy"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert "give the upstream server's command after '--'" in run.stderr
    run = subprocess.run(
        [*proxy_command(home)[:-3], "--", "/nonexistent/server"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 1 and "cannot start the upstream MCP server" in run.stderr


def test_without_the_extra_the_command_says_what_to_install(monkeypatch, capsys, home):
    import importlib.util

    from offprompt.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    assert main(["--home", str(home), "mcp", "serve"]) == 1
    assert "pip install 'offprompt[mcp]'" in capsys.readouterr().err
