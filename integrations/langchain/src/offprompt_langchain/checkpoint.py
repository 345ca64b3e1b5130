"""``OffpromptSaver``: a LangGraph checkpointer on offprompt's conversation stores.

Every LangGraph thread is an offprompt conversation session named by the thread id:

* the root namespace's ``messages`` channel (the ``add_messages`` list) is appended to
  the session, each message once, through :func:`~offprompt_langchain.from_langchain`;
  a checkpoint stores only the runs of sequence numbers its list is made of
  (``[[start, length], ...]``), so a thread of n turns stores O(n) message bytes instead
  of a copy of the whole list per checkpoint;
* everything else (the checkpoint itself, its metadata, the other channels, pending
  writes, subgraph namespaces) is serialized by LangGraph's serializer (``serde``,
  ``JsonPlusSerializer`` by default; an ``EncryptedSerializer`` encrypts it all) and
  kept in the session's state documents under ``langgraph/...`` keys.

So ``ConversationMemory(store, session_id=thread_id)``, LlamaIndex's
``OffpromptMemory.from_defaults(session_id=thread_id)`` and ``offprompt show`` /
``export`` / ``forget`` see the thread directly, and ``forget(scope)`` removes its
checkpoints with its messages.

Documented outcomes:

* The session is the log of every message the thread's root ``messages`` channel ever
  held; a message replaced by id (``add_messages``) or removed (``RemoveMessage``) stays
  in the log, only the checkpoints stop referring to it. ``prune`` leaves the log alone.
* Messages that retention (``max_runs``, ``delete_range``) deleted from the session are
  missing from the lists of older checkpoints that referred to them; a warning is logged
  naming the thread and how many were missing.
* Two processes writing the *same* thread each store their own checkpoints (ids are
  unique); the thread's latest checkpoint is the one with the highest id, as in
  LangGraph's SQL savers. Different threads of one SQLite file are fully independent.
* A ``put`` killed half-way leaves the previous checkpoint the latest one: on SQLite
  the put is one transaction; on stores without transactions the checkpoint's row,
  written after its messages and values, is what makes it exist.

Size: one state row per checkpoint (:mod:`offprompt_langchain._checkpoint_rows`,
format 3): the serializer's bytes of the body, the metadata and the small channel values,
then the pending writes, deflated with the parent's payload as the preset dictionary (a
delta; ``depth`` counts the chain, a snapshot at least every ``SNAPSHOT_EVERY``), as
base85 in the row's JSON. ``put`` (messages, the row, the parent's writes turned into
session references, the head) and ``put_writes`` are each one store transaction.
``delete_for_runs`` and ``prune`` first rewrite any checkpoint they keep whose chain runs
through one they delete as a snapshot. Rows of formats 1 and 2 (a document per
checkpoint, its writes in a row of their own) are still read, and grown in format 3.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from offprompt.errors import DeserializationError, NamespaceError, ValidationError
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore
from offprompt.tokens import Tokenizer, default_tokenizer
from offprompt_langchain._checkpoint_chains import SNAPSHOT_EVERY as SNAPSHOT_EVERY
from offprompt_langchain._checkpoint_keys import (
    BLOB_PREFIX,
    CP_PREFIX,
    PREFIX,
    WRITES_PREFIX,
    blob_key,
    cp_key,
    head_key,
    quote_part,
    unquote_part,
    writes_key,
)
from offprompt_langchain._checkpoint_messages import (
    ThreadMessageLog,
    ThreadMessages,
    runs_of,
    written_messages,
)
from offprompt_langchain._checkpoint_rows import (
    FORMAT,
    Parts,
    Row,
    deflate,
    encode_payload,
    encode_writes,
)

__all__ = ["OffpromptSaver"]


_STRATEGIES = ("keep_latest", "delete")
_LIVE_WRITES = 256
_INLINE_MAX = 512


class OffpromptSaver(ThreadMessageLog, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose threads are offprompt conversation sessions.

    Args:
        store: Any offprompt store (``SQLiteStore``, ``QdrantStore``, ``InMemoryStore``).
            Default: the SQLite file of the offprompt home (``$OFFPROMPT_HOME/memory.db``
            or ``./.offprompt/memory.db``), shared safely by several processes.
        path: A SQLite file to use instead of the home's (not with ``store``/``url``).
        url: A Qdrant server (``QdrantStore(url=...)``) for several machines.
        api_key: The Qdrant server's API key, with ``url``.
        serde: LangGraph's serializer for checkpoints, metadata, channels and writes
            (``JsonPlusSerializer`` by default; ``EncryptedSerializer`` works).
        scope: The offprompt partition (tenant, user, agent) the threads live in.
        messages_channel: The root channel stored as the conversation session; ``None``
            keeps every channel in ``serde`` (e.g. so an ``EncryptedSerializer`` covers
            the messages too; the thread is then not readable as a session).
        tokenizer: Counts each stored message's tokens once (offprompt's default).

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> saver = OffpromptSaver(InMemoryStore())
        >>> saver.get_tuple({"configurable": {"thread_id": "t1"}}) is None
        True
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        serde: SerializerProtocol | None = None,
        scope: Scope | None = None,
        messages_channel: str | None = "messages",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(serde=serde)
        given = [n for n, v in (("store", store), ("path", path), ("url", url)) if v is not None]
        if len(given) > 1:
            raise ValidationError(f"give one of store, path or url, not {' and '.join(given)}")
        if api_key is not None and url is None:
            raise ValidationError("api_key is for a Qdrant server: give url= with it")
        if messages_channel is not None and (
            not isinstance(messages_channel, str) or not messages_channel
        ):
            raise ValidationError(
                f"messages_channel must be a non-empty str or None, got {messages_channel!r}"
            )
        # What this saver opened, released by close(): a path= (or the home's) file is
        # the process's one shared store of that file, like every memory's.
        self._opened: BaseStore | None = None
        if store is None:
            if url is not None:
                from offprompt.stores import QdrantStore

                store = QdrantStore(url=url, api_key=api_key)
            else:
                from offprompt.stores import open_store

                store = open_store(path=path)
            self._opened = store
        if scope is not None:
            if not isinstance(store, BaseStore):
                raise ValidationError(f"{store!r} cannot be scoped; pass a scoped store instead")
            store = store.scoped(scope)
        self.store: BaseStore = store
        # SQLite keeps a checkpoint row as bytes; other stores as JSON with base85.
        self._binary = bool(getattr(store, "binary_state", False))
        self.messages_channel = messages_channel
        self.tokenizer = tokenizer or default_tokenizer()
        self._lock = threading.RLock()
        self._threads: OrderedDict[str, ThreadMessages] = OrderedDict()
        # (thread, ns, checkpoint id) -> (its stored data, its decoded parts): the preset
        # dictionary of its child's delta, without walking the chain again.
        self._raw: OrderedDict[tuple[str, str, str], tuple[bytes | str, Parts]] = OrderedDict()
        # (thread, checkpoint id) -> the message objects its writes carried, so the next
        # checkpoint (which holds them, stored in the session) can turn them into refs.
        self._early_writes: set[tuple[str, str, str]] = set()
        self._live_writes: OrderedDict[tuple[str, str], list[tuple[str, list[BaseMessage]]]] = (
            OrderedDict()
        )

    def __repr__(self) -> str:
        return f"OffpromptSaver({self.store!r})"

    def __enter__(self) -> OffpromptSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> OffpromptSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Release the store if this saver opened it (a store you passed stays open).

        A ``path=`` file's store is shared per file in the process: it closes when its
        last holder releases it.
        """
        opened, self._opened = self._opened, None
        if opened is not None:
            from offprompt.stores import release_store

            release_store(opened)

    # -- ids and documents -----------------------------------------------------------
    @staticmethod
    def _thread(config: RunnableConfig | Mapping[str, Any]) -> str:
        configurable = config.get("configurable") or {}
        if "thread_id" not in configurable:
            raise ValidationError(
                "the config has no configurable.thread_id; pass "
                '{"configurable": {"thread_id": ...}}'
            )
        return OffpromptSaver._thread_id(configurable["thread_id"])

    @staticmethod
    def _thread_id(thread_id: Any) -> str:
        if isinstance(thread_id, bool) or thread_id is None:
            raise NamespaceError(f"thread_id must be a str, got {thread_id!r}")
        text = thread_id if isinstance(thread_id, str) else str(thread_id)
        from offprompt.stores import validate_session_id

        try:
            return validate_session_id(text)
        except NamespaceError as exc:
            raise NamespaceError(f"thread_id {text[:64]!r} cannot be a session id: {exc}") from None

    @staticmethod
    def _ns(config: RunnableConfig | Mapping[str, Any]) -> str:
        ns = (config.get("configurable") or {}).get("checkpoint_ns", "") or ""
        if not isinstance(ns, str):
            raise ValidationError(f"checkpoint_ns must be a str, got {type(ns).__name__}")
        return ns

    @staticmethod
    def _carried_values(parts: Parts | None, checkpoint: Checkpoint) -> dict[str, list[Any]]:
        """The parent's own values that this checkpoint still has (same version)."""
        if parts is None:
            return {}
        return {
            channel: parts.values[channel]
            for channel, version in checkpoint.get("channel_versions", {}).items()
            if channel in parts.values and parts.values[channel][0] == version
        }

    # -- reading ---------------------------------------------------------------------
    def _blob(
        self, thread_id: str, ns: str, parts: Parts, channel: str, version: Any
    ) -> dict[str, Any] | None:
        """The stored value of ``channel`` at ``version``: in the checkpoint's own row
        when small, else its own row (shared by every checkpoint with it)."""
        inline = parts.values.get(channel)
        if isinstance(inline, list) and len(inline) == 2 and inline[0] == version:
            found = inline[1]
        else:
            found = self._get(thread_id, blob_key(ns, channel, version))
        if found is not None and not isinstance(found, dict):
            raise DeserializationError(
                f"thread {thread_id!r}: the value of channel {channel!r} is corrupt",
                session_id=thread_id,
            )
        return found

    def _channel_values(
        self, thread_id: str, ns: str, parts: Parts, versions: Mapping[str, Any]
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for channel, version in versions.items():
            blob = self._blob(thread_id, ns, parts, channel, version)
            if blob is None or blob.get("empty"):
                continue
            key = blob_key(ns, channel, version)
            if "messages" in blob:
                values[channel] = self._load_messages(thread_id, blob)
            elif "raw" in blob:
                kind, data = blob["raw"]
                values[channel] = self._loads(kind, data, thread_id, key)
            else:
                values[channel] = self._load(blob.get("value"), thread_id, key)
        return values

    def _pending_writes(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row
    ) -> list[PendingWrite]:
        stored = self._writes_of(thread_id, ns, checkpoint_id, row)
        key = cp_key(ns, checkpoint_id)
        rows = sorted(stored.values(), key=lambda r: writes_sort_key(r[4], r[0], r[1]))
        return [(r[0], r[2], self._write_value(thread_id, key, r[3])) for r in rows]

    def _tuple(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row | None = None
    ) -> CheckpointTuple | None:
        row = row or self._row(thread_id, ns, checkpoint_id)
        if row is None:
            return None
        parts = self._parts(thread_id, ns, checkpoint_id, row)
        checkpoint = cast(Checkpoint, self._body(thread_id, ns, checkpoint_id, row))
        metadata = cast(CheckpointMetadata, self._metadata(thread_id, ns, checkpoint_id, row))
        checkpoint = {
            **checkpoint,
            "channel_values": self._channel_values(
                thread_id, ns, parts, checkpoint["channel_versions"]
            ),
        }
        parent = row.parent
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                }
            },
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=self._pending_writes(thread_id, ns, checkpoint_id, row),
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the latest)."""
        thread_id, ns = self._thread(config), self._ns(config)
        with self._lock:
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id:
                return self._tuple(thread_id, ns, checkpoint_id)
            latest = self._latest(thread_id, ns)
            return None if latest is None else self._tuple(thread_id, ns, *latest)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, if it names
        one) or of every thread, matching ``filter`` (metadata equality), older than
        ``before``'s checkpoint, at most ``limit``."""
        if filter is not None and not isinstance(filter, Mapping):
            raise ValidationError(f"filter must be a dict, got {type(filter).__name__}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ValidationError(f"limit must be an int or None, got {limit!r}")
        if config is not None and (config.get("configurable") or {}).get("thread_id") is not None:
            threads = [self._thread(config)]
        else:
            threads = [
                s.session_id
                for s in self.store.sessions()
                if self.store.state_keys(s.session_id, CP_PREFIX)
            ]
        configurable = (config or {}).get("configurable") or {}
        ns_filter = configurable.get("checkpoint_ns")
        wanted_id = configurable.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        candidates = [
            (checkpoint_id, thread_id, ns)
            for thread_id in threads
            for ns, checkpoint_id in self._checkpoint_ids(thread_id, ns_filter)
            if (not wanted_id or checkpoint_id == wanted_id)
            and (not before_id or checkpoint_id < before_id)
        ]
        candidates.sort(reverse=True)  # newest first across threads, as the SQL savers
        remaining = limit
        for checkpoint_id, thread_id, ns in candidates:
            if remaining is not None and remaining <= 0:
                return
            with self._lock:
                found = self._tuple(thread_id, ns, checkpoint_id)
            if found is None:
                continue
            if filter and not all(found.metadata.get(k) == v for k, v in filter.items()):
                continue
            if remaining is not None:
                remaining -= 1
            yield found

    # -- writing ---------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint; the root ``messages`` list goes to the session, once.

        One store transaction: the new messages, the checkpoint's row (with its parent's
        message writes turned into references) and the thread's head.
        """
        thread_id, ns = self._thread(config), self._ns(config)
        if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("id"), str):
            raise ValidationError("checkpoint must be a LangGraph Checkpoint dict with a str id")
        body = self.serde.dumps_typed(
            {k: v for k, v in checkpoint.items() if k != "channel_values"}
        )
        values: dict[str, Any] = checkpoint.get("channel_values", {})
        stored_metadata = self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))
        checkpoint_id = checkpoint["id"]
        with self._lock, self.store.transaction():
            parent = (config.get("configurable") or {}).get("checkpoint_id") or None
            parent_row, parent_parts = self._parent(thread_id, ns, parent)
            own = self._carried_values(parent_parts, checkpoint)
            for channel, version in new_versions.items():
                ref: dict[str, Any] | None = None
                if channel not in values:
                    ref = {"empty": True}
                elif ns == "" and channel == self.messages_channel:
                    ref = self._store_messages(thread_id, values[channel])
                if ref is None:
                    kind, data = self.serde.dumps_typed(values[channel])
                    if len(data) <= _INLINE_MAX:
                        ref = {"raw": (kind, data)}
                    else:
                        own.pop(channel, None)
                        blob = {"value": self._pack(kind, data)}
                        self.store.set_state(thread_id, blob_key(ns, channel, version), blob)
                        continue
                own[channel] = [version, ref]
            if ns == "" and parent:
                self._writes_to_refs(thread_id, parent)
            payload = encode_payload(body, stored_metadata, own)
            parts = Parts(body, stored_metadata, own, payload)  # writes: set below
            base = parent_parts.payload if parent_parts is not None else None
            depth = parent_row.depth + 1 if parent_row is not None and base is not None else 0
            if depth >= SNAPSHOT_EVERY:
                depth, base = 0, None
            early: list[list[Any]] = []
            if (thread_id, ns, checkpoint_id) in self._early_writes:
                self._early_writes.discard((thread_id, ns, checkpoint_id))
                early = list(self._writes_of(thread_id, ns, checkpoint_id, None).values())
                self.store.delete_state(thread_id, writes_key(ns, checkpoint_id))
            row = Row(
                FORMAT,
                parent,
                depth,
                deflate(payload + encode_writes(early), base if depth else None),
            )
            # Written last: until this row exists, the checkpoint does not.
            self.store.set_state(thread_id, cp_key(ns, checkpoint_id), row.stored(self._binary))
            parts.writes = early
            self._remember(thread_id, ns, checkpoint_id, row, parts)
            head = self._get(thread_id, head_key(ns))
            if not isinstance(head, str) or head < checkpoint_id:
                self.store.set_state(thread_id, head_key(ns), checkpoint_id)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    def _parent(
        self, thread_id: str, ns: str, parent: str | None
    ) -> tuple[Row | None, Parts | None]:
        """The parent's row and parts (``None`` if missing or damaged: this checkpoint
        then stores all of its own)."""
        if not parent:
            return None, None
        try:
            row = self._row(thread_id, ns, parent)
            return (row, None) if row is None else (row, self._parts(thread_id, ns, parent, row))
        except DeserializationError:
            return None, None

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the checkpoint ``config`` names (in its row)."""
        thread_id, ns = self._thread(config), self._ns(config)
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise ValidationError("put_writes needs a config with a checkpoint_id")
        with self._lock, self.store.transaction():
            row = self._row(thread_id, ns, checkpoint_id)
            if row is None:
                # LangGraph may hand a task's writes over before the checkpoint's put has
                # run (both go through its background executor): they wait in a writes
                # row of their own, which the put takes into the checkpoint's row.
                self._early_writes.add((thread_id, ns, checkpoint_id))
            stored = self._writes_of(thread_id, ns, checkpoint_id, row)
            for idx, (channel, value) in enumerate(writes):
                slot = WRITES_IDX_MAP.get(channel, idx)
                inner = f"{task_id}\x1f{slot}"
                if slot >= 0 and inner in stored:
                    continue
                stored[inner] = [task_id, slot, channel, self._dump(value), task_path]
                live = written_messages(value)
                if ns == "" and channel == self.messages_channel and live:
                    entry = self._live_writes.setdefault((thread_id, checkpoint_id), [])
                    entry.append((inner, live))
                    while len(self._live_writes) > _LIVE_WRITES:
                        self._live_writes.popitem(last=False)
            self._store_writes(thread_id, ns, checkpoint_id, row, stored)

    # -- deleting and copying --------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread: its checkpoints, writes and its conversation session."""
        thread = self._thread_id(thread_id)
        with self._lock:
            self.store.delete_session(thread)
            self._threads.pop(thread, None)
            for raw_key in [k for k in self._raw if k[0] == thread]:
                del self._raw[raw_key]

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that the given runs created.

        The messages stay in the session (other checkpoints may refer to them).
        """
        if isinstance(run_ids, str):
            raise ValidationError("delete_for_runs takes a list of run ids, got one str")
        wanted = {str(r) for r in run_ids}
        if not wanted:
            return
        with self._lock:
            for info in self.store.sessions():
                thread_id = info.session_id
                doomed: dict[str, set[str]] = {}
                for ns, checkpoint_id in self._checkpoint_ids(thread_id, None):
                    row = self._row(thread_id, ns, checkpoint_id)
                    if row is None:
                        continue
                    run_id = (self._metadata(thread_id, ns, checkpoint_id, row) or {}).get("run_id")
                    if run_id in wanted:
                        doomed.setdefault(ns, set()).add(checkpoint_id)
                for ns, ids in doomed.items():
                    with self.store.transaction():
                        self._detach(thread_id, ns, ids)
                        for checkpoint_id in ids:
                            self._delete_checkpoint(thread_id, ns, checkpoint_id)
                        self._reset_head(thread_id, ns)

    def _delete_checkpoint(self, thread_id: str, ns: str, checkpoint_id: str) -> None:
        self.store.delete_state(thread_id, cp_key(ns, checkpoint_id))
        self.store.delete_state(thread_id, writes_key(ns, checkpoint_id))
        self._raw.pop((thread_id, ns, checkpoint_id), None)

    def _reset_head(self, thread_id: str, ns: str) -> None:
        ids = self._checkpoint_ids(thread_id, ns)
        if ids:
            self.store.set_state(thread_id, head_key(ns), ids[0][1])
        else:
            self.store.delete_state(thread_id, head_key(ns))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and message of one thread to another.

        The target's session gets its own copy of the messages (new sequence numbers);
        its checkpoints refer to those (each stored as a snapshot).
        """
        source = self._thread_id(source_thread_id)
        target = self._thread_id(target_thread_id)
        if source == target:
            raise ValidationError(f"copy_thread: source and target are both {source!r}")
        with self._lock, self.store.transaction():
            keys = self.store.state_keys(source, PREFIX)
            if not keys:
                return
            stored = self.store.read(source)
            mapping: dict[int, int] = {}
            if stored:
                new_seqs = self.store.append(
                    target, [s.message for s in stored], [s.tokens for s in stored]
                )
                mapping = {s.seq: n for s, n in zip(stored, new_seqs, strict=True)}
            self._threads.pop(target, None)

            def remap(ref: dict[str, Any]) -> dict[str, Any]:
                seqs = [
                    mapping[s]
                    for start, length in ref["messages"]
                    for s in range(start, start + length)
                    if s in mapping
                ]
                return {"messages": runs_of(seqs)}

            def remap_writes(writes: Any) -> None:
                for entry in writes.values() if isinstance(writes, dict) else writes:
                    if isinstance(entry, list) and len(entry) == 5 and isinstance(entry[3], dict):
                        entry[3] = {
                            **entry[3],
                            "ref": [mapping.get(s, -1) for s in entry[3]["ref"]],
                        }

            for key in sorted(keys, key=lambda k: k.startswith(CP_PREFIX)):  # checkpoints last
                value = self._get(source, key)
                if key.startswith(BLOB_PREFIX) and isinstance(value, dict) and "messages" in value:
                    value = remap(value)
                elif key.startswith(CP_PREFIX):
                    ns_part, _, checkpoint_id = key[len(CP_PREFIX) :].rpartition("/")
                    ns = unquote_part(ns_part)
                    row = self._row(source, ns, checkpoint_id)
                    if row is None:
                        continue
                    parts = self._parts(source, ns, checkpoint_id, row)
                    own = {
                        channel: [version, remap(ref) if "messages" in ref else ref]
                        for channel, (version, ref) in parts.values.items()
                    }
                    writes = None
                    if parts.writes is not None:
                        writes = [list(w) for w in parts.writes]
                        remap_writes(writes)
                    fresh = Parts(parts.body, parts.metadata, own, None)
                    value = self._snapshot_row(fresh, writes, row.parent).stored(self._binary)
                elif key.startswith(WRITES_PREFIX) and isinstance(value, dict):
                    remap_writes(value)
                self.store.set_state(target, key, value)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Drop checkpoints of the given threads.

        ``"keep_latest"`` keeps the latest checkpoint of every namespace with its writes,
        plus, for channels stored only as deltas (LangGraph's ``DeltaChannel``), the
        ancestors back to the nearest one that holds their value, so the kept checkpoint
        still loads. The conversation session (the messages) is left alone.
        ``"delete"`` deletes the threads entirely, like :meth:`delete_thread`.
        """
        if strategy not in _STRATEGIES:
            raise ValidationError(f"unknown prune strategy {strategy!r}; use one of {_STRATEGIES}")
        if isinstance(thread_ids, str):
            raise ValidationError("prune takes a list of thread ids, got one str")
        for raw in thread_ids:
            thread_id = self._thread_id(raw)
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self._lock, self.store.transaction():
                self._keep_latest(thread_id)

    def _keep_latest(self, thread_id: str) -> None:
        by_ns: dict[str, list[str]] = {}
        for ns, checkpoint_id in self._checkpoint_ids(thread_id, None):
            by_ns.setdefault(ns, []).append(checkpoint_id)
        for ns, ids in by_ns.items():
            keep = self._chain_to_seeds(thread_id, ns, ids[0])
            blobs: set[str] = set()
            for checkpoint_id in keep:
                row = self._row(thread_id, ns, checkpoint_id)
                if row is not None:
                    body = self._body(thread_id, ns, checkpoint_id, row)
                    blobs.update(blob_key(ns, c, v) for c, v in body["channel_versions"].items())
            self._detach(thread_id, ns, set(ids) - keep)
            for checkpoint_id in ids:
                if checkpoint_id not in keep:
                    self._delete_checkpoint(thread_id, ns, checkpoint_id)
            for key in self.store.state_keys(thread_id, f"{BLOB_PREFIX}{quote_part(ns)}/"):
                if key not in blobs:
                    self.store.delete_state(thread_id, key)
            self.store.set_state(thread_id, head_key(ns), ids[0])

    def _chain_to_seeds(self, thread_id: str, ns: str, latest: str) -> set[str]:
        """``latest`` and the ancestors its delta-only channels still need."""
        keep = {latest}
        row = self._row(thread_id, ns, latest)
        if row is None:
            return keep
        body = self._body(thread_id, ns, latest, row)
        parts = self._parts(thread_id, ns, latest, row)
        missing = {
            c
            for c, v in body["channel_versions"].items()
            if (self._blob(thread_id, ns, parts, c, v) or {}).get("empty")
        }
        parent = row.parent
        while missing and parent:
            keep.add(parent)
            row = self._row(thread_id, ns, parent)
            if row is None:
                break
            body = self._body(thread_id, ns, parent, row)
            parts = self._parts(thread_id, ns, parent, row)
            for channel in list(missing):
                version = body["channel_versions"].get(channel)
                blob = self._blob(thread_id, ns, parts, channel, version)
                if blob is not None and not blob.get("empty"):
                    missing.discard(channel)
            parent = row.parent
        return keep

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """``"<counter>.<random>"``: increasing, and distinct across forks of a thread."""
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(str(current).split(".")[0])
        return f"{counter + 1:010d}.{random.getrandbits(32):08x}"

    # -- async twins (the store's work runs in a worker thread) ----------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
