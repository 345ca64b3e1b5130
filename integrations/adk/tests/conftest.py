"""Shared fixtures for the Google ADK adapter tests.

Only the model is faked: :class:`~offprompt_adk.testing.ScriptedLlm` is a real ADK
``BaseLlm`` that answers from a script and records its requests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The ported tests share helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"
