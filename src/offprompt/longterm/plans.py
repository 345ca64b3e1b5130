"""``PlanMemory``: a plan's sub-tasks and their states, per conversation (DB-GPT's plans memory).

A planner splits a goal into numbered sub-tasks; executors pick the ones still to do,
mark them running, complete or failed, and count retries. Everything is written through
a conversation store's state API, one key per sub-task, so a multi-step agent that
stops (or crashes) resumes with :meth:`PlanMemory.get_todo_plans` after a restart.

Layout, with the conversation id as the store's session id::

    plans/{sub_task_num:08d}     one SubTask.to_dict()

The operations and field names are DB-GPT's ``GptsPlansMemory`` / ``GptsPlan``
(``batch_save``, ``get_by_conv_id``, ``get_by_conv_id_and_num``, ``get_todo_plans``,
``complete_task``, ``update_task``, ``remove_by_conv_id``); states are DB-GPT's
``todo``, ``running``, ``retrying``, ``complete`` and ``failed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from offprompt._validation import deserialization_error, validation_error
from offprompt.errors import DeserializationError, NamespaceError, NotFoundError, ValidationError
from offprompt.steps import AsyncStateStore, StateStore
from offprompt.stores.base import ScopedStore

if TYPE_CHECKING:
    from offprompt.scope import Scope

__all__ = ["PLAN_STATES", "TODO_STATES", "PlanMemory", "PlanState", "SubTask"]

PlanState = Literal["todo", "running", "retrying", "complete", "failed"]
PLAN_STATES: tuple[str, ...] = get_args(PlanState)
#: States :meth:`PlanMemory.get_todo_plans` returns, as DB-GPT's does.
TODO_STATES: tuple[str, ...] = ("todo", "retrying")
_PREFIX = "plans/"


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class SubTask(BaseModel):
    """One sub-task of a plan (DB-GPT's ``GptsPlan``).

    Attributes:
        conv_id: The conversation the plan belongs to.
        sub_task_num: The sub-task's number, unique within the conversation.
        sub_task_content: What to do.
        sub_task_title: A short title.
        sub_task_agent: The agent assigned to it.
        resource_name: A resource the sub-task uses.
        rely: Numbers of the sub-tasks it depends on (DB-GPT's ``"1,2"`` string is read).
        agent_model: The model the agent uses.
        retry_times: How often it has been retried.
        max_retry_times: The retry budget.
        state: ``todo``, ``running``, ``retrying``, ``complete`` or ``failed``.
        result: The outcome, once there is one.
        updated_at: When it last changed.

    Example:
        >>> SubTask(conv_id="c1", sub_task_num=1, sub_task_content="Find the sales table").state
        'todo'
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    conv_id: str = Field(min_length=1)
    sub_task_num: int = Field(ge=0)
    sub_task_content: str
    sub_task_title: str | None = None
    sub_task_agent: str | None = None
    resource_name: str | None = None
    rely: list[int] = Field(default_factory=list)
    agent_model: str | None = None
    retry_times: int = Field(default=0, ge=0)
    max_retry_times: int = Field(default=5, ge=0)
    state: PlanState = "todo"
    result: str | None = None
    updated_at: datetime = Field(default_factory=_utcnow)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise validation_error("SubTask", exc) from None

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except PydanticValidationError as exc:
            raise validation_error("SubTask", exc) from None

    @field_validator("state", mode="before")
    @classmethod
    def _known_state(cls, value: Any) -> Any:
        if value not in PLAN_STATES:
            raise ValidationError(
                f"unknown sub-task state {value!r}; expected one of {', '.join(PLAN_STATES)}"
            )
        return value

    @field_validator("rely", mode="before")
    @classmethod
    def _rely(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            try:
                return [int(part) for part in value.replace(" ", "").split(",") if part]
            except ValueError:
                raise ValidationError(
                    f"SubTask.rely must list sub-task numbers, got {value!r}"
                ) from None
        return value

    @property
    def is_done(self) -> bool:
        """Whether the sub-task finished (``complete`` or ``failed``)."""
        return self.state in ("complete", "failed")

    def to_dict(self) -> dict[str, Any]:
        """The sub-task as a JSON-ready dict."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubTask:
        """Rebuild a sub-task from ``to_dict()`` output; ``DeserializationError`` on a bad shape."""
        if not isinstance(data, Mapping):
            raise DeserializationError(
                f"a sub-task must be a JSON object, got {type(data).__name__}"
            )
        try:
            return cls.model_validate(dict(data))
        except PydanticValidationError as exc:
            raise deserialization_error("SubTask", exc) from None
        except ValidationError as exc:
            raise DeserializationError(f"SubTask: {exc}") from None


def _key(num: int) -> str:
    return f"{_PREFIX}{num:08d}"


def _check_conv(conv_id: str) -> str:
    if not isinstance(conv_id, str) or not conv_id.strip():
        raise NamespaceError(
            f"conv_id must be a non-empty string, got {conv_id!r}", conv_id=conv_id
        )
    return conv_id


def _prepare_batch(plans: Iterable[SubTask | Mapping[str, Any]]) -> list[SubTask]:
    """Validate a whole batch before anything is written."""
    tasks = [p if isinstance(p, SubTask) else SubTask(**dict(p)) for p in plans]
    seen: set[tuple[str, int]] = set()
    for task in tasks:
        ident = (task.conv_id, task.sub_task_num)
        if ident in seen:
            raise ValidationError(
                f"sub-task {task.sub_task_num} of conversation {task.conv_id!r} appears twice in the batch"
            )
        seen.add(ident)
    return tasks


def _read(conv_id: str, key: str, data: Any) -> SubTask:
    try:
        task = SubTask.from_dict(data)
    except DeserializationError as exc:
        raise DeserializationError(
            f"conversation {conv_id!r}, {key}: {exc}", conv_id=conv_id
        ) from None
    return task


def _found(task: SubTask | None, conv_id: str, task_num: int) -> SubTask:
    """``task``, or the ``NotFoundError`` for a sub-task the conversation does not have."""
    if task is None:
        raise NotFoundError(
            f"conversation {conv_id!r} has no sub-task {task_num}",
            conv_id=conv_id,
            sub_task_num=task_num,
        )
    return task


def _updated(
    task: SubTask,
    *,
    state: str,
    retry_times: int | None = None,
    agent: str | None = None,
    model: str | None = None,
    result: str | None = None,
) -> SubTask:
    changes: dict[str, Any] = {"state": state, "updated_at": _utcnow()}
    if retry_times is not None:
        changes["retry_times"] = retry_times
    changes["result"] = result
    if agent:
        changes["sub_task_agent"] = agent
    if model:
        changes["agent_model"] = model
    # Validate on a copy so a bad state or retry count leaves the stored task as it was.
    return SubTask(**{**task.model_dump(), **changes})


class PlanMemory:
    """Sub-tasks of plans, per conversation, persisted in a conversation store.

    Args:
        store: A conversation store with the state API (``InMemoryStore``,
            ``SQLiteStore`` ...). The conversation id is used as the store session.
        scope: The :class:`~offprompt.scope.Scope` partition (tenant, user, agent, run)
            the plans live in; reads and listings see only that partition.

    Example::

        plans = PlanMemory(SQLiteStore("agent.db"))
        plans.batch_save([SubTask(conv_id="c1", sub_task_num=1, sub_task_content="a"),
                          SubTask(conv_id="c1", sub_task_num=2, sub_task_content="b", rely=[1])])
        plans.complete_task("c1", 1, "done")
        [t.sub_task_num for t in plans.get_todo_plans("c1")]   # [2]
    """

    def __init__(self, store: StateStore, *, scope: Scope | None = None) -> None:
        if scope is not None:
            store = cast(StateStore, ScopedStore(cast(Any, store), scope))
        self.store = store
        self.scope = scope

    # -- writes ---------------------------------------------------------------------
    def batch_save(self, plans: Sequence[SubTask | Mapping[str, Any]]) -> None:
        """Save sub-tasks (a sub-task number already saved is replaced).

        The whole batch is validated first: one bad item writes nothing.
        """
        for task in _prepare_batch(plans):
            self.store.set_state(task.conv_id, _key(task.sub_task_num), task.to_dict())

    def complete_task(self, conv_id: str, task_num: int, result: str) -> SubTask:
        """Mark a sub-task complete with its result; returns the updated sub-task."""
        task = _updated(
            _found(self._get(conv_id, task_num), conv_id, task_num), state="complete", result=result
        )
        self.store.set_state(conv_id, _key(task_num), task.to_dict())
        return task

    def update_task(  # noqa: PLR0917 DB-GPT's signature, positional as there
        self,
        conv_id: str,
        task_num: int,
        state: str,
        retry_times: int,
        agent: str | None = None,
        model: str | None = None,
        result: str | None = None,
    ) -> SubTask:
        """Set a sub-task's state and retry count (and agent, model, result), as DB-GPT does.

        Raises:
            NotFoundError: the conversation has no such sub-task.
            ValidationError: unknown state or negative retry count; nothing changes.
        """
        task = _updated(
            _found(self._get(conv_id, task_num), conv_id, task_num),
            state=state,
            retry_times=retry_times,
            agent=agent,
            model=model,
            result=result,
        )
        self.store.set_state(conv_id, _key(task_num), task.to_dict())
        return task

    def remove_by_conv_id(self, conv_id: str) -> None:
        """Delete every sub-task of the conversation."""
        for key in self.store.state_keys(_check_conv(conv_id), prefix=_PREFIX):
            self.store.delete_state(conv_id, key)

    # -- reads ----------------------------------------------------------------------
    def _get(self, conv_id: str, task_num: int) -> SubTask | None:
        data = self.store.get_state(_check_conv(conv_id), _key(task_num))
        return None if data is None else _read(conv_id, _key(task_num), data)

    def get_by_conv_id(self, conv_id: str) -> list[SubTask]:
        """All sub-tasks of the conversation, by number."""
        keys = self.store.state_keys(_check_conv(conv_id), prefix=_PREFIX)
        tasks = []
        for key in keys:
            data = self.store.get_state(conv_id, key)
            if data is not None:  # removed between listing and reading
                tasks.append(_read(conv_id, key, data))
        return sorted(tasks, key=lambda t: t.sub_task_num)

    def get_by_conv_id_and_num(self, conv_id: str, task_nums: Iterable[int]) -> list[SubTask]:
        """The listed sub-tasks that exist, by number."""
        found = [self._get(conv_id, int(n)) for n in sorted(set(task_nums))]
        return [t for t in found if t is not None]

    def get_todo_plans(self, conv_id: str, *, include_running: bool = False) -> list[SubTask]:
        """Sub-tasks still to do (``todo`` and ``retrying``), by number.

        Args:
            include_running: Also return ``running`` sub-tasks: after a restart these
                were interrupted and should run again.
        """
        states = (*TODO_STATES, "running") if include_running else TODO_STATES
        return [t for t in self.get_by_conv_id(conv_id) if t.state in states]

    def next_task(self, conv_id: str, *, include_running: bool = True) -> SubTask | None:
        """The first sub-task to do whose ``rely`` sub-tasks are all complete, if any."""
        tasks = self.get_by_conv_id(conv_id)
        complete = {t.sub_task_num for t in tasks if t.state == "complete"}
        states = (*TODO_STATES, "running") if include_running else TODO_STATES
        for task in tasks:
            if task.state in states and set(task.rely) <= complete:
                return task
        return None

    # -- async twins ------------------------------------------------------------------
    async def abatch_save(self, plans: Sequence[SubTask | Mapping[str, Any]]) -> None:
        """Async twin of :meth:`batch_save`."""
        for task in _prepare_batch(plans):
            await self._aset(task)

    async def acomplete_task(self, conv_id: str, task_num: int, result: str) -> SubTask:
        """Async twin of :meth:`complete_task`."""
        task = _updated(
            _found(await self._aget(conv_id, task_num), conv_id, task_num),
            state="complete",
            result=result,
        )
        await self._aset(task)
        return task

    async def aupdate_task(  # noqa: PLR0917 DB-GPT's signature, positional as there
        self,
        conv_id: str,
        task_num: int,
        state: str,
        retry_times: int,
        agent: str | None = None,
        model: str | None = None,
        result: str | None = None,
    ) -> SubTask:
        """Async twin of :meth:`update_task`."""
        task = _updated(
            _found(await self._aget(conv_id, task_num), conv_id, task_num),
            state=state,
            retry_times=retry_times,
            agent=agent,
            model=model,
            result=result,
        )
        await self._aset(task)
        return task

    async def aremove_by_conv_id(self, conv_id: str) -> None:
        """Async twin of :meth:`remove_by_conv_id`."""
        if isinstance(self.store, AsyncStateStore):
            for key in await self.store.astate_keys(_check_conv(conv_id), prefix=_PREFIX):
                await self.store.adelete_state(conv_id, key)
        else:
            await asyncio.to_thread(self.remove_by_conv_id, conv_id)

    async def aget_by_conv_id(self, conv_id: str) -> list[SubTask]:
        """Async twin of :meth:`get_by_conv_id`."""
        if not isinstance(self.store, AsyncStateStore):
            return await asyncio.to_thread(self.get_by_conv_id, conv_id)
        tasks = []
        for key in await self.store.astate_keys(_check_conv(conv_id), prefix=_PREFIX):
            data = await self.store.aget_state(conv_id, key)
            if data is not None:
                tasks.append(_read(conv_id, key, data))
        return sorted(tasks, key=lambda t: t.sub_task_num)

    async def aget_by_conv_id_and_num(
        self, conv_id: str, task_nums: Iterable[int]
    ) -> list[SubTask]:
        """Async twin of :meth:`get_by_conv_id_and_num`."""
        found = [await self._aget(conv_id, int(n)) for n in sorted(set(task_nums))]
        return [t for t in found if t is not None]

    async def aget_todo_plans(
        self, conv_id: str, *, include_running: bool = False
    ) -> list[SubTask]:
        """Async twin of :meth:`get_todo_plans`."""
        states = (*TODO_STATES, "running") if include_running else TODO_STATES
        return [t for t in await self.aget_by_conv_id(conv_id) if t.state in states]

    async def _aget(self, conv_id: str, task_num: int) -> SubTask | None:
        if not isinstance(self.store, AsyncStateStore):
            return await asyncio.to_thread(self._get, conv_id, task_num)
        data = await self.store.aget_state(_check_conv(conv_id), _key(task_num))
        return None if data is None else _read(conv_id, _key(task_num), data)

    async def _aset(self, task: SubTask) -> None:
        if isinstance(self.store, AsyncStateStore):
            await self.store.aset_state(task.conv_id, _key(task.sub_task_num), task.to_dict())
        else:
            await asyncio.to_thread(
                self.store.set_state, task.conv_id, _key(task.sub_task_num), task.to_dict()
            )
