"""``offprompt show SESSION [--html FILE]``: a stored session for people to read."""

from __future__ import annotations

import argparse
from typing import Any

from offprompt.cli._common import Context, atomic_write
from offprompt.cli.cmd_forget import scope_from_args
from offprompt.cli.cmd_task import namespace_infos
from offprompt.errors import NotFoundError
from offprompt.render import render_html, render_timeline
from offprompt.render.references import message_references
from offprompt.stores.base import StoredMessage, validate_session_id
from offprompt.trace import read_trace

__all__ = ["read_session", "run"]


def read_session(ctx: Context, store: Any, session: str) -> list[StoredMessage]:
    """The stored messages of ``session``; :class:`NotFoundError` naming what exists if none."""
    if store is None:
        raise NotFoundError(
            f"unknown session {session!r}: no store at {ctx.store_label}", session_id=session
        )
    validate_session_id(session)
    stored: list[StoredMessage] = store.read(session)
    if stored:
        return stored
    known = [info.session_id for info in store.sessions() if info.message_count]
    listed = ", ".join(repr(s) for s in known[:5]) + (", ..." if len(known) > 5 else "")
    raise NotFoundError(
        f"unknown session {session!r} in {ctx.store_label}"
        + (f"; sessions there: {listed}" if known else "; it holds no sessions"),
        session_id=session,
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt show``: a stored session as a terminal timeline, or an HTML page with ``--html``."""
    scope = scope_from_args(args, with_session=False)
    with ctx.store(create=False) as store:
        view = store.scoped(scope) if store is not None and scope is not None else store
        stored = read_session(ctx, view, args.session)
        if getattr(args, "trace", False):
            events = read_trace(view, args.session)
            ctx.out.print(f"trace of session {args.session} ({len(events)} events)", markup=False)
            for event in events:
                ctx.out.print(f"  {event.describe()}", markup=False, soft_wrap=True)
                for item in event.dropped:
                    ctx.out.print(f"    dropped: {item}", markup=False, soft_wrap=True)
            if not events:
                ctx.out.print(
                    "  no trace recorded (ConversationMemory(..., persist_trace=True) keeps one)",
                    markup=False,
                )
            return 0
    refs = message_references(item.message for item in stored)
    infos = namespace_infos(ctx, {ref.namespace for ref in refs})
    title = f"offprompt session {args.session}"
    if args.html is None:
        ctx.out.print(render_timeline(stored, title=title, namespaces=infos))
        return 0
    atomic_write(args.html, render_html(stored, title=title, namespaces=infos))
    images = sum(len(item.message.images) for item in stored)
    ctx.out.print(
        f"wrote {args.html} ({len(stored)} messages, {images} images, {len(refs)} off-prompt references)",
        markup=False,
        soft_wrap=True,
    )
    return 0
