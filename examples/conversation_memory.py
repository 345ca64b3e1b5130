"""Conversation memory, offline: a SQLite session reopened, a window, runs, a summary.

Run: python examples/conversation_memory.py   (writes under $OFFPROMPT_HOME or ./.offprompt)
"""

from __future__ import annotations

from offprompt.conversation import ConversationMemory, SummaryConversationMemory
from offprompt.messages import Message, ToolCall
from offprompt.stores import SQLiteStore, default_path


def main() -> None:
    path = default_path()
    print(f"store: {path}")

    # 1. A session in the embedded SQLite store.
    memory = ConversationMemory(SQLiteStore(path), "demo-session")
    memory.clear()
    memory.add_message(Message.system("You are a terse assistant for the ops team."))
    call = ToolCall(id="call-1", name="disk_usage", arguments={"host": "db-1"})
    memory.add_messages(
        [
            Message.user("How full is the disk on db-1?"),
            Message.assistant(tool_calls=[call]),
            Message.tool('{"used": "91%"}', tool_call_id="call-1", name="disk_usage"),
            Message.assistant("db-1 is at 91%."),
        ]
    )
    for i in range(1, 6):
        memory.add_messages(
            [
                Message.user(f"Status of job {i}? " + "details " * 40),
                Message.assistant(f"Job {i} finished."),
            ]
        )
    print(f"stored {len(memory)} messages, {memory.token_count()} tokens")

    # 2. Reopen: a new process would see the same thing.
    reopened = ConversationMemory(SQLiteStore(path), "demo-session")
    runs = reopened.runs()
    print(f"reopened: {len(runs)} runs; first run: user={runs[0].user.text!r}, ")  # type: ignore[union-attr]
    print(
        f"  tool traffic={[m.role for m in runs[0].tool_traffic]}, answer={runs[0].answer.text!r}"
    )  # type: ignore[union-attr]

    # 3. A token-budgeted window: system prompt kept, whole runs only.
    window = reopened.window(300, reserve=50)
    print(f"window: {window!r}")
    for message in window:
        print(f"  {message.role:9} {message.text[:60]!r}")

    # 4. A running summary of older runs (offline extractive summarizer by default).
    summary = SummaryConversationMemory(SQLiteStore(path), "demo-summary", offset=1)
    summary.clear()
    summary.add_messages(
        [
            Message.user("Remember: the deploy window is Tuesday 14:00 UTC."),
            Message.assistant("Noted: Tuesday 14:00 UTC."),
        ]
    )
    summary.add_messages(
        [Message.user("Who is on call?"), Message.assistant("Dana is on call this week.")]
    )
    print(f"summary: {summary.summary!r}")
    print(f"view roles: {[m.role for m in summary.view()]} (raw runs kept: {len(summary.runs())})")


if __name__ == "__main__":
    main()
