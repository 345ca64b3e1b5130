"""llama-index-core's own ``ChatMemoryBuffer`` tests, run against ``OffpromptMemory``.

Ported from run-llama/llama_index (MIT), ``llama-index-core/tests/memory/
test_chat_memory_buffer.py`` at f9e4870feb73c1e5926cd48cdc13a115282b9dc1.

What was changed, and only that: the class under test (``ChatMemoryBuffer.from_defaults
(...)`` became ``OffpromptMemory.from_defaults(..., store=InMemoryStore(), tokenizer=
...)``, ``from_string``/``from_dict`` are ours) and one fixture: the upstream budgets are
worked out with LlamaIndex's ``get_tokenizer()`` on message content alone, so the
memory here counts tokens the same way (``ContentTokenizer``; offprompt's default also
counts the chat-format overhead of each message). Upstream calls ``memory.get(
initial_tokens)``, positionally; in llama-index-core 0.14 ``get``'s first parameter is
``input``, so there the call never sets the budget (the budget tests fail against
``ChatMemoryBuffer`` itself); the port passes ``initial_token_count=`` by name, as the
tests mean. Every upstream assertion is kept
and passes, the "answered run whole or not at all" rule included
(``test_get_when_space_for_assistant_message_removes_assistant_message_at_start_of_history``).
"""

from __future__ import annotations

import pickle

import pytest
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.utils import get_tokenizer
from offprompt_llamaindex import OffpromptMemory

from offprompt.messages import Message
from offprompt.stores import InMemoryStore

tokenizer = get_tokenizer()


class ContentTokenizer:
    """Counts what ChatMemoryBuffer counts: the tokens of a message's text, no overhead."""

    def count(self, text: str) -> int:
        return len(tokenizer(text))

    def count_message(self, message: Message) -> int:
        return len(tokenizer(message.text))


def make(chat_history: list[ChatMessage] | None = None, token_limit: int = 3000) -> OffpromptMemory:
    return OffpromptMemory.from_defaults(
        session_id="s",
        store=InMemoryStore(),
        chat_history=chat_history,
        token_limit=token_limit,
        tokenizer=ContentTokenizer(),
    )


USER_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="first message")
USER_CHAT_MESSAGE_TOKENS = len(tokenizer(str(USER_CHAT_MESSAGE.content)))
SECOND_USER_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="second message")
SECOND_USER_CHAT_MESSAGE_TOKENS = len(tokenizer(str(SECOND_USER_CHAT_MESSAGE.content)))
ASSISTANT_CHAT_MESSAGE = ChatMessage(role=MessageRole.ASSISTANT, content="first answer")
ASSISTANT_CHAT_MESSAGE_TOKENS = len(tokenizer(str(ASSISTANT_CHAT_MESSAGE.content)))
SECOND_ASSISTANT_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="second answer")
SECOND_ASSISTANT_CHAT_MESSAGE_TOKENS = len(tokenizer(str(SECOND_ASSISTANT_CHAT_MESSAGE.content)))


def test_put_get() -> None:
    memory = make(chat_history=[USER_CHAT_MESSAGE])
    history = memory.get()
    assert len(history) == 1
    assert history[0].content == USER_CHAT_MESSAGE.content


def test_get_when_initial_tokens_less_than_limit_returns_history() -> None:
    initial_tokens = 5
    memory = make(token_limit=1000, chat_history=[USER_CHAT_MESSAGE])
    history = memory.get(initial_token_count=initial_tokens)
    assert len(history) == 1
    assert history[0] == USER_CHAT_MESSAGE


def test_get_when_initial_tokens_exceed_limit_raises_value_error() -> None:
    initial_tokens = 50
    memory = make(token_limit=initial_tokens - 1)
    with pytest.raises(ValueError) as error:
        memory.get(initial_token_count=initial_tokens)
    assert str(error.value) == "Initial token count exceeds token limit"


def test_get_when_initial_tokens_same_as_limit_removes_message() -> None:
    initial_tokens = 5
    memory = make(token_limit=initial_tokens, chat_history=[USER_CHAT_MESSAGE])
    history = memory.get(initial_token_count=initial_tokens)
    assert len(history) == 0


def test_get_when_space_for_assistant_message_removes_assistant_message_at_start_of_history() -> (
    None
):
    token_limit = 5
    initial_tokens = token_limit - USER_CHAT_MESSAGE_TOKENS
    memory = make(token_limit=token_limit, chat_history=[USER_CHAT_MESSAGE, ASSISTANT_CHAT_MESSAGE])
    history = memory.get(initial_token_count=initial_tokens)
    assert len(history) == 0


def test_get_when_space_for_second_message_and_answer_removes_only_first_message_and_answer() -> (
    None
):
    token_limit = 5
    initial_tokens = token_limit - USER_CHAT_MESSAGE_TOKENS - ASSISTANT_CHAT_MESSAGE_TOKENS
    memory = make(
        token_limit=token_limit,
        chat_history=[
            USER_CHAT_MESSAGE,
            ASSISTANT_CHAT_MESSAGE,
            SECOND_USER_CHAT_MESSAGE,
            SECOND_ASSISTANT_CHAT_MESSAGE,
        ],
    )
    history = memory.get(initial_token_count=initial_tokens)
    assert len(history) == 2
    assert history[0] == SECOND_USER_CHAT_MESSAGE
    assert history[1] == SECOND_ASSISTANT_CHAT_MESSAGE


def test_get_when_space_for_all_but_first_message_removes_first_message_and_answer() -> None:
    token_limit = 10
    history_tokens = (
        ASSISTANT_CHAT_MESSAGE_TOKENS
        + USER_CHAT_MESSAGE_TOKENS
        + SECOND_ASSISTANT_CHAT_MESSAGE_TOKENS
    )
    initial_tokens = token_limit - history_tokens
    memory = make(
        token_limit=token_limit,
        chat_history=[
            USER_CHAT_MESSAGE,
            ASSISTANT_CHAT_MESSAGE,
            SECOND_USER_CHAT_MESSAGE,
            SECOND_ASSISTANT_CHAT_MESSAGE,
        ],
    )
    history = memory.get(initial_token_count=initial_tokens)
    assert len(history) == 2
    assert history[0] == SECOND_USER_CHAT_MESSAGE
    assert history[1] == SECOND_ASSISTANT_CHAT_MESSAGE


def test_set() -> None:
    memory = make(chat_history=[USER_CHAT_MESSAGE])
    memory.put(USER_CHAT_MESSAGE)
    assert len(memory.get()) == 2
    memory.set([USER_CHAT_MESSAGE])
    assert len(memory.get()) == 1


def test_max_tokens() -> None:
    memory = make(chat_history=[USER_CHAT_MESSAGE], token_limit=5)
    memory.put(USER_CHAT_MESSAGE)
    assert len(memory.get()) == 2
    memory.put(USER_CHAT_MESSAGE)
    memory.put(USER_CHAT_MESSAGE)
    assert len(memory.get()) == 2
    assert len(memory.get_all()) == 4
    memory.put(ChatMessage(role=MessageRole.USER, content="test message2"))
    assert memory.get()[-1].content == "test message2"
    assert len(memory.get()) == 2


def test_string_save_load() -> None:
    memory = make(chat_history=[USER_CHAT_MESSAGE], token_limit=5)
    json_str = memory.to_string()
    new_memory = OffpromptMemory.from_string(json_str)
    assert len(new_memory.get()) == 1
    assert new_memory.token_limit == 5


def test_dict_save_load() -> None:
    memory = make(chat_history=[USER_CHAT_MESSAGE], token_limit=5)
    json_dict = memory.to_dict()
    new_memory = OffpromptMemory.from_dict(json_dict)
    assert len(new_memory.get()) == 1
    assert new_memory.token_limit == 5


def test_pickle() -> None:
    memory = make()
    bytes_ = pickle.dumps(memory)
    assert isinstance(pickle.loads(bytes_), OffpromptMemory)
