"""``offprompt inspect``: what the home holds, one section per kind of memory.

Each section is a function ``(Context) -> Section | None`` in :data:`SECTIONS`;
``None`` means "this kind of memory has nothing in this home". A new kind of memory
(long-term fragments by scope, for instance) adds its function to :data:`SECTIONS`
and shows up in both the tables and ``--json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from offprompt.cli._common import Context
from offprompt.render.references import NamespaceInfo, human_bytes

__all__ = ["SECTIONS", "Section", "run"]


@dataclass
class Section:
    """One part of the inspect output.

    Attributes:
        key: The key in ``--json`` output.
        title: The table's title.
        columns: Column headings, in order.
        rows: One dict per row, keyed by the JSON names in ``fields``.
        fields: The JSON name of each column, in the order of ``columns``.
        format: Optional per-field formatters for the table (JSON keeps raw values).
    """

    key: str
    title: str
    columns: list[str]
    fields: list[str]
    rows: list[dict[str, Any]]
    format: dict[str, Callable[[Any], str]] = field(default_factory=dict)

    def table(self) -> Table:
        """The section as a rich ``Table`` (its title and columns, one row per entry)."""
        table = Table(title=self.title, title_justify="left", title_style="bold")
        for heading in self.columns:
            table.add_column(heading, overflow="fold")
        for row in self.rows:
            table.add_row(*(self._cell(name, row.get(name)) for name in self.fields))
        return table

    def _cell(self, name: str, value: Any) -> str:
        if value is None:
            return "-"
        formatter = self.format.get(name)
        return formatter(value) if formatter else str(value)


def _sessions(ctx: Context) -> Section | None:
    with ctx.store(create=False) as store:
        if store is None:
            return None
        rows = []
        for info in store.sessions():
            tokens = sum(entry.tokens for entry in store.read_index(info.session_id))
            rows.append(
                {
                    "session": info.session_id,
                    "messages": info.message_count,
                    "tokens": tokens,
                    "last_activity": info.last_activity.isoformat(timespec="seconds")
                    if info.last_activity
                    else None,
                }
            )
    return Section(
        key="sessions",
        title=f"Conversation sessions ({ctx.store_label})",
        columns=["session", "messages", "tokens", "last activity"],
        fields=["session", "messages", "tokens", "last_activity"],
        rows=rows,
        format={"messages": "{:,}".format, "tokens": "{:,}".format},
    )


def _namespaces(ctx: Context) -> Section | None:
    with ctx.task_memory() as memory:
        if memory is None:
            return None
        rows = []
        for namespace in memory.namespaces():
            info = NamespaceInfo.from_metadata(namespace, memory.namespace_metadata(namespace))
            rows.append(
                {
                    "namespace": namespace,
                    "tool": info.tool,
                    "activity": info.activity,
                    "storage": info.storage,
                    "bytes": info.bytes,
                    "tokens": info.tokens,
                    "created_at": info.created_at,
                }
            )
    return Section(
        key="namespaces",
        title=f"Task-memory namespaces ({ctx.task_memory_path})",
        columns=["namespace", "source tool", "activity", "storage", "size", "tokens", "created"],
        fields=["namespace", "tool", "activity", "storage", "bytes", "tokens", "created_at"],
        rows=rows,
        format={"bytes": human_bytes, "tokens": "{:,}".format},
    )


#: The sections, in display order. Append a function to add a kind of memory.
SECTIONS: list[Callable[[Context], Section | None]] = [_sessions, _namespaces]


def _card(ctx: Context, namespace: str, as_json: bool) -> int:
    """``offprompt inspect NAMESPACE``: the namespace's card, as the model sees it."""
    from offprompt.cli.cmd_task import check_namespace

    with ctx.task_memory() as memory:
        check_namespace(ctx, memory, namespace)
        if as_json:
            stats = memory.stats(namespace).model_dump()
            print(json.dumps(stats, ensure_ascii=False, indent=2), file=ctx.out.file)
        else:
            ctx.out.print(memory.describe(namespace, max_tokens=2000), markup=False)
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``offprompt inspect``: list sessions and task-memory namespaces, or show one namespace's
    card.
    """
    ctx.check_home()
    if getattr(args, "namespace", None):
        return _card(ctx, args.namespace, bool(args.json))
    sections = [s for s in (section(ctx) for section in SECTIONS) if s is not None]
    if args.json:
        document: dict[str, Any] = {"home": str(ctx.home)}
        document.update({s.key: s.rows for s in sections})
        print(json.dumps(document, ensure_ascii=False, indent=2), file=ctx.out.file)
        return 0
    ctx.out.print(f"offprompt home: {ctx.home}", markup=False)
    if not sections:
        ctx.out.print("nothing stored here yet", markup=False)
    for section in sections:
        ctx.out.print()
        if section.rows:
            ctx.out.print(section.table())
        else:
            ctx.out.print(f"{section.title}: none", markup=False)
    return 0
