"""Shared fixtures for the Google ADK adapter tests.

Only the model is faked: :class:`~offprompt_adk.testing.ScriptedLlm` is a real ADK
``BaseLlm`` that answers from a script and records its requests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# urllib3 (which ADK loads lazily, mid-run) opens an AF_INET6 socket at import to see
# whether the host has IPv6; no traffic, but pytest-socket would flag it inside a test.
import urllib3.util.connection  # noqa: F401

# The ported tests share helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"
