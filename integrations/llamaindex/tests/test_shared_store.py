"""Both adapters open path= through the core's open_store: one store per file, shared."""

from __future__ import annotations

import pickle
from pathlib import Path

from llama_index.core.base.llms.types import ChatMessage
from offprompt_langchain import OffpromptChatMessageHistory
from offprompt_llamaindex import OffpromptChatStore, OffpromptMemory

from offprompt.stores import SQLiteStore, release_store
from offprompt.stores.shared import shared_holders


def test_history_memory_and_chat_store_share_one_store_per_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    history = OffpromptChatMessageHistory("s", path=db)
    memory = OffpromptMemory.from_defaults(session_id="s", path=str(db))
    chat_store = OffpromptChatStore(path=db)
    store = history.memory.store
    assert isinstance(store, SQLiteStore)
    assert memory.store is store and chat_store.store is store
    assert shared_holders(store) == 3
    # A memory reopened from its serialised form takes the same store again.
    revived = pickle.loads(pickle.dumps(memory))
    assert revived.store is store and shared_holders(store) == 4

    history.add_user_message("from LangChain")
    memory.put(ChatMessage(role="assistant", content="from LlamaIndex"))
    memory.close()
    revived.close()
    # The history and the chat store still hold it: closing a memory did not close theirs.
    assert not store.closed and shared_holders(store) == 2
    assert [m.text for m in history.messages] == ["from LangChain", "from LlamaIndex"]
    release_store(store)  # the history's and the chat store's holds (they have no close)
    release_store(store)
    assert store.closed


def test_a_given_store_is_not_shared_and_close_closes_it(tmp_path: Path) -> None:
    own = SQLiteStore(tmp_path / "own.db")
    memory = OffpromptMemory.from_defaults(session_id="s", store=own)
    assert memory.store is own and shared_holders(own) == 0
    memory.close()
    assert own.closed
