"""SummaryConversationMemory: folding, failure and retry, persistence, the view and window."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from offprompt.conversation import SUMMARY_STATE_KEY, SummaryConversationMemory
from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.stores import BaseStore, SQLiteStore
from offprompt.summarizers import RunLike


class ScriptedSummarizer:
    """A deterministic stand-in for an LLM summarizer; fails on the calls it is told to."""

    def __init__(self, fail_calls: Sequence[int] = ()) -> None:
        self.fail_calls = set(fail_calls)
        self.calls: list[tuple[str | None, list[str]]] = []

    def summarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        users = [run.messages[0].text for run in runs]
        self.calls.append((previous, users))
        if len(self.calls) in self.fail_calls:
            raise RuntimeError("model unavailable")
        return " | ".join(([previous] if previous else []) + users)

    async def asummarize(self, previous: str | None, runs: Sequence[RunLike]) -> str:
        return "async:" + self.summarize(previous, runs)


def add_runs(memory: SummaryConversationMemory, names: Sequence[str]) -> None:
    for name in names:
        memory.add_messages([Message.user(name), Message.assistant(f"answer to {name}")])


def test_older_runs_fold_into_the_summary_and_raw_runs_stay(store: BaseStore) -> None:
    summarizer = ScriptedSummarizer()
    memory = SummaryConversationMemory(store, "s", summarizer=summarizer, offset=2)
    memory.add_message(Message.system("sys"))
    add_runs(memory, ["q1", "q2", "q3", "q4"])
    assert memory.summary == "q1 | q2"
    view = memory.view()
    assert [m.role for m in view] == ["system", "system", "user", "assistant", "user", "assistant"]
    assert view[0].text == "sys" and "q1 | q2" in view[1].text
    assert [m.text for m in view[2:] if m.role == "user"] == ["q3", "q4"]
    assert len(memory.runs()) == 4 and len(memory.messages()) == 9  # nothing raw is lost
    # each run is folded exactly once
    assert [users for _, users in summarizer.calls] == [["q1"], ["q2"]]


def test_a_failing_summarizer_keeps_the_old_summary_and_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summarizer = ScriptedSummarizer(fail_calls=[2, 3])
    memory = SummaryConversationMemory(summarizer=summarizer, offset=1)
    add_runs(memory, ["q1", "q2"])
    assert memory.summary == "q1"
    with caplog.at_level(logging.ERROR, logger="offprompt.conversation"):
        add_runs(memory, ["q3"])  # folding q2 fails
        # the view retries and fails again: q2 is not lost, it stays in the view verbatim
        assert [m.text for m in memory.view() if m.role == "user"] == ["q2", "q3"]
    assert memory.summary == "q1"
    assert sum("summarizer failed" in r.message for r in caplog.records) == 2
    add_runs(memory, ["q4"])  # the summarizer is back: q2 and q3 are folded together
    assert memory.summary == "q1 | q2 | q3"
    assert [m.text for m in memory.view() if m.role == "user"] == ["q4"]
    assert [users for _, users in summarizer.calls] == [["q1"], ["q2"], ["q2"], ["q2", "q3"]]


def test_summary_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = SummaryConversationMemory(
        SQLiteStore(path), "s", summarizer=ScriptedSummarizer(), offset=1
    )
    add_runs(first, ["q1", "q2", "q3"])
    assert first.summary == "q1 | q2"
    summarizer = ScriptedSummarizer()
    second = SummaryConversationMemory(SQLiteStore(path), "s", summarizer=summarizer, offset=1)
    assert second.summary == "q1 | q2"
    assert [m.text for m in second.view() if m.role == "user"] == ["q3"]
    assert summarizer.calls == []  # nothing refolded
    state = SQLiteStore(path).get_state("s", SUMMARY_STATE_KEY)
    assert state["text"] == "q1 | q2" and isinstance(state["next_seq"], int)


def test_window_over_the_view_always_keeps_system_and_summary() -> None:
    memory = SummaryConversationMemory(summarizer=ScriptedSummarizer(), offset=3)
    memory.add_message(Message.system("sys"))
    add_runs(memory, [f"q{i} " + "word " * 50 for i in range(6)])
    full = memory.window(10_000)
    assert [m.role for m in full[:2]] == ["system", "system"]
    assert sum(m.role == "user" for m in full) == 3
    small = memory.window(full.tokens - 10)
    assert [m.role for m in small[:2]] == ["system", "system"]
    assert sum(m.role == "user" for m in small) == 2 and small.tokens <= small.budget
    assert small[2].role == "user"


def test_default_extractive_summarizer_works_offline() -> None:
    memory = SummaryConversationMemory(offset=1)
    memory.add_messages(
        [Message.user("The launch code is 7431."), Message.assistant("Noted, 7431.")]
    )
    memory.add_messages([Message.user("What colour is the sky?"), Message.assistant("Blue.")])
    assert memory.summary is not None and "7431" in memory.summary


async def test_async_path_uses_asummarize() -> None:
    memory = SummaryConversationMemory(summarizer=ScriptedSummarizer(), offset=1)
    for name in ["q1", "q2"]:
        await memory.aadd_messages([Message.user(name), Message.assistant("a")])
    assert memory.summary == "async:q1"
    view = await memory.aview()
    assert "async:q1" in view[0].text
    window = await memory.awindow(1_000)
    assert [m.role for m in window] == ["system", "user", "assistant"]


def test_offset_must_be_a_non_negative_int() -> None:
    with pytest.raises(ValidationError):
        SummaryConversationMemory(offset=-1)
    with pytest.raises(ValidationError):
        SummaryConversationMemory(offset="2")  # type: ignore[arg-type]


def test_view_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """view() has no budget: folded runs are in the summary, not 'left out to fit'."""
    memory = SummaryConversationMemory(summarizer=ScriptedSummarizer(), offset=1)
    add_runs(memory, ["q1", "q2", "q3", "q4"])
    with caplog.at_level(logging.DEBUG, logger="offprompt"):
        view = memory.view()
        memory.view()
    assert [m.text for m in view if m.role == "user"] == ["q4"]
    assert caplog.records == []
