"""The ``offprompt`` command line: look into, show, query and convert offprompt data.

Commands (``offprompt COMMAND --help`` for each)::

    offprompt inspect [NAMESPACE]              sessions, task-memory namespaces (or one's card)
    offprompt show SESSION [--html FILE]       a session as a timeline or an HTML page
    offprompt query NAMESPACE TEXT [--top N]   search a stored tool output
    offprompt read NAMESPACE [--page N]        page through a stored tool output
    offprompt export SESSION --format F OUT    a stored session to a file
    offprompt import --format F IN [--session S]
    offprompt migrate --from F --to F IN OUT   file to file, no store involved
    offprompt forget --user ID [--yes]         delete everything stored for a subject
    offprompt mcp proxy [...] -- COMMAND ARGS  an MCP server, large results off-prompt
    offprompt mcp serve [--allow-write]        the home's memory as an MCP server
    offprompt demo                             the guided offline demo (offprompt-demo)

Every command takes ``--home DIR`` (default ``$OFFPROMPT_HOME`` or ``./.offprompt``):
conversations are in ``HOME/memory.db``, task memory in ``HOME/qdrant``. With
``--store postgresql://user@host/db`` conversations are on that PostgreSQL server
instead (``offprompt[postgres]``).

Exit codes: 0 success; 1 the command could not be carried out (bad or wrong-format
input, unknown session or namespace, unwritable output, a path that is not a store);
2 the command line is wrong. Errors are one line, ``offprompt: error: <what>``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from offprompt import __version__
from offprompt.cli import cmd_convert, cmd_forget, cmd_inspect, cmd_mcp, cmd_show, cmd_task
from offprompt.cli._common import (
    DEFAULT_MAX_INPUT_MB,
    CLIError,
    Context,
    UsageError,
    default_home,
    one_line,
)
from offprompt.cli.formats import FORMATS
from offprompt.errors import OffpromptError

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "CLIError", "build_parser", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and an exception instead of ``sys.exit``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see 'offprompt --help')")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


DEMO_ENTRY_POINTS = "offprompt.demo"
"""Entry-point group through which the demo distribution registers ``offprompt demo``.

The demo runs a LangChain agent and a LlamaIndex chat engine, so it lives in its own
distribution (``offprompt-demo``) that depends on both adapters; the core only looks it up.
"""
DEMO_INSTALL_HINT = (
    "offprompt demo is not installed: pip install offprompt-demo "
    "(it brings offprompt-langchain[agents] and offprompt-llamaindex), or run 'make demo'"
)


def _demo_main() -> Callable[[], int | None] | None:
    """The demo's ``main`` from its entry point, or None when no demo is installed."""
    for entry in importlib.metadata.entry_points(group=DEMO_ENTRY_POINTS, name="demo"):
        loaded: Callable[[], int | None] = entry.load()
        return loaded
    return None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``offprompt`` command (one sub-parser per command)."""

    formats = sorted(FORMATS)
    parser = _Parser(
        prog="offprompt",
        description="Agent memory that lives outside the prompt: look into, show, "
        "query and convert what offprompt stored.",
    )
    parser.add_argument("--version", action="version", version=f"offprompt {__version__}")
    parser.add_argument(
        "--home",
        metavar="DIR",
        help="offprompt home (default: $OFFPROMPT_HOME or ./.offprompt)",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        type=_store_url,
        help="conversations on a PostgreSQL server (postgresql://user@host:port/db) "
        "instead of HOME/memory.db",
    )
    # --home and --store are accepted after the command too; SUPPRESS keeps a global value.
    common = _Parser(add_help=False)
    common.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument(
        "--store", metavar="URL", type=_store_url, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = commands.add_parser(
        "inspect", parents=[common], help="sessions and task-memory namespaces in the home"
    )
    p.add_argument(
        "namespace", nargs="?", help="one task-memory namespace: print its card (describe)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=cmd_inspect.run)

    p = commands.add_parser("show", parents=[common], help="a session as a timeline or HTML page")
    p.add_argument("session", metavar="SESSION")
    p.add_argument("--html", metavar="FILE", type=Path, help="write a self-contained HTML page")
    p.add_argument(
        "--trace", action="store_true", help="the recorded trace of how the context was built"
    )
    cmd_forget.add_scope_arguments(p)
    p.set_defaults(run=cmd_show.run)

    p = commands.add_parser("query", parents=[common], help="search a task-memory namespace")
    p.add_argument("namespace", metavar="NAMESPACE")
    p.add_argument("text", metavar="TEXT")
    p.add_argument("--top", type=_positive, default=5, metavar="N", help="results (default 5)")
    p.set_defaults(run=cmd_task.run_query)

    p = commands.add_parser("read", parents=[common], help="read a page of a namespace")
    p.add_argument("namespace", metavar="NAMESPACE")
    p.add_argument("--page", type=_positive, default=1, metavar="N", help="page (default 1)")
    p.add_argument(
        "--page-tokens", type=_positive, metavar="N", help="tokens per page (task memory default)"
    )
    p.set_defaults(run=cmd_task.run_read)

    p = commands.add_parser("export", parents=[common], help="write a stored session to a file")
    p.add_argument("session", metavar="SESSION")
    p.add_argument(
        "--format", "-f", required=True, choices=formats, metavar="F", help=", ".join(formats)
    )
    p.add_argument("out", metavar="OUT", type=Path)
    p.set_defaults(run=cmd_convert.run_export)

    p = commands.add_parser("import", parents=[common], help="store the session(s) of a file")
    p.add_argument(
        "--format", "-f", required=True, choices=formats, metavar="F", help=", ".join(formats)
    )
    p.add_argument("input", metavar="IN", type=Path)
    p.add_argument(
        "--session",
        metavar="S",
        help="session to store into (default: the file name); for llamaindex-chatstore, "
        "the one session of the file to import",
    )
    p.add_argument("--append", action="store_true", help="add to a session that has messages")
    p.add_argument(
        "--max-input-mb",
        type=_positive,
        default=DEFAULT_MAX_INPUT_MB,
        metavar="N",
        help=f"refuse input files over N MiB (default {DEFAULT_MAX_INPUT_MB})",
    )
    p.set_defaults(run=cmd_convert.run_import)

    p = commands.add_parser("migrate", parents=[common], help="convert a file between formats")
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=formats,
        metavar="F",
        help=", ".join(formats),
    )
    p.add_argument(
        "--to", dest="target", required=True, choices=formats, metavar="F", help=", ".join(formats)
    )
    p.add_argument("input", metavar="IN", type=Path)
    p.add_argument("out", metavar="OUT", type=Path)
    p.add_argument(
        "--session",
        metavar="S",
        help="from a several-session file: the session to convert; to one: its key",
    )
    p.add_argument(
        "--max-input-mb",
        type=_positive,
        default=DEFAULT_MAX_INPUT_MB,
        metavar="N",
        help=f"refuse input files over N MiB (default {DEFAULT_MAX_INPUT_MB})",
    )
    p.set_defaults(run=cmd_convert.run_migrate)

    p = commands.add_parser(
        "forget", parents=[common], help="delete everything stored for a user/tenant/session"
    )
    cmd_forget.add_scope_arguments(p)
    p.add_argument("--all", action="store_true", help="with no scope: delete everything")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.set_defaults(run=cmd_forget.run)

    cmd_mcp.add_parser(commands, common, _positive)

    p = commands.add_parser(
        "demo", parents=[common], help="the guided offline demo (needs offprompt-demo)"
    )
    p.set_defaults(run=_run_demo)
    return parser


def _run_demo(args: argparse.Namespace, ctx: Context) -> int:
    demo_main = _demo_main()
    if demo_main is None:
        raise CLIError(DEMO_INSTALL_HINT)
    if args.home is not None:
        os.environ["OFFPROMPT_HOME"] = str(ctx.home)
    result = demo_main()
    return result if isinstance(result, int) else EXIT_OK


def _store_url(value: str) -> str:
    if not value.startswith(("postgresql://", "postgres://")):
        raise argparse.ArgumentTypeError(
            "--store takes a postgresql:// URL (postgresql://user@host:port/dbname); "
            "the SQLite store is the default, in the home"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``offprompt`` command line and return its exit code.

    Args:
        argv: The arguments after the program name; ``None`` means ``sys.argv[1:]``.

    Example:
        >>> main(["--version"])  # doctest: +ELLIPSIS
        offprompt ...
        0
    """
    err = Console(stderr=True, highlight=False)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        ctx = Context(
            home=Path(args.home) if args.home else default_home(),
            out=Console(highlight=False),
            err=err,
            store_url=args.store,
        )
        code: int = args.run(args, ctx)
        return code
    except UsageError as exc:
        _fail(err, exc)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except (OffpromptError, OSError) as exc:
        _fail(err, exc)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        err.print("offprompt: interrupted", markup=False)
        return 130
    except Exception as exc:  # a bug: say so in one line, the traceback on request
        if os.environ.get("OFFPROMPT_DEBUG"):
            raise
        _fail(err, exc, prefix=f"unexpected {type(exc).__name__}: ")
        err.print("offprompt: set OFFPROMPT_DEBUG=1 to see the traceback", markup=False)
        return EXIT_FAILURE


def _fail(err: Console, exc: BaseException, prefix: str = "") -> None:
    # soft_wrap: the message stays one line whatever the terminal width.
    err.print(f"offprompt: error: {prefix}{one_line(exc)}", markup=False, soft_wrap=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
