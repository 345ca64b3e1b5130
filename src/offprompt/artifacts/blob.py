"""``BlobArtifact``: raw bytes with a MIME type."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from pydantic import field_serializer, field_validator

from offprompt.artifacts.base import BaseArtifact
from offprompt.errors import ValidationError

_TEXTUAL_MIME_PREFIXES = ("text/", "application/json", "application/xml")


class BlobArtifact(BaseArtifact):
    """Bytes. Serialised as base64; a ``str`` given as ``value`` must be base64.

    Attributes:
        mime_type: What the bytes are, e.g. ``"application/pdf"``.
    """

    type: Literal["BlobArtifact"] = "BlobArtifact"
    value: bytes
    mime_type: str = "application/octet-stream"

    @field_validator("value", mode="before")
    @classmethod
    def _decode_base64(cls, value: Any) -> Any:
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ValidationError(
                    f"{cls.__name__}.value given as str must be base64; pass bytes for raw data"
                ) from None
        return value

    @field_serializer("value", when_used="json")
    def _encode_base64(self, value: bytes) -> str:
        return base64.b64encode(value).decode("ascii")

    @property
    def base64(self) -> str:
        """The bytes, base64-encoded (ASCII)."""
        return base64.b64encode(self.value).decode("ascii")

    def to_bytes(self) -> bytes:
        return self.value

    def to_text(self) -> str:
        """The decoded text for textual MIME types; otherwise a one-line description."""
        if self.mime_type.startswith(_TEXTUAL_MIME_PREFIXES):
            return self.value.decode("utf-8", errors="replace")
        return f"Blob {self.name!r}, {self.mime_type}, {len(self.value)} bytes"

    def __len__(self) -> int:
        return len(self.value)
