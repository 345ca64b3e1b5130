"""``ImageArtifact``: an encoded image (PNG, JPEG, ...) with its size."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image, UnidentifiedImageError
from pydantic import model_validator

from offprompt.artifacts.blob import BlobArtifact
from offprompt.errors import ValidationError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage


class ImageArtifact(BlobArtifact):
    """An image: encoded bytes plus ``format``, ``width`` and ``height``.

    The bytes are checked with pillow on construction: bytes that are not an image are
    refused. ``format``, ``width``, ``height`` and ``mime_type`` are read from the
    image when not given. :meth:`to_text` describes the image; it never dumps bytes.

    Example:
        >>> from PIL import Image
        >>> art = ImageArtifact.from_pil(Image.new("RGB", (4, 3)))
        >>> art.to_text()[:24]
        'Image (png, 4x3 pixels, '
    """

    type: Literal["ImageArtifact"] = "ImageArtifact"  # type: ignore[assignment]
    mime_type: str = ""
    format: str = ""
    width: int = 0
    height: int = 0

    @model_validator(mode="after")
    def _read_image_header(self) -> ImageArtifact:
        try:
            with Image.open(io.BytesIO(self.value)) as image:
                detected = (image.format or "").lower()
                size = image.size
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise ValidationError(
                f"ImageArtifact.value is not a readable image ({len(self.value)} bytes): {exc}"
            ) from None
        given = self.format.lower().replace("jpg", "jpeg")
        if given and detected and given != detected:
            raise ValidationError(
                f"ImageArtifact.format is {self.format!r} but the bytes are {detected!r}"
            )
        self.format = given or detected
        if (self.width, self.height) == (0, 0):
            self.width, self.height = size
        elif (self.width, self.height) != size:
            raise ValidationError(
                f"ImageArtifact size {self.width}x{self.height} does not match the image's "
                f"{size[0]}x{size[1]}"
            )
        if not self.mime_type:
            self.mime_type = Image.MIME.get(self.format.upper(), f"image/{self.format}")
        return self

    @classmethod
    def from_pil(cls, image: PILImage, format: str = "png", **fields: Any) -> ImageArtifact:
        """Encode a pillow image (PNG by default, which is lossless)."""
        buffer = io.BytesIO()
        image.save(buffer, format=format.upper().replace("JPG", "JPEG"))
        return cls(value=buffer.getvalue(), **fields)

    def to_pil(self) -> PILImage:
        """Decode to a pillow image (fully loaded, detached from the bytes)."""
        image = Image.open(io.BytesIO(self.value))
        image.load()
        return image

    def to_data_url(self) -> str:
        """The image as a ``data:`` URL (its MIME type, base64 bytes)."""
        return f"data:{self.mime_type};base64,{self.base64}"

    def to_text(self) -> str:
        return f"Image ({self.format}, {self.width}x{self.height} pixels, {len(self.value)} bytes)"
