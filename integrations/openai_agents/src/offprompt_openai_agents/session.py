"""``OffpromptSession``: an OpenAI Agents SDK ``Session`` on offprompt conversation memory.

The SDK calls four methods of a session (``get_items``, ``add_items``, ``pop_item``,
``clear_session``); this class answers them from a
:class:`~offprompt.conversation.ConversationMemory`, one offprompt message per item,
converted by :mod:`offprompt.interop.openai_agents` (lossless: every item comes back as
it was added, byte for byte in its JSON). Store I/O runs in worker threads, so the event
loop never waits on SQLite or PostgreSQL.

Scopes: each method also takes the SDK's opt-in ``wrapper=`` keyword (the run's
``RunContextWrapper``). With ``scope=`` a callable, the scope of every call is
``scope(wrapper.context)``: one session object serves every tenant, and a tenant's
items live in its own partition of the store, which ``offprompt forget --tenant``
deletes.

Large tool outputs: with ``task_memory=``, a ``function_call_output`` whose string
output has at least ``min_tokens`` tokens is stored in task memory when it is added (the
same :class:`~offprompt.task_memory.OffloadPolicy` as every other adapter). The session
keeps the full item; :meth:`OffpromptSession.get_items` (what the SDK puts in front of
the model on the next turns) returns the item with its ``output`` replaced by the
reference and card, and :meth:`OffpromptSession.get_stored_items` returns the items as
they were added. Within the turn that produced it, the SDK hands a tool's output to the
model straight from the run, not from the session: pass
``RunConfig(call_model_input_filter=session.model_input_filter)`` to replace it there
too (the output is stored once, whichever sees it first).
:func:`~offprompt_openai_agents.tools.memory_tools` gives the model the tools to query,
grep and page through the stored output.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agents.items import TResponseInputItem
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from agents.run_config import CallModelData, ModelInputData
from agents.run_context import RunContextWrapper

from offprompt.adapter_kit import ESCAPED_SURROGATES_META, escape_in_run
from offprompt.conversation import ConversationMemory
from offprompt.conversation.opening import open_memory
from offprompt.errors import StorageError, ValidationError
from offprompt.interop.openai_agents import message_to_items, messages_from_items, native_item
from offprompt.messages import Message
from offprompt.scope import Scope, as_scope
from offprompt.stores import BaseStore, release_store
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.offload import OffloadPolicy, ToolContent
from offprompt.tokens import Tokenizer
from offprompt.trace import Tracer

__all__ = ["OFFLOAD_META", "OffpromptSession", "ScopeResolver"]

#: ``Message.meta`` key of an item whose output went to task memory:
#: ``{"text": what the model sees, "reference": StoredReference.to_artifact()}``; for a
#: list output (text, images, files): ``{"output": the parts the model sees,
#: "reference": the first, "references": every StoredReference.to_artifact()}``.
OFFLOAD_META = "offprompt_offload"

#: A function of the run's context (``RunContextWrapper.context``) giving its scope.
ScopeResolver = Callable[[Any], Scope | None]

_T = TypeVar("_T")

#: Offloads remembered (by call id and output digest) so that the model-input filter
#: and ``add_items`` store one output once.
_REMEMBERED = 256
_REFERENCE_HEAD = 'Output of "'
_REFERENCE_MARK = '" was stored in memory with memory_name "'


def _is_reference(output: str) -> bool:
    """Whether a tool output is already an offprompt reference (offloaded earlier)."""
    return output.startswith(_REFERENCE_HEAD) and _REFERENCE_MARK in output[:600]


async def _finish(work: Callable[[], _T]) -> _T:
    """Run ``work`` in a worker thread; on cancellation, wait for it before re-raising.

    A write cancelled while it runs still completes in its thread; waiting for it means
    the caller learns of the cancellation only once the outcome is settled, so a retry
    never doubles an append (the SDK's own sessions do the same).
    """
    task = asyncio.ensure_future(asyncio.to_thread(work))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller gets
        raise cancelled
    return task.result()


class OffpromptSession:
    """A durable, lossless OpenAI Agents SDK session, one conversation per ``session_id``.

    Pass it as ``session=`` to ``Runner.run`` / ``run_sync`` / ``run_streamed``. Items
    are stored in the embedded SQLite file by default (``$OFFPROMPT_HOME/memory.db`` or
    ``./.offprompt/memory.db``); ``store=`` takes any offprompt store, e.g. a
    :class:`~offprompt.stores.PostgresStore` shared by several hosts.

    Args:
        session_id: The conversation.
        memory: An existing ``ConversationMemory`` of ``session_id`` (its store, scope,
            tokenizer and tracer are used).
        store: Any offprompt ``ConversationStore``; it stays the caller's to close.
        path: A SQLite file (instead of ``store``), shared per file in this process.
        session_settings: A ``SessionSettings`` or a dict (``{"limit": 20}``), as every
            SDK session takes it; ``limit`` is how many of the newest items
            :meth:`get_items` returns by default.
        scope: A :class:`~offprompt.scope.Scope` (tenant, user, agent) for every call, or
            a function of the run's context returning it (per-tenant sessions through the
            SDK's ``wrapper=``; a call without a run context is then refused).
        task_memory: Where large tool outputs go; ``None`` keeps every output in the
            prompt history as it is.
        min_tokens: Outputs with at least this many tokens are offloaded
            (``task_memory.min_tokens`` by default).
        tokenizer: Counts each message once, when stored (tiktoken ``o200k_base``).
        tracer: Receives the memory's trace events (not with ``memory=``).

    Attributes:
        session_id: The conversation.
        session_settings: The resolved ``SessionSettings``.
        memory: The conversation memory of the fixed scope (the unscoped partition when
            ``scope`` is a function).
        policy: The offload policy, or ``None`` without ``task_memory``.

    Raises:
        ValidationError: More than one of ``memory``/``store``/``path``, a ``memory``
            of another session, or ``scope`` with ``memory``.
        TypeError: ``session_settings`` is neither a ``SessionSettings`` nor a dict, or
            names an unknown setting (the SDK's own error, as its sessions raise it).
        pydantic.ValidationError: A setting of the wrong type (the SDK's own error).

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> import asyncio
        >>> session = OffpromptSession("user-42", store=InMemoryStore())
        >>> asyncio.run(session.add_items([{"role": "user", "content": "My code is 7431."}]))
        >>> asyncio.run(session.get_items())
        [{'role': 'user', 'content': 'My code is 7431.'}]
    """

    def __init__(  # noqa: PLR0913 keyword-only public options
        self,
        session_id: str,
        *,
        memory: ConversationMemory | None = None,
        store: BaseStore | None = None,
        path: str | os.PathLike[str] | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        scope: Scope | ScopeResolver | None = None,
        task_memory: TaskMemory | None = None,
        min_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        # The SDK's own coercion and its own errors (TypeError "Unknown session settings:
        # limitt", pydantic's ValidationError for a bad value): a drop-in raises what every
        # SDK session raises, so code and tests written against the SDK hold.
        self.session_settings: SessionSettings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        if memory is not None and scope is not None:
            raise ValidationError("give the scope to the ConversationMemory passed as memory=")
        self._resolver: ScopeResolver | None = None
        fixed: Scope | None = None
        if callable(scope) and not isinstance(scope, Scope):
            self._resolver = scope
        elif scope is not None:
            fixed = as_scope(scope)
        self._owns_store = memory is None and store is None
        base = open_memory(
            session_id, memory=memory, store=store, path=path, tokenizer=tokenizer, tracer=tracer
        )
        self.memory = (
            ConversationMemory(
                base.store,
                base.session_id,
                tokenizer=base.tokenizer,
                tracer=base.tracer,
                scope=fixed,
            )
            if fixed is not None
            else base
        )
        self._store: BaseStore = base.store
        self.session_id: str = self.memory.session_id
        if task_memory is not None and not isinstance(task_memory, TaskMemory):
            raise ValidationError(
                f"task_memory must be an offprompt TaskMemory, got {type(task_memory).__name__}"
            )
        self.policy = (
            None if task_memory is None else OffloadPolicy(task_memory, min_tokens=min_tokens)
        )
        self._scoped: dict[tuple[str, str, str, str], ConversationMemory] = {}
        self._offloads: OrderedDict[tuple[str, str], _Offloaded] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"OffpromptSession(session_id={self.session_id!r}, store={self._store!r})"

    # -- which memory a call uses ------------------------------------------------------
    def _memory(self, wrapper: RunContextWrapper[Any] | None) -> ConversationMemory:
        if self._closed:
            raise StorageError(f"OffpromptSession {self.session_id!r} is closed")
        if self._resolver is None:
            return self.memory
        if wrapper is None:
            raise ValidationError(
                "this OffpromptSession takes its scope from the run's context: call it "
                "through Runner.run(..., context=...) or pass wrapper="
            )
        resolved = self._resolver(wrapper.context)
        if resolved is None:
            raise ValidationError(
                f"the scope function gave no scope for the run context {wrapper.context!r}"
            )
        scope = as_scope(resolved)
        key = scope.partition()
        with self._lock:
            memory = self._scoped.get(key)
            if memory is None:
                memory = self._scoped[key] = ConversationMemory(
                    self._store,
                    self.session_id,
                    tokenizer=self.memory.tokenizer,
                    tracer=self.memory.tracer,
                    scope=scope,
                )
        return memory

    # -- the Session protocol ----------------------------------------------------------
    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The newest ``limit`` items (``session_settings.limit`` when ``None``; all when
        both are ``None``), oldest first, as the model should see them: a large tool
        output offloaded on add is replaced by its reference.

        A ``limit`` of 0 or less returns no items.
        """
        memory = self._memory(wrapper)
        count = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._read, memory, count, True)

    async def get_stored_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """Like :meth:`get_items`, but every item exactly as it was added (full outputs)."""
        memory = self._memory(wrapper)
        count = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._read, memory, count, False)

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Store ``items`` in order, in one transaction (all converted, and large outputs
        offloaded, before anything is written: bad input stores nothing).

        An item holding lone surrogates (invalid Unicode) is stored with each written as
        its ``\\udXXX`` escape, flagged in ``meta["offprompt_escaped_surrogates"]`` and
        logged, not refused: the run goes on, as without offprompt.
        """
        memory = self._memory(wrapper)
        if isinstance(items, (str, bytes, dict)) or not isinstance(items, Sequence):
            raise ValidationError(f"add_items takes a list of items, got {type(items).__name__}")
        if not items:
            return
        batch = list(items)
        await _finish(lambda: self._add(memory, batch))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove and return the newest item (as it was added); ``None`` if there is none."""
        memory = self._memory(wrapper)
        return await _finish(lambda: self._pop(memory))

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Delete every item of the session (of the call's scope)."""
        memory = self._memory(wrapper)
        await _finish(memory.clear)

    async def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """A ``RunConfig.call_model_input_filter``: large tool outputs in the model's input
        replaced by their reference, in the turn that produced them too.

        Without ``task_memory`` the input passes unchanged. The output is stored once:
        when ``add_items`` later saves the same item, it reuses this offload.
        """
        model_data = data.model_data
        if self.policy is None:
            return model_data
        # Plain dicts here: the SDK's item TypedDicts are a union mypy cannot index.
        items: list[Any] = list(model_data.input)
        names = _call_names(items)
        changed = False
        for index, item in enumerate(items):
            output = _large_output_candidate(item)
            if output is None:
                continue
            call_id = item.get("call_id")
            name = names.get(call_id) or "tool"
            offloaded = await asyncio.to_thread(self._offload_one, name, output, call_id)
            if offloaded.references:
                replaced = dict(item)
                replaced["output"] = offloaded.output
                items[index] = replaced
                changed = True
        if not changed:
            return model_data
        return ModelInputData(input=items, instructions=model_data.instructions)

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Give back the shared store opened from ``path=`` (or the default file); later
        calls raise. A store passed as ``store=`` or ``memory=`` stays open. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owns_store:
            release_store(self._store)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await asyncio.to_thread(self.close)

    # -- the work, in a worker thread --------------------------------------------------
    def _read(self, memory: ConversationMemory, limit: int | None, view: bool) -> list[Any]:
        if limit is not None and limit <= 0:
            return []
        store, sid = memory.store, memory.session_id
        start = None
        if limit is not None:
            entries = store.read_index(sid)
            if len(entries) > limit:
                start = entries[-limit].seq
        items: list[Any] = []
        for stored in store.read(sid, start=start):
            items.extend(_items_of(stored.message, view))
        return items[-limit:] if limit is not None else items

    def _add(self, memory: ConversationMemory, items: list[Any]) -> None:
        # Items arrive inside an agent run: lone surrogates are escaped and flagged, not
        # refused (the core's rule, escape_in_run), so the run goes on.
        escaped = [escape_in_run(item, what=f"session item {i}") for i, item in enumerate(items)]
        items = [item for item, _ in escaped]
        messages = messages_from_items(items)
        for message, (_, changed) in zip(messages, escaped, strict=True):
            if changed:
                message.meta[ESCAPED_SURROGATES_META] = True
        if self.policy is not None:
            messages = self._offload(memory, items, messages)
        memory.add_messages(messages)

    def _offload(
        self, memory: ConversationMemory, items: list[Any], messages: list[Message]
    ) -> list[Message]:
        names = _call_names(items)
        out: list[Message] = []
        for item, message in zip(items, messages, strict=True):
            output = _large_output_candidate(item)
            if output is not None:
                call_id = item.get("call_id")
                name = names.get(call_id) or self._tool_name(memory, call_id) or "tool"
                offloaded = self._offload_one(name, output, call_id)
                if offloaded.references:
                    seen: dict[str, Any] = {"reference": offloaded.references[0]}
                    if isinstance(offloaded.output, str):
                        seen["text"] = offloaded.output
                    else:
                        seen["output"] = offloaded.output
                        seen["references"] = offloaded.references
                    meta = {**message.meta, OFFLOAD_META: seen}
                    message = message.model_copy(update={"meta": meta})
            out.append(message)
        return out

    def _offload_one(self, name: str, output: str | list[Any], call_id: Any) -> _Offloaded:
        assert self.policy is not None
        # surrogatepass: an output holding lone surrogates still has a key (it is stored
        # with them escaped, the core's rule for text arriving inside a run).
        text = output if isinstance(output, str) else json.dumps(output, sort_keys=True)
        key = (str(call_id), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        with self._lock:
            known = self._offloads.get(key)
        if known is not None:
            return known
        offloaded = _offloaded(self.policy, name, output, call_id=str(call_id) if call_id else None)
        with self._lock:
            self._offloads[key] = offloaded
            while len(self._offloads) > _REMEMBERED:
                self._offloads.popitem(last=False)
        return offloaded

    @staticmethod
    def _tool_name(memory: ConversationMemory, call_id: Any) -> str | None:
        """The name of the stored call ``call_id`` answers (newest first)."""
        for stored in reversed(memory.stored()):
            for call in stored.message.tool_calls:
                if call.id == call_id:
                    return call.name
        return None

    def _pop(self, memory: ConversationMemory) -> Any:
        store, sid = memory.store, memory.session_id
        while True:
            with store.transaction():
                entries = store.read_index(sid)
                if not entries:
                    return None
                seq = entries[-1].seq
                found = store.read(sid, start=seq, end=seq + 1)
                # Another writer may have popped it first: only a delete that removed
                # the row returns its item.
                if found and store.delete_range(sid, seq, seq + 1) == 1:
                    return _items_of(found[0].message, False)[-1]


def _call_names(items: Sequence[Any]) -> dict[Any, str]:
    """Call id -> tool name of the function calls among ``items``."""
    return {
        item.get("call_id"): str(item.get("name"))
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name")
    }


def _large_output_candidate(item: Any) -> str | list[Any] | None:
    """The output of a ``function_call_output`` item that the policy should see: a
    string, or a list of ``input_text`` / ``input_image`` / ``input_file`` parts."""
    if not isinstance(item, dict) or item.get("type") != "function_call_output":
        return None
    output = item.get("output")
    if isinstance(output, list) and output:
        return output
    if not isinstance(output, str) or not output or _is_reference(output):
        return None
    return output


@dataclass(frozen=True)
class _Offloaded:
    """What the policy made of one output: the output the model sees, the references."""

    output: str | list[Any]
    references: list[dict[str, Any]]


def _binary_part(part: dict[str, Any]) -> ToolContent | None:
    """An ``input_image`` / ``input_file`` part holding its bytes (a data URL), else ``None``."""
    if part.get("type") == "input_image":
        return ToolContent.of_data_url(part.get("image_url"))
    if part.get("type") == "input_file":
        return ToolContent.of_data_url(part.get("file_data"))
    return None


def _offloaded(
    policy: OffloadPolicy, name: str, output: str | list[Any], *, call_id: str | None
) -> _Offloaded:
    """The core policy on one output; a list output is mapped onto the core's kinds (its
    ``input_text`` parts one text block, each image or file holding its bytes a blob)."""
    if isinstance(output, str):
        one = policy.offload(name, output, call_id=call_id)
        refs = [one.reference.to_artifact()] if one.reference is not None else []
        return _Offloaded(one.text if refs else output, refs)
    texts = [
        i
        for i, part in enumerate(output)
        if isinstance(part, dict) and part.get("type") == "input_text"
    ]
    blocks: list[ToolContent] = []
    where: list[list[int]] = []
    if texts:
        blocks.append(ToolContent.of_text("".join(str(output[i].get("text", "")) for i in texts)))
        where.append(texts)
    for index, part in enumerate(output):
        binary = _binary_part(part) if isinstance(part, dict) else None
        if binary is not None:
            blocks.append(binary)
            where.append([index])
    results = policy.offload_content(name, blocks, call_id=call_id)
    replaced: dict[int, Any] = {}
    for indices, result in zip(where, results, strict=True):
        if result.reference is not None:
            replaced[indices[0]] = {"type": "input_text", "text": result.text}
            replaced.update({i: None for i in indices[1:]})
    refs = [r.reference.to_artifact() for r in results if r.reference is not None]
    parts = [replaced.get(i, part) for i, part in enumerate(output)]
    return _Offloaded([p for p in parts if p is not None] if refs else output, refs)


def _items_of(message: Message, view: bool) -> list[Any]:
    """The item(s) of a stored message; with ``view``, an offloaded output is replaced by
    the reference the model sees."""
    item = native_item(message)
    if item is None:
        return message_to_items(message)
    offloaded = message.meta.get(OFFLOAD_META)
    if view and isinstance(offloaded, dict):
        if isinstance(offloaded.get("text"), str):
            item["output"] = offloaded["text"]
        elif isinstance(offloaded.get("output"), list):
            item["output"] = offloaded["output"]
    return [item]
