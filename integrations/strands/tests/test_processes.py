"""Another process writes, this one reads: references and sessions are not per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from offprompt_strands import OffpromptSessionRepository, OffpromptStorage

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from strands.types.content import ContentBlock
    from strands.types.session import Session, SessionAgent, SessionMessage, SessionType
    from offprompt_strands import OffpromptSessionRepository, OffpromptStorage

    with OffpromptStorage(path=sys.argv[1]) as storage:
        ref = asyncio.run(storage.store("tooluse_child_0", bytes(range(256)) * 64, "image/png"))
    with OffpromptSessionRepository(path=sys.argv[2]) as repo:
        repo.create_session(Session("from-child", SessionType.AGENT))
        repo.create_agent("from-child", SessionAgent("a", {}, {}))
        message = {"role": "user", "content": [ContentBlock(text="written by the child")]}
        repo.create_message("from-child", "a", SessionMessage.from_message(message, 0))
    print(ref)
    """
)


def test_a_block_and_a_session_written_by_another_process(tmp_path: Path) -> None:
    memory_dir, db = tmp_path / "tm", tmp_path / "memory.db"
    with OffpromptStorage(path=memory_dir) as storage:  # open here while the child writes
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(memory_dir), str(db)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        reference = done.stdout.strip().splitlines()[-1]
        assert storage.retrieve_sync(reference) == (bytes(range(256)) * 64, "image/png")
    with OffpromptSessionRepository(path=db) as repo:
        [message] = repo.list_messages("from-child", "a")
        assert message.message["content"] == [{"text": "written by the child"}]
