"""A process of the deepagents overwrite race (issue 41): overwrite one file, or read it.

    python deepagents_race_worker.py TARGET ROLE FILE GO STOP [WRITER_ID COUNT]

``TARGET`` is ``path:DIR`` or ``pg:DSN``. Every process waits for the file ``GO`` to
exist, so all start together. ``ROLE`` is

* ``write``: ``COUNT`` overwrites of ``FILE`` with :func:`version` ``(WRITER_ID, k)``;
* ``read``: reads ``FILE`` whole through ``OffpromptBackend.read`` until ``STOP`` exists,
  and judges each read: one whole version, or a problem.

Prints one JSON line: ``{"problems": [...], "reads": n}`` (``writes`` for writers).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

LINES = 2_000


def version(writer: int, k: int) -> str:
    """The content of writer ``writer``'s ``k``-th overwrite: distinct for every pair."""
    return "".join(f"w{writer} v{k} line {i} " + "x" * 40 + "\n" for i in range(LINES))


def judge(content: str) -> str | None:
    """None when ``content`` is one whole version, else what is wrong with it."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    heads = {" ".join(line.split(" ", 2)[:2]) for line in lines}
    if len(lines) != LINES or len(heads) != 1:
        return f"{len(lines)} lines from {len(heads)} version(s): {sorted(heads)[:4]}"
    writer, k = (int(part[1:]) for part in next(iter(heads)).split())
    return None if content == version(writer, k) else f"w{writer} v{k} differs from its version"


def open_backend(target: str) -> tuple[Any, Any, Any]:
    from offprompt_langchain.deepagents_backend import OffpromptBackend

    from offprompt.task_memory import TaskMemory

    kind, _, where = target.partition(":")
    store = None
    if kind == "path":
        memory = TaskMemory(path=where)
    else:
        from offprompt.stores import PostgresStore

        store = PostgresStore(where)
        memory = TaskMemory(store=store)
    return OffpromptBackend(memory), memory, store


def main(argv: list[str]) -> int:
    target, role, file_path, go, stop, *rest = argv
    backend, memory, store = open_backend(target)
    while not os.path.exists(go):
        time.sleep(0.005)
    problems: list[str] = []
    out: dict[str, Any] = {"problems": problems}
    if role == "write":
        writer, count = int(rest[0]), int(rest[1])
        for k in range(count):
            try:
                result = backend.write(file_path, version(writer, k))
            except Exception as exc:
                problems.append(f"write w{writer} v{k} raised {type(exc).__name__}: {exc}")
                continue
            if result.error:
                problems.append(f"write w{writer} v{k}: {result.error}")
        out["writes"] = count
    else:
        reads = 0
        while not os.path.exists(stop):
            reads += 1
            try:
                result = backend.read(file_path, 0, LINES + 10)
            except Exception as exc:  # the protocol returns errors; raising is a problem
                problems.append(f"read {reads} raised {type(exc).__name__}: {exc}")
                continue
            if result.error:
                problems.append(f"read {reads}: {result.error}")
                continue
            assert result.file_data is not None
            wrong = judge(result.file_data["content"])
            if wrong:
                problems.append(f"read {reads}: {wrong}")
        out["reads"] = reads
    memory.close()
    if store is not None:
        store.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
