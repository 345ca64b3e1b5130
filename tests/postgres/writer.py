"""A writer process of the multi-host tests: appends tagged batches to one session.

Run as ``python writer.py --dsn DSN --session S --host h0 --log LOG [...]``. Batch ``b``
holds ``--size`` messages whose text is ``"{host}:{b}:{i}"`` and is appended with the
idempotency key ``"{host}:{b}"``. After the store acknowledges a batch the writer writes
one JSON line ``{"key", "batch", "seqs"}`` to ``LOG``: the log is what the writer was
told, so a test can check that nothing acknowledged was lost. A writer started again with
the same log skips the batches it logged and sends the rest, the one it was in the middle
of included, with the same keys.

An error from the store (connection lost, server restarting, link cut), opening it
included, is retried (an append with the same key) until ``--deadline`` seconds have passed. On exit the writer prints one JSON
line: its client address as the server saw it, and the errors it retried.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import psycopg

from offprompt.errors import StorageError
from offprompt.messages import Message
from offprompt.stores import PostgresStore

T = TypeVar("T")


def logged_keys(log: Path) -> set[str]:
    if not log.exists():
        return set()
    return {json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()}


def client_address(dsn: str) -> str | None:
    """The address the server sees this process connect from (proves the path taken)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT host(inet_client_addr())").fetchone()
    return None if row is None else row[0]


def retried(action: Callable[[], T], errors: list[str], give_up: float) -> T:
    """``action()``, retried while the server is unreachable; each error is recorded."""
    while True:
        try:
            return action()
        except (StorageError, psycopg.OperationalError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
            if time.monotonic() > give_up:
                raise
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--host", required=True, help="tag written into every message")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between batches")
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument(
        "--die-after-commit",
        type=int,
        default=None,
        metavar="B",
        help="SIGKILL this process once batch B is acknowledged, before logging it",
    )
    args = parser.parse_args(argv)

    done = logged_keys(args.log)
    errors: list[str] = []
    give_up = time.monotonic() + args.deadline
    address = retried(partial(client_address, args.dsn), errors, give_up)

    store = retried(partial(PostgresStore, args.dsn, max_size=2, timeout=10), errors, give_up)
    with args.log.open("a", encoding="utf-8") as log:
        for batch in range(args.batches):
            key = f"{args.host}:{batch}"
            if key in done:
                continue
            messages = [Message.user(f"{key}:{i}") for i in range(args.size)]
            append = partial(store.append, args.session, messages, [1] * args.size)
            seqs = retried(partial(append, idempotency_key=key), errors, give_up)
            if batch == args.die_after_commit:
                os.kill(os.getpid(), signal.SIGKILL)
            log.write(json.dumps({"key": key, "batch": batch, "seqs": seqs}) + "\n")
            log.flush()
            if args.pause:
                time.sleep(args.pause)
    store.close()
    print(json.dumps({"client_addr": address, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
