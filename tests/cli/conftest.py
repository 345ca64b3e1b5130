"""Run the real ``offprompt`` command in a subprocess, with its own home directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "offprompt.cli"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OFFPROMPT_HOME", "OFFPROMPT_DEBUG")}
    env["COLUMNS"] = "200"  # tables and panels not wrapped, so assertions see whole values
    env["NO_COLOR"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


RunCLI = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli(home: Path, tmp_path: Path) -> RunCLI:
    """``cli("inspect", "--json")`` → the finished process (``--home`` is added)."""

    def run(
        *args: str, use_home: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        argv = [*CLI, *(["--home", str(home)] if use_home else []), *args]
        return subprocess.run(
            argv, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=timeout
        )

    return run
