"""``offprompt demo``: the guided offline tour, on the embedded default store.

What it does, step by step (and prints, for a newcomer):

1. A LangChain ``create_agent`` agent with :class:`OffpromptMiddleware
   <offprompt_langchain.OffpromptMiddleware>` calls ``fetch_server_log``, a tool that
   returns a 4 MB server log made by :mod:`offprompt_demo.data`.
2. The middleware stores the log off-prompt in a durable
   :class:`~offprompt.task_memory.TaskMemory` at ``HOME/qdrant`` (embedded Qdrant); the
   model gets a one-line reference instead.
3. The model calls ``query_memory`` with that reference, finds the root cause and
   answers.
4. The thread is recorded into session ``offprompt-demo`` of the SQLite store at
   ``HOME/memory.db``.
5. The same session is opened through the LlamaIndex adapter (``OffpromptMemory``) and a
   ``SimpleChatEngine`` continues it with a follow-up that needs the earlier answer.

``HOME`` is ``$OFFPROMPT_HOME`` (``offprompt --home DIR demo`` sets it), else
``./.offprompt``, so ``offprompt inspect`` / ``show`` / ``query`` see what the demo left.

Both chat models are scripted (offline, no API key): they follow a fixed plan, but they
read the real messages they receive (the reference sentence, the query results, the
history), so a step that failed would show in their answers. Each run replaces the
previous demo run: the session is cleared and the outputs it referenced are deleted.

Run: ``offprompt demo`` (or ``make demo``, or ``python -m offprompt_demo``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from offprompt.errors import DemoError
from offprompt_demo import data as demo_data

if TYPE_CHECKING:
    from offprompt.conversation import ConversationMemory
    from offprompt.stores import SQLiteStore
    from offprompt.task_memory import TaskMemory
    from offprompt.tokens import Tokenizer

__all__ = ["SESSION", "TOOL", "DemoError", "DemoResult", "main", "run"]

SESSION = "offprompt-demo"
"""The conversation session the demo records into (cleared at the start of each run)."""

TOOL = "fetch_server_log"
"""The demo's tool: returns the multi-megabyte log."""

QUESTION = "Checkout was failing last night. Why? Check the server log."
FOLLOW_UP = "Remind me: which release do we roll back, and which database host do we watch?"
QUERY = "CRIT connection pool exhausted"
INSTALL_HINT = (
    "offprompt demo needs the adapters: pip install 'offprompt-langchain[agents]' "
    "offprompt-llamaindex"
)
_CAUSE = re.compile(
    r"connection pool exhausted on (?P<host>[\w.-]+) \((?P<use>\d+/\d+) in use\) "
    r"since deploy of release (?P<release>v\d+(?:\.\d+)*)"
)
_EARLIER = re.compile(r"release (?P<release>v\d+(?:\.\d+)*)|pool on (?P<host>[\w-]+)")


@dataclass
class DemoResult:
    """What one demo run did; printed by :func:`run`, checked by the tests.

    Attributes:
        home: The offprompt home used.
        session: The session recorded into.
        namespace: Where the log was stored off-prompt.
        document_bytes: Size of the tool output (UTF-8 bytes).
        document_tokens: Its tokens (``o200k_base``).
        reference: What the model got instead of the log: the reference sentence, then
            the card (size, lines, first and last lines, the tools that fit).
        reference_tokens: Tokens of that reference.
        chars_to_model: Characters the LangChain model received over all its calls.
        query_result: What ``query_memory`` returned to the model.
        answer: The LangChain agent's answer.
        messages_saved: Messages in the session after the LangChain run.
        follow_up_answer: The LlamaIndex chat engine's reply.
        messages_after: Messages in the session after the LlamaIndex turn.
        replaced: Messages of a previous demo run that were cleared first.
        seconds: Wall time of the run.
        roles: Roles of the saved messages after the LangChain run.
    """

    home: Path
    session: str = SESSION
    namespace: str = ""
    document_bytes: int = 0
    document_tokens: int = 0
    reference: str = ""
    reference_tokens: int = 0
    chars_to_model: int = 0
    query_result: str = ""
    answer: str = ""
    messages_saved: int = 0
    follow_up_answer: str = ""
    messages_after: int = 0
    replaced: int = 0
    seconds: float = 0.0
    roles: list[str] = field(default_factory=list)


def _home() -> Path:
    home = os.environ.get("OFFPROMPT_HOME")
    return Path(home) if home else Path.cwd() / ".offprompt"


def _adapters_missing() -> str | None:
    """The first adapter module that is not installed, or None when all are."""
    for module in ("offprompt_langchain", "offprompt_llamaindex", "langchain.agents"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, or blocked
            found = False
        if not found:
            return module
    return None


# -- the scripted models ----------------------------------------------------------------


def _langchain_script(seen: dict[str, str]) -> list[Any]:
    """Three steps: call the tool; query what was stored; answer from the passages."""
    from langchain_core.messages import BaseMessage
    from offprompt_langchain.testing import tool_call

    from offprompt.render.references import find_references

    def query_what_was_stored(messages: list[BaseMessage]) -> Any:
        reference = messages[-1].text
        found = find_references(reference)
        if not found:  # the log reached the model: there is nothing to query
            return "The log came back inline; I cannot query it."
        seen["reference"] = reference  # the whole of it: the sentence, then the card
        return tool_call(
            "query_memory",
            {
                "memory_name": found[0].memory,
                "artifact_namespace": found[0].namespace,
                "query": QUERY,
            },
            id="call_query",
        )

    def answer(messages: list[BaseMessage]) -> str:
        passages = messages[-1].text
        seen["query_result"] = passages
        hit = _CAUSE.search(passages)
        if hit is None:
            return "I could not find the cause in the stored log."
        return (
            f"Checkout failed because the connection pool on {hit['host']} was exhausted "
            f"({hit['use']} connections in use) after release {hit['release']} was deployed; "
            f"orders got HTTP 503. Roll back release {hit['release']}."
        )

    return [
        tool_call(TOOL, {"service": "checkout", "night": "2026-03-14"}, id="call_fetch"),
        query_what_was_stored,
        answer,
    ]


def _follow_up_reply(messages: Sequence[Any]) -> str:
    """The LlamaIndex model's reply: only what the history it was given says."""
    earlier = [
        str(m.content or "")
        for m in messages[:-1]
        if getattr(m.role, "value", m.role) == "assistant" and m.content
    ]
    release = host = None
    for text in earlier:
        for hit in _EARLIER.finditer(text):
            release = hit["release"] or release
            host = hit["host"] or host
    if release is None or host is None:
        return "I don't know: nothing about it reached me."
    return (
        f"From earlier in this session: roll back release {release}, and watch {host}, "
        "whose connection pool ran dry."
    )


def _llamaindex_llm(reply: Callable[[Sequence[Any]], str], received: list[Any]) -> Any:
    """A scripted LlamaIndex LLM (``offprompt_llamaindex.testing``) whose reply is ``reply(messages)``.

    The messages of its last call are kept in ``received``.
    """
    from offprompt_llamaindex.testing import ScriptedFunctionLLM

    def step(messages: list[Any]) -> str:
        received[:] = messages
        return reply(messages)

    return ScriptedFunctionLLM(script=[step])  # the last step repeats


# -- the run ------------------------------------------------------------------------------


def _reset_previous(conversation: Any, task_memory: Any) -> int:
    """Clear the demo session and delete the outputs it referenced; returns messages cleared."""
    from offprompt.render.references import message_references

    old = conversation.messages()
    known = set(task_memory.namespaces())
    for reference in message_references(old):
        if reference.namespace in known:
            task_memory.delete(reference.namespace)
            known.discard(reference.namespace)
    conversation.clear()
    return len(old)


def run(
    home: Path | None = None,
    *,
    console: Console | None = None,
    size_bytes: int = 4_000_000,
) -> DemoResult:
    """Run the demo in ``home`` and print each step to ``console``.

    Args:
        home: The offprompt home (``$OFFPROMPT_HOME`` or ``./.offprompt`` if None).
        console: Where to print (stdout by default).
        size_bytes: Size of the generated log.

    Returns:
        What the run did.

    Raises:
        ImportError: The LangChain or LlamaIndex adapter is not installed.
        DemoError: A step did not produce what it should.

    Example (about ten seconds; ``tests`` runs it)::

        result = run(Path("/tmp/offprompt-demo-home"))
        result.answer  # 'Checkout failed because the connection pool on db-primary-7 ...'
    """
    started = time.perf_counter()
    home = (home or _home()).resolve()
    if home.exists() and not home.is_dir():
        raise DemoError(f"home {home} is not a directory")
    _import_frameworks()
    from offprompt.conversation import ConversationMemory
    from offprompt.stores import SQLiteStore
    from offprompt.task_memory import TaskMemory
    from offprompt.tokens import default_tokenizer

    out = console or Console(highlight=False)
    home.mkdir(parents=True, exist_ok=True)
    result = DemoResult(home=home)
    tokenizer = default_tokenizer()
    _print_intro(out, home)
    document = demo_data.server_log(size_bytes)

    store = SQLiteStore(home / "memory.db")
    try:
        task_memory = TaskMemory(path=home / "qdrant")
        try:
            conversation = ConversationMemory(store, SESSION, tokenizer=tokenizer)
            result.replaced = _reset_previous(conversation, task_memory)
            if result.replaced:
                out.print(
                    f"[dim]Replaced the previous demo run: session {SESSION!r} "
                    f"({result.replaced} messages) and the log it stored were deleted.[/dim]"
                )
            _langchain_steps(out, result, task_memory, conversation, document)
            _print_saved_session(out, result, store, tokenizer)
        finally:
            task_memory.close()  # so `offprompt inspect` can open the files next
    finally:
        store.close()
    _llamaindex_step(out, result)
    result.seconds = time.perf_counter() - started
    _print_next(out, result)
    return result


def _import_frameworks() -> None:
    """Import both adapters and their frameworks, so that a missing one fails (with an
    ``ImportError``) before the demo prints anything."""
    for module in (
        "langchain.agents",
        "langchain_core.messages",
        "langchain_core.tools",
        "langgraph.checkpoint.memory",
        "llama_index.core.chat_engine",
        "offprompt_langchain",
        "offprompt_langchain.testing",
        "offprompt_llamaindex",
    ):
        importlib.import_module(module)


def _print_intro(out: Console, home: Path) -> None:
    out.print(
        Panel(
            Text.assemble(
                ("offprompt demo", "bold"),
                " - agent memory that lives outside the prompt.\n",
                "Offline: both chat models are ",
                ("scripted", "bold"),
                " (no network, no API key). They follow a fixed plan but read the real "
                "messages they get, so everything below is what offprompt actually did.\n",
                (f"home: {home}", "dim"),
            ),
            expand=False,
        )
    )
    if os.environ.get("OPENAI_API_KEY"):
        out.print(
            "[dim]OPENAI_API_KEY is set; the demo still uses the scripted models so its "
            "output is the same everywhere (examples/langchain/agent_offprompt.py shows "
            "where your own model goes).[/dim]"
        )


def _langchain_steps(
    out: Console,
    result: DemoResult,
    task_memory: TaskMemory,
    conversation: ConversationMemory,
    document: str,
) -> None:
    """Steps 1-4: the LangChain agent's tool output is stored, queried and answered from."""
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from offprompt_langchain import OffpromptMiddleware
    from offprompt_langchain.testing import ScriptedChatModel

    @tool(TOOL)
    def fetch_server_log(service: str, night: str) -> str:
        """Fetch the complete server log of a service for one night."""
        return document

    seen: dict[str, str] = {}
    model = ScriptedChatModel(script=_langchain_script(seen))
    agent = create_agent(
        model,
        [fetch_server_log],
        system_prompt="You are an on-call assistant. Be brief.",
        middleware=[OffpromptMiddleware(task_memory, max_tokens=8000, memory=conversation)],
        checkpointer=InMemorySaver(),
    )
    out.print(Rule("1. A LangChain agent calls a tool that returns a big document"))
    out.print(f"user: {QUESTION}", markup=False)
    inputs: Any = {"messages": [("user", QUESTION)]}
    # The thread id is the session the middleware records into.
    state = agent.invoke(inputs, {"configurable": {"thread_id": SESSION}})
    stored = next(
        (
            m
            for m in state["messages"]
            if isinstance(m, ToolMessage) and m.name == TOOL and m.artifact
        ),
        None,
    )
    if stored is None or stored.artifact.get("offprompt") != "stored":
        raise DemoError("the tool output was not stored off-prompt")
    result.namespace = stored.artifact["artifact_namespace"]
    result.document_bytes = len(document.encode("utf-8"))
    result.document_tokens = int(stored.artifact["tokens"])
    result.reference = seen.get("reference", "")
    result.reference_tokens = conversation.tokenizer.count(result.reference)
    result.chars_to_model = model.chars_sent()
    result.query_result = seen.get("query_result", "")
    result.answer = str(state["messages"][-1].content)
    out.print(
        f"{TOOL}(service='checkout', night='2026-03-14') returned "
        f"[bold]{result.document_bytes / 1e6:.1f} MB[/bold] "
        f"({result.document_bytes:,} bytes, [bold]{result.document_tokens:,} tokens[/bold])."
    )
    _print_stored(out, result, task_memory, calls=len(model.calls), document_chars=len(document))
    _print_query_and_answer(out, result)


def _print_stored(
    out: Console, result: DemoResult, task_memory: TaskMemory, *, calls: int, document_chars: int
) -> None:
    """Step 2: where the log went and what the model got instead."""
    out.print(Rule("2. OffpromptMiddleware stored it off-prompt"))
    meta = task_memory.namespace_metadata(result.namespace)
    out.print(
        f"Stored in embedded Qdrant at {escape(str(result.home / 'qdrant'))}: namespace "
        f"[bold]{result.namespace}[/bold], {meta.get('chunks', '?')} chunks.",
        soft_wrap=True,
    )
    out.print("The model got this reference instead of the log:")
    out.print(Panel(Text(result.reference), expand=False, border_style="green"))
    kept = result.document_tokens - result.reference_tokens
    ratio = result.document_tokens / max(result.reference_tokens, 1)
    out.print(
        f"Tokens kept out of the prompt: [bold]{kept:,}[/bold] "
        f"({result.document_tokens:,} -> {result.reference_tokens}, "
        f"{ratio:,.0f}x smaller). Over its {calls} calls the model "
        f"received {result.chars_to_model:,} characters in all; the log alone is "
        f"{document_chars:,}."
    )


def _print_query_and_answer(out: Console, result: DemoResult) -> None:
    """Steps 3 and 4: what ``query_memory`` found, and the answer built on it."""
    out.print(Rule("3. The model queried the stored log"))
    out.print(f"query_memory(query={QUERY!r}) found:", markup=False)
    lines = [line for line in result.query_result.splitlines() if "CRIT" in line]
    out.print(
        Panel(
            Text("\n".join(lines) or "(no matching line)"),
            expand=False,
            border_style="green" if lines else "red",
        )
    )
    out.print(
        f"[dim]({len(result.query_result):,} characters of passages went back to the "
        "model, best first.)[/dim]"
    )

    out.print(Rule("4. The answer"))
    out.print(Text.assemble(("assistant: ", "bold"), result.answer))
    if _CAUSE.search(result.query_result) is None:
        raise DemoError("query_memory did not find the root cause in the stored log")


def _print_saved_session(
    out: Console, result: DemoResult, store: SQLiteStore, tokenizer: Tokenizer
) -> None:
    """Step 5: the session as a fresh ``ConversationMemory`` reads it back."""
    from offprompt.conversation import ConversationMemory

    saved = ConversationMemory(store, SESSION, tokenizer=tokenizer).messages()
    result.messages_saved = len(saved)
    result.roles = [m.role for m in saved]
    out.print(Rule("5. The conversation is saved"))
    out.print(
        f"Session [bold]{SESSION}[/bold] in {escape(str(store.path))}: {len(saved)} messages "
        f"({', '.join(result.roles)}). The log itself is not in it: the tool message "
        "holds the reference.",
        soft_wrap=True,
    )


def _llamaindex_step(out: Console, result: DemoResult) -> None:
    """Step 6: LlamaIndex continues the session LangChain wrote."""
    from llama_index.core.chat_engine import SimpleChatEngine
    from offprompt_llamaindex import OffpromptMemory

    out.print(Rule("6. LlamaIndex continues the same session"))
    memory = OffpromptMemory.from_defaults(
        session_id=SESSION, path=result.home / "memory.db", token_limit=8000
    )
    received: list[Any] = []
    llm = _llamaindex_llm(_follow_up_reply, received)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    out.print(
        f"OffpromptMemory.from_defaults(session_id={SESSION!r}) reads the "
        f"{len(memory.get_all())} messages LangChain wrote.",
        markup=False,
    )
    out.print(f"user: {FOLLOW_UP}", markup=False)
    result.follow_up_answer = str(engine.chat(FOLLOW_UP))
    out.print(Text.assemble(("assistant: ", "bold"), result.follow_up_answer))
    result.messages_after = len(memory.get_all())
    out.print(
        f"[dim]The LlamaIndex model answered from the {len(received)} messages the "
        f"memory handed it; the session now has {result.messages_after} messages.[/dim]"
    )
    memory.close()
    if result.follow_up_answer.startswith("I don't know"):
        raise DemoError("the LlamaIndex memory did not hand the earlier answer to the model")


def _command() -> str:
    """How to call ``offprompt`` from here: the bare name if it is on PATH, else its path
    (after ``make demo`` the virtualenv is usually not activated)."""
    if shutil.which("offprompt"):
        return "offprompt"
    script = Path(sys.executable).parent / "offprompt"
    if not script.exists():
        return "offprompt"
    try:
        relative = os.path.relpath(script)
    except ValueError:  # another drive (Windows)
        return str(script)
    return str(script) if relative.startswith("..") else relative


def _print_next(out: Console, result: DemoResult) -> None:
    default = (Path.cwd() / ".offprompt").resolve()
    command = _command()
    prefix = command if result.home == default else f"{command} --home {result.home}"
    hints = [
        ("inspect", "sessions and stored outputs in the home"),
        (f"show {result.session}", "the session as a timeline"),
        (f"show {result.session} --html demo.html", "the same, as a web page"),
        (f"query {result.namespace} 'rollback requested'", "search the stored log yourself"),
        (f"read {result.namespace} --page 1", "read it page by page"),
    ]
    out.print(Rule(f"Done (the steps took {result.seconds:.1f} s). Next, try"))
    for command, what in hints:
        # soft_wrap: a command is never cut, so it can be copied as printed.
        out.print(
            Text.assemble((f"{prefix} {command}", "bold cyan"), (f"   # {what}", "dim")),
            soft_wrap=True,
        )
    out.print(
        Text(
            f"Run the demo again any time: it replaces session {result.session!r} "
            "and the log it stored.",
            style="dim",
        )
    )


def main() -> int:
    """Run the demo in ``$OFFPROMPT_HOME`` (or ``./.offprompt``); returns the exit code.

    Returns 1 with a one-line install hint when an adapter is missing.

    Example (the same as ``offprompt demo``)::

        sys.exit(main())
    """
    missing = _adapters_missing()
    if missing is not None:
        Console(stderr=True, highlight=False).print(
            f"offprompt: error: {INSTALL_HINT} ({missing} is not importable)",
            markup=False,
            soft_wrap=True,
        )
        return 1
    run()
    return 0


if __name__ == "__main__":  # pragma: no cover
    from offprompt.cli import main as cli_main

    sys.exit(cli_main(["demo"]))
