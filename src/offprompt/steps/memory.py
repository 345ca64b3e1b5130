"""``AgentMemory``: the record of a run, its list of steps, its callbacks, and keeping an
attached store in step with the list."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence
from typing import TYPE_CHECKING, Any, overload

from offprompt.errors import ValidationError
from offprompt.messages import Message
from offprompt.render.replay import replay_steps
from offprompt.scope import Scope
from offprompt.steps.persistence import (
    FORMAT_VERSION,
    AsyncStateStore,
    StateStore,
    check_run_id,
    load_step,
    meta_key,
    parse_meta,
    step_key,
    with_scope,
)
from offprompt.steps.records import ActionStep, MemoryStep, SystemPromptStep

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["AgentMemory", "CallbackRegistry", "StepList"]

# -- callbacks -----------------------------------------------------------------------

StepCallback = Callable[..., Any]


class CallbackRegistry:
    """Callbacks run for each step, registered per step class.

    :meth:`callback` walks the step class's MRO, so a callback registered for
    :class:`MemoryStep` sees every step. Keyword context (e.g. ``agent=``) is passed only
    to the callbacks whose signature accepts it, by name or through ``**kwargs``.

    Example:
        >>> from offprompt.steps import ActionStep, Timing
        >>> seen = []
        >>> registry = CallbackRegistry()
        >>> registry.register(ActionStep, lambda step: seen.append(step.step_number))
        >>> registry.callback(ActionStep(step_number=3, timing=Timing(start_time=0)), agent=None)
        >>> seen
        [3]
    """

    def __init__(self) -> None:
        self._callbacks: dict[type[MemoryStep], list[StepCallback]] = {}

    def register(self, step_cls: type[MemoryStep], callback: StepCallback) -> None:
        """Call ``callback`` for every step of ``step_cls`` (or a subclass); ``ValidationError`` for
        anything that is not a ``MemoryStep`` class.
        """
        if not (isinstance(step_cls, type) and issubclass(step_cls, MemoryStep)):
            raise ValidationError(
                f"callbacks are registered for a MemoryStep subclass, got {step_cls!r}"
            )
        if not callable(callback):
            raise ValidationError(f"callback must be callable, got {type(callback).__name__}")
        self._callbacks.setdefault(step_cls, []).append(callback)

    def callbacks_for(self, step_cls: type[MemoryStep]) -> list[StepCallback]:
        """The callbacks that :meth:`callback` would call for a step of ``step_cls``, in order."""
        return [cb for cls in step_cls.__mro__ for cb in self._callbacks.get(cls, [])]

    def callback(self, memory_step: MemoryStep, **kwargs: Any) -> None:
        """Call every callback registered along ``memory_step``'s MRO, each with the keyword
        arguments it accepts.
        """
        for cb in self.callbacks_for(type(memory_step)):
            cb(memory_step, **_accepted_kwargs(cb, kwargs))


def _accepted_kwargs(callback: StepCallback, kwargs: dict[str, Any]) -> dict[str, Any]:
    if not kwargs:
        return {}
    try:
        parameters = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature: the step only
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return kwargs
    # The first positional parameter receives the step; it is not a context slot.
    rest = (
        parameters[1:]
        if parameters and parameters[0].kind is not inspect.Parameter.KEYWORD_ONLY
        else parameters
    )
    names = {
        p.name
        for p in rest
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return {k: v for k, v in kwargs.items() if k in names}


def _as_step(value: Any) -> MemoryStep:
    if not isinstance(value, MemoryStep):
        raise ValidationError(
            f"AgentMemory.steps holds MemoryStep objects, got {type(value).__name__}"
        )
    return value


class StepList(MutableSequence[MemoryStep]):
    """The list behind :attr:`AgentMemory.steps`: a list that tells its memory when it
    changes, so an attached store is kept in step. Used exactly like a ``list``."""

    def __init__(
        self,
        on_change: Callable[[int, Callable[[], None]], None],
        steps: Iterable[MemoryStep] = (),
    ) -> None:
        #: Called with the first changed index and an undo of the change.
        self._on_change = on_change
        self._items: list[MemoryStep] = [_as_step(s) for s in steps]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[MemoryStep]:
        return iter(self._items)

    @overload
    def __getitem__(self, index: int) -> MemoryStep: ...
    @overload
    def __getitem__(self, index: slice) -> list[MemoryStep]: ...
    def __getitem__(self, index: int | slice) -> MemoryStep | list[MemoryStep]:
        return self._items[index]

    @overload
    def __setitem__(self, index: int, value: MemoryStep) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[MemoryStep]) -> None: ...
    def __setitem__(self, index: int | slice, value: Any) -> None:
        undo = self._restore(list(self._items))
        if isinstance(index, slice):
            self._items[index] = [_as_step(v) for v in value]
            start = 0
        else:
            self._items[index] = _as_step(value)
            start = range(len(self._items))[index]
        self._on_change(start, undo)

    @overload
    def __delitem__(self, index: int) -> None: ...
    @overload
    def __delitem__(self, index: slice) -> None: ...
    def __delitem__(self, index: int | slice) -> None:
        undo = self._restore(list(self._items))
        start = 0 if isinstance(index, slice) else range(len(self._items))[index]
        del self._items[index]
        self._on_change(start, undo)

    # Each change hands its memory an undo for the in-memory list, used if persisting the
    # change fails; appends undo by truncating, so appending never copies the list.
    def reset(self, steps: Iterable[MemoryStep]) -> Callable[[], None]:
        """Hold ``steps`` instead, without telling the memory; returns the undo."""
        undo = self._restore(list(self._items))
        self._items = [_as_step(s) for s in steps]
        return undo

    def _restore(self, before: list[MemoryStep]) -> Callable[[], None]:
        def undo() -> None:
            self._items = before

        return undo

    def _truncate(self, size: int) -> Callable[[], None]:
        def undo() -> None:
            del self._items[size:]

        return undo

    def insert(self, index: int, value: MemoryStep) -> None:
        step = _as_step(value)
        size = len(self._items)
        position = min(max(index + size if index < 0 else index, 0), size)
        self._items.insert(position, step)

        def undo() -> None:
            del self._items[position]

        self._on_change(position, undo)

    def append(self, value: MemoryStep) -> None:
        step = _as_step(value)
        size = len(self._items)
        self._items.append(step)
        self._on_change(size, self._truncate(size))

    def extend(self, values: Iterable[MemoryStep]) -> None:
        new = [_as_step(v) for v in values]
        if not new:
            return
        size = len(self._items)
        self._items.extend(new)
        self._on_change(size, self._truncate(size))

    def clear(self) -> None:
        undo = self._restore(list(self._items))
        self._items.clear()
        self._on_change(0, undo)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepList):
            return self._items == other._items
        if isinstance(other, list):
            return self._items == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepList({self._items!r})"


class _Attachment:
    __slots__ = ("count", "run_id", "session_id", "store")

    def __init__(self, store: StateStore, session_id: str, run_id: str, count: int) -> None:
        self.store = store
        self.session_id = session_id
        self.run_id = run_id
        self.count = count


class AgentMemory:
    """The record of an agent run: a system prompt and the steps taken.

    Attributes:
        system_prompt: The :class:`SystemPromptStep`; :meth:`reset` keeps it.
        steps: The steps, in order; a list (a :class:`StepList`).
        callbacks: Called by :meth:`add_step` for each step added.

    Example:
        >>> from offprompt.steps import ActionStep, TaskStep, Timing
        >>> memory = AgentMemory("You are a calculator.")
        >>> memory.steps.append(TaskStep(task="2 + 3?"))
        >>> memory.steps.append(ActionStep(step_number=1, timing=Timing(start_time=0.0),
        ...                                code_action="print(2 + 3)", observations="5"))
        >>> [m.role for m in memory.to_messages()]
        ['system', 'user', 'user']
        >>> memory.return_full_code()
        'print(2 + 3)'
    """

    def __init__(self, system_prompt: str, *, callbacks: CallbackRegistry | None = None) -> None:
        self.system_prompt: SystemPromptStep = SystemPromptStep(system_prompt=system_prompt)
        self.callbacks = callbacks if callbacks is not None else CallbackRegistry()
        self._attached: _Attachment | None = None
        self._steps = StepList(self._steps_changed)

    # -- the list --------------------------------------------------------------------
    @property
    def steps(self) -> StepList:
        """The run's steps, in order (appending one notifies the attached store)."""
        return self._steps

    @steps.setter
    def steps(self, value: Iterable[MemoryStep]) -> None:
        if value is self._steps:  # ``memory.steps += [...]`` already extended in place
            return
        undo = self._steps.reset(value)
        self._steps_changed(0, undo)

    def add_step(self, step: MemoryStep, **context: Any) -> None:
        """Append ``step`` (persisting it when attached), then run the callbacks with ``context``."""
        self._steps.append(step)
        self.callbacks.callback(step, **context)

    def reset(self) -> None:
        """Remove every step, keeping the system prompt (and the attached store in step)."""
        self._steps.clear()

    # -- views ---------------------------------------------------------------------
    def get_succinct_steps(self) -> list[dict[str, Any]]:
        """Each step's ``dict()`` without ``model_input_messages``."""
        return [
            {k: v for k, v in step.dict().items() if k != "model_input_messages"}
            for step in self._steps
        ]

    def get_full_steps(self) -> list[dict[str, Any]]:
        """Each step's ``dict()``, model input messages included."""
        return [step.dict() for step in self._steps]

    def return_full_code(self) -> str:
        """The code actions of the action steps, joined into one script."""
        return "\n\n".join(
            s.code_action
            for s in self._steps
            if isinstance(s, ActionStep) and s.code_action is not None
        )

    def to_messages(self, summary_mode: bool = False) -> list[Message]:
        """The model input for this memory: the system prompt, then each step's messages.

        ``summary_mode`` drops the system prompt, the plans and the model outputs, as
        smolagents does when it asks a model to summarise or re-plan.
        """
        messages = self.system_prompt.to_messages(summary_mode=summary_mode)
        for step in self._steps:
            messages.extend(step.to_messages(summary_mode=summary_mode))
        return messages

    def replay(self, detailed: bool = False, *, console: Console | None = None) -> None:
        """Print a readable timeline of the run with rich.

        Args:
            detailed: Also show each step's model input messages (long).
            console: A ``rich.console.Console`` to print to (default: a new one).
        """
        replay_steps(
            self.system_prompt.system_prompt, self.steps, detailed=detailed, console=console
        )

    # -- persistence ---------------------------------------------------------------
    def _payload(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        steps = [s.to_dict() for s in self._steps]  # serialise everything before writing anything
        meta = {
            "format": FORMAT_VERSION,
            "count": len(steps),
            "system_prompt": self.system_prompt.system_prompt,
        }
        return meta, steps

    def save(
        self,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Write the whole run to ``store`` (replacing what was saved under ``run_id``).

        Args:
            store: A conversation store (``InMemoryStore``, ``SQLiteStore`` ...).
            run_id: Names the run; no ``/``.
            session_id: The store session to write in; defaults to ``run_id``.
            scope: The :class:`~offprompt.scope.Scope` partition to write in.

        Raises:
            SerializationError: a step holds a value that is neither JSON nor an artifact;
                nothing is written then.
        """
        session = session_id if session_id is not None else check_run_id(run_id)
        check_run_id(run_id)
        store = with_scope(store, scope)
        meta, steps = self._payload()
        old = store.get_state(session, meta_key(run_id))
        old_count = (
            old["count"] if isinstance(old, Mapping) and isinstance(old.get("count"), int) else 0
        )
        for index, data in enumerate(steps):
            store.set_state(session, step_key(run_id, index), data)
        store.set_state(session, meta_key(run_id), meta)
        for index in range(len(steps), old_count):
            store.delete_state(session, step_key(run_id, index))

    async def asave(
        self,
        store: AsyncStateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Async twin of :meth:`save`, through the store's ``a``-prefixed methods."""
        session = session_id if session_id is not None else check_run_id(run_id)
        check_run_id(run_id)
        store = with_scope(store, scope)
        meta, steps = self._payload()
        old = await store.aget_state(session, meta_key(run_id))
        old_count = (
            old["count"] if isinstance(old, Mapping) and isinstance(old.get("count"), int) else 0
        )
        for index, data in enumerate(steps):
            await store.aset_state(session, step_key(run_id, index), data)
        await store.aset_state(session, meta_key(run_id), meta)
        for index in range(len(steps), old_count):
            await store.adelete_state(session, step_key(run_id, index))

    @classmethod
    def load(
        cls,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        attach: bool = False,
        callbacks: CallbackRegistry | None = None,
        scope: Scope | None = None,
    ) -> AgentMemory:
        """Read a run saved by :meth:`save` or recorded with :meth:`attach`.

        Args:
            attach: Keep recording into the same run: later appends are persisted.
            scope: The :class:`~offprompt.scope.Scope` partition the run was saved in.

        Raises:
            NotFoundError: nothing is saved under ``run_id``.
            UnknownTypeError: a saved step has a ``type`` no step class has; the message
                names it and the step's index.
            StorageError: the saved record is incomplete or corrupt.
        """
        session = session_id if session_id is not None else check_run_id(run_id)
        check_run_id(run_id)
        store = with_scope(store, scope)
        count, system_prompt = parse_meta(
            store.get_state(session, meta_key(run_id)), run_id, session
        )
        steps = [
            load_step(store.get_state(session, step_key(run_id, i)), i, run_id)
            for i in range(count)
        ]
        memory = cls(system_prompt, callbacks=callbacks)
        memory.steps.reset(steps)
        if attach:
            attachment = _Attachment(store, session, run_id, count)
            memory._attached = attachment  # private-ok: the instance this classmethod builds
        return memory

    @classmethod
    async def aload(
        cls,
        store: AsyncStateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        callbacks: CallbackRegistry | None = None,
        scope: Scope | None = None,
    ) -> AgentMemory:
        """Async twin of :meth:`load` (without ``attach``: auto-persistence is sync)."""
        session = session_id if session_id is not None else check_run_id(run_id)
        check_run_id(run_id)
        store = with_scope(store, scope)
        count, system_prompt = parse_meta(
            await store.aget_state(session, meta_key(run_id)), run_id, session
        )
        steps = [
            load_step(await store.aget_state(session, step_key(run_id, i)), i, run_id)
            for i in range(count)
        ]
        memory = cls(system_prompt, callbacks=callbacks)
        memory.steps.reset(steps)
        return memory

    @staticmethod
    def delete_run(store: StateStore, run_id: str, *, session_id: str | None = None) -> None:
        """Remove a saved run (no error if there is none)."""
        session = session_id if session_id is not None else check_run_id(run_id)
        check_run_id(run_id)
        for key in store.state_keys(session, prefix=f"steps/{run_id}/"):
            store.delete_state(session, key)

    @staticmethod
    def list_runs(store: StateStore, session_id: str) -> list[str]:
        """The run ids saved in ``session_id``, sorted."""
        keys = store.state_keys(session_id, prefix="steps/")
        return sorted({k.split("/")[1] for k in keys if k.endswith("/meta") and k.count("/") == 2})

    def attach(
        self,
        store: StateStore,
        run_id: str,
        *,
        session_id: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        """Save now, then persist every change to :attr:`steps` as it happens.

        An appended step is written to ``steps/{run_id}/{index:08d}`` before the run's
        header is updated, so a crash never leaves a half-counted step. Edits in the
        middle of the list (insert, delete, replace) rewrite the steps after the edit and
        are not atomic across a crash. A step mutated in place after it was appended is
        written again by :meth:`sync`. Only one ``AgentMemory`` should record a run.
        """
        store = with_scope(store, scope)
        self.save(store, run_id, session_id=session_id)
        session = session_id if session_id is not None else run_id
        self._attached = _Attachment(store, session, run_id, len(self._steps))

    def detach(self) -> None:
        """Stop persisting changes (what was written stays)."""
        self._attached = None

    def sync(self) -> None:
        """Rewrite the attached run entirely (after steps were changed in place)."""
        if self._attached is None:
            raise ValidationError("AgentMemory.sync() needs an attached store; call attach() first")
        att = self._attached
        self.save(att.store, att.run_id, session_id=att.session_id)
        att.count = len(self._steps)

    @property
    def attached(self) -> bool:
        """Whether the memory is attached to a store (:meth:`attach`)."""
        return self._attached is not None

    def _steps_changed(self, start: int, undo: Callable[[], None]) -> None:
        """Persist steps[start:] and the new count; on failure ``undo`` the in-memory change."""
        att = self._attached
        if att is None:
            return
        items = self._steps
        try:
            payload = [s.to_dict() for s in items[start:]]
            for offset, data in enumerate(payload):
                att.store.set_state(att.session_id, step_key(att.run_id, start + offset), data)
            meta = {
                "format": FORMAT_VERSION,
                "count": len(items),
                "system_prompt": self.system_prompt.system_prompt,
            }
            att.store.set_state(att.session_id, meta_key(att.run_id), meta)
        except BaseException:
            undo()
            raise
        for index in range(len(items), att.count):
            att.store.delete_state(att.session_id, step_key(att.run_id, index))
        att.count = len(items)

    def __repr__(self) -> str:
        return f"AgentMemory(system_prompt={self.system_prompt.system_prompt[:40]!r}, steps={len(self._steps)})"
