"""``offprompt mcp proxy|serve``: the MCP side, loaded only when the command runs.

``offprompt.mcp`` needs the ``mcp`` package (``pip install 'offprompt[mcp]'``); the
rest of the command line never imports it.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from offprompt.cli._common import CLIError, Context
from offprompt.cli.cmd_forget import scope_from_args
from offprompt.scope import SCOPE_FIELDS

__all__ = ["add_parser"]

_MISSING = "the mcp commands need the MCP SDK: pip install 'offprompt[mcp]'"


def _sdk() -> Any:
    if importlib.util.find_spec("mcp") is None:
        raise CLIError(_MISSING)
    import offprompt.mcp

    return offprompt.mcp


def _scope_arguments(parser: argparse.ArgumentParser) -> None:
    for name in SCOPE_FIELDS:
        parser.add_argument(
            f"--{name}", dest=f"scope_{name}", metavar="ID", default=None, help=f"scope: {name} id"
        )


def add_parser(commands: Any, common: argparse.ArgumentParser, positive: Any) -> None:
    """Register ``offprompt mcp proxy`` and ``offprompt mcp serve``."""
    mcp = commands.add_parser("mcp", parents=[common], help="MCP proxy and memory server (stdio)")
    sub = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "proxy",
        parents=[common],
        help="serve an MCP server's tools with large results kept off the prompt",
        usage="offprompt mcp proxy [options] -- COMMAND [ARGS...]",
    )
    p.add_argument(
        "--min-tokens", type=int, metavar="N", help="store text results of N tokens or more"
    )
    p.add_argument(
        "--sensitive",
        action="append",
        default=[],
        metavar="TOOL",
        help="always store this tool's results",
    )
    p.add_argument(
        "--timeout", type=float, metavar="S", help="seconds to wait for each upstream answer (300)"
    )
    p.add_argument(
        "--max-output-tokens",
        type=positive,
        default=1000,
        metavar="N",
        help="bound of memory-tool outputs",
    )
    p.add_argument(
        "--max-message-mb",
        type=float,
        metavar="MB",
        help="longest upstream answer read, in MB; a longer one is an error (512)",
    )
    _scope_arguments(p)
    p.add_argument("upstream", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS")
    p.set_defaults(run=_run_proxy)

    p = sub.add_parser("serve", parents=[common], help="serve the home's memory to MCP clients")
    p.add_argument(
        "--allow-write", action="store_true", help="also the tools that store and forget"
    )
    p.add_argument(
        "--max-output-tokens",
        type=positive,
        default=1000,
        metavar="N",
        help="bound of tool outputs",
    )
    _scope_arguments(p)
    p.set_defaults(run=_run_serve)


def _run_proxy(args: argparse.Namespace, ctx: Context) -> int:
    command = list(args.upstream)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise CLIError("give the upstream server's command after '--'")
    if args.min_tokens is not None and args.min_tokens < 0:
        raise CLIError(f"--min-tokens must be 0 or more, got {args.min_tokens}")
    if args.timeout is not None and args.timeout <= 0:
        raise CLIError(f"--timeout must be more than 0, got {args.timeout:g}")
    if args.max_message_mb is not None and args.max_message_mb <= 0:
        raise CLIError(f"--max-message-mb must be more than 0, got {args.max_message_mb:g}")
    sdk = _sdk()
    max_message = args.max_message_mb
    config = sdk.ProxyConfig(
        command=command,
        home=ctx.home,
        scope=scope_from_args(args),
        min_tokens=args.min_tokens,
        sensitive=tuple(args.sensitive),
        timeout=args.timeout or sdk.DEFAULT_TIMEOUT,
        max_output_tokens=args.max_output_tokens,
        max_message_bytes=(
            sdk.DEFAULT_MAX_MESSAGE_BYTES if max_message is None else int(max_message * 1e6)
        ),
    )
    sdk.main_proxy(config)
    return 0


def _run_serve(args: argparse.Namespace, ctx: Context) -> int:
    sdk = _sdk()
    config = sdk.ServeConfig(
        home=ctx.home,
        scope=scope_from_args(args),
        allow_write=bool(args.allow_write),
        max_output_tokens=args.max_output_tokens,
    )
    sdk.main_serve(config)
    return 0
