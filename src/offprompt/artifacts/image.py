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

    def within(self, max_tokens: int, max_bytes: int) -> ImageArtifact | None:
        """This image, or a smaller copy, that costs the model at most ``max_tokens``
        (:func:`offprompt.tokens.image_tokens`) in at most ``max_bytes`` encoded.

        Returned as it is when it fits. Else scaled down (Lanczos) from the size the
        model would be given (2048x2048 box, shorter side 768), in steps of 0.8, and
        encoded as PNG, or as JPEG (quality 85) when PNG is over ``max_bytes`` (a photo).
        ``None`` when no size fits: ``max_tokens`` below the cheapest image (255 tokens,
        one tile at high detail), or a budget of bytes too small for a 16-pixel long side.
        """
        from offprompt.tokens import image_tokens

        if image_tokens(self.width, self.height) <= max_tokens and len(self.value) <= max_bytes:
            return self
        if image_tokens(1, 1) > max_tokens:
            return None
        source = self.to_pil()
        # Start at the size the model gets anyway (fit in 2048x2048, shorter side 768):
        # more pixels cost bytes and buy nothing.
        scale = min(1.0, 2048 / max(self.width, self.height))
        scale *= min(1.0, 768 / (scale * min(self.width, self.height)))
        while scale * max(self.width, self.height) >= 16:
            size = (max(1, round(self.width * scale)), max(1, round(self.height * scale)))
            if image_tokens(*size) <= max_tokens:
                resized = source.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
                for format in ("png", "jpeg"):
                    image = resized if format == "png" else resized.convert("RGB")
                    buffer = io.BytesIO()
                    image.save(
                        buffer,
                        format=format.upper(),
                        **({"quality": 85} if format == "jpeg" else {}),
                    )
                    if buffer.tell() <= max_bytes:
                        return ImageArtifact(value=buffer.getvalue(), name=self.name)
            scale *= 0.8
        return None
