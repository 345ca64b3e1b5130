"""A LlamaIndex chat engine whose memory survives a restart (offline, scripted LLM).

Run: python examples/llamaindex/chat_engine_restart.py
(writes $OFFPROMPT_HOME/memory.db, or ./.offprompt/memory.db)

1. A ``SimpleChatEngine`` with ``memory=OffpromptMemory`` chats; every message goes to
   the embedded SQLite store.
2. A second Python process (a real restart) builds a new engine on the same session and
   continues: the model sees the earlier turns.
3. The token limit: after many turns the model gets the system prompt plus the newest
   whole turns only, while every message stays stored.

The LLM is a tiny scripted model (``offprompt_llamaindex.testing.ScriptedFunctionLLM``;
no network, no key): it answers "Who am I?" from the history it is given, which shows
what memory reached it.
"""

from __future__ import annotations

import subprocess
import sys

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from offprompt_llamaindex import OffpromptMemory
from offprompt_llamaindex.testing import ScriptedFunctionLLM

from offprompt.stores import default_path

SESSION = "example-chat"


def echo_memory(messages: list[ChatMessage]) -> str:
    """A scripted model: learns "I'm X" from the history it receives; no network."""
    question = messages[-1].content or ""
    if question.startswith("Who am I"):
        names = [
            m.content.split("I'm ", 1)[1].rstrip(".")
            for m in messages
            if m.role.value == "user" and "I'm " in (m.content or "")
        ]
        return f"You are {names[-1]}." if names else "I don't know yet."
    if "I'm " in question:
        return f"Nice to meet you, {question.split(chr(39) + 'm ', 1)[1].rstrip('.')}."
    return f"Noted ({len(question.split())} words)."


def engine(
    token_limit: int = 2000,
) -> tuple[SimpleChatEngine, ScriptedFunctionLLM, OffpromptMemory]:
    llm = ScriptedFunctionLLM(script=[echo_memory], context_window=4096)
    memory = OffpromptMemory.from_defaults(session_id=SESSION, token_limit=token_limit)
    chat = SimpleChatEngine.from_defaults(
        llm=llm, memory=memory, system_prompt="You are a friendly assistant."
    )
    return chat, llm, memory


def first_process() -> None:
    chat, _, memory = engine()
    memory.reset()  # start the example from a clean session
    print(f"store: {default_path()}  session: {SESSION!r}")
    for text in ["Hi, I'm Ada Lovelace.", "I like analytical engines."]:
        print(f"user: {text}\nbot:  {chat.chat(text)}")
    print(f"stored messages: {len(memory.get_all())}")


def second_process() -> None:
    chat, llm, _ = engine()
    print("-- restarted process --")
    print(f"user: Who am I?\nbot:  {chat.chat('Who am I?')}")
    print(
        f"the model received {len(llm.calls[-1])} messages: {[m.role.value for m in llm.calls[-1]]}"
    )
    assert str(chat.chat("Who am I, again?")).startswith("You are Ada Lovelace")


def token_limit_demo() -> None:
    chat, llm, memory = engine(token_limit=300)
    for i in range(20):
        chat.chat(f"Fact number {i}: " + "the engine has many gears and columns. " * 3)
    print("-- after 20 more turns, token_limit=300 --")
    print(
        f"stored: {len(memory.get_all())} messages; "
        f"sent to the model: {len(llm.calls[-1])} messages "
        f"(system prompt kept: {llm.calls[-1][0].role.value == 'system'})"
    )
    window = memory.window()
    print(f"window: {window.tokens} tokens, {window.dropped} older messages left out")
    assert window.tokens <= 300 and len(memory.get_all()) > len(llm.calls[-1])


def main() -> None:
    if sys.argv[1:] == ["--second"]:
        second_process()
        return
    first_process()
    # A real restart: a new interpreter opens the same SQLite file.
    subprocess.run([sys.executable, __file__, "--second"], check=True)
    token_limit_demo()


if __name__ == "__main__":
    main()
