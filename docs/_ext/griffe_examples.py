"""Griffe extension for the API reference: read ``Example:`` sections as examples.

The project's Google-style docstrings title their doctests ``Example:``, which griffe
reads as an admonition of Markdown text (so ``['a', 'b']`` in an output line looks like
a reference link); ``Examples:`` is the section griffe renders as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section titles to ``Examples:`` before a docstring is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
