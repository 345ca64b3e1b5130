"""A long-lived process of the race tests (issue 41): one TaskMemory, commands on stdin.

    python race_worker.py TARGET

``TARGET`` is ``path:DIR`` or ``pg:DSN`` (as in ``shared_worker.py``). Each stdin line
is a JSON command, answered by one JSON line on stdout:

* ``{"op": "store", "ns": NS, "seed": S, "lines": N}``: store :func:`version` text.
* ``{"op": "delete", "ns": NS}``: delete the namespace.
* ``{"op": "read", "ns": NS}``: the namespace's whole text (its digest) or the error.

With ``RACE_SLOW_SWEEP_S`` set, every sweep of deleted data first sleeps that long
(:func:`slow_sweeps`).

Errors are answers (``{"error": TYPE, "message": ...}``), never a dead process, so a test
can run many rounds through one pair of processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from shared_worker import open_memory


def version(namespace: str, seed: int, lines: int) -> str:
    """The text a store of ``seed`` writes: distinct for every (namespace, seed)."""
    return "".join(f"{namespace} v{seed} line {i} " + "x" * 60 + "\n" for i in range(lines))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def answer(memory: Any, command: dict[str, Any]) -> dict[str, Any]:
    from offprompt.artifacts import TextArtifact

    namespace = command["ns"]
    if command["op"] == "store":
        text = version(namespace, command["seed"], command["lines"])
        memory.store_artifact(namespace, TextArtifact(value=text, name=namespace))
        return {"stored": digest(text)}
    if command["op"] == "delete":
        return {"deleted": memory.delete(namespace)}
    if command["op"] == "read":
        if not memory.has_namespace(namespace):
            return {"absent": True}
        texts = [str(a.value) for a in memory.load_artifacts(namespace).value]
        return {"digests": [digest(t) for t in texts]}
    raise ValueError(f"unknown op {command['op']!r}")


def slow_sweeps(seconds: float) -> None:
    """Fault injection: every sweep of a deleted namespace's data sleeps ``seconds``
    first, as on a slow disk, so a store can land between the sweep's look at the
    metadata and its deletes (the window the issue's lost bytes came through)."""
    import time

    from offprompt.task_memory.storage import BlobArtifactStorage, TextArtifactStorage

    for cls in (TextArtifactStorage, BlobArtifactStorage):
        original = cls.discard

        def slow(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            time.sleep(seconds)
            _original(self, *args, **kwargs)

        cls.discard = slow  # type: ignore[method-assign]


def main(target: str) -> int:
    if os.environ.get("RACE_SLOW_SWEEP_S"):
        slow_sweeps(float(os.environ["RACE_SLOW_SWEEP_S"]))
    memory, store = open_memory(target)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            reply = answer(memory, command)
        except Exception as exc:  # every failure is the test's to judge
            reply = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(reply), flush=True)
    memory.close()
    if store is not None:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
