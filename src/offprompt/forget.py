"""``forget(scope)``: delete everything stored for a subject, in every store given.

Messages, summaries, steps, plans and traces (conversation stores), task-memory chunks,
namespace metadata and blobs (task memories, blob stores), and anything else that
implements :class:`Forgettable` (long-term memory joins this way). Each participant
deletes by a filter the store evaluates itself, so a re-run after a crash finds the
part already done empty ("already gone") and finishes the rest: ``forget`` is
idempotent. SQLite stores run with ``secure_delete`` and are checkpointed
(``wal_checkpoint(TRUNCATE)``), so deleted bytes stay neither in free pages nor in the
WAL; a reader holding the WAL makes that participant fail instead of report clean.
Task memories' embedded vector engine keeps deleted payloads in its files until it is
rebuilt: ``purge=True`` does that, and the report's ``residue`` says where bytes remain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from offprompt.errors import ForgetError, StorageError
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore, check_selector
from offprompt.trace import TraceEvent, Tracer, emit_safely

__all__ = ["ForgetError", "ForgetReport", "Forgettable", "StoreForgetResult", "aforget", "forget"]


@runtime_checkable
class Forgettable(Protocol):
    """Anything that can delete what it holds for a scope; returns how many items it deleted.

    ``scope`` is a selector: every set field must match. It is never empty (``forget``
    refuses that unless ``all=True``, and then passes ``Scope()``).
    """

    def forget(self, scope: Scope) -> int:
        """Delete everything stored for ``scope``; how many records went."""
        ...


@dataclass
class StoreForgetResult:
    """What one participant deleted.

    Attributes:
        name: Which participant (its ``repr``).
        deleted: Counts by kind (``messages``, ``state``, ``blobs``, ``points``, ``items``).
        error: The error that stopped it, if any (re-run ``forget`` to finish).
        residue: Layers of this participant whose files may still hold deleted bytes
            (a task memory's vector engine without ``purge=True``, or one that cannot
            be purged). Empty when the deleted data is gone from its files too.
    """

    name: str
    deleted: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    residue: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Records deleted: every kind summed except ``sessions``."""
        return sum(v for k, v in self.deleted.items() if k != "sessions")

    @property
    def already_gone(self) -> bool:
        """Nothing left to delete here (a previous run, or there never was anything)."""
        return self.error is None and self.total == 0


@dataclass
class ForgetReport:
    """Per-participant results of :func:`forget`.

    Attributes:
        scope: What was forgotten.
        results: One entry per participant, in the order they ran.
    """

    scope: Scope
    results: list[StoreForgetResult] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Records deleted across every target."""
        return sum(r.total for r in self.results)

    @property
    def complete(self) -> bool:
        """Whether every target forgot without an error."""
        return all(r.error is None for r in self.results)

    @property
    def purged(self) -> bool:
        """``True`` when no participant reports deleted bytes left in its files."""
        return self.complete and not any(r.residue for r in self.results)

    def lines(self) -> list[str]:
        """One human line per participant."""
        out = []
        for r in self.results:
            if r.error is not None:
                out.append(f"{r.name}: FAILED ({r.error}); run forget again to finish")
            elif r.already_gone:
                out.append(f"{r.name}: nothing to delete (already gone)")
            else:
                counts = ", ".join(f"{v} {k}" for k, v in r.deleted.items() if v)
                out.append(f"{r.name}: deleted {counts}")
            if r.residue:
                out.append(f"{r.name}: deleted bytes may remain in: {'; '.join(r.residue)}")
        return out


def forget(
    scope: Scope,
    *,
    stores: Sequence[Any] = (),
    task_memory: Any = None,
    blob_stores: Sequence[Any] = (),
    participants: Iterable[Forgettable] = (),
    all: bool = False,
    purge: bool = False,
    tracer: Tracer | None = None,
) -> ForgetReport:
    """Delete everything stored for ``scope`` in every store given; report per store.

    Args:
        scope: A selector: ``Scope(user="u1")`` is u1 in every tenant, agent and
            session; ``Scope(tenant="acme", session="s1")`` one session of one tenant.
        stores: Conversation stores (messages, summaries, steps, plans, traces).
        task_memory: A ``TaskMemory`` or a sequence of them (chunks, metadata, blobs).
        blob_stores: Extra blob stores (``FileBlobStore`` ...).
        participants: Anything :class:`Forgettable` (long-term memory).
        all: Required to forget with an empty scope (everything in every store).
        purge: Also rewrite each task memory's vector engine so the deleted chunks
            leave its files (WAL and payload storage): a copy of the whole collection,
            so off by default. Without it (or where the engine cannot be purged) the
            result's ``residue`` names the layer that may keep deleted bytes.
        tracer: Receives one ``forget`` trace event (the scope, how many items were
            deleted, whether every participant finished), e.g. an
            :class:`~offprompt.trace.OpenTelemetryTracer` for a ``delete_memory`` span.

    Returns:
        The per-participant report.

    Raises:
        ValidationError: ``scope`` is empty and ``all`` is not set.
        ForgetError: A participant failed; the others still ran. Re-run to finish.

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> from offprompt.messages import Message
        >>> store = InMemoryStore()
        >>> _ = store.append("s", [Message.user("hi")], [1], scope=Scope(user="u1"))
        >>> forget(Scope(user="u1"), stores=[store]).total
        1
    """
    selected = check_selector(scope, all=all)
    memories = (
        []
        if task_memory is None
        else list(task_memory)
        if isinstance(task_memory, (list, tuple))
        else [task_memory]
    )
    report = ForgetReport(selected)
    steps: list[tuple[str, Any]] = []
    residues: dict[str, list[str]] = {}
    steps += [(repr(s), lambda s=s: _store(s, selected, all, residues)) for s in stores]

    def _memory(memory: Any) -> dict[str, int]:
        counts = dict(memory.forget_scope(selected, all=all))
        store = getattr(memory, "vector_store", None)
        if purge and store is not None:
            residues[repr(memory)] = list(store.purge())
        elif store is not None:
            residues[repr(memory)] = [
                "the vector engine's WAL and payload storage (pass purge=True to rewrite them)"
            ]
        unreached = getattr(memory, "forget_unreached", None)
        if callable(unreached):
            residues.setdefault(repr(memory), []).extend(unreached())
        return counts

    steps += [(repr(m), lambda m=m: _memory(m)) for m in memories]
    steps += [
        (repr(b), lambda b=b: {"blobs": int(b.forget_scope(selected, all=all))})
        for b in blob_stores
    ]
    steps += [(repr(p), lambda p=p: {"items": int(p.forget(selected))}) for p in participants]
    for name, run in steps:
        result = StoreForgetResult(name)
        try:
            result.deleted = dict(run())
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        result.residue = residues.pop(name, [])
        report.results.append(result)
    emit_safely(
        tracer,
        TraceEvent(
            "forget",
            session_id=selected.session,
            scope=selected.fields(),
            detail={"memory": "all", "deleted": report.total, "complete": report.complete},
        ),
    )
    if not report.complete:
        failed = [r.name for r in report.results if r.error is not None]
        raise ForgetError(
            f"forget({selected}) did not finish in {', '.join(failed)}; run it again", report
        )
    return report


def _store(store: Any, scope: Scope, all: bool, residues: dict[str, list[str]]) -> dict[str, int]:
    if not isinstance(store, BaseStore):
        raise StorageError(f"{store!r} is not an offprompt store with forget_scope")
    counts = store.forget_scope(scope, all=all)
    if counts.residue:
        residues[repr(store)] = list(counts.residue)
    return {
        "messages": counts.messages,
        "state": counts.state,
        "blobs": counts.blobs,
        "sessions": counts.sessions,
    }


async def aforget(
    scope: Scope,
    *,
    stores: Sequence[Any] = (),
    task_memory: Any = None,
    blob_stores: Sequence[Any] = (),
    participants: Iterable[Forgettable] = (),
    all: bool = False,
    purge: bool = False,
    tracer: Tracer | None = None,
) -> ForgetReport:
    """Async twin of :func:`forget` (runs in a worker thread)."""
    import asyncio

    return await asyncio.to_thread(
        forget,
        scope,
        stores=stores,
        task_memory=task_memory,
        blob_stores=blob_stores,
        participants=list(participants),
        all=all,
        purge=purge,
        tracer=tracer,
    )
