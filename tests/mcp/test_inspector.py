"""The official MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``, pinned in
tests/mcp/npm and installed by ``make test``) as the client of the proxy in front of npm's
``server-everything``: a client no one here wrote, speaking its own SDK (TypeScript)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mcp_testing import NPM_SERVERS, node, proxy_of, reference_server

INSPECTOR = NPM_SERVERS / "inspector" / "clients" / "launcher" / "build" / "index.js"


def inspect(home: Path, tmp_path: Path, *arguments: str, upstream: list[str] | None = None) -> Any:
    """One Inspector CLI call through the proxy; its JSON answer."""
    assert INSPECTOR.exists(), f"{INSPECTOR} is missing: `make test` installs it (npm ci)"
    command = [
        node(),
        str(INSPECTOR),
        "--cli",
        *proxy_of(home, upstream or reference_server("everything")),
        *arguments,
    ]
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_lists_the_tools_and_the_proxy_claims_no_task_tool(
    home: Path, tmp_path: Path
) -> None:
    listed = inspect(home, tmp_path, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"echo", "get-sum", "read_memory", "grep_memory"} <= names
    assert "simulate-research-query" not in names  # it needs MCP tasks, which the proxy lacks
    read_memory = next(t for t in listed["tools"] if t["name"] == "read_memory")
    assert read_memory["annotations"]["readOnlyHint"] is True


def test_the_inspector_sets_the_log_level_and_reads_a_stored_output_by_its_link(
    home: Path, tmp_path: Path
) -> None:
    assert inspect(home, tmp_path, "--method", "logging/setLevel", "--log-level", "debug") == {}
    files = tmp_path / "files"
    files.mkdir()
    lines = [f"row {i}: " + "y" * 60 for i in range(3000)]
    (files / "big.txt").write_text("\n".join(lines), encoding="utf-8")
    upstream = reference_server("filesystem", str(files))
    result = inspect(
        home,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "read_text_file",
        "--tool-arg",
        f"path={files / 'big.txt'}",
        upstream=upstream,
    )
    text, link = result["content"]
    assert text["text"].startswith('Output of "read_text_file.call" was stored in memory')
    assert len(json.dumps(result)) < 5_000
    read = inspect(
        home,
        tmp_path,
        "--method",
        "resources/read",
        "--uri",
        link["uri"] + "/lines/100-101",
        upstream=upstream,
    )
    (content,) = read["contents"]
    assert lines[99] in content["text"] and lines[100] in content["text"]
    assert lines[101] not in content["text"]
