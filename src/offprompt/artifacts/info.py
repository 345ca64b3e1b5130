"""``ErrorArtifact`` and ``InfoArtifact``: messages meant for the model, not exceptions."""

from __future__ import annotations

from typing import Literal

from offprompt.artifacts.base import BaseArtifact


class ErrorArtifact(BaseArtifact):
    """An error reported to the model as a value.

    Attributes:
        exception: The text of the exception behind it (``"TypeName: message"``), if any.
    """

    type: Literal["ErrorArtifact"] = "ErrorArtifact"
    value: str
    exception: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException, message: str | None = None) -> ErrorArtifact:
        """An error artifact for ``exc``: ``message`` (or ``str(exc)``) and the exception's type and
        text.
        """
        return cls(value=message or str(exc), exception=f"{type(exc).__name__}: {exc}")

    def to_text(self) -> str:
        return self.value


class InfoArtifact(BaseArtifact):
    """A short informational message for the model (e.g. where an output was stored)."""

    type: Literal["InfoArtifact"] = "InfoArtifact"
    value: str

    def to_text(self) -> str:
        return self.value
