"""Import and export of other frameworks' persisted formats, at the dict/JSON level.

Nothing here imports LangChain, LlamaIndex, smolagents or Griptape: the adapters turn
framework objects into these dicts with the frameworks' own serialisers and delegate
the conversion to this package. What a format cannot carry is listed in a
:class:`ConversionReport`, never dropped silently.

Modules: ``langchain`` (``messages_to_dict`` JSON), ``llamaindex`` (``ChatMessage``
dicts and ``SimpleChatStore`` files), ``griptape`` (conversation-memory JSON),
``smolagents`` (``get_full_steps()`` dicts), ``mem0`` (``Memory.get_all()`` results into
long-term memory fragments). Import the one you need; they are not
loaded by ``import offprompt.interop``.
"""

from offprompt.interop.report import ConversionReport, Loss

__all__ = ["ConversionReport", "Loss"]
