"""Shared fixtures for the pydantic-ai adapter tests.

Only the model is faked, with pydantic-ai's own ``TestModel`` and ``FunctionModel``;
the stores are real (SQLite files under ``tmp_path``, TaskMemory directories).
``overflow_store`` is parametrized over the harness's own ``LocalFileOverflowStore`` and
ours, so each ported test is first checked against the framework's implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offprompt_pydantic_ai import OffpromptOverflowStore
from pydantic_ai_harness.tool_output_limits import LocalFileOverflowStore

from offprompt.stores import SQLiteStore


@pytest.fixture(params=["harness", "offprompt", "offprompt-sqlite"])
def overflow_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The harness's ``LocalFileOverflowStore``, then ours in memory and on a SQLite store."""
    if request.param == "harness":
        yield LocalFileOverflowStore(base_dir=tmp_path / "store")
        return
    if request.param == "offprompt":
        with OffpromptOverflowStore() as store:
            yield store
        return
    sqlite = SQLiteStore(tmp_path / "memory.db")
    try:
        with OffpromptOverflowStore(store=sqlite) as store:
            yield store
    finally:
        sqlite.close()
