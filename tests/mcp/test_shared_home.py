"""Several ``offprompt mcp proxy`` / ``mcp serve`` processes on one home at once (real
processes over stdio): an output stored through one is read, grepped and queried
through the others while all of them are running (the first holds the chunk index in
``home/qdrant/vectors``, the others build theirs from the stored text)."""

from __future__ import annotations

from mcp_testing import connect, load_upstream, proxy_command, serve_command, text_of


async def test_an_output_stored_through_one_proxy_is_read_through_another(home, call_memory):
    upstream = load_upstream()
    needle_id, needle_code = upstream.NEEDLES
    async with (
        connect(proxy_command(home)) as first,
        connect(proxy_command(home)) as second,
        connect(serve_command(home)) as served,
    ):
        stored = await first.call_tool("logs", {"megabytes": 2})
        (reference,) = stored.meta["offprompt/references"]
        namespace = reference["artifact_namespace"]
        for session in (second, served):  # both running since before the store
            grep = await call_memory(session, "grep_memory", namespace, pattern=needle_id)
            assert grep.startswith(f'1 matching line(s) for the string "{needle_id}"')
            assert f"20000: 2026-12-01T08:00:20Z ERROR node-3 request {needle_id}" in grep
            query = await call_memory(session, "query_memory", namespace, query=needle_code)
            assert needle_id in query  # answered from the whole output, indexed there
            page = await call_memory(session, "read_memory", namespace, page=1)
            assert page.startswith("Page 1 of ") and upstream.log_text(2)[:40] in page
        assert f"- {namespace}: tool logs" in text_of(await served.call_tool("list_outputs", {}))
        # And the other way: stored through the second, read through the first.
        echoed = await second.call_tool("echo", {"text": "vault-9 rotation " * 4000})
        (back,) = echoed.meta["offprompt/references"]
        grep = await call_memory(
            first, "grep_memory", back["artifact_namespace"], pattern="vault-9"
        )
        assert grep.startswith("1 matching line(s)")
