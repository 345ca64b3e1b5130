"""``open_memory``: the conversation memory an adapter gets from ``memory=`` / ``store=`` / ``path=``.

Every adapter object that keeps a conversation (the LangChain history, the LlamaIndex
memory) takes the same three ways to say where it lives, and opens it here, so the
rules are one: at most one way (a ``path=`` naming ``store=``'s own file is the same
way twice, as a reopened serialised memory gives it), a ``memory=`` is used as it is
(its store, session, tokenizer and tracer), and ``store=`` / ``path=`` go through
:func:`~offprompt.stores.open_store` (one shared SQLite store per file per process).
"""

from __future__ import annotations

import os

from offprompt.conversation.memory import ConversationMemory
from offprompt.errors import ValidationError
from offprompt.stores.base import BaseStore
from offprompt.stores.shared import open_store
from offprompt.tokens import Tokenizer
from offprompt.trace import Tracer

__all__ = ["open_memory"]


def open_memory(
    session_id: str | None,
    *,
    memory: ConversationMemory | None = None,
    store: BaseStore | None = None,
    path: str | os.PathLike[str] | None = None,
    tokenizer: Tokenizer | None = None,
    tracer: Tracer | None = None,
) -> ConversationMemory:
    """The memory of ``session_id``, from ``memory=``, ``store=`` or ``path=``.

    Args:
        session_id: The conversation; with ``memory``, the memory's session must be this
            one (``None``: take the memory's own session).
        memory: An existing memory, used as it is.
        store: A store the caller owns (see :func:`~offprompt.stores.open_store`).
        path: A SQLite file, shared per file in this process; with neither ``memory`` nor
            ``store``, ``None`` means the default file.
        tokenizer: For a memory opened here.
        tracer: For a memory opened here (a given ``memory`` has its own).

    Returns:
        The memory. It holds a shared store (to give back with
        :func:`~offprompt.stores.release_store`) exactly when neither ``memory`` nor
        ``store`` was given.

    Raises:
        ValidationError: More than one of ``memory``/``store``/``path``, a ``memory`` that
            is not a :class:`ConversationMemory` or of another session, ``tracer`` with
            ``memory``, or a bad ``store`` / ``path``.

    Example:
        >>> from offprompt.stores import InMemoryStore
        >>> open_memory("s1", store=InMemoryStore()).session_id
        's1'
    """
    if memory is None:
        store = open_store(store, path=path)
        if session_id is None:
            raise ValidationError("a memory opened from store= or path= needs a session_id")
        return ConversationMemory(store, session_id, tokenizer=tokenizer, tracer=tracer)
    others = [n for n, v in (("store", store), ("path", path)) if v is not None]
    if others:
        raise ValidationError(
            "give at most one of memory, store and path (got memory and "
            + " and ".join(others)
            + ")"
        )
    if not isinstance(memory, ConversationMemory):
        raise ValidationError(f"memory must be a ConversationMemory, got {type(memory).__name__}")
    if session_id is not None and memory.session_id != session_id:
        raise ValidationError(
            f"memory belongs to session {memory.session_id!r}, not {session_id!r}"
        )
    if tracer is not None:
        raise ValidationError(
            "give tracer= to the ConversationMemory you pass as memory=, not here"
        )
    return memory
