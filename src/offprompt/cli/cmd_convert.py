"""``offprompt export``, ``import`` and ``migrate``: sessions between formats and stores.

Nothing is written until everything is read and converted: a malformed input leaves
the store and the output path as they were. Files are written to a temporary file in
the same directory and renamed; each session is stored in one transaction. After each
conversion the :class:`ConversionReport` summary says what the target could not carry.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from offprompt.cli._common import (
    CLIError,
    Context,
    atomic_write,
    check_input,
    check_output,
    read_input,
)
from offprompt.cli.cmd_show import read_session
from offprompt.cli.formats import FORMATS, Format, Sessions, sniff
from offprompt.errors import DeserializationError, NotFoundError, ValidationError
from offprompt.interop.openai_agents import is_sqlite_file
from offprompt.interop.report import ConversionReport
from offprompt.messages import Message
from offprompt.stores.base import validate_session_id
from offprompt.tokens import default_tokenizer

__all__ = ["PROGRESS_MIN_MESSAGES", "run_export", "run_import", "run_migrate"]

#: Imports with at least this many messages show a progress bar (on a terminal).
PROGRESS_MIN_MESSAGES = 200


def _read(fmt: Format, path: Path, report: ConversionReport, option: str, max_mb: int) -> Sessions:
    if fmt.read_file is not None:
        check_input(path, max_mb=max_mb)
        try:
            return fmt.read_file(path, report)
        except DeserializationError as exc:
            raise DeserializationError(f"{path} is not a valid {fmt.name} file: {exc}") from None
    try:
        text = read_input(path, max_mb=max_mb)
    except CLIError:
        if is_sqlite_file(path):
            raise CLIError(
                f"{path} is an SQLite database, not {fmt.name} text "
                f"(an OpenAI Agents SQLiteSession file? try {option} openai-agents-sqlite)"
            ) from None
        raise
    try:
        return fmt.read(text, report)
    except DeserializationError as exc:
        guess = sniff(text)
        hint = (
            f" (it looks like {guess}; try {option} {guess})" if guess and guess != fmt.name else ""
        )
        raise DeserializationError(f"{path} is not a valid {fmt.name} file: {exc}{hint}") from None


def _pick(sessions: Sessions, path: Path, session: str | None) -> dict[str, list[Message]]:
    """Name the sessions read from ``path``: keys of a several-session file, else ``session``
    or the file's stem; ``session`` picks one session out of a several-session file."""
    if None in sessions:
        return {validate_session_id(session or path.stem): sessions[None]}
    named = {key: messages for key, messages in sessions.items() if key is not None}
    if session is not None:
        if session not in named:
            listed = ", ".join(repr(k) for k in list(named)[:5]) or "none"
            raise NotFoundError(f"{path} has no session {session!r}; it has: {listed}")
        named = {session: named[session]}
    for key in named:
        validate_session_id(key)
    return named


def _single(fmt: Format, sessions: Mapping[str, list[Message]], path: Path) -> None:
    if not fmt.multi_session and len(sessions) > 1:
        listed = ", ".join(repr(k) for k in list(sessions)[:5])
        raise CLIError(
            f"{path} holds {len(sessions)} sessions ({listed}{', ...' if len(sessions) > 5 else ''}) "
            f"but {fmt.name} holds one; pick one with --session"
        )


def _summary(ctx: Context, report: ConversionReport) -> None:
    ctx.out.print(report.summary(), markup=False, highlight=False, soft_wrap=True)


def _write(fmt: Format, sessions: Mapping[str, Sequence[Message]], out: Path, ctx: Context) -> None:
    report = ConversionReport()
    count = sum(len(m) for m in sessions.values())
    if fmt.write_file is not None:
        check_output(out)
        try:
            items = fmt.write_file(sessions, report, out)
        except ValidationError as exc:
            raise CLIError(str(exc)) from None
        except OSError as exc:
            raise CLIError(f"cannot write {out}: {exc.strerror or exc}") from None
        ctx.out.print(
            f"wrote {count} messages ({items} items) to {out} ({fmt.name})",
            markup=False,
            soft_wrap=True,
        )
        _summary(ctx, report)
        return
    text = fmt.write(sessions, report)
    atomic_write(out, text)
    ctx.out.print(f"wrote {count} messages to {out} ({fmt.name})", markup=False, soft_wrap=True)
    _summary(ctx, report)


def run_export(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt export``: write a stored session to a file in the chosen format."""
    with ctx.store(create=False) as store:
        stored = read_session(ctx, store, args.session)
    _write(FORMATS[args.format], {args.session: [s.message for s in stored]}, args.out, ctx)
    return 0


def run_migrate(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt migrate``: convert a file from one format to another, no store involved."""
    source, target = FORMATS[args.source], FORMATS[args.target]
    report = ConversionReport()
    sessions = _pick(
        _read(source, args.input, report, "--from", args.max_input_mb), args.input, args.session
    )
    _summary(ctx, report)
    _single(target, sessions, args.input)
    _write(target, sessions, args.out, ctx)
    return 0


def run_import(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt import``: read a file in the chosen format into the store's sessions."""
    fmt = FORMATS[args.format]
    report = ConversionReport()
    sessions = _pick(
        _read(fmt, args.input, report, "--format", args.max_input_mb), args.input, args.session
    )
    total = sum(len(m) for m in sessions.values())
    if total == 0:
        ctx.out.print(f"{args.input} holds no messages; nothing imported", markup=False)
        return 0
    tokenizer = default_tokenizer()
    counts: dict[str, list[int]] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=ctx.err,
        transient=True,
        disable=total < PROGRESS_MIN_MESSAGES,
    ) as progress:
        task = progress.add_task("counting tokens", total=total)
        for key, messages in sessions.items():
            counts[key] = []
            for message in messages:
                counts[key].append(tokenizer.count_message(message))
                progress.advance(task)
        with ctx.store(create=True) as store:
            if not args.append:
                for key in sessions:
                    existing = store.count(key)
                    if existing:
                        raise CLIError(
                            f"session {key!r} already holds {existing} messages; "
                            "pass --append to add to it"
                        )
            progress.update(task, description="storing", completed=0)
            for key, messages in sessions.items():
                store.append(key, messages, counts[key])
                progress.advance(task, len(messages))
    for key, messages in sessions.items():
        ctx.out.print(
            f"imported {len(messages)} messages ({sum(counts[key]):,} tokens) into session "
            f"{key!r} in {ctx.store_label}",
            markup=False,
            soft_wrap=True,
        )
    _summary(ctx, report)
    return 0
