"""``offprompt mcp serve``: an offprompt home's memory as an MCP server over stdio.

Read-only tools:

* the memory tools over stored outputs (``query_memory``, ``grep_memory``,
  ``read_memory``, ... as the core defines them), and ``list_outputs``;
* ``list_sessions`` and ``read_session`` (a window of a conversation session);
* ``search_longterm`` (the home's long-term memory, ``HOME/longterm``, if any).

With ``allow_write``: ``store_output`` (store a text off-prompt, get its reference),
``append_message`` (to a session) and ``forget_scope`` (delete everything of the
server's scope; like ``offprompt forget`` it asks first: the call without
``confirm=true`` only says what would be deleted).

Every tool reaches only the server's scope (``--tenant``/``--user``/``--session``...);
every output is bounded by ``max_output_tokens``. Stored outputs are also resources
(``offprompt://outputs/...``: :mod:`offprompt.mcp._outputs`), read with the same bound and
scope; ``read_memory`` of a stored image gives the image too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from offprompt.errors import OffpromptError
from offprompt.mcp._core import (
    DESTRUCTIVE,
    READ_ONLY,
    WRITES,
    CoreBinding,
    FunctionTool,
    MemoryTool,
    open_task_memory,
)
from offprompt.mcp._outputs import RESOURCE_NOT_FOUND, StoredOutputs
from offprompt.mcp._sdk import Peer, make_server, mcp_error
from offprompt.mcp._server import ToolTable, run_stdio
from offprompt.mcp._stdio import Shutdown
from offprompt.scope import SCOPE_FIELDS, Scope

__all__ = ["ServeConfig", "build_tools", "run_serve"]


@dataclass
class ServeConfig:
    """What ``offprompt mcp serve`` serves.

    Attributes:
        home: The offprompt home (``memory.db``, ``qdrant/``, ``longterm/``).
        scope: The only partition the tools reach (``None``: the unscoped one).
        allow_write: Also serve ``store_output``, ``append_message``, ``forget_scope``.
        max_output_tokens: Bound of every tool output.
    """

    home: Path
    scope: Scope | None = None
    allow_write: bool = False
    max_output_tokens: int = 1000


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


class _Home:
    """The home's stores, reached only within one scope."""

    def __init__(self, config: ServeConfig, binding: CoreBinding) -> None:
        self.home = config.home
        self.scope = config.scope
        self.binding = binding
        self.memory = binding.task_memory
        self.tokenizer = self.memory.tokenizer
        self.limit = config.max_output_tokens

    def bound(self, text: str) -> str:
        tokens = self.tokenizer.encode(text)
        if len(tokens) <= self.limit:
            return text
        kept = self.tokenizer.decode(tokens[: self.limit])
        return f"{kept}\n[... truncated: {len(tokens) - self.limit} more tokens]"

    def _store(self, *, create: bool) -> Any:
        from offprompt.stores.sqlite import SQLiteStore

        path = self.home / "memory.db"
        if not create and not path.exists():
            return None
        return SQLiteStore(path)

    def _scoped_session(self, session_id: str) -> Scope:
        fields = self.scope.fields() if self.scope is not None else {}
        if fields.get("session") not in (None, session_id):
            raise OffpromptError(f"session {session_id!r} is outside this server's scope")
        return Scope(**{**fields, "session": session_id})

    # -- read ------------------------------------------------------------------

    def list_outputs(self) -> str:
        names = self.memory.namespaces()
        if not names:
            return "No stored outputs in this scope."
        lines = [f"{len(names)} stored output(s) (memory_name {self.memory.name!r}):"]
        for name in names:
            # A listing never waits for an index: sizes so far, estimates marked "~".
            tool = self.memory.namespace_metadata(name, wait=False)["tool"]
            stats = self.memory.stats(name)
            about = "~" if stats.tokens_estimated else ""
            lines.append(
                f"- {name}: tool {tool}, {stats.bytes:,} bytes, {about}{stats.tokens:,} tokens"
            )
        return self.bound("\n".join(lines))

    def _sessions(self, store: Any) -> dict[str, Any]:
        return {info.session_id: info for info in store.sessions(scope=self.scope)}

    def list_sessions(self) -> str:
        store = self._store(create=False)
        if store is None:
            return "No conversation sessions in this scope."
        try:
            infos = list(self._sessions(store).values())
        finally:
            store.close()
        if not infos:
            return "No conversation sessions in this scope."
        lines = [f"{len(infos)} session(s):"]
        for info in infos:
            when = info.last_activity.isoformat(timespec="seconds") if info.last_activity else "?"
            lines.append(f"- {info.session_id}: {info.message_count} messages, last {when}")
        return self.bound("\n".join(lines))

    def read_session(self, session_id: str, start: int | None = None, limit: int = 20) -> str:
        store = self._store(create=False)
        unknown = f"Unknown session {session_id[:200]!r} in this scope; use list_sessions."
        if store is None:
            return unknown
        try:
            info = self._sessions(store).get(session_id)
            if info is None:
                return unknown
            index = store.read_index(session_id, scope=info.scope)
            if not index:
                return f"Session {session_id!r} holds no messages."
            first = index[max(0, len(index) - limit)].seq if start is None else start
            window = store.read(session_id, start=first, end=first + limit, scope=info.scope)
        finally:
            store.close()
        lines = [
            f"Session {session_id!r}: messages {window[0].seq if window else first}"
            f"-{window[-1].seq if window else first} of {len(index)} (seq numbers):"
        ]
        for stored in window:
            message = stored.message
            calls = "".join(f" [calls {c.name}]" for c in message.tool_calls)
            lines.append(f"[{stored.seq}] {message.role}{calls}: {message.text}")
        return self.bound("\n".join(lines))

    def search_longterm(self, query: str, k: int = 5) -> str:
        path = self.home / "longterm"
        if not path.exists():
            return "This home has no long-term memory."
        from offprompt.longterm import LongTermMemory
        from offprompt.vectors import QdrantVectorStore

        store = QdrantVectorStore(path=str(path))
        try:
            memory = LongTermMemory(store, scope=self.scope)
            found = memory.search(query, k, touch=False)
        finally:
            store.close()
        if not found:
            return f"No long-term memory matches {query[:100]!r}."
        lines = [f"{len(found)} memories, best first:"]
        lines += [f"[{i}] {hit.fragment.observation}" for i, hit in enumerate(found, 1)]
        return self.bound("\n".join(lines))

    # -- write -----------------------------------------------------------------

    def store_output(self, tool_name: str, text: str) -> str:
        if not text.strip():
            return "Nothing stored: the text is empty."
        binding = CoreBinding(self.memory, min_tokens=0)
        return self.bound(binding.offload_text(tool_name, text).text)

    def append_message(self, session_id: str, role: str, text: str) -> str:
        from offprompt.messages import Message

        scope = self._scoped_session(session_id)
        message = Message(role=role, content=text)
        store = self._store(create=True)
        try:
            seqs = store.append(
                session_id, [message], [self.tokenizer.count_message(message)], scope=scope
            )
        finally:
            store.close()
        return f"Appended message {seqs[0]} to session {session_id!r}."

    def forget_scope(self, confirm: bool = False) -> str:
        from offprompt.forget import forget

        scope = self.scope or Scope()
        if scope.is_empty:
            # A refusal is a tool error (isError), so a client does not take it for done.
            raise OffpromptError(
                "Refused: this server has no scope. Start `offprompt mcp serve` with "
                "--tenant/--user/--session to forget that scope (or use `offprompt forget`)."
            )
        if not confirm:
            return (
                f"This deletes everything stored for {scope} in {self.home} (messages, "
                "summaries, steps, plans, task memory, blobs). Call forget_scope again with "
                "confirm=true to delete it."
            )
        store = self._store(create=False)
        try:
            report = forget(scope, stores=[store] if store else [], task_memory=self.memory)
        finally:
            if store is not None:
                store.close()
        return self.bound("\n".join(report.lines()) or "Nothing was stored for this scope.")


def build_tools(config: ServeConfig, binding: CoreBinding) -> list[MemoryTool]:
    """The tools ``offprompt mcp serve`` lists, for ``config``."""
    home = _Home(config, binding)
    tools: list[MemoryTool] = [
        *binding.memory_tools(),
        FunctionTool(
            "list_outputs",
            "List the tool outputs stored in memory (artifact_namespace, tool, size).",
            _schema({}),
            home.list_outputs,
            READ_ONLY,
        ),
        FunctionTool(
            "list_sessions",
            "List the conversation sessions stored (id, message count, last activity).",
            _schema({}),
            home.list_sessions,
            READ_ONLY,
        ),
        FunctionTool(
            "read_session",
            "Read a window of a conversation session: `limit` messages from seq `start` "
            "(default: the last `limit` messages).",
            _schema(
                {
                    "session_id": {"type": "string"},
                    "start": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                },
                ("session_id",),
            ),
            home.read_session,
            READ_ONLY,
        ),
        FunctionTool(
            "search_longterm",
            "Search long-term memory (facts and preferences remembered across sessions).",
            _schema(
                {
                    "query": {"type": "string"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
                },
                ("query",),
            ),
            home.search_longterm,
            READ_ONLY,
        ),
    ]
    if config.allow_write:
        tools += [
            FunctionTool(
                "store_output",
                "Store a text off-prompt in task memory; returns its reference.",
                _schema(
                    {"tool_name": {"type": "string", "minLength": 1}, "text": {"type": "string"}},
                    ("tool_name", "text"),
                ),
                home.store_output,
                WRITES,
            ),
            FunctionTool(
                "append_message",
                "Append a message to a conversation session.",
                _schema(
                    {
                        "session_id": {"type": "string", "minLength": 1},
                        "role": {"enum": ["system", "user", "assistant"]},
                        "text": {"type": "string"},
                    },
                    ("session_id", "role", "text"),
                ),
                home.append_message,
                WRITES,
            ),
            FunctionTool(
                "forget_scope",
                "Delete everything stored for this server's scope. Without confirm=true it "
                "only says what would be deleted.",
                _schema({"confirm": {"type": "boolean", "default": False}}),
                home.forget_scope,
                DESTRUCTIVE,
            ),
        ]
    return tools


async def run_serve(config: ServeConfig) -> None:
    """Serve the home's memory over stdio until the client closes stdin, or sends
    SIGTERM, SIGINT or SIGHUP (then the memory is closed and the command exits 0, as the
    proxy's: :func:`~offprompt.mcp.proxy.run_proxy`).

    Raises:
        OffpromptError: The home's task memory cannot be opened.
    """
    async with Shutdown().handling() as shutdown:
        memory = await anyio.to_thread.run_sync(open_task_memory, config.home, config.scope)
        try:
            binding = CoreBinding(memory, max_output_tokens=config.max_output_tokens)
            table = ToolTable(build_tools(config, binding), images=binding.aimage)
            outputs = StoredOutputs(binding, table)
            scope = ", ".join(
                f"{k}={v}"
                for k in SCOPE_FIELDS
                if (v := getattr(config.scope, k, None)) is not None
            )

            async def list_tools(params: dict[str, Any], client: Peer) -> dict[str, Any]:
                return {"tools": table.listed()}

            async def call_tool(params: dict[str, Any], client: Peer) -> dict[str, Any]:
                return await table.call(params["name"], params.get("arguments") or {})

            async def list_resources(params: dict[str, Any], client: Peer) -> dict[str, Any]:
                return {"resources": []}  # stored outputs: by template (they may be many)

            async def list_templates(params: dict[str, Any], client: Peer) -> dict[str, Any]:
                return {"resourceTemplates": outputs.templates()}

            async def read_resource(params: dict[str, Any], client: Peer) -> dict[str, Any]:
                if not outputs.owns(params.get("uri")):
                    raise mcp_error(
                        RESOURCE_NOT_FOUND, f"unknown resource {str(params.get('uri'))[:200]!r}"
                    )
                return await outputs.read(params["uri"])

            server = make_server(
                "offprompt-memory",
                {
                    "tools/list": list_tools,
                    "tools/call": call_tool,
                    "resources/list": list_resources,
                    "resources/templates/list": list_templates,
                    "resources/read": read_resource,
                },
                instructions=f"offprompt memory of {config.home}"
                + (f" (scope {scope})" if scope else "")
                + ("" if config.allow_write else "; read-only"),
            )
            with shutdown.cancelling():
                await run_stdio(server)
        finally:
            await anyio.to_thread.run_sync(memory.close)
