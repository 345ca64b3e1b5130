"""The framework wrappers and retention on one shared ``TaskMemory(path=)``, each in its
own process (real LangChain and LlamaIndex classes; no model is needed: the tools are
invoked as an agent's tool node would).

LangChain's ``offprompt_tool`` stores an output in one process; LangChain's
``task_memory_tools`` and LlamaIndex's ``TaskMemoryToolSpec`` read, grep and query it in
another that stored nothing. A process with a ``RetentionPolicy`` evicts what another stored, a ``prune`` in
yet another deletes what expired, and every process then sees the same namespaces.
(``OffpromptMiddleware`` and LlamaIndex's tool wrapper across workers: tests/deploy.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from offprompt.errors import NotFoundError
from offprompt.task_memory import TaskMemory

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from offprompt.retention import RetentionPolicy
    from offprompt.task_memory import TaskMemory

    root, mode, *args = sys.argv[1:]
    out = {}

    def log(name):
        lines = [f"2026-03-14 INFO {name} GET /items/{i} 200\\n" for i in range(3000)]
        lines.insert(1500, f"2026-03-14 ERROR {name} vault-9 rejected rotation key NEEDLE-{name}\\n")
        return "".join(lines)

    retention = RetentionPolicy(max_count=int(args[1])) if mode == "retain" else None
    memory = TaskMemory(path=root, retention=retention)
    out["index"] = memory.index_location
    if mode == "lc-store":
        from langchain_core.tools import tool
        from offprompt_langchain import offprompt_tool

        @tool
        def fetch_log(system: str) -> str:
            \"\"\"Fetch a system's whole log.\"\"\"
            return log(system)

        wrapped = offprompt_tool(fetch_log, memory, min_tokens=100)
        message = wrapped.invoke(
            {"type": "tool_call", "name": "fetch_log", "args": {"system": args[0]}, "id": "c1"}
        )
        out["content"] = message.content
        out["namespace"] = message.artifact["artifact_namespace"]
    elif mode == "read":  # LangChain's memory tools, then LlamaIndex's, on what another stored
        from offprompt_langchain import task_memory_tools
        from offprompt_llamaindex import TaskMemoryToolSpec

        tools = {t.name: t for t in task_memory_tools(memory)}
        where = {"memory_name": "TaskMemory", "artifact_namespace": args[0]}
        out["grep"] = tools["grep_memory"].invoke({**where, "pattern": "NEEDLE"})
        out["query"] = tools["query_memory"].invoke({**where, "query": "vault-9 rotation key"})
        out["read"] = tools["read_memory"].invoke({**where, "start_line": 1, "end_line": 1})
        li = {t.metadata.name: t for t in TaskMemoryToolSpec(memory).to_tool_list()}
        out["li_grep"] = li["grep_memory"].call(**where, pattern="NEEDLE").content
        out["li_query"] = li["query_memory"].call(**where, query="vault-9 rotation key").content
    elif mode == "store":
        from offprompt.artifacts import TextArtifact

        memory.store_artifact(args[0], TextArtifact(log(args[0])))
    elif mode == "retain":
        from offprompt.artifacts import TextArtifact

        memory.store_artifact(args[0], TextArtifact(log(args[0])))  # evicts on write
    elif mode == "prune":
        report = memory.prune(RetentionPolicy(max_age=60), now=time.time() + 3600)
        out["pruned"] = report.namespaces
    out["namespaces"] = memory.namespaces()
    memory.close()
    print(json.dumps(out), flush=True)
    """
)


def run(root: Path, mode: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(root), mode, *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_wrappers_and_retention_share_one_path(tmp_path: Path) -> None:
    root = tmp_path / "tm"
    with TaskMemory(path=root) as here:  # holds root/vectors: every child is private
        stored = run(root, "lc-store", "hdfs")
        assert stored["index"] == "memory"
        namespace = stored["namespace"]
        assert f'artifact_namespace "{namespace}"' in stored["content"]

        found = run(root, "read", namespace)
        assert "1 matching line(s)" in found["grep"] and "1501: " in found["grep"]
        assert "NEEDLE-hdfs" in found["query"]  # built its own index from the stored text
        assert "2026-03-14 INFO hdfs GET /items/0 200" in found["read"]
        assert "1 matching line(s)" in found["li_grep"] and "NEEDLE-hdfs" in found["li_query"]
        assert here.grep(namespace, "NEEDLE-hdfs").total_matches == 1

        # Retention in one process evicts what others stored (oldest first) ...
        run(root, "store", "second")
        kept = run(root, "retain", "third", "2")["namespaces"]
        assert kept == ["second", "third"]
        assert here.namespaces() == ["second", "third"]
        with pytest.raises(NotFoundError):  # evicted for every process
            here.grep(namespace, "NEEDLE")
        # ... and a prune in another deletes everything that expired.
        pruned = run(root, "prune")
        assert pruned["pruned"] == 2 and pruned["namespaces"] == []
        assert here.namespaces() == [] and here.query("second", "vault-9").value == []
    with TaskMemory(path=root) as again:
        assert again.namespaces() == []
