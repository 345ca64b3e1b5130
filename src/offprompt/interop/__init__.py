"""Import and export of other frameworks' persisted formats, at the dict/JSON level.

Nothing here imports LangChain, LlamaIndex, smolagents or Griptape: the adapters turn
framework objects into these dicts with the frameworks' own serialisers and delegate
the conversion to this package. What a format cannot carry is listed in a
:class:`ConversionReport`, never dropped silently.
"""

from offprompt.interop.report import ConversionReport, Loss

__all__ = ["ConversionReport", "Loss"]
