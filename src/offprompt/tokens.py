"""Token counting: the ``Tokenizer`` protocol and the tiktoken default.

tiktoken downloads its encodings on first use; offprompt needs none of that network.
It finds an encoding in this order: ``TIKTOKEN_CACHE_DIR`` if set (a user's own cache
wins, and an explicit directory without the encoding is an error, never skipped); else
the copy offprompt ships (``o200k_base``, the default, in ``offprompt/_tiktoken``); else
the copies llama-index-core ships when it is installed (``o200k_base`` and
``cl100k_base``); else tiktoken's own cache and download. tiktoken checks every file's
SHA-256. If none works the error says so: offprompt never falls back silently to a
different tokenizer, since counts would then disagree with the model's.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from offprompt.artifacts import ImageArtifact
from offprompt.errors import TokenizerError, ValidationError

if TYPE_CHECKING:
    import tiktoken

    from offprompt.messages import Message

__all__ = [
    "DEFAULT_ENCODING",
    "TiktokenTokenizer",
    "TokenCodec",
    "Tokenizer",
    "default_tokenizer",
    "image_tokens",
    "require_codec",
]

DEFAULT_ENCODING = "o200k_base"

#: Tokens OpenAI's chat format adds around every message (role and separators).
MESSAGE_OVERHEAD = 3
#: Extra tokens for a message that carries a ``name``.
NAME_OVERHEAD = 1

_env_lock = threading.Lock()


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens. Implementations must be deterministic and thread-safe."""

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens the message costs in a prompt, overhead included."""
        ...


@runtime_checkable
class TokenCodec(Tokenizer, Protocol):
    """A :class:`Tokenizer` that also encodes and decodes: what cutting text needs.

    Counting is enough for windows; chunking a stored output, paging it, cutting a tool's
    output to a budget and BM25 need the token ids themselves. ``decode(encode(t)) == t``
    for every ``t``. :class:`TiktokenTokenizer` is one.
    """

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""
        ...

    def decode(self, tokens: list[int]) -> str:
        """The text of ``tokens``."""
        ...


def require_codec(tokenizer: object, *, what: str = "tokenizer") -> TokenCodec:
    """``tokenizer`` if it is a :class:`TokenCodec`, else a clear ``ValidationError``.

    Example:
        >>> require_codec(default_tokenizer()).decode(default_tokenizer().encode("hi"))
        'hi'
    """
    if not isinstance(tokenizer, TokenCodec):
        missing = [
            m
            for m in ("count", "count_message", "encode", "decode")
            if not callable(getattr(tokenizer, m, None))
        ]
        raise ValidationError(
            f"{what} must have count, count_message, encode and decode (a TokenCodec); "
            f"{type(tokenizer).__name__} lacks {', '.join(missing)}"
        )
    return tokenizer


def image_tokens(width: int, height: int, detail: str = "high") -> int:
    """Tokens an image costs, by OpenAI's vision pricing.

    ``detail="low"``: a flat 85. Otherwise the image is scaled to fit in 2048x2048,
    then so that its shorter side is at most 768; it costs ``85 + 170 * tiles`` where
    ``tiles = ceil(w / 512) * ceil(h / 512)`` of the scaled size.
    """
    if detail == "low" or width <= 0 or height <= 0:
        return 85
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


#: The encodings offprompt ships, by name: tiktoken's cache key (the SHA-1 of the URL).
SHIPPED_ENCODINGS = {"o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790"}
_SHIPPED_DIR = Path(__file__).resolve().parent / "_tiktoken"


def _shipped_cache_dir(name: str) -> str | None:
    """offprompt's own copy of ``name``, when it ships one."""
    key = SHIPPED_ENCODINGS.get(name)
    if key is not None and (_SHIPPED_DIR / key).is_file():
        return str(_SHIPPED_DIR)
    return None


def _bundled_cache_dir() -> str | None:
    """llama-index-core's bundled tiktoken cache, found on sys.path without importing it."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "llama_index" / "core" / "_static" / "tiktoken_cache"
        if candidate.is_dir():
            return str(candidate)
    return None


def _cache_sources(name: str) -> list[str]:
    """The cache directories to try for ``name``, in the order of the module docs."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return [os.environ["TIKTOKEN_CACHE_DIR"]]
    return [d for d in (_shipped_cache_dir(name), _bundled_cache_dir()) if d]


@lru_cache(maxsize=8)
def load_encoding(name: str) -> tiktoken.Encoding:
    """Load a tiktoken encoding, offline when a cache is available (see module docs)."""
    import tiktoken

    errors: list[str] = []
    for cache_dir in _cache_sources(name):
        with _env_lock:
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
            try:
                return tiktoken.get_encoding(name)
            except Exception as exc:  # tiktoken raises many types (ValueError, OSError ...)
                errors.append(f"{cache_dir}: {type(exc).__name__}: {exc}")
            finally:
                if previous is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        raise TokenizerError(
            f"tiktoken encoding {name!r} not found in TIKTOKEN_CACHE_DIR: {'; '.join(errors)}",
            encoding=name,
        )
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:
        raise TokenizerError(
            f"cannot load tiktoken encoding {name!r}: {type(exc).__name__}: {exc}. Offline, set "
            "TIKTOKEN_CACHE_DIR to a directory holding the encoding (offprompt ships "
            "o200k_base, its default; llama-index-core also ships cl100k_base).",
            encoding=name,
        ) from None


class TiktokenTokenizer:
    """The default :class:`Tokenizer`: a tiktoken encoding plus OpenAI's message overhead.

    Special-token strings in text (``"<|endoftext|>"``) are counted as ordinary text,
    never refused: tool output is untrusted and may contain them.

    Args:
        encoding: A tiktoken encoding name; ``o200k_base`` (GPT-4o and later) by default.
        message_overhead: Tokens added per message.
        name_overhead: Tokens added for a message with a ``name``.

    Example:
        >>> TiktokenTokenizer().count("hello world")
        2
    """

    def __init__(
        self,
        encoding: str = DEFAULT_ENCODING,
        *,
        message_overhead: int = MESSAGE_OVERHEAD,
        name_overhead: int = NAME_OVERHEAD,
    ) -> None:
        self.encoding_name = encoding
        self.encoding = load_encoding(encoding)
        self.message_overhead = message_overhead
        self.name_overhead = name_overhead

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding_name!r})"

    def count(self, text: str) -> int:
        """Tokens in ``text`` (special tokens counted as plain text)."""
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        """Token ids (special-token text encoded as ordinary text)."""
        return self.encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        """The text of ``tokens``."""
        return self.encoding.decode(tokens)

    def count_message(self, message: Message) -> int:
        """Tokens of ``message`` as a chat model is sent it: its parts plus the per-message
        overhead.
        """
        total = self.message_overhead
        if message.name:
            total += self.name_overhead + self.count(message.name)
        for part in message.content:
            if isinstance(part, ImageArtifact):
                total += image_tokens(part.width, part.height, str(part.meta.get("detail", "high")))
            else:
                total += self.count(part.to_text())
        for call in message.tool_calls:
            total += self.count(call.name) + self.count(
                json.dumps(call.arguments, ensure_ascii=False)
            )
        return total


@lru_cache(maxsize=1)
def default_tokenizer() -> TiktokenTokenizer:
    """The shared default tokenizer (tiktoken ``o200k_base``)."""
    return TiktokenTokenizer()
