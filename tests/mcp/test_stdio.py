"""The proxy's line reader (``offprompt.mcp._stdio.LineBuffer``): lines split anywhere
across chunks come out whole, and a line over the bound comes out as its ends only."""

from __future__ import annotations

import json

from offprompt.mcp._stdio import LineBuffer, Oversized, oversized_error


def feed_all(buffer: LineBuffer, data: bytes, size: int) -> list[bytes | Oversized]:
    lines: list[bytes | Oversized] = []
    for start in range(0, len(data), size):
        lines += buffer.feed(data[start : start + size])
    return lines


def test_lines_come_out_whole_whatever_the_chunking():
    data = b'{"a": 1}\n\n{"b": "x\\ny"}\n' + b"z" * 200_000 + b"\ntail without newline"
    expected = data.split(b"\n")
    for size in (1, 3, 7, 64, 65_536, len(data)):
        buffer = LineBuffer()
        lines = feed_all(buffer, data, size)
        assert [line.rstrip(b"\n") for line in lines] == expected[:-1]  # type: ignore[union-attr]
        assert all(isinstance(line, bytes) and line.endswith(b"\n") for line in lines)
        assert buffer.rest() == b"tail without newline"
        assert buffer.rest() is None


def test_a_line_over_the_bound_keeps_only_its_ends_and_names_its_request():
    python_sdk = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "x" * 50_000}]}}
    )
    typescript_sdk = json.dumps(
        {
            "result": {"content": [{"type": "text", "text": '"id": 3, ' * 5_000}]},
            "jsonrpc": "2.0",
            "id": "req-9",
        }
    )
    buffer = LineBuffer(max_bytes=10_000)
    lines = feed_all(
        buffer, f"{python_sdk}\n{typescript_sdk}\n".encode() + b'{"jsonrpc":"2.0"}\n', 4096
    )
    first, second, small = lines
    assert isinstance(first, Oversized) and first.size == len(python_sdk) + 1
    assert len(first.head) + len(first.tail) <= 8192
    assert first.request_id() == 7
    assert isinstance(second, Oversized) and second.request_id() == "req-9"
    assert small == b'{"jsonrpc":"2.0"}\n'  # the bound applies per line

    error = oversized_error(first, 10_000)
    assert error is not None and error["jsonrpc"] == "2.0" and error["id"] == 7
    assert error["error"]["code"] == -32603  # internal error
    assert (
        "0.1 MB, over the proxy's limit of 0.01 MB (--max-message-mb)" in error["error"]["message"]
    )


def test_an_oversized_line_without_a_visible_id_gives_no_answer():
    text = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 20_000}}
    )
    buffer = LineBuffer(max_bytes=1000)
    (line,) = buffer.feed(text.encode() + b"\n")
    assert isinstance(line, Oversized) and line.request_id() is None
    assert oversized_error(line, 1000) is None
