"""A process of the shared task-memory tests (issue 29): stores or reads one TaskMemory.

    python shared_worker.py TARGET store NS LINES [--json] [--wait FILE]
    python shared_worker.py TARGET read NS [NS ...]
    python shared_worker.py TARGET delete NS

``TARGET`` is ``path:DIR`` (``TaskMemory(path=DIR)``) or ``pg:DSN``
(``TaskMemory(store=PostgresStore(DSN))``). Every command prints one JSON line.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any


def make(namespace: str, lines: int) -> str:
    """The output stored under ``namespace``: log lines with one needle in the middle."""
    body = [
        f"2026-03-14 INFO {namespace} GET /items/{i} 200 in {i % 97} ms\n" for i in range(lines)
    ]
    body.insert(
        lines // 2,
        f"2026-03-14 ERROR {namespace} vault-9 rejected rotation key NEEDLE-{namespace}\n",
    )
    return "".join(body)


def make_json(namespace: str, items: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "status": "failed" if i % 10 == 3 else "ok", "owner": namespace}
        for i in range(items)
    ]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_memory(target: str) -> Any:
    from offprompt.task_memory import TaskMemory

    kind, _, where = target.partition(":")
    if kind == "path":
        return TaskMemory(path=where), None
    from offprompt.stores import PostgresStore

    store = PostgresStore(where)
    return TaskMemory(store=store), store


def main(argv: list[str]) -> int:
    from offprompt.artifacts import JsonArtifact, TextArtifact

    target, command, *rest = argv
    if "--wait" in rest:  # start together with the other writers
        barrier = rest[rest.index("--wait") + 1]
        rest = rest[: rest.index("--wait")]
        while not os.path.exists(barrier):
            time.sleep(0.01)
    memory, store = open_memory(target)
    out: dict[str, Any] = {"pid": os.getpid(), "index": memory.index_location}
    try:
        if command == "store":
            namespace, lines = rest[0], int(rest[1])
            if "--json" in rest:
                artifact: Any = JsonArtifact(make_json(namespace, lines), name=namespace)
            else:
                artifact = TextArtifact(make(namespace, lines), name=namespace)
            print(json.dumps({"started": True}), flush=True)
            info = memory.process_output("tool", "call", artifact)
            out["reference"] = info.value.splitlines()[0]
            # process_output answers a failed store with an ErrorArtifact (for the model)
            out["stored"] = "was stored in memory" in out["reference"]
        elif command == "delete":
            out["deleted"] = memory.delete(rest[0])
        elif command == "read":
            out["namespaces"] = memory.namespaces()
            for namespace in rest:
                found: dict[str, Any] = {"present": memory.has_namespace(namespace)}
                if found["present"]:
                    meta = memory.namespace_metadata(namespace, wait=False)
                    found["bytes"] = meta["bytes"]
                    stats = memory.stats(namespace)
                    if stats.kind == "json":
                        found["failed"] = memory.json_query(
                            namespace, "length([?status=='failed'])"
                        )
                    else:
                        grep = memory.grep(namespace, f"NEEDLE-{namespace}")
                        found["needle_line"] = [m.line_number for m in grep.matches]
                        found["line1"] = memory.read_lines(namespace, 1, 2).value
                        found["page1"] = memory.read(namespace, 1).value[:60]
                        found["sha"] = digest(memory.load_artifacts(namespace).value[0].value)
                        hits = memory.query(
                            namespace, f"vault-9 rotation key NEEDLE-{namespace}", top_n=3
                        )
                        found["query"] = f"NEEDLE-{namespace}" in hits.to_text()
                out[namespace] = found
        print(json.dumps(out), flush=True)
    finally:
        memory.close()
        if store is not None:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
