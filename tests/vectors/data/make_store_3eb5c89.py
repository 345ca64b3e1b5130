"""How ``store_3eb5c89.tar.xz`` was made: run by the interpreter of a checkout at 3eb5c89.

python make_store_3eb5c89.py OUT && tar -cJf store_3eb5c89.tar.xz -C OUT .
"""

import sys
from datetime import datetime, timezone

from offprompt.longterm import LongTermMemory, MemoryFragment, Scope
from offprompt.vectors import QdrantVectorStore, VectorRecord


def main(out: str) -> None:
    T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
    FRAGMENTS = [
        ("alice", "Caroline went camping with her kids at the lake in June."),
        ("alice", "Caroline's sister Maya is a nurse in Lyon."),
        ("alice", "Melanie paints sunsets on weekends."),
        ("bob", "Bob is allergic to shellfish."),
    ]
    with QdrantVectorStore(path=out) as store:
        ltm = LongTermMemory(store, clock=lambda: T0)
        for user, text in FRAGMENTS:
            ltm.write(
                MemoryFragment.build(
                    text, now=T0, importance=0.5, scope=Scope(user=user), meta={"v": "3eb5c89"}
                )
            )
        store.upsert(
            "docs",
            [
                VectorRecord(
                    id="log-1",
                    text="ERROR disk full on node-7 while writing blk_42",
                    payload={"seq": 1},
                ),
                VectorRecord(
                    id="log-2", text="INFO Receiving block blk_99 from 10.0.0.5", payload={"seq": 2}
                ),
                VectorRecord(
                    id="log-3",
                    text="WARN Camping reservations service timed out",
                    payload={"seq": 3},
                ),
            ],
        )


if __name__ == "__main__":
    main(sys.argv[1])
