"""A user preference remembered across sessions through long-term memory (offline).

Session 1 and session 2 run as two separate processes on the same on-disk store (the
embedded Qdrant engine under a directory). In session 1 the user states a preference;
each finished turn is written as DB-GPT does (the write template turns question and
answer into the stored observation), flowing sensory -> short-term -> long-term, and the
session flushes its buffers when it ends. Session 2 starts cold, reads the most relevant
memories for a new question and puts them into the prompt variable
``most_recent_memories``. No model is called: the prompt is printed instead.

Run: ``python examples/longterm_memory.py``
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from offprompt.longterm import (
    HybridMemory,
    LongTermMemory,
    MemoryFragment,
    Scope,
    format_memories,
    render_write_memory,
)
from offprompt.vectors import QdrantVectorStore

USER = Scope(user="alice")
PROMPT = "Relevant memories:\n{most_recent_memories}\n\nUser: {question}\nAssistant:"


def session(directory: str, number: int) -> None:
    store = QdrantVectorStore(path=directory, collection="agent_memory")
    memory = HybridMemory(long_term=LongTermMemory(store, scope=USER))
    if number == 1:
        turns = [
            ("Book me a flight to Lisbon.", "Done: TP 1351 on Friday."),
            ("By the way, I always want a window seat, never the aisle.", "Noted, window seats."),
            ("What's the weather there?", "Sunny, 24 degrees."),
        ]
        for question, answer in turns:
            memory.write(
                MemoryFragment(observation=render_write_memory(question, answer), scope=USER)
            )
        saved = memory.flush()  # the session ends: buffered fragments go to long-term memory
        print(f"session 1: stored {memory.long_term.count()} memories ({len(saved)} at flush)")
    else:
        question = "Pick a seat for my flight to Oslo."
        found = memory.read(question, k=2)
        prompt = PROMPT.format(
            most_recent_memories=format_memories(found, "- {observation}"), question=question
        )
        print("session 2 prompt:\n" + prompt)
        if "window seat" not in prompt:
            raise SystemExit("session 2 did not recall the seat preference")
    store.close()


def main() -> None:
    if len(sys.argv) == 3:
        session(sys.argv[1], int(sys.argv[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = str(Path(tmp) / "memory")
        for number in (1, 2):  # two independent processes, one store on disk
            subprocess.run(
                [sys.executable, __file__, directory, str(number)], check=True, env=os.environ
            )


if __name__ == "__main__":
    main()
