"""langchain-core's own chat-history and ``RunnableWithMessageHistory`` tests, run
against ``OffpromptChatMessageHistory``.

Ported from langchain-ai/langchain (MIT):

* ``libs/core/tests/unit_tests/chat_history/test_chat_history.py`` at
  186b4a39939df67931a0bfc381e2a50112e317c3;
* ``libs/core/tests/unit_tests/runnables/test_history.py`` at
  6221bee2e286dcb5f48eaaa49be993a4b5efe918 (its tests through
  ``test_output_dict_async``).

What was changed, and only that: the class under test (``InMemoryChatMessageHistory()``
became ``OffpromptChatMessageHistory(session_id, store=...)`` on one offprompt
``InMemoryStore`` per test) and the fixtures. Upstream compares the session store with
``{"1": InMemoryChatMessageHistory(messages=[...])}``; a different class never equals
that, so the port compares the same thing, each session's ``messages``. Our history
gives each stored message an ``id`` (lossless round trips need one), which the
upstream literals do not carry, so messages are compared without their ids. Every
upstream assertion is kept. The two ``test_chat_history.py`` tests that define their own
``BaseChatMessageHistory`` subclass exercise LangChain's base class, not ours: skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.base import RunnableLambda
from langchain_core.runnables.config import RunnableConfig
from langchain_core.runnables.history import RunnableWithMessageHistory
from offprompt_langchain import OffpromptChatMessageHistory

from offprompt.stores import InMemoryStore

# RunnableWithMessageHistory is deprecated in langchain-core 1.x; existing chains still use it
pytestmark = pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")


def _plain(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Messages without the ids our store assigns (the upstream literals have none)."""
    return [m.model_copy(update={"id": None}) for m in messages]


def _get_get_session_history(
    *, store: dict[str, Any] | None = None
) -> Callable[..., OffpromptChatMessageHistory]:
    chat_history_store = store if store is not None else {}
    backend = InMemoryStore()

    def get_session_history(session_id: str, **kwargs: Any) -> OffpromptChatMessageHistory:
        if session_id not in chat_history_store:
            chat_history_store[session_id] = OffpromptChatMessageHistory(session_id, store=backend)
        return chat_history_store[session_id]

    return get_session_history


def _history(session_id: str = "s") -> OffpromptChatMessageHistory:
    return OffpromptChatMessageHistory(session_id, store=InMemoryStore())


# ------------------------------------------------------------ chat_history/test_chat_history.py


@pytest.mark.skip(reason="defines its own BaseChatMessageHistory subclass: tests LangChain's base")
def test_add_message_implementation_only() -> None: ...


@pytest.mark.skip(reason="defines its own BaseChatMessageHistory subclass: tests LangChain's base")
def test_bulk_message_implementation_only() -> None: ...


async def test_async_interface() -> None:
    chat_history = _history()
    await chat_history.aadd_messages([HumanMessage(content="Hello"), HumanMessage(content="World")])
    assert _plain(await chat_history.aget_messages()) == [
        HumanMessage(content="Hello"),
        HumanMessage(content="World"),
    ]
    await chat_history.aadd_messages([HumanMessage(content="!")])
    assert _plain(await chat_history.aget_messages()) == [
        HumanMessage(content="Hello"),
        HumanMessage(content="World"),
        HumanMessage(content="!"),
    ]
    await chat_history.aclear()
    assert await chat_history.aget_messages() == []


# --------------------------------------------------------------- runnables/test_history.py


def test_interfaces() -> None:
    history = _history()
    history.add_message(SystemMessage(content="system"))
    history.add_user_message("human 1")
    history.add_ai_message("ai")
    history.add_message(HumanMessage(content="human 2"))
    assert str(history) == "System: system\nHuman: human 1\nAI: ai\nHuman: human 2"


def _said(messages: list[BaseMessage]) -> str:
    return "you said: " + "\n".join(str(m.content) for m in messages if isinstance(m, HumanMessage))


def _said_input(input: dict[str, Any]) -> str:
    return "you said: " + "\n".join(
        [str(m.content) for m in input["history"] if isinstance(m, HumanMessage)] + [input["input"]]
    )


_SESSION_1 = [
    HumanMessage(content="hello"),
    AIMessage(content="you said: hello"),
    HumanMessage(content="good bye"),
    AIMessage(content="you said: hello\ngood bye"),
    HumanMessage(content="hi again"),
    AIMessage(content="you said: hello\ngood bye\nhi again"),
]


def test_input_messages() -> None:
    runnable = RunnableLambda(_said)
    store: dict[str, Any] = {}
    with_history = RunnableWithMessageHistory(runnable, _get_get_session_history(store=store))
    config: RunnableConfig = {"configurable": {"session_id": "1"}}
    assert with_history.invoke([HumanMessage(content="hello")], config) == "you said: hello"
    output = with_history.invoke([HumanMessage(content="good bye")], config)
    assert output == "you said: hello\ngood bye"
    output = [*with_history.stream([HumanMessage(content="hi again")], config)]
    assert output == ["you said: hello\ngood bye\nhi again"]
    assert list(store) == ["1"]
    assert _plain(store["1"].messages) == _SESSION_1


async def test_input_messages_async() -> None:
    runnable = RunnableLambda(_said)
    store: dict[str, Any] = {}
    with_history = RunnableWithMessageHistory(runnable, _get_get_session_history(store=store))
    config = {"session_id": "1_async"}
    output = await with_history.ainvoke([HumanMessage(content="hello")], config)  # type: ignore[arg-type]
    assert output == "you said: hello"
    output = await with_history.ainvoke([HumanMessage(content="good bye")], config)  # type: ignore[arg-type]
    assert output == "you said: hello\ngood bye"
    streamed = [c async for c in with_history.astream([HumanMessage(content="hi again")], config)]  # type: ignore[arg-type]
    assert streamed == ["you said: hello\ngood bye\nhi again"]
    assert list(store) == ["1_async"]
    assert _plain(store["1_async"].messages) == _SESSION_1


def _dict_runnable() -> RunnableLambda[Any, str]:
    return RunnableLambda(lambda input: _said(input["messages"]))


def test_input_dict() -> None:
    with_history = RunnableWithMessageHistory(
        _dict_runnable(), _get_get_session_history(), input_messages_key="messages"
    )
    config: RunnableConfig = {"configurable": {"session_id": "2"}}
    output = with_history.invoke({"messages": [HumanMessage(content="hello")]}, config)
    assert output == "you said: hello"
    output = with_history.invoke({"messages": [HumanMessage(content="good bye")]}, config)
    assert output == "you said: hello\ngood bye"


async def test_input_dict_async() -> None:
    with_history = RunnableWithMessageHistory(
        _dict_runnable(), _get_get_session_history(), input_messages_key="messages"
    )
    config: RunnableConfig = {"configurable": {"session_id": "2_async"}}
    output = await with_history.ainvoke({"messages": [HumanMessage(content="hello")]}, config)
    assert output == "you said: hello"
    output = await with_history.ainvoke({"messages": [HumanMessage(content="good bye")]}, config)
    assert output == "you said: hello\ngood bye"


def _with_history_keys(runnable: Any, **extra: Any) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        runnable,
        _get_get_session_history(),
        input_messages_key="input",
        history_messages_key="history",
        **extra,
    )


def test_input_dict_with_history_key() -> None:
    with_history = _with_history_keys(RunnableLambda(_said_input))
    config: RunnableConfig = {"configurable": {"session_id": "3"}}
    assert with_history.invoke({"input": "hello"}, config) == "you said: hello"
    assert with_history.invoke({"input": "good bye"}, config) == "you said: hello\ngood bye"


async def test_input_dict_with_history_key_async() -> None:
    with_history = _with_history_keys(RunnableLambda(_said_input))
    config: RunnableConfig = {"configurable": {"session_id": "3_async"}}
    assert await with_history.ainvoke({"input": "hello"}, config) == "you said: hello"
    output = await with_history.ainvoke({"input": "good bye"}, config)
    assert output == "you said: hello\ngood bye"


def test_output_message() -> None:
    with_history = _with_history_keys(RunnableLambda(lambda i: AIMessage(content=_said_input(i))))
    config: RunnableConfig = {"configurable": {"session_id": "4"}}
    assert with_history.invoke({"input": "hello"}, config) == AIMessage(content="you said: hello")
    output = with_history.invoke({"input": "good bye"}, config)
    assert output == AIMessage(content="you said: hello\ngood bye")


async def test_output_message_async() -> None:
    with_history = _with_history_keys(RunnableLambda(lambda i: AIMessage(content=_said_input(i))))
    config: RunnableConfig = {"configurable": {"session_id": "4_async"}}
    output = await with_history.ainvoke({"input": "hello"}, config)
    assert output == AIMessage(content="you said: hello")
    output = await with_history.ainvoke({"input": "good bye"}, config)
    assert output == AIMessage(content="you said: hello\ngood bye")


class LengthChatModel(BaseChatModel):
    """A fake chat model that returns the length of the messages passed in."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=str(len(messages))))]
        )

    @property
    def _llm_type(self) -> str:
        return "length-fake-chat-model"


def test_input_messages_output_message() -> None:
    with_history = RunnableWithMessageHistory(LengthChatModel(), _get_get_session_history())
    config: RunnableConfig = {"configurable": {"session_id": "5"}}
    assert with_history.invoke([HumanMessage(content="hi")], config).content == "1"
    assert with_history.invoke([HumanMessage(content="hi")], config).content == "3"


async def test_input_messages_output_message_async() -> None:
    with_history = RunnableWithMessageHistory(LengthChatModel(), _get_get_session_history())
    config: RunnableConfig = {"configurable": {"session_id": "5_async"}}
    assert (await with_history.ainvoke([HumanMessage(content="hi")], config)).content == "1"
    assert (await with_history.ainvoke([HumanMessage(content="hi")], config)).content == "3"


def test_output_messages() -> None:
    with_history = _with_history_keys(RunnableLambda(lambda i: [AIMessage(content=_said_input(i))]))
    config: RunnableConfig = {"configurable": {"session_id": "6"}}
    assert with_history.invoke({"input": "hello"}, config) == [AIMessage(content="you said: hello")]
    output = with_history.invoke({"input": "good bye"}, config)
    assert output == [AIMessage(content="you said: hello\ngood bye")]


async def test_output_messages_async() -> None:
    with_history = _with_history_keys(RunnableLambda(lambda i: [AIMessage(content=_said_input(i))]))
    config: RunnableConfig = {"configurable": {"session_id": "6_async"}}
    output = await with_history.ainvoke({"input": "hello"}, config)
    assert output == [AIMessage(content="you said: hello")]
    output = await with_history.ainvoke({"input": "good bye"}, config)
    assert output == [AIMessage(content="you said: hello\ngood bye")]


def test_output_dict() -> None:
    with_history = _with_history_keys(
        RunnableLambda(lambda i: {"output": [AIMessage(content=_said_input(i))]}),
        output_messages_key="output",
    )
    config: RunnableConfig = {"configurable": {"session_id": "7"}}
    output = with_history.invoke({"input": "hello"}, config)
    assert output == {"output": [AIMessage(content="you said: hello")]}
    output = with_history.invoke({"input": "good bye"}, config)
    assert output == {"output": [AIMessage(content="you said: hello\ngood bye")]}


async def test_output_dict_async() -> None:
    with_history = _with_history_keys(
        RunnableLambda(lambda i: {"output": [AIMessage(content=_said_input(i))]}),
        output_messages_key="output",
    )
    config: RunnableConfig = {"configurable": {"session_id": "7_async"}}
    output = await with_history.ainvoke({"input": "hello"}, config)
    assert output == {"output": [AIMessage(content="you said: hello")]}
    output = await with_history.ainvoke({"input": "good bye"}, config)
    assert output == {"output": [AIMessage(content="you said: hello\ngood bye")]}
