"""``offprompt query`` and ``offprompt read``: what task memory stored off-prompt."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from rich.text import Text

from offprompt.artifacts import BaseArtifact, ListArtifact
from offprompt.cli._common import Context
from offprompt.errors import NotFoundError
from offprompt.render.references import NamespaceInfo

__all__ = ["check_namespace", "namespace_infos", "run_query", "run_read"]


def namespace_infos(ctx: Context, names: Iterable[str]) -> dict[str, NamespaceInfo]:
    """Sizes of the namespaces task memory knows among ``names`` (others are left out)."""
    wanted = set(names)
    if not wanted:
        return {}
    with ctx.task_memory() as memory:
        if memory is None:
            return {}
        known = set(memory.namespaces())
        return {
            ns: NamespaceInfo.from_metadata(ns, memory.namespace_metadata(ns))
            for ns in sorted(wanted & known)
        }


def check_namespace(ctx: Context, memory: Any, namespace: str) -> None:
    """Raise ``NotFoundError`` unless ``memory`` exists and holds ``namespace``."""
    if memory is None:
        raise NotFoundError(
            f"unknown namespace {namespace!r}: no task memory at {ctx.task_memory_path}",
            namespace=namespace,
        )
    known = sorted(memory.namespaces())
    if namespace not in known:
        listed = ", ".join(repr(n) for n in known[:5]) + (", ..." if len(known) > 5 else "")
        raise NotFoundError(
            f"unknown namespace {namespace!r} in {ctx.task_memory_path}"
            + (f"; namespaces there: {listed}" if known else "; it holds no namespaces"),
            namespace=namespace,
        )


def _items(result: Any) -> list[Any]:
    if isinstance(result, ListArtifact):
        return list(result.value)
    if isinstance(result, BaseArtifact):
        return [result]
    return list(result)


def _describe(item: Any) -> tuple[str, dict[str, Any]]:
    """The text of a query result and its details (score, chunk), artifact or hit."""
    if isinstance(item, BaseArtifact):
        return item.to_text(), dict(item.meta)
    details = dict(getattr(item, "payload", None) or {})
    if getattr(item, "score", None) is not None:
        details["score"] = item.score
    return str(getattr(item, "text", item)), details


def run_query(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt query``: search a stored tool output and print the best chunks."""
    with ctx.task_memory() as memory:
        check_namespace(ctx, memory, args.namespace)
        results = _items(memory.query(args.namespace, args.text, top_n=args.top))
    if not results:
        ctx.out.print(f"no match for {args.text!r} in {args.namespace!r}", markup=False)
        return 0
    for rank, item in enumerate(results, start=1):
        text, details = _describe(item)
        head = Text(f"{rank}.", style="bold")
        score = details.get("score")
        if isinstance(score, (int, float)):
            head.append(f"  score {score:.3f}", style="dim")
        for key in ("chunk_index", "chunk"):
            if key in details:
                head.append(f"  chunk {details[key]}", style="dim")
                break
        ctx.out.print(head)
        ctx.out.print(text, markup=False, highlight=False, soft_wrap=True)
        ctx.out.print()
    return 0


def run_read(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt read``: print one page of a stored tool output."""
    with ctx.task_memory() as memory:
        check_namespace(ctx, memory, args.namespace)
        options = {"page": args.page}
        if args.page_tokens is not None:
            options["page_tokens"] = args.page_tokens
        page = memory.read(args.namespace, **options)
    text = page.to_text() if isinstance(page, BaseArtifact) else str(page)
    meta = page.meta if isinstance(page, BaseArtifact) else {}
    # The page goes to stdout untouched (pipeable); where it sits goes to stderr.
    ctx.out.print(text, markup=False, highlight=False, soft_wrap=True)
    pages = meta.get("pages")
    about = "about " if meta.get("pages_estimated") else ""
    lines = (
        f" (lines {meta['first_line']:,}-{meta['last_line']:,} of {meta['lines']:,})"
        if "first_line" in meta
        else ""
    )
    ctx.err.print(
        f"page {meta.get('page', args.page)}"
        + (f" of {about}{pages}" if pages else "")
        + lines
        + f" of namespace {args.namespace!r}",
        markup=False,
        style="dim",
    )
    return 0
