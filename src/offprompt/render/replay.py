"""Replay of an agent run's steps in the terminal (``AgentMemory.replay``), with rich.

The steps are read by their ``type`` discriminator and fields, so this renderer needs
nothing of step memory but its data, and step memory can call it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from offprompt.messages import Message

__all__ = ["replay_steps"]


def replay_steps(
    system_prompt: str,
    steps: Iterable[Any],
    *,
    detailed: bool = False,
    console: Console | None = None,
) -> None:
    """Print the system prompt and each step as smolagents' ``replay`` does.

    Args:
        system_prompt: The run's system prompt.
        steps: The run's steps (``MemoryStep`` objects), in order.
        detailed: Also print each step's model input messages.
        console: Where to print (a new ``Console`` by default).
    """
    # Text objects, never markup strings: step contents may hold "[/...]" sequences.
    out = console if console is not None else Console()
    out.print(Text("Replaying the agent's steps:", style="bold"))
    out.print(Panel(Text(system_prompt), title="System prompt", title_align="left"))
    for step in steps:
        kind = getattr(step, "type", None)
        if kind == "TaskStep":
            images = f"{len(step.task_images)} image(s)" if step.task_images else ""
            out.print(
                Panel(
                    Text(step.task, style="bold"),
                    title="New task",
                    subtitle=images,
                    title_align="left",
                )
            )
        elif kind == "ActionStep":
            _action_step(out, step, detailed=detailed)
        elif kind == "PlanningStep":
            out.print(Rule(Text("Planning step", style="bold")))
            if detailed and step.model_input_messages:
                _input_messages(out, step.model_input_messages)
            out.print(Panel(Text(step.plan), title="Plan", title_align="left"))
            out.print(_footer(step.timing, step.token_usage))
        elif kind == "FinalAnswerStep":
            out.print(Text(f"Final answer: {step.dict()['output']}", style="bold green"))


def _input_messages(out: Console, items: Sequence[Message]) -> None:
    dumped = "\n".join(json.dumps(m.to_dict(), indent=2, ensure_ascii=False) for m in items)
    out.print(Panel(Text(dumped, style="dim"), title="Model input messages", title_align="left"))


def _footer(timing: Any, usage: Any) -> Text:
    parts = []
    if timing is not None and timing.duration is not None:
        parts.append(f"Duration {timing.duration:.2f} s")
    if usage is not None:
        parts.append(
            f"Input tokens: {usage.input_tokens:,} | Output tokens: {usage.output_tokens:,}"
        )
    return Text(" | ".join(parts), style="dim")


def _action_step(out: Console, step: Any, *, detailed: bool) -> None:
    """One ``ActionStep``: its input (when ``detailed``), output, action and outcome."""
    out.print(Rule(Text(f"Step {step.step_number}", style="bold")))
    if detailed and step.model_input_messages:
        _input_messages(out, step.model_input_messages)
    if step.model_output is not None:
        text = (
            step.model_output
            if isinstance(step.model_output, str)
            else json.dumps(step.model_output)
        )
        out.print(Panel(Text(text), title="Agent output", title_align="left"))
    if step.code_action is not None:
        out.print(Panel(Text(step.code_action), title="Executing code", title_align="left"))
    elif step.tool_calls:
        calls = "\n".join(
            f"{tc.name}({json.dumps(tc.arguments, ensure_ascii=False)})  [{tc.id}]"
            for tc in step.tool_calls
        )
        out.print(Panel(Text(calls), title="Tool calls", title_align="left"))
    out.print(Group(*_outcome(step)))


def _outcome(step: Any) -> list[Any]:
    """What an ``ActionStep`` came to: observations, images, error, final answer, footer."""
    body: list[Any] = []
    if step.observations is not None:
        body.append(Text("Observations: ", style="bold") + Text(step.observations))
    if step.observations_images:
        body.append(Text(", ".join(i.to_text() for i in step.observations_images), style="italic"))
    if step.error is not None:
        body.append(Text(f"Error ({step.error.type}): {step.error.message}", style="bold red"))
    if step.is_final_answer:
        body.append(Text(f"Final answer: {step.dict()['action_output']}", style="bold green"))
    body.append(_footer(step.timing, step.token_usage))
    return body
