"""Issue 26 item 4 through ``offprompt mcp proxy`` (real processes over stdio): the error
of a ``--sensitive`` tool reaches the client as its kind, size and reference, never a
line of its text, and the memory tools read it back."""

from __future__ import annotations

from mcp_testing import connect, proxy_command, text_of, wire

SECRET = "record malformed: {'password': 'hunter2-s3cr3t'}"


async def test_a_sensitive_tools_error_stays_off_prompt(home, call_memory) -> None:
    async with connect(proxy_command(home, "--sensitive", "fail")) as session:
        result = await session.call_tool("fail", {"message": SECRET})
        assert wire(result)["isError"]
        text = text_of(result)
        for word in ("hunter2", "password", "malformed"):
            assert word not in text
        (reference,) = (result.meta or {})["offprompt/references"]
        assert reference["sensitive"] is True and reference["is_error"] is True
        assert f"({reference['kind']}, {reference['bytes']:,} bytes, 1 line" in text
        assert f'artifact_namespace "{reference["artifact_namespace"]}"' in text
        stored = await call_memory(session, "read_memory", reference["artifact_namespace"])
        assert "hunter2-s3cr3t" in stored
    async with connect(proxy_command(home)) as session:  # not sensitive: short errors pass
        plain = await session.call_tool("fail", {"message": "disk full"})
        assert text_of(plain) == "Error executing tool fail: disk full"
