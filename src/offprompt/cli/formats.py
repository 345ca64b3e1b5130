"""The interchange formats the CLI reads and writes, by name.

=======================  ==========================================================  ========
name                     file                                                        sessions
=======================  ==========================================================  ========
``offprompt``            JSON lines, one ``Message.to_dict()`` per line              one
``langchain``            JSON list as ``langchain_core.messages.messages_to_dict``   one
``llamaindex``           JSON list of ``ChatMessage`` dicts (``model_dump``)         one
``llamaindex-chatstore`` ``SimpleChatStore.persist()`` file                          several
``griptape``             ``ConversationMemory.to_json()``                            one
``openai-agents``        JSON list of OpenAI Agents SDK items (``get_items()``)      one
``openai-agents-sqlite`` the SQLite file of the SDK's ``SQLiteSession``              several
``adk``                  JSON list of Google ADK events (or a ``Session``'s JSON)     one
``adk-sqlite``           the SQLite file of ADK's ``SqliteSessionService``            several
``strands``              JSON list of Strands Agents messages (or session records)   one
=======================  ==========================================================  ========

Every reader takes the file's text and returns ``{session_key: messages}`` (``None`` as
the key for single-session formats); every writer takes sessions and returns the text.
A binary format (``openai-agents-sqlite``, ``adk-sqlite``) reads and writes the file itself instead
(``read_file`` / ``write_file``). Both fill a :class:`ConversionReport` with whatever
the target cannot carry.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offprompt._validation import loads_json
from offprompt.errors import DeserializationError, OffpromptError
from offprompt.interop.adk import messages_from_events, messages_to_events
from offprompt.interop.adk import read_sqlite_sessions as read_adk_sqlite
from offprompt.interop.adk import write_sqlite_sessions as write_adk_sqlite
from offprompt.interop.griptape import conversation_from_griptape, conversation_to_griptape
from offprompt.interop.langchain import messages_from_langchain_dicts, messages_to_langchain_dicts
from offprompt.interop.llamaindex import (
    messages_from_llamaindex_dicts,
    messages_to_llamaindex_dicts,
    read_simple_chat_store,
    simple_chat_store_dict,
)
from offprompt.interop.openai_agents import (
    messages_from_items,
    messages_to_items,
    read_sqlite_sessions,
    write_sqlite_sessions,
)
from offprompt.interop.pydantic_ai import messages_from_model_messages, messages_to_model_messages
from offprompt.interop.report import ConversionReport
from offprompt.interop.strands import messages_from_strands, messages_to_strands
from offprompt.messages import Message

__all__ = ["FORMATS", "Format", "Sessions", "sniff"]

Sessions = dict[str | None, list[Message]]


@dataclass(frozen=True)
class Format:
    """A named file format.

    Attributes:
        name: The name used on the command line.
        multi_session: Whether one file holds several sessions.
        read: File text → sessions.
        write: Sessions → file text.
        read_file: For a binary format: the file → sessions (used instead of ``read``).
        write_file: For a binary format: sessions → the file at the path given
            (instead of ``write``); returns the number of items written.
    """

    name: str
    multi_session: bool
    read: Callable[[str, ConversionReport], Sessions]
    write: Callable[[Mapping[str, Sequence[Message]], ConversionReport], str]
    read_file: Callable[[Path, ConversionReport], Sessions] | None = None
    write_file: Callable[[Mapping[str, Sequence[Message]], ConversionReport, Path], int] | None = (
        None
    )


def _dump(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False) + "\n"


def _only(sessions: Mapping[str, Sequence[Message]]) -> Sequence[Message]:
    (messages,) = sessions.values()  # the CLI picks one session before writing
    return messages


# -- offprompt JSON lines ---------------------------------------------------------------
def _read_offprompt(text: str, report: ConversionReport) -> Sessions:
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        data = loads_json(line, what=f"line {number}")
        if not isinstance(data, dict):
            raise DeserializationError(
                f"line {number}: expected a message object, got a JSON {type(data).__name__}"
            )
        try:
            messages.append(Message.from_dict(data))
        except OffpromptError as exc:
            raise DeserializationError(f"line {number}: {exc}") from None
    report.source, report.target = report.source or "offprompt", report.target or "offprompt"
    report.converted += len(messages)
    return {None: messages}


def _write_offprompt(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    messages = _only(sessions)
    report.source, report.target = report.source or "offprompt", report.target or "offprompt"
    report.converted += len(messages)
    return "".join(m.to_json() + "\n" for m in messages)


# -- LangChain --------------------------------------------------------------------------
def _read_langchain(text: str, report: ConversionReport) -> Sessions:
    messages = messages_from_langchain_dicts(loads_json(text, what="LangChain messages"), report)
    return {None: messages}


def _write_langchain(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    dicts = messages_to_langchain_dicts(_only(sessions), report)
    return _dump(dicts)


# -- LlamaIndex -------------------------------------------------------------------------
def _read_llamaindex(text: str, report: ConversionReport) -> Sessions:
    messages = messages_from_llamaindex_dicts(loads_json(text, what="LlamaIndex messages"), report)
    return {None: messages}


def _write_llamaindex(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    dicts = messages_to_llamaindex_dicts(_only(sessions), report)
    return _dump(dicts)


def _read_chatstore(text: str, report: ConversionReport) -> Sessions:
    document = loads_json(text, what="SimpleChatStore file")
    if isinstance(document, str):  # older versions wrote the document as a JSON string
        document = loads_json(document, what="SimpleChatStore file")
    if not isinstance(document, Mapping):
        raise DeserializationError(
            f"not a SimpleChatStore file: expected a JSON object, got a JSON {type(document).__name__}"
        )
    sessions = read_simple_chat_store(document, report)
    return dict(sessions.items())


def _write_chatstore(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    document = simple_chat_store_dict(sessions, report)
    # Compact, like the pydantic dump that SimpleChatStore.persist() writes.
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


# -- Griptape ---------------------------------------------------------------------------
def _read_griptape(text: str, report: ConversionReport) -> Sessions:
    return {None: conversation_from_griptape(text, report).messages}


def _write_griptape(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    return _dump(conversation_to_griptape(list(_only(sessions)), report=report))


# -- Google ADK -------------------------------------------------------------------------
def _read_adk(text: str, report: ConversionReport) -> Sessions:
    document = loads_json(text, what="ADK events")
    if isinstance(document, dict) and isinstance(document.get("events"), list):
        document = document["events"]  # a whole Session's JSON
    return {None: messages_from_events(document, report)}


def _write_adk(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    return _dump(messages_to_events(_only(sessions), report=report))


def _read_adk_sqlite(path: Path, report: ConversionReport) -> Sessions:
    return dict(read_adk_sqlite(path, report).items())


def _write_adk_sqlite(
    sessions: Mapping[str, Sequence[Message]], report: ConversionReport, path: Path
) -> int:
    return write_adk_sqlite(path, sessions, report)


# -- OpenAI Agents SDK -----------------------------------------------------------------
def _read_agents(text: str, report: ConversionReport) -> Sessions:
    return {None: messages_from_items(loads_json(text, what="OpenAI Agents items"), report)}


def _write_agents(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    return _dump(messages_to_items(_only(sessions), report))


def _read_agents_sqlite(path: Path, report: ConversionReport) -> Sessions:
    return dict(read_sqlite_sessions(path, report).items())


def _write_agents_sqlite(
    sessions: Mapping[str, Sequence[Message]], report: ConversionReport, path: Path
) -> int:
    return write_sqlite_sessions(path, sessions, report)


# -- Strands Agents ---------------------------------------------------------------------
def _read_strands(text: str, report: ConversionReport) -> Sessions:
    messages = messages_from_strands(loads_json(text, what="Strands messages"))
    report.source, report.target = report.source or "strands", report.target or "offprompt"
    report.converted += len(messages)
    return {None: messages}


def _write_strands(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    messages = _only(sessions)
    report.source, report.target = report.source or "offprompt", report.target or "strands"
    report.converted += len(messages)
    return _dump(messages_to_strands(messages, report=report))


def _read_pydantic_ai(text: str, report: ConversionReport) -> Sessions:
    return {
        None: messages_from_model_messages(loads_json(text, what="pydantic-ai messages"), report)
    }


def _write_pydantic_ai(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    return _dump(messages_to_model_messages(_only(sessions), report))


def _binary(text: str, report: ConversionReport) -> Sessions:
    raise DeserializationError("a binary format is read from its file, not from text")


def _no_text(sessions: Mapping[str, Sequence[Message]], report: ConversionReport) -> str:
    raise DeserializationError("a binary format is written to its file, not as text")


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("offprompt", False, _read_offprompt, _write_offprompt),
        Format("langchain", False, _read_langchain, _write_langchain),
        Format("llamaindex", False, _read_llamaindex, _write_llamaindex),
        Format("llamaindex-chatstore", True, _read_chatstore, _write_chatstore),
        Format("griptape", False, _read_griptape, _write_griptape),
        Format("openai-agents", False, _read_agents, _write_agents),
        Format("strands", False, _read_strands, _write_strands),
        Format("adk", False, _read_adk, _write_adk),
        Format(
            "adk-sqlite",
            True,
            _binary,
            _no_text,
            read_file=_read_adk_sqlite,
            write_file=_write_adk_sqlite,
        ),
        Format(
            "openai-agents-sqlite",
            True,
            _binary,
            _no_text,
            read_file=_read_agents_sqlite,
            write_file=_write_agents_sqlite,
        ),
        Format("pydantic-ai", False, _read_pydantic_ai, _write_pydantic_ai),
    )
}


def sniff(text: str) -> str | None:
    """Guess which format ``text`` is in (used to make a wrong ``--from`` clear).

    Example:
        >>> sniff('[{"type": "human", "data": {"content": "hi"}}]')
        'langchain'
    """
    stripped = text.strip()
    if not stripped:
        return None
    try:
        document: Any = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        first = stripped.splitlines()[0]
        try:
            document = json.loads(first)
        except (json.JSONDecodeError, RecursionError):
            return None
        return "offprompt" if _looks_like_message(document) else None
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except (json.JSONDecodeError, RecursionError):
            return None
    if isinstance(document, dict):
        if isinstance(document.get("store"), dict):
            return "llamaindex-chatstore"
        if document.get("type") in ("ConversationMemory", "SummaryConversationMemory"):
            return "griptape"
        if isinstance(document.get("events"), list) and "app_name" in document:
            return "adk"  # a Session's JSON
        return "offprompt" if _looks_like_message(document) else None
    if isinstance(document, list) and document and isinstance(document[0], dict):
        return _sniff_list(document[0])
    return None


def _sniff_list(head: dict[str, Any]) -> str | None:
    """The format of a JSON list whose first item is ``head``."""
    if "type" in head and isinstance(head.get("data"), dict):
        return "langchain"
    if "role" in head and ("blocks" in head or "additional_kwargs" in head):
        return "llamaindex"
    if _looks_like_strands(head):
        return "strands"
    if "author" in head and "invocation_id" in head:
        return "adk"
    if "role" in head and "content" in head and "created_at" not in head:
        return "openai-agents"
    if isinstance(head.get("type"), str) and ("call_id" in head or head["type"] == "reasoning"):
        return "openai-agents"
    if head.get("kind") in ("request", "response") and isinstance(head.get("parts"), list):
        return "pydantic-ai"
    return None


def _looks_like_strands(head: dict[str, Any]) -> bool:
    """A Strands message (or ``SessionMessage.to_dict()``): content blocks without a "type"."""
    if "message_id" in head and isinstance(head.get("message"), dict):
        return True
    content = head.get("content")
    return (
        head.get("role") in ("user", "assistant")
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b and "type" not in b for b in content)
    )


def _looks_like_message(document: Any) -> bool:
    return isinstance(document, dict) and "role" in document and "created_at" in document
