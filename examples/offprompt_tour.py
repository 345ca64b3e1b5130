"""What the model sees off-prompt: the reference card and each memory tool's answer.

The README's off-prompt sections print this script's output. It runs the one offload
policy (what every adapter calls) and the five memory tools defined in the core (the
ones LangChain's ``task_memory_tools()``, LlamaIndex's ``TaskMemoryToolSpec``, the
middleware and MCP expose, with the same text), offline, with the default settings.

Run: ``.venv/bin/python examples/offprompt_tour.py``. Long answers are shown by their
first lines only (the script says so where it cuts); namespaces carry a random part.
"""

from __future__ import annotations

import json
from typing import Any

from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import OffloadPolicy
from offprompt.task_memory.tools import memory_tool_specs

SHOWN_LINES = 8


def logs() -> str:
    lines = [
        f"2026-11-30T03:{i // 60 % 60:02d}:{i % 60:02d}Z INFO api GET /items/{i} 200 {i % 97}ms"
        for i in range(40_000)
    ]
    lines[31_337] = (
        "2026-11-30T03:42:17Z ERROR api GET /items/31337 500 upstream timeout trace=7f3a9c2e"
    )
    return "\n".join(lines) + "\n"


def jobs() -> str:
    statuses = ("failed", "done", "done", "running", "done", "done", "done", "queued")
    return json.dumps(
        {
            "queue": "nightly",
            "jobs": [
                {
                    "id": f"j{i}",
                    "status": statuses[i % 8],
                    "owner": {"team": ("data", "sre")[i % 2]},
                }
                for i in range(5_000)
            ],
        }
    )


def show(title: str, text: str, *, cut: bool = False) -> None:
    lines = text.split("\n")
    print(f"=== {title} ->")
    if cut and len(lines) > SHOWN_LINES:
        print("\n".join(lines[:SHOWN_LINES]))
        print(f"[... the answer goes on: {len(lines) - SHOWN_LINES} more lines, shortened here]")
    else:
        print(text)


def main() -> None:
    memory = TaskMemory()
    policy = OffloadPolicy(memory, min_tokens=500)
    tools = {spec.name: spec for spec in memory_tool_specs(memory)}

    def call(name: str, *, cut: bool = False, **arguments: Any) -> None:
        answer = tools[name].call(**arguments)
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
        show(f"{name}({shown}){' [error]' if answer.is_error else ''}", answer.text, cut=cut)

    stored = policy.offload("fetch_logs", logs(), call_id="call_1")
    show("fetch_logs (2.2 MB of logs)", stored.text)
    assert stored.reference is not None
    print("=== ToolMessage.artifact / ToolOutput.raw_output ->")
    print(stored.reference.to_artifact())
    ns = stored.reference.namespace
    call("grep_memory", artifact_namespace=ns, pattern="trace=7f3a9c2e", context=1)
    call("read_memory", artifact_namespace=ns, start_line=31_337, end_line=31_339)
    call("read_memory", cut=True, artifact_namespace=ns, page=2)
    call("query_memory", cut=True, artifact_namespace=ns, query="upstream timeout error", top_n=1)
    call("summarize_memory", cut=True, artifact_namespace=ns)

    listed = policy.offload("list_jobs", jobs(), call_id="call_2")
    show("list_jobs (a 300 KB JSON document)", listed.text)
    assert listed.reference is not None
    js = listed.reference.namespace
    call("json_memory", artifact_namespace=js)
    call("json_memory", artifact_namespace=js, expression="length(jobs[?status=='failed'])")
    call("json_memory", artifact_namespace=js, expression="jobs[?owner.team=='sre'] | [:2]")

    detail = "\n".join(f"  row {i}: key (order_id)=({i}) already exists" for i in range(20_000))
    error = (
        'psycopg.errors.UniqueViolation: duplicate key value violates unique constraint "orders_pkey"\n'
        + detail
    )
    failed = policy.offload("load_batch", error, call_id="call_3", is_error=True)
    show("load_batch [error] (a tool that raised with 800 KB of detail)", failed.text)

    call("read_memory", artifact_namespace="fetch_logs-made-up")
    call("grep_memory", artifact_namespace=ns, pattern="(?<=GET )/items", regex=True)
    call("json_memory", artifact_namespace=js, expression="jobs[?status==")
    call("json_memory", artifact_namespace=ns, expression="length(@)")
    call("read_memory", artifact_namespace=ns, page=100_000)
    memory.close()


if __name__ == "__main__":
    main()
