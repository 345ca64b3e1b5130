"""``TextArtifact``: a piece of text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from offprompt.artifacts.base import BaseArtifact

if TYPE_CHECKING:
    from offprompt.tokens import Tokenizer


class TextArtifact(BaseArtifact):
    """Text. Whitespace-only text is falsy; ``+`` concatenates.

    Example:
        >>> (TextArtifact("off") + TextArtifact("prompt")).value
        'offprompt'
    """

    type: Literal["TextArtifact"] = "TextArtifact"
    value: str

    def to_text(self) -> str:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value.strip())

    def __len__(self) -> int:
        return len(self.value)

    def __add__(self, other: TextArtifact) -> TextArtifact:
        if not isinstance(other, TextArtifact):
            return NotImplemented
        return TextArtifact(value=self.value + other.value)

    def token_count(self, tokenizer: Tokenizer | None = None) -> int:
        """Tokens in the text, by ``tokenizer`` or the default (tiktoken ``o200k_base``)."""
        # Deferred: offprompt.tokens imports the artifacts (to count images in messages).
        from offprompt.tokens import default_tokenizer

        return (tokenizer or default_tokenizer()).count(self.value)
