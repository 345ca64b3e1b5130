"""select_window, the pure window choice, against a brute force over every run suffix."""

from __future__ import annotations

import random

import pytest

from offprompt.conversation import ConversationMemory
from offprompt.conversation.window import RunIndex, WindowPlan, select_window
from offprompt.messages import Message
from offprompt.stores import InMemoryStore


def history(rng: random.Random) -> tuple[list[str], list[int]]:
    """Roles and token counts: a preamble (system, maybe a greeting), then runs."""
    roles = ["system"] * rng.randint(0, 2) + (["assistant"] if rng.random() < 0.3 else [])
    for _ in range(rng.randint(0, 12)):
        roles.append("user")
        for _ in range(rng.choice([0, 0, 1, 2])):
            roles += ["assistant", "tool"]
        if rng.random() < 0.8:
            roles.append("assistant")
    return roles, [rng.randint(1, 80) for _ in roles]


def brute_force(
    roles: list[str],
    counts: list[int],
    budget: int,
    *,
    answered: bool,
    extra: int,
    first_run: int,
    overflow: str,
) -> tuple[list[int], bool]:
    """Positions kept and the overflow flag, by trying every candidate run suffix."""
    starts = [i for i, r in enumerate(roles) if r == "user"]
    first_user = starts[0] if starts else len(roles)
    pinned = [i for i in range(first_user) if roles[i] == "system"]
    remaining = budget - extra - sum(counts[i] for i in pinned)
    candidates = starts[first_run:]
    fitting = [s for s in candidates if sum(counts[s:]) <= remaining]
    if fitting:
        return pinned + list(range(min(fitting), len(roles))), False
    if candidates and not answered:
        newest = starts[-1]
        body = [newest] if overflow == "question" else list(range(newest, len(roles)))
        return pinned + body, True
    return pinned, remaining < 0


@pytest.mark.parametrize("overflow", ["question", "run"])
@pytest.mark.parametrize("seed", range(40))
def test_select_window_matches_brute_force(seed: int, overflow: str) -> None:
    rng = random.Random(seed)
    roles, counts = history(rng)
    index = RunIndex.of(roles, counts)
    runs = roles.count("user")
    for budget in (1, 30, 120, 400, 5_000):
        answered = rng.random() < 0.5
        extra = rng.choice([0, 0, 25])
        first_run = rng.randint(0, runs) if runs and rng.random() < 0.3 else 0
        asked: list[bool] = []

        def newest_answered(answered: bool = answered, asked: list[bool] = asked) -> bool:
            asked.append(True)
            return answered

        plan = select_window(
            index,
            budget,
            newest_answered=newest_answered,
            extra_tokens=extra,
            first_run=first_run,
            overflow=overflow,  # type: ignore[arg-type]
        )
        kept, flag = brute_force(
            roles,
            counts,
            budget,
            answered=answered,
            extra=extra,
            first_run=first_run,
            overflow=overflow,
        )
        assert [*plan.pinned, *plan.body] == kept
        assert plan.overflow is flag
        assert plan.tokens == sum(counts[i] for i in kept) + extra
        assert plan.dropped == len(roles) - len(kept)
        assert plan.budget == budget
        if not flag:
            assert plan.tokens <= budget
        # The store is read only when the newest run does not fit.
        fits = any(
            sum(counts[s:]) <= budget - extra - sum(counts[i] for i in plan.pinned)
            for s in [i for i, r in enumerate(roles) if r == "user"][first_run:]
        )
        assert bool(asked) is (not fits and first_run < runs)


def test_an_empty_history_keeps_nothing() -> None:
    plan = select_window(RunIndex(), 100, newest_answered=lambda: False)
    assert plan == WindowPlan(
        pinned=[], start=0, end=0, tokens=0, budget=100, dropped=0, overflow=False
    )


def test_the_memory_window_is_select_window_over_its_index() -> None:
    messages = [Message.system("Be brief.")]
    for i in range(30):
        messages += [Message.user(f"question {i} " * (i % 7 + 1)), Message.assistant("ok " * i)]
    memory = ConversationMemory(InMemoryStore())
    memory.add_messages(messages)
    counts = [memory.tokenizer.count_message(m) for m in messages]
    index = RunIndex.of([m.role for m in messages], counts)
    for budget in (10, 200, 1_000, 10_000):
        plan = select_window(index, budget, newest_answered=lambda: True)
        window = memory.window(budget)
        assert list(window) == [messages[p] for p in [*plan.pinned, *plan.body]]
        assert (window.tokens, window.dropped, window.overflow) == (
            plan.tokens,
            plan.dropped,
            plan.overflow,
        )
