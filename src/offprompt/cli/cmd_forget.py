"""``offprompt forget --user ID [--tenant ...] [--yes]``: delete a subject's data.

Deletes, in the home's conversation store and task memory, everything the scope selects
(messages, summaries, steps, plans, traces, chunks, namespace metadata, blobs), after a
confirmation prompt (``--yes`` skips it). Re-running after an interruption finishes
the job; the report says what was already gone.
"""

from __future__ import annotations

import argparse
import sys

from offprompt.cli._common import CLIError, Context
from offprompt.forget import ForgetError, forget
from offprompt.scope import SCOPE_FIELDS, Scope

__all__ = ["add_scope_arguments", "run", "scope_from_args"]


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    """``--tenant``, ``--user``, ``--agent``, ``--run`` (and ``--session`` if absent)."""
    for name in SCOPE_FIELDS:
        actions = parser._actions  # private-ok: argparse lists a parser's arguments only here
        if name == "session" and any(a.dest == "session" for a in actions):
            continue  # ``show SESSION`` names the session positionally
        # dest is prefixed: ``args.run`` is the command's handler.
        parser.add_argument(
            f"--{name}", dest=f"scope_{name}", metavar="ID", default=None, help=f"scope: {name} id"
        )


def scope_from_args(args: argparse.Namespace, *, with_session: bool = True) -> Scope | None:
    """The scope the command line names, ``None`` if no scope option was given."""
    fields = {
        name: getattr(args, f"scope_{name}", None)
        for name in SCOPE_FIELDS
        if with_session or name != "session"
    }
    fields = {k: v for k, v in fields.items() if v is not None}
    return Scope(**fields) if fields else None


def _confirm(ctx: Context, scope: Scope) -> bool:
    ctx.err.print(
        f"This deletes everything stored for {scope} in {ctx.home} "
        "(messages, summaries, steps, plans, task memory, blobs). Continue? [y/N] ",
        markup=False,
        end="",
    )
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt forget``: delete everything stored for the given subject (asks first unless
    ``--yes``).
    """
    scope = scope_from_args(args) or Scope()
    if scope.is_empty and not args.all:
        raise CLIError(
            "give at least one of --tenant, --user, --agent, --session, --run (or --all)"
        )
    if not args.yes and not _confirm(ctx, scope):
        ctx.err.print("offprompt: nothing deleted", markup=False)
        return 1
    with ctx.store(create=False) as store, ctx.task_memory() as memory:
        stores = [store] if store is not None else []
        try:
            report = forget(scope, stores=stores, task_memory=memory, all=bool(args.all))
        except ForgetError as exc:
            for line in exc.report.lines():
                ctx.out.print(line, markup=False, soft_wrap=True)
            raise
    for line in report.lines() or ["no stores in this home: nothing to delete"]:
        ctx.out.print(line, markup=False, soft_wrap=True)
    return 0
