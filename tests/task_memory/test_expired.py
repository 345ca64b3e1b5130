"""An expired reference is a clear error, distinct from an unknown one (issue 42, item 7):
the model learns the output existed and is gone, not that it passed a wrong id."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import ExpiredError, NotFoundError
from offprompt.retention import RetentionPolicy
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import memory_tool_specs


def test_an_expired_namespace_says_so_until_pruned_then_it_is_unknown(tmp_path: Path) -> None:
    with TaskMemory(
        path=tmp_path / "memory", index="sync", retention=RetentionPolicy(max_age=1)
    ) as memory:
        memory.store_artifact("old-log", TextArtifact("line 1\nline 2\n"))
        assert memory.read("old-log").value.startswith("line 1")
        time.sleep(1.2)
        with pytest.raises(ExpiredError, match=r"'old-log' .* has expired: .* max_age of 1 s"):
            memory.read("old-log")
        tools = {spec.name: spec for spec in memory_tool_specs(memory)}
        answer = tools["read_memory"].call(artifact_namespace="old-log")
        assert answer.is_error and "has expired" in answer.text
        unknown = tools["read_memory"].call(artifact_namespace="never-stored")
        assert unknown.is_error and "Unknown artifact_namespace" in unknown.text
        assert "expired" not in unknown.text

        memory.prune()
        with pytest.raises(NotFoundError) as gone:
            memory.read("old-log")
        assert not isinstance(gone.value, ExpiredError)


def test_without_an_age_limit_an_unknown_namespace_is_not_called_expired(
    tmp_path: Path,
) -> None:
    with TaskMemory(
        path=tmp_path / "memory", index="sync", retention=RetentionPolicy(max_count=5)
    ) as memory:
        with pytest.raises(NotFoundError) as raised:
            memory.read("nothing-here")
        assert type(raised.value) is NotFoundError
