"""ConversationMemory: runs, windows against a brute-force reference, eviction, freshness."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from offprompt.conversation import ConversationMemory, Run, Window
from offprompt.errors import ValidationError
from offprompt.messages import Message, ToolCall
from offprompt.stores import BaseStore, InMemoryStore, SQLiteStore
from offprompt.tokens import TiktokenTokenizer


class CountingTokenizer:
    """The real tiktoken tokenizer, counting how often messages are tokenized."""

    def __init__(self) -> None:
        self.inner = TiktokenTokenizer()
        self.calls = 0

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def count_message(self, message: Message) -> int:
        self.calls += 1
        return self.inner.count_message(message)


def conversation(seed: int, runs: int) -> list[Message]:
    """A system prompt then runs; some runs call tools (assistant call + tool result)."""
    rng = random.Random(seed)
    words = ["alpha", "report", "42", "delta", "query", "x9", "table", "ok", "näive", "🚀"]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 60)))

    out = [Message.system("You are a careful assistant. " + text())]
    for r in range(runs):
        out.append(Message.user(text()))
        for c in range(rng.choice([0, 0, 1, 2])):
            call = ToolCall(id=f"r{r}c{c}", name="lookup", arguments={"q": text()})
            out.append(Message.assistant(tool_calls=[call]))
            out.append(Message.tool(text(), tool_call_id=call.id))
        out.append(Message.assistant(text()))
    return out


def reference_window(
    messages: list[Message], counts: list[int], budget: int
) -> tuple[list[Message], bool]:
    """Brute force: system prompt + the most newest whole runs whose total fits.

    When not even the newest run fits, an answered one is left out whole (issue 15
    item 9) and only a pending one is cut to its user message (overflow).
    """
    first_user = next(i for i, m in enumerate(messages) if m.role == "user")
    pinned = [i for i in range(first_user) if messages[i].role == "system"]
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    remaining = budget - sum(counts[i] for i in pinned)
    chosen = None
    for s in reversed(starts):
        if sum(counts[s:]) <= remaining:
            chosen = s
        else:
            break
    if chosen is None:
        last = messages[-1]
        if len(messages) - 1 > starts[-1] and last.role == "assistant" and not last.tool_calls:
            return [messages[i] for i in pinned], remaining < 0
        return [messages[i] for i in pinned] + [messages[starts[-1]]], True
    return [messages[i] for i in pinned] + messages[chosen:], False


@pytest.mark.parametrize("seed", range(6))
def test_window_matches_brute_force_and_keeps_the_rules(store: BaseStore, seed: int) -> None:
    tokenizer = TiktokenTokenizer()
    history = conversation(seed, runs=25)
    memory = ConversationMemory(store, f"s{seed}", tokenizer=tokenizer)
    # added in uneven batches, as an app would
    i = 0
    rng = random.Random(seed)
    while i < len(history):
        step = rng.randint(1, 5)
        memory.add_messages(history[i : i + step])
        i += step
    counts = [tokenizer.count_message(m) for m in history]
    for budget in (40, 150, 600, 2_000, 100_000):
        expected, overflow = reference_window(history, counts, budget)
        window = memory.window(budget)
        assert list(window) == expected
        assert window.overflow is overflow
        assert window.tokens == sum(tokenizer.count_message(m) for m in window)
        assert window.dropped == len(history) - len(window)
        if not overflow:
            assert window.tokens <= budget
        body = [m for m in window if m.role != "system"]
        assert not body or body[0].role == "user"
        called = {c.id for m in window for c in m.tool_calls}
        assert all(m.tool_call_id in called for m in window if m.role == "tool")


def test_reserve_shrinks_the_budget() -> None:
    memory = ConversationMemory()
    memory.add_messages(conversation(1, runs=10))
    full = memory.window(1_000)
    reserved = memory.window(1_000, reserve=400)
    assert reserved.budget == 600 and reserved.tokens <= 600
    assert len(reserved) < len(full)


def test_overflow_returns_system_and_newest_user_message_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = ConversationMemory()
    memory.add_messages(
        [
            Message.system("sys"),
            Message.user("old"),
            Message.assistant("a"),
            Message.user("newest " * 200),
            Message.assistant(tool_calls=[ToolCall(id="c1", name="lookup", arguments={})]),
            Message.tool("long " * 200, tool_call_id="c1"),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="offprompt.conversation"):
        first = memory.window(30)
        second = memory.window(30)
    # the newest run is still waiting for its answer: it is cut down to its user message
    assert [m.text for m in first] == ["sys", "newest " * 200]
    assert first.overflow and second.overflow and first.tokens > first.budget
    assert sum("not even the newest run fits" in r.message for r in caplog.records) == 1


def test_an_answered_run_is_whole_or_absent(store: BaseStore) -> None:
    """Issue 15 item 9: with room for one message, [user, assistant] gave the old question
    alone, which a model answers again. An answered run is sent whole or not at all."""
    memory = ConversationMemory(store, "answered")
    memory.add_messages([Message.system("sys"), Message.user("old question " * 20)])
    memory.add_messages([Message.assistant("its answer " * 20)])
    room = memory.window(10)
    assert [m.text for m in room] == ["sys"] and not room.overflow and room.dropped == 2
    # a tool call and its result are not an answer: that run is pending, cut to its user
    memory.add_messages(
        [
            Message.user("new question"),
            Message.assistant(tool_calls=[ToolCall(id="t", name="look", arguments={})]),
            Message.tool("result " * 50, tool_call_id="t"),
        ]
    )
    pending = memory.window(20)
    assert [m.text for m in pending] == ["sys", "new question"] and pending.overflow
    memory.add_messages([Message.assistant("done")])
    assert [m.text for m in memory.window(20)] == ["sys"]
    assert [m.text for m in memory.window(10_000)][-1] == "done"


def test_no_run_yet_gives_the_system_prompt_only() -> None:
    memory = ConversationMemory()
    memory.add_messages([Message.system("sys"), Message.assistant("Welcome!")])
    window = memory.window(100)
    assert [m.text for m in window] == ["sys"] and not window.overflow and window.dropped == 1
    assert memory.preamble() == memory.messages()
    assert memory.runs() == []


def test_unknown_session_is_empty() -> None:
    memory = ConversationMemory(InMemoryStore(), "never-seen")
    assert memory.messages() == [] and memory.runs() == [] and memory.preamble() == []
    window = memory.window(100)
    assert isinstance(window, Window) and list(window) == [] and not window.overflow
    assert memory.token_count() == 0 and len(memory) == 0


@pytest.mark.parametrize(
    ("max_tokens", "reserve"),
    [(0, 0), (-5, 0), (100, -1), (100, 100), (True, 0), (10.5, 0), ("100", 0)],
)
def test_bad_budget_is_a_validation_error(max_tokens: object, reserve: object) -> None:
    memory = ConversationMemory()
    with pytest.raises(ValidationError):
        memory.window(max_tokens, reserve=reserve)  # type: ignore[arg-type]


def test_non_message_is_refused_and_nothing_is_stored() -> None:
    memory = ConversationMemory()
    memory.add_message(Message.user("keep"))
    for bad in ({"role": "user", "content": "x"}, "plain text", [Message.user("ok"), 42]):
        with pytest.raises(ValidationError, match="Message"):
            memory.add_messages(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.replace([Message.user("ok"), None])  # type: ignore[list-item]
    assert [m.text for m in memory.messages()] == ["keep"]


def test_tokens_are_counted_once_on_add_never_on_window() -> None:
    tokenizer = CountingTokenizer()
    memory = ConversationMemory(tokenizer=tokenizer)
    history = conversation(3, runs=20)
    memory.add_messages(history)
    assert tokenizer.calls == len(history)
    for budget in (100, 1_000, 10_000):
        memory.window(budget)
    memory.runs()
    memory.token_count()
    assert tokenizer.calls == len(history)
    assert memory.token_count() == sum(TiktokenTokenizer().count_message(m) for m in history)


def test_runs_group_tool_traffic_and_report_the_preamble() -> None:
    memory = ConversationMemory()
    call = ToolCall(id="c1", name="calc", arguments={"x": 2})
    memory.add_messages(
        [
            Message.system("sys"),
            Message.assistant("Hi, ask me anything."),
            Message.user("2*2?"),
            Message.assistant(tool_calls=[call]),
            Message.tool("4", tool_call_id="c1"),
            Message.assistant("It is 4."),
            Message.user("thanks"),
        ]
    )
    assert [m.text for m in memory.preamble()] == ["sys", "Hi, ask me anything."]
    runs = memory.runs()
    assert len(runs) == 2 and all(isinstance(r, Run) for r in runs)
    first = runs[0]
    assert first.user is not None and first.user.text == "2*2?"
    assert first.answer is not None and first.answer.text == "It is 4."
    assert [m.role for m in first.tool_traffic] == ["assistant", "tool"]
    assert first.seqs == [2, 3, 4, 5] and first.start_seq == 2 and first.tokens > 0
    assert runs[1].answer is None


def test_max_runs_evicts_oldest_runs_from_the_store_and_keeps_the_preamble(
    store: BaseStore,
) -> None:
    memory = ConversationMemory(store, "s", max_runs=3)
    memory.add_message(Message.system("sys"))
    for i in range(6):
        memory.add_messages([Message.user(f"q{i}"), Message.assistant(f"a{i}")])
    assert [m.text for m in memory.messages()] == ["sys", "q3", "a3", "q4", "a4", "q5", "a5"]
    assert store.count("s") == 7
    assert [m.text for m in memory.window(10_000)] == ["sys", "q3", "a3", "q4", "a4", "q5", "a5"]
    with pytest.raises(ValidationError):
        ConversationMemory(store, "s", max_runs=0)


def test_clear_and_replace(store: BaseStore) -> None:
    memory = ConversationMemory(store, "s")
    memory.add_messages([Message.user("a"), Message.assistant("b")])
    memory.replace([Message.system("new sys"), Message.user("c")])
    assert [m.text for m in memory.messages()] == ["new sys", "c"]
    assert [m.text for m in memory.window(1_000)] == ["new sys", "c"]
    memory.clear()
    assert memory.messages() == [] and list(memory.window(1_000)) == []


def test_a_second_process_sees_appends_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    writer = ConversationMemory(SQLiteStore(path), "shared")
    reader = ConversationMemory(
        SQLiteStore(path), "shared"
    )  # its own connection, as another process
    writer.add_messages([Message.system("sys"), Message.user("q1"), Message.assistant("a1")])
    assert [m.text for m in reader.window(1_000)] == ["sys", "q1", "a1"]
    writer.add_messages([Message.user("q2"), Message.assistant("a2")])
    reader.add_messages([Message.user("q3")])  # interleaved writers
    assert [m.text for m in reader.window(1_000)] == ["sys", "q1", "a1", "q2", "a2", "q3"]
    assert [m.text for m in writer.window(1_000)] == ["sys", "q1", "a1", "q2", "a2", "q3"]
    writer.replace([Message.user("fresh")])
    assert [m.text for m in reader.window(1_000)] == ["fresh"]
    assert reader.token_count() == writer.token_count()


def test_unicode_and_a_1mb_message_round_trip_through_memory(tmp_path: Path) -> None:
    memory = ConversationMemory(SQLiteStore(tmp_path / "m.db"), "ü-🚀")
    big = "ünïcødé 🚀 " * 100_000
    memory.add_messages([Message.user(big), Message.assistant("ok ✓")])
    again = ConversationMemory(SQLiteStore(tmp_path / "m.db"), "ü-🚀")
    assert [m.text for m in again.messages()] == [big, "ok ✓"]
    window = again.window(100)
    assert not window.overflow and list(window) == []  # answered: whole or not at all
    again.add_messages([Message.user(big)])
    window = again.window(100)
    assert window.overflow and [m.text for m in window] == [big]


async def test_async_twins(store: BaseStore) -> None:
    memory = ConversationMemory(store, "s")
    await memory.aadd_message(Message.system("sys"))
    await memory.aadd_messages([Message.user("q"), Message.assistant("a")])
    assert [m.text for m in await memory.amessages()] == ["sys", "q", "a"]
    assert len(await memory.aruns()) == 1
    assert [m.text for m in await memory.awindow(1_000)] == ["sys", "q", "a"]
    assert await memory.atoken_count() == memory.token_count()
    with pytest.raises(ValidationError):
        await memory.awindow(0)
    await memory.areplace([Message.user("z")])
    assert [m.text for m in await memory.amessages()] == ["z"]
    await memory.aclear()
    assert await memory.amessages() == []
