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
delta; ``depth`` counts the chain, a snapshot at least every ``_SNAPSHOT_EVERY``), as
base85 in the row's JSON. ``put`` (messages, the row, the parent's writes turned into
session references, the head) and ``put_writes`` are each one store transaction.
``delete_for_runs`` and ``prune`` first rewrite any checkpoint they keep whose chain runs
through one they delete as a snapshot. Rows of formats 1 and 2 (a document per
checkpoint, its writes in a row of their own) are still read, and grown in format 3.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import operator
import random
import threading
import zlib
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

from offprompt.errors import (
    DeserializationError,
    NamespaceError,
    OffpromptError,
    ValidationError,
)
from offprompt.scope import Scope
from offprompt.stores.base import BaseStore, ConversationStore, SessionVersion
from offprompt.tokens import Tokenizer, default_tokenizer
from offprompt_langchain._checkpoint_rows import (
    FORMAT,
    Parts,
    Row,
    decode_payload,
    deflate,
    encode_payload,
    encode_writes,
    inflate,
    parse_row,
)
from offprompt_langchain.convert import from_langchain, to_langchain

__all__ = ["OffpromptSaver"]

logger = logging.getLogger(__name__)

PREFIX = "langgraph/"
_CP = PREFIX + "cp/"
_BLOB = PREFIX + "blob/"
_WRITES = PREFIX + "writes/"
_HEAD = PREFIX + "head/"
_SNAPSHOT_EVERY = 16  # a delta chain is at most this long: reads stay cheap
_RAW_CACHE = 512
_STRATEGIES = ("keep_latest", "delete")
_CACHED_THREADS = 64
_COMPRESS_ABOVE = 200
_LIVE_WRITES = 256
_INLINE_MAX = 512


def _q(part: str) -> str:
    """Escape a key component so ``/`` always separates components."""
    return part.replace("%", "%25").replace("/", "%2F")


def _uq(part: str) -> str:
    return part.replace("%2F", "/").replace("%25", "%")


def _cp_key(ns: str, checkpoint_id: str) -> str:
    return f"{_CP}{_q(ns)}/{checkpoint_id}"


def _blob_key(ns: str, channel: str, version: Any) -> str:
    return f"{_BLOB}{_q(ns)}/{_q(channel)}/{_q(str(version))}"


def _writes_key(ns: str, checkpoint_id: str) -> str:
    return f"{_WRITES}{_q(ns)}/{checkpoint_id}"


def _head_key(ns: str) -> str:
    return f"{_HEAD}{_q(ns)}"


def _runs(seqs: Sequence[int]) -> list[list[int]]:
    """``[3, 4, 5, 9]`` → ``[[3, 3], [9, 1]]`` (start, length)."""
    runs: list[list[int]] = []
    for seq in seqs:
        if runs and runs[-1][0] + runs[-1][1] == seq:
            runs[-1][1] += 1
        else:
            runs.append([seq, 1])
    return runs


def _extend_runs(runs: list[list[int]], seqs: Sequence[int]) -> list[list[int]]:
    out = [list(r) for r in runs]
    for seq in seqs:
        if out and out[-1][0] + out[-1][1] == seq:
            out[-1][1] += 1
        else:
            out.append([seq, 1])
    return out


def _written_messages(value: Any) -> list[BaseMessage] | None:
    """The messages a write to the messages channel carries, if that is all it carries."""
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        return list(value)
    return None


def _with_ids(messages: list[BaseMessage], ids: list[Any]) -> list[BaseMessage]:
    return [
        m if m.id == i else m.model_copy(update={"id": i})
        for m, i in zip(messages, ids, strict=True)
    ]


class _ThreadMessages:
    """What one process knows of a thread's session: its messages by seq, and how to
    recognise a message it already stored (by object identity, then by id + equality)."""

    def __init__(self) -> None:
        self.version: SessionVersion | None = None
        self.by_seq: dict[int, BaseMessage] = {}
        self.by_obj: dict[int, tuple[BaseMessage, int]] = {}
        self.by_mid: dict[str, tuple[BaseMessage, int]] = {}
        # The last list put or read, with its seqs: the next put usually extends it.
        self.last: tuple[list[BaseMessage], list[int], list[list[int]]] = ([], [], [])

    def remember(self, message: BaseMessage, seq: int) -> None:
        self.by_seq[seq] = message
        self.by_obj[id(message)] = (message, seq)
        if message.id:
            self.by_mid[message.id] = (message, seq)

    def known_seq(self, message: BaseMessage) -> int | None:
        entry = self.by_obj.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        if message.id:
            entry = self.by_mid.get(message.id)
            if entry is not None and entry[0] == message:
                self.by_obj[id(message)] = (message, entry[1])
                return entry[1]
        return None


class OffpromptSaver(BaseCheckpointSaver[str]):
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
        store: ConversationStore | None = None,
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
        self._owns_store = store is None
        if store is None:
            if url is not None:
                from offprompt.stores import QdrantStore

                store = QdrantStore(url=url, api_key=api_key)
            else:
                from offprompt.stores import SQLiteStore

                store = SQLiteStore(path)
        if scope is not None:
            if not isinstance(store, BaseStore):
                raise ValidationError(f"{store!r} cannot be scoped; pass a scoped store instead")
            store = store.scoped(scope)
        self.store: ConversationStore = store
        # SQLite keeps a checkpoint row as bytes; other stores as JSON with base85.
        self._binary = bool(getattr(store, "binary_state", False))
        self.messages_channel = messages_channel
        self.tokenizer = tokenizer or default_tokenizer()
        self._lock = threading.RLock()
        self._threads: OrderedDict[str, _ThreadMessages] = OrderedDict()
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
        """Close the store if this saver opened it (a store you passed stays open)."""
        if self._owns_store:
            self.store.close()

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

    def _dump(self, value: Any) -> list[str]:
        kind, data = self.serde.dumps_typed(value)
        return self._pack(kind, data)

    @staticmethod
    def _pack(kind: str, data: bytes, zdict: bytes | None = None) -> list[str]:
        if zdict:
            packer = zlib.compressobj(9, zdict=zdict)
            delta = packer.compress(data) + packer.flush()
            if len(delta) < len(data):
                return [kind, base64.b64encode(delta).decode("ascii"), "zdict"]
        if len(data) > _COMPRESS_ABOVE:
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                return [kind, base64.b64encode(packed).decode("ascii"), "zlib"]
        return [kind, base64.b64encode(data).decode("ascii")]

    def _load(self, pair: Any, thread_id: str, key: str) -> Any:
        return self._loads(pair[0], self._unpack(pair, thread_id, key), thread_id, key)

    def _unpack(self, pair: Any, thread_id: str, key: str, zdict: bytes | None = None) -> bytes:
        """The serializer's bytes of a stored ``[type, base64, compression?]`` pair."""
        if not (
            isinstance(pair, list)
            and len(pair) in (2, 3)
            and all(isinstance(p, str) for p in pair)
            and (len(pair) == 2 or pair[2] == "zlib" or (pair[2] == "zdict" and zdict))
        ):
            raise DeserializationError(
                f"thread {thread_id!r}: stored value {key!r} is corrupt (expected [type, data])",
                session_id=thread_id,
                key=key,
            )
        try:
            data = base64.b64decode(pair[1], validate=True)
            if len(pair) == 3 and pair[2] == "zdict":
                unpacker = zlib.decompressobj(zdict=cast(bytes, zdict))
                data = unpacker.decompress(data) + unpacker.flush()
            elif len(pair) == 3:
                data = zlib.decompress(data)
        except (ValueError, zlib.error):
            raise DeserializationError(
                f"thread {thread_id!r}: stored value {key!r} is not base64 (or not zlib)",
                session_id=thread_id,
            ) from None
        return data

    def _loads(self, kind: str, data: bytes, thread_id: str, key: str) -> Any:
        try:
            return self.serde.loads_typed((kind, data))
        except Exception as exc:
            raise DeserializationError(
                f"thread {thread_id!r}: {key!r} cannot be read by {type(self.serde).__name__} "
                f"(serializer type {kind!r}): {type(exc).__name__}: {exc}",
                session_id=thread_id,
                key=key,
            ) from None

    def _get(self, thread_id: str, key: str) -> Any:
        try:
            return self.store.get_state(thread_id, key)
        except ValueError as exc:  # a row whose JSON text is damaged
            if isinstance(exc, OffpromptError):
                raise
            raise DeserializationError(
                f"thread {thread_id!r}: stored document {key!r} is corrupt: {exc}",
                session_id=thread_id,
                key=key,
            ) from None

    def _row(self, thread_id: str, ns: str, checkpoint_id: str) -> Row | None:
        key = _cp_key(ns, checkpoint_id)
        value = self._get(thread_id, key)
        if value is None:
            return None
        row = parse_row(value)
        if row is None:
            raise DeserializationError(
                f"thread {thread_id!r}: checkpoint document {key!r} is corrupt or of an "
                f"unknown format",
                session_id=thread_id,
                key=key,
            )
        return row

    def _parts(self, thread_id: str, ns: str, checkpoint_id: str, row: Row, hops: int = 0) -> Parts:
        """The checkpoint's body, metadata and own values, undoing its delta."""
        cache_key = (thread_id, ns, checkpoint_id)
        cached = self._raw.get(cache_key)
        if cached is not None and cached[0] == row.data:
            self._raw.move_to_end(cache_key)
            return cached[1]
        what = _cp_key(ns, checkpoint_id)
        if row.fmt != FORMAT:
            kind, data = self._body_bytes(thread_id, ns, checkpoint_id, row.doc)
            meta = row.doc.get("metadata")
            values = {
                channel: pair
                for channel, pair in (row.doc.get("values") or {}).items()
                if isinstance(pair, list) and len(pair) == 2
            }
            parts = Parts(
                (kind, data),
                (
                    meta[0] if isinstance(meta, list) and meta else "",
                    self._unpack(meta, thread_id, what),
                ),
                values,
                None,
            )
        else:
            base = None
            if row.depth > 0:
                parent = self._row(thread_id, ns, row.parent) if row.parent else None
                if parent is None or hops >= _SNAPSHOT_EVERY:
                    raise DeserializationError(
                        f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a "
                        f"delta against {row.parent!r}, which is missing",
                        session_id=thread_id,
                        key=what,
                    )
                base = self._parts(thread_id, ns, cast(str, row.parent), parent, hops + 1).payload
                if base is None:
                    raise DeserializationError(
                        f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a "
                        f"delta against {row.parent!r}, which is not of format {FORMAT}",
                        session_id=thread_id,
                        key=what,
                    )
            raw = inflate(cast(bytes, row.data), base, what, thread_id)
            parts = decode_payload(raw, what, thread_id)
        self._remember(thread_id, ns, checkpoint_id, row, parts)
        return parts

    def _remember(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row, parts: Parts
    ) -> None:
        self._raw[(thread_id, ns, checkpoint_id)] = (row.data, parts)
        while len(self._raw) > _RAW_CACHE:
            self._raw.popitem(last=False)

    def _body_bytes(
        self, thread_id: str, ns: str, checkpoint_id: str, doc: Mapping[str, Any], hops: int = 0
    ) -> tuple[str, bytes]:
        """A format 1 or 2 checkpoint's body: its serializer type and bytes."""
        pair = doc.get("checkpoint")
        key = _cp_key(ns, checkpoint_id)
        zdict = None
        if isinstance(pair, list) and len(pair) == 3 and pair[2] == "zdict":
            base = doc.get("parent")
            base_row = (
                self._row(thread_id, ns, base)
                if isinstance(base, str) and hops < _SNAPSHOT_EVERY
                else None
            )
            if base_row is None or base_row.fmt == FORMAT:
                raise DeserializationError(
                    f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is stored as a delta "
                    f"against {base!r}, which is missing",
                    session_id=thread_id,
                    key=key,
                )
            zdict = self._body_bytes(thread_id, ns, cast(str, base), base_row.doc, hops + 1)[1]
        data = self._unpack(pair, thread_id, key, zdict)
        return cast(list[str], pair)[0], data

    def _body(self, thread_id: str, ns: str, checkpoint_id: str, row: Row) -> Any:
        kind, data = self._parts(thread_id, ns, checkpoint_id, row).body
        body = self._loads(kind, data, thread_id, _cp_key(ns, checkpoint_id))
        if not isinstance(body, dict) or "channel_versions" not in body:
            raise DeserializationError(
                f"thread {thread_id!r}: checkpoint {checkpoint_id!r} is corrupt",
                session_id=thread_id,
            )
        return body

    def _metadata(self, thread_id: str, ns: str, checkpoint_id: str, row: Row) -> Any:
        kind, data = self._parts(thread_id, ns, checkpoint_id, row).metadata
        return self._loads(kind, data, thread_id, _cp_key(ns, checkpoint_id))

    def _snapshot_row(
        self, parts: Parts, writes: list[list[Any]] | None, parent: str | None
    ) -> Row:
        payload = parts.payload
        if payload is None:
            payload = encode_payload(parts.body, parts.metadata, parts.values)
        return Row(FORMAT, parent, 0, deflate(payload + encode_writes(writes or []), None))

    def _detach(self, thread_id: str, ns: str, doomed: set[str]) -> None:
        """Rewrite as snapshots the checkpoints that stay but whose delta chain runs
        through one in ``doomed`` (before those are deleted)."""
        if not doomed:
            return
        rows = {
            cid: self._row(thread_id, ns, cid) for _, cid in self._checkpoint_ids(thread_id, ns)
        }
        for cid, row in rows.items():
            if cid in doomed or row is None:
                continue
            link, hops = row.parent if row.depth > 0 else None, 0
            while isinstance(link, str) and link not in doomed and hops < _SNAPSHOT_EVERY:
                base = rows.get(link)
                link = base.parent if base is not None and base.depth > 0 else None
                hops += 1
            if not (isinstance(link, str) and link in doomed):
                continue
            parts = self._parts(thread_id, ns, cid, row)
            if row.fmt == FORMAT:
                fresh = self._snapshot_row(parts, parts.writes, row.parent)
                self.store.set_state(thread_id, _cp_key(ns, cid), fresh.stored(self._binary))
                self._remember(thread_id, ns, cid, fresh, parts)
            else:
                doc = {k: v for k, v in row.doc.items() if k != "depth"}
                doc["checkpoint"] = self._pack(*parts.body)
                self.store.set_state(thread_id, _cp_key(ns, cid), doc)

    def _checkpoint_ids(self, thread_id: str, ns: str | None) -> list[tuple[str, str]]:
        """``(ns, checkpoint_id)`` of the thread, newest first."""
        prefix = _CP if ns is None else f"{_CP}{_q(ns)}/"
        found = []
        for key in self.store.state_keys(thread_id, prefix):
            ns_part, _, cp_id = key[len(_CP) :].rpartition("/")
            found.append((_uq(ns_part), cp_id))
        found.sort(key=operator.itemgetter(1), reverse=True)
        return found

    def _latest(self, thread_id: str, ns: str) -> tuple[str, Row] | None:
        head = self._get(thread_id, _head_key(ns))
        if isinstance(head, str):
            row = self._row(thread_id, ns, head)
            if row is not None:
                return head, row
        # No head yet, or a put died between its checkpoint and its head: list them.
        for _, checkpoint_id in self._checkpoint_ids(thread_id, ns):
            row = self._row(thread_id, ns, checkpoint_id)
            if row is not None:
                return checkpoint_id, row
        return None

    # -- messages --------------------------------------------------------------------
    def _messages_of(self, thread_id: str) -> _ThreadMessages:
        cache = self._threads.get(thread_id)
        if cache is None:
            cache = self._threads[thread_id] = _ThreadMessages()
            while len(self._threads) > _CACHED_THREADS:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(thread_id)
        current = self.store.version(thread_id)
        known = cache.version
        if known == current:
            return cache
        if known is None or known.epoch != current.epoch or current.next_seq < known.next_seq:
            cache = self._threads[thread_id] = _ThreadMessages()
            stored = self.store.read(thread_id)
        else:
            stored = self.store.read(thread_id, start=known.next_seq)
        if stored:
            for seq, message in zip(
                [s.seq for s in stored], to_langchain([s.message for s in stored]), strict=True
            ):
                cache.remember(message, seq)
        cache.version = current
        return cache

    def _store_messages(self, thread_id: str, messages: Any) -> dict[str, Any] | None:
        """Append the messages the session does not hold; return the channel's reference
        (``None`` if the value is not a list of LangChain messages: serde stores it)."""
        if not isinstance(messages, list):
            return None
        cache = self._messages_of(thread_id)
        last_list, last_seqs, last_runs = cache.last
        prefix = len(last_list)
        # A list equal to the last one plus new messages (LangGraph's reducer copies the
        # list and appends): list equality is one C loop that skips identical items, ten
        # times cheaper than an identity check per item at 40,000 messages.
        extends = prefix > 0 and len(messages) >= prefix and messages[:prefix] == last_list
        if extends:
            seqs = list(last_seqs)
            rest = messages[prefix:]
        else:
            seqs, rest = [], messages
        # the prefix equals the last list, already known to be messages
        if not all(isinstance(m, BaseMessage) for m in rest):
            return None
        pending: list[tuple[int, BaseMessage]] = []
        for message in rest:
            seq = cache.known_seq(message)
            if seq is None:
                pending.append((len(seqs), message))
                seqs.append(-1)
            else:
                seqs.append(seq)
        if pending:
            converted = from_langchain([m for _, m in pending])
            counts = [self.tokenizer.count_message(m) for m in converted]
            new_seqs = self.store.append(thread_id, converted, counts)
            for (index, message), seq in zip(pending, new_seqs, strict=True):
                seqs[index] = seq
                cache.remember(message, seq)
            # If someone else appended too, the version stays behind: the next use catches
            # up from there (re-reading ours as well) instead of starting over.
            if cache.version is not None and new_seqs and new_seqs[0] == cache.version.next_seq:
                cache.version = SessionVersion(new_seqs[-1] + 1, cache.version.epoch)
        runs = _extend_runs(last_runs, seqs[prefix:]) if extends else _runs(seqs)
        cache.last = (list(messages), seqs, runs)
        return {"messages": runs}

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

    def _writes_to_refs(self, thread_id: str, checkpoint_id: str) -> None:
        """Replace message values in ``checkpoint_id``'s writes by session references.

        Only where the message is now in the session and reads back equal to what the
        write stored (id included), so the pending writes load exactly as they were.
        """
        live = self._live_writes.pop((thread_id, checkpoint_id), None)
        if not live:
            return
        row = self._row(thread_id, "", checkpoint_id)
        legacy = row is None or row.fmt != FORMAT
        key = _writes_key("", checkpoint_id) if legacy else _cp_key("", checkpoint_id)
        stored = self._writes_of(thread_id, "", checkpoint_id, row)
        cache = self._messages_of(thread_id)
        changed = False
        for inner, objects in live:
            entry = stored.get(inner)
            if not (isinstance(entry, list) and len(entry) == 5 and isinstance(entry[3], list)):
                continue
            seqs = [cache.known_seq(m) for m in objects]
            if any(seq is None for seq in seqs):
                continue
            value = self._load(entry[3], thread_id, key)
            written = _written_messages(value)
            if written is None or len(written) != len(seqs):
                continue
            ids = [m.id for m in written]
            session = [cache.by_seq[s] for s in seqs if s is not None]
            if _with_ids(session, ids) != written:
                continue
            ref: dict[str, Any] = {"ref": seqs}
            if ids != [m.id for m in session]:
                ref["ids"] = ids
            if isinstance(value, BaseMessage):
                ref["single"] = True
            entry[3] = ref
            changed = True
        if changed:
            self._store_writes(thread_id, "", checkpoint_id, row, stored)

    def _writes_of(
        self, thread_id: str, ns: str, checkpoint_id: str, row: Row | None
    ) -> dict[str, list[Any]]:
        """The checkpoint's writes by ``task_id<US>idx`` (in its row, or a legacy row)."""
        if row is not None and row.fmt == FORMAT:
            writes = self._parts(thread_id, ns, checkpoint_id, row).writes or []
            return {f"{w[0]}\x1f{w[1]}": list(w) for w in writes if isinstance(w, list) and w}
        key = _writes_key(ns, checkpoint_id)
        stored = self._get(thread_id, key) or {}
        if not isinstance(stored, dict):
            raise DeserializationError(
                f"thread {thread_id!r}: writes {key!r} are corrupt", session_id=thread_id
            )
        return stored

    def _store_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        row: Row | None,
        writes: dict[str, list[Any]],
    ) -> None:
        if row is None or row.fmt != FORMAT:
            self.store.set_state(thread_id, _writes_key(ns, checkpoint_id), writes)
            return
        parts = self._parts(thread_id, ns, checkpoint_id, row)
        base = None
        if row.depth > 0:
            parent = self._row(thread_id, ns, row.parent) if row.parent else None
            if parent is not None:
                base = self._parts(thread_id, ns, cast(str, row.parent), parent).payload
        payload = cast(bytes, parts.payload)
        if base is None:
            row.depth = 0  # its base is gone (only a damaged thread): a snapshot now
        rows = list(writes.values())
        row.data = deflate(payload + encode_writes(rows), base)
        self.store.set_state(thread_id, _cp_key(ns, checkpoint_id), row.stored(self._binary))
        fresh = Parts(parts.body, parts.metadata, parts.values, payload, rows)
        self._remember(thread_id, ns, checkpoint_id, row, fresh)

    def _write_value(self, thread_id: str, key: str, value: Any) -> Any:
        if not isinstance(value, dict):
            return self._load(value, thread_id, key)
        seqs, ids = value.get("ref"), value.get("ids")
        if not (
            isinstance(seqs, list)
            and (ids is None or (isinstance(ids, list) and len(seqs) == len(ids)))
        ):
            raise DeserializationError(
                f"thread {thread_id!r}: a write's message reference in {key!r} is corrupt",
                session_id=thread_id,
            )
        cache = self._messages_of(thread_id)
        wanted = ids if ids is not None else [None] * len(seqs)
        present = [
            (cache.by_seq[s], i) for s, i in zip(seqs, wanted, strict=True) if s in cache.by_seq
        ]
        if len(present) != len(seqs):
            logger.warning(
                "thread %r: %d messages of a pending write were deleted from the session",
                thread_id,
                len(seqs) - len(present),
            )
        messages = _with_ids([m for m, _ in present], [i or m.id for m, i in present])
        if value.get("single"):
            return messages[0] if messages else None
        return messages

    def _load_messages(self, thread_id: str, ref: dict[str, Any]) -> list[BaseMessage]:
        runs = ref.get("messages")
        if not isinstance(runs, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r) for r in runs
        ):
            raise DeserializationError(
                f"thread {thread_id!r}: a messages reference is corrupt", session_id=thread_id
            )
        cache = self._messages_of(thread_id)
        last_list, last_seqs, last_runs = cache.last
        if runs == last_runs and len(last_list) == len(last_seqs):
            # The list last put or read (the session has not lost a message since, or
            # the cache would have started over): a copy, not a rebuild by seq.
            return list(last_list)
        seqs = [s for start, length in runs for s in range(start, start + length)]
        out = [cache.by_seq[s] for s in seqs if s in cache.by_seq]
        if len(out) != len(seqs):
            logger.warning(
                "thread %r: %d of %d messages of a checkpoint were deleted from the session "
                "(retention or forget); the checkpoint loads without them",
                thread_id,
                len(seqs) - len(out),
                len(seqs),
            )
            present = [s for s in seqs if s in cache.by_seq]
            cache.last = (list(out), present, _runs(present))
        else:
            cache.last = (list(out), seqs, [list(r) for r in runs])
        return out

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
            found = self._get(thread_id, _blob_key(ns, channel, version))
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
            key = _blob_key(ns, channel, version)
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
        key = _cp_key(ns, checkpoint_id)
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
                if self.store.state_keys(s.session_id, _CP)
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
                        self.store.set_state(thread_id, _blob_key(ns, channel, version), blob)
                        continue
                own[channel] = [version, ref]
            if ns == "" and parent:
                self._writes_to_refs(thread_id, parent)
            payload = encode_payload(body, stored_metadata, own)
            parts = Parts(body, stored_metadata, own, payload)  # writes: set below
            base = parent_parts.payload if parent_parts is not None else None
            depth = parent_row.depth + 1 if parent_row is not None and base is not None else 0
            if depth >= _SNAPSHOT_EVERY:
                depth, base = 0, None
            early: list[list[Any]] = []
            if (thread_id, ns, checkpoint_id) in self._early_writes:
                self._early_writes.discard((thread_id, ns, checkpoint_id))
                early = list(self._writes_of(thread_id, ns, checkpoint_id, None).values())
                self.store.delete_state(thread_id, _writes_key(ns, checkpoint_id))
            row = Row(
                FORMAT,
                parent,
                depth,
                deflate(payload + encode_writes(early), base if depth else None),
            )
            # Written last: until this row exists, the checkpoint does not.
            self.store.set_state(thread_id, _cp_key(ns, checkpoint_id), row.stored(self._binary))
            parts.writes = early
            self._remember(thread_id, ns, checkpoint_id, row, parts)
            head = self._get(thread_id, _head_key(ns))
            if not isinstance(head, str) or head < checkpoint_id:
                self.store.set_state(thread_id, _head_key(ns), checkpoint_id)
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
                live = _written_messages(value)
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
        self.store.delete_state(thread_id, _cp_key(ns, checkpoint_id))
        self.store.delete_state(thread_id, _writes_key(ns, checkpoint_id))
        self._raw.pop((thread_id, ns, checkpoint_id), None)

    def _reset_head(self, thread_id: str, ns: str) -> None:
        ids = self._checkpoint_ids(thread_id, ns)
        if ids:
            self.store.set_state(thread_id, _head_key(ns), ids[0][1])
        else:
            self.store.delete_state(thread_id, _head_key(ns))

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
                return {"messages": _runs(seqs)}

            def remap_writes(writes: Any) -> None:
                for entry in writes.values() if isinstance(writes, dict) else writes:
                    if isinstance(entry, list) and len(entry) == 5 and isinstance(entry[3], dict):
                        entry[3] = {
                            **entry[3],
                            "ref": [mapping.get(s, -1) for s in entry[3]["ref"]],
                        }

            for key in sorted(keys, key=lambda k: k.startswith(_CP)):  # checkpoints last
                value = self._get(source, key)
                if key.startswith(_BLOB) and isinstance(value, dict) and "messages" in value:
                    value = remap(value)
                elif key.startswith(_CP):
                    ns_part, _, checkpoint_id = key[len(_CP) :].rpartition("/")
                    ns = _uq(ns_part)
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
                elif key.startswith(_WRITES) and isinstance(value, dict):
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
                    blobs.update(_blob_key(ns, c, v) for c, v in body["channel_versions"].items())
            self._detach(thread_id, ns, set(ids) - keep)
            for checkpoint_id in ids:
                if checkpoint_id not in keep:
                    self._delete_checkpoint(thread_id, ns, checkpoint_id)
            for key in self.store.state_keys(thread_id, f"{_BLOB}{_q(ns)}/"):
                if key not in blobs:
                    self.store.delete_state(thread_id, key)
            self.store.set_state(thread_id, _head_key(ns), ids[0])

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
