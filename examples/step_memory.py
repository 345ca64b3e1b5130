"""An agent loop recorded as steps, persisted to SQLite, reloaded after a "restart",
continued, replayed and turned back into model messages.

The "model" is a scripted list of replies (no LLM, no network); the tool is real Python.
Run: python examples/step_memory.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.console import Console

from offprompt.steps import (
    ActionStep,
    AgentMemory,
    FinalAnswerStep,
    PlanningStep,
    StepError,
    TaskStep,
    Timing,
    TokenUsage,
    ToolCall,
)
from offprompt.stores import SQLiteStore

SCRIPT = [  # what a code agent's model would answer, one reply per step
    ("Thought: I need the prices first.", "prices = {'apple': 1.25, 'pear': 0.8}\nprint(prices)"),
    (
        "Thought: now the total for 3 apples and 2 pears.",
        "total = 3 * prices['apple'] + 2 * price['pear']",
    ),
    ("Thought: fix the typo.", "total = 3 * prices['apple'] + 2 * prices['pear']\nprint(total)"),
    ("Thought: done.", "final_answer(total)"),
]


class FinalAnswer(Exception):
    pass


def run_code(code: str, namespace: dict[str, object]) -> str:
    """The 'python_interpreter' tool: run code, return what it printed."""
    printed: list[str] = []

    def final_answer(value: object) -> None:
        raise FinalAnswer(value)

    namespace.update(
        print=lambda *a: printed.append(" ".join(map(str, a))), final_answer=final_answer
    )
    exec(code, namespace)  # the example's own scripted code, nothing from outside
    return "\n".join(printed)


def agent_step(memory: AgentMemory, number: int, namespace: dict[str, object]) -> bool:
    """One think-act-observe step, appended to memory (and so to the store)."""
    thought, code = SCRIPT[number - 1]
    step = ActionStep(
        step_number=number,
        timing=Timing(start_time=time.time()),
        model_input_messages=memory.to_messages(),
        model_output=f"{thought}\n<code>\n{code}\n</code>",
        code_action=code,
        tool_calls=[ToolCall(id=f"call_{number}", name="python_interpreter", arguments=code)],
        token_usage=TokenUsage(input_tokens=200 + 50 * number, output_tokens=30),
    )
    try:
        step.observations = run_code(code, namespace) or "(no output)"
    except FinalAnswer as answer:
        step.action_output, step.is_final_answer = answer.args[0], True
        step.observations = f"Final answer: {answer.args[0]}"
    except Exception as exc:  # the model sees the error and retries
        step.error = StepError.from_exception(exc)
    step.timing.end_time = time.time()
    memory.add_step(step, run="shopping")
    return step.is_final_answer


def main() -> None:
    console = Console(width=100)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agent.db"

        # --- process 1: start the run, record two steps, then "crash"
        store = SQLiteStore(db)
        memory = AgentMemory("You are a code agent. Answer with python code.")
        memory.callbacks.register(
            ActionStep,
            lambda step, run: console.print(
                f"[dim]callback ({run}): step {step.step_number} recorded[/dim]"
            ),
        )
        memory.attach(store, "run-1", session_id="user-7")  # every append is written as it happens
        memory.add_step(TaskStep(task="What do 3 apples and 2 pears cost?"))
        memory.add_step(
            PlanningStep(
                plan="1. look up prices\n2. compute the total\n3. answer",
                timing=Timing(start_time=time.time(), end_time=time.time()),
            )
        )
        namespace: dict[str, object] = {}
        agent_step(memory, 1, namespace)
        agent_step(memory, 2, namespace)  # fails with a NameError, recorded as the step's error
        store.close()
        console.print(f"process 1 stopped after {len(memory.steps)} steps\n")

        # --- process 2: reload the run and continue where it stopped
        store = SQLiteStore(db)
        resumed = AgentMemory.load(store, "run-1", session_id="user-7", attach=True)
        console.print(f"reloaded {len(resumed.steps)} steps from {db.name}")
        namespace = {}
        exec_ok = [s for s in resumed.steps if isinstance(s, ActionStep) and s.error is None]
        for step in exec_ok:  # rebuild the interpreter state from the successful code
            run_code(step.code_action or "", namespace)
        number = len([s for s in resumed.steps if isinstance(s, ActionStep)]) + 1
        while not agent_step(resumed, number, namespace):
            number += 1
        final = resumed.steps[-1]
        assert isinstance(final, ActionStep) and final.is_final_answer
        resumed.add_step(FinalAnswerStep(final.action_output))
        store.close()

        # --- process 3: read the finished run and look at it
        store = SQLiteStore(db)
        done = AgentMemory.load(store, "run-1", session_id="user-7")
        done.replay(console=console)
        console.print("\nThe run as model input (summary mode):")
        for message in done.to_messages(summary_mode=True):
            console.print(f"  {message.role:9} {message.text[:70]!r}", markup=False)
        console.print(
            "\nThe code the agent ran, as one script:\n" + done.return_full_code(), markup=False
        )
        console.print(f"\nFinal answer: {final.action_output}")
        assert round(final.action_output, 2) == 5.35
        store.close()


if __name__ == "__main__":
    main()
