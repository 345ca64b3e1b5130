"""A LangChain chain with durable, token-budgeted history (offline).

`RunnableWithMessageHistory` + `OffpromptChatMessageHistory`: every turn is stored in
the embedded SQLite file (`$OFFPROMPT_HOME/memory.db` or `./.offprompt/memory.db`), so
a restarted process picks the conversation up; the model gets only the newest turns
that fit `max_tokens`. The chat model is scripted (no API key, no network).

Run: python examples/langchain/chain_with_history.py
"""

from __future__ import annotations

import warnings

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from offprompt_langchain import OffpromptChatMessageHistory
from offprompt_langchain.testing import ScriptedChatModel

model = ScriptedChatModel(
    script=[
        "Nice to meet you, Ada.",
        "Noted: your badge number is 5521.",
        "Lots of context noted.",
        lambda messages: (
            "You are Ada, badge 5521."
            if any("5521" in m.text for m in messages)
            else "I no longer have that in my window."
        ),
    ]
)
prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ]
)

with warnings.catch_warnings():
    # RunnableWithMessageHistory is deprecated in langchain-core 1.x (LangGraph persistence
    # replaces it); this example shows the existing-chain path, so its warning is hidden here.
    warnings.simplefilter("ignore")
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: OffpromptChatMessageHistory(session_id, max_tokens=2000),
        input_messages_key="question",
        history_messages_key="history",
    )

config = {"configurable": {"session_id": "ada"}}
for question in (
    "Hi, I'm Ada.",
    "My badge number is 5521.",
    "Here is some background: " + "lorem ipsum dolor sit amet " * 60,
    "Who am I?",
):
    answer = chain.invoke({"question": question}, config)
    sent = model.calls[-1]
    print(f"user> {question[:60]}")
    print(f"  model saw {len(sent)} messages; replied: {answer.content}")

history = OffpromptChatMessageHistory("ada")
print(f"\nstored in {history.memory.store.path}: {len(history.messages)} messages")
budgeted = history.window(300)
print(f"a 300-token window keeps the newest {len(budgeted)}, from: {budgeted[0].text[:40]!r}")
