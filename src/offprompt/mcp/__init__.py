"""MCP for offprompt: ``offprompt mcp proxy`` and ``offprompt mcp serve``.

Needs the optional extra ``offprompt[mcp]`` (the official ``mcp`` SDK); nothing else in
offprompt imports this package.

* :func:`run_proxy` (:class:`ProxyConfig`): put offprompt in front of any MCP server;
  large tool results go into the home's task memory and the client gets a reference
  plus the memory tools.
* :func:`run_serve` (:class:`ServeConfig`): the home's memory (stored outputs,
  conversation sessions, long-term memory) as an MCP server.
"""

from __future__ import annotations

import gc

import anyio

from offprompt.mcp._core import ACTIVITY, DEFAULT_MIN_TOKENS, CoreBinding, Offloaded
from offprompt.mcp.proxy import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT,
    REFERENCES_META_KEY,
    ProxyConfig,
    UpstreamError,
    run_proxy,
)
from offprompt.mcp.serve import ServeConfig, run_serve

__all__ = [
    "ACTIVITY",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_TIMEOUT",
    "REFERENCES_META_KEY",
    "CoreBinding",
    "Offloaded",
    "ProxyConfig",
    "ServeConfig",
    "UpstreamError",
    "main_proxy",
    "main_serve",
    "run_proxy",
    "run_serve",
]


def _exit_fast() -> None:
    # The SDK's pydantic models make the interpreter's last collections take seconds;
    # clients kill a server that is not gone 2 s after stdin closes. Everything is
    # closed by now, so the collector may skip what exists.
    gc.freeze()


def main_proxy(config: ProxyConfig) -> None:
    """Run :func:`run_proxy` on a fresh event loop (what the command line calls)."""
    try:
        anyio.run(run_proxy, config)
    finally:
        _exit_fast()


def main_serve(config: ServeConfig) -> None:
    """Run :func:`run_serve` on a fresh event loop (what the command line calls)."""
    try:
        anyio.run(run_serve, config)
    finally:
        _exit_fast()
