"""Fixtures of the MCP tests (helpers are in ``tests/mcp_testing.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp_testing import text_of


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def call_memory() -> Callable[..., Any]:
    async def call(session: ClientSession, tool: str, namespace: str, **arguments: Any) -> str:
        result = await session.call_tool(
            tool, {"memory_name": "TaskMemory", "artifact_namespace": namespace, **arguments}
        )
        return text_of(result)

    return call
