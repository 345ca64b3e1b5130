"""The thread messages of ``OffpromptSaver``: the root ``messages`` channel as a session.

Each message is appended to the thread's session once; a checkpoint stores only the
runs of sequence numbers its list is made of (``[[start, length], ...]``), and a
pending write that carries messages already in the session is turned into a
reference to them. :class:`ThreadMessages` is what one process knows of a thread's
session, so a put that extends the last list appends only the new messages.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from offprompt.errors import DeserializationError
from offprompt.stores.base import SessionVersion
from offprompt.tokens import Tokenizer
from offprompt_langchain._checkpoint_chains import DeltaChains
from offprompt_langchain._checkpoint_keys import cp_key, writes_key
from offprompt_langchain._checkpoint_rows import FORMAT
from offprompt_langchain.convert import from_langchain, to_langchain

# The saver's logger: its warnings are documented under that name.
logger = logging.getLogger("offprompt_langchain.checkpoint")

_CACHED_THREADS = 64


def runs_of(seqs: Sequence[int]) -> list[list[int]]:
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


def written_messages(value: Any) -> list[BaseMessage] | None:
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


class ThreadMessages:
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


class ThreadMessageLog(DeltaChains):
    """Stores and loads the messages channel through the thread's session.

    Attributes (set by the saver):
        tokenizer: Counts each stored message's tokens once.
    """

    tokenizer: Tokenizer
    _threads: OrderedDict[str, ThreadMessages]
    _live_writes: OrderedDict[tuple[str, str], list[tuple[str, list[BaseMessage]]]]

    def _messages_of(self, thread_id: str) -> ThreadMessages:
        cache = self._threads.get(thread_id)
        if cache is None:
            cache = self._threads[thread_id] = ThreadMessages()
            while len(self._threads) > _CACHED_THREADS:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(thread_id)
        current = self.store.version(thread_id)
        known = cache.version
        if known == current:
            return cache
        if known is None or known.epoch != current.epoch or current.next_seq < known.next_seq:
            cache = self._threads[thread_id] = ThreadMessages()
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
        runs = _extend_runs(last_runs, seqs[prefix:]) if extends else runs_of(seqs)
        cache.last = (list(messages), seqs, runs)
        return {"messages": runs}

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
        key = writes_key("", checkpoint_id) if legacy else cp_key("", checkpoint_id)
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
            written = written_messages(value)
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
            cache.last = (list(out), present, runs_of(present))
        else:
            cache.last = (list(out), seqs, [list(r) for r in runs])
        return out
