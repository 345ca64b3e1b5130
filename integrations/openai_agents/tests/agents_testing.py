"""Helpers the ported SDK tests share: run an agent the three ways the SDK's tests do."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Runner

__all__ = ["RUNNER_METHODS", "run_agent"]


def _run_sync(agent: Any, input_data: Any, **kwargs: Any) -> Any:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, input_data, **kwargs)
    finally:
        loop.close()


async def run_agent(method: str, agent: Any, input_data: Any, **kwargs: Any) -> Any:
    """Run ``agent`` through ``Runner.run``, ``run_sync`` (in a thread) or ``run_streamed``."""
    if method == "run":
        return await Runner.run(agent, input_data, **kwargs)
    if method == "run_sync":
        return await asyncio.to_thread(_run_sync, agent, input_data, **kwargs)
    result = Runner.run_streamed(agent, input_data, **kwargs)
    async for _event in result.stream_events():
        pass
    return result


RUNNER_METHODS = ["run", "run_sync", "run_streamed"]
