from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PIL import Image

from offprompt.artifacts import ImageArtifact
from offprompt.errors import TokenizerError
from offprompt.messages import Message, ToolCall
from offprompt.tokens import (
    TiktokenTokenizer,
    Tokenizer,
    default_tokenizer,
    image_tokens,
    load_encoding,
)


def test_default_is_o200k_and_satisfies_the_protocol() -> None:
    tok = default_tokenizer()
    assert isinstance(tok, Tokenizer)
    assert tok.encoding_name == "o200k_base"
    assert tok.count("") == 0
    assert tok.count("hello world") == 2


def test_special_token_text_is_counted_not_refused() -> None:
    assert default_tokenizer().count("<|endoftext|>") > 1


def test_message_overhead_name_tool_calls() -> None:
    tok = default_tokenizer()
    plain = Message.user("hello world")
    assert tok.count_message(plain) == 2 + 3
    named = Message.user("hello world", name="bob")
    assert tok.count_message(named) == 2 + 3 + 1 + tok.count("bob")
    call = Message.assistant(tool_calls=[ToolCall(id="1", name="search", arguments={"q": "x"})])
    assert tok.count_message(call) == 3 + tok.count("search") + tok.count('{"q": "x"}')


@pytest.mark.parametrize(
    ("size", "detail", "expected"),
    [
        ((512, 512), "high", 85 + 170 * 1),  # fits one tile
        ((1024, 1024), "high", 85 + 170 * 4),  # scaled to 768x768 -> 2x2 tiles
        ((2048, 4096), "high", 85 + 170 * 6),  # 1024x2048 -> 768x1536 -> 2x3 tiles
        ((4000, 3000), "low", 85),
    ],
)
def test_image_tokens_follow_openai_vision_pricing(size, detail, expected) -> None:  # type: ignore[no-untyped-def]
    assert image_tokens(*size, detail=detail) == expected


def test_image_in_message_counted_by_dimensions() -> None:
    image = ImageArtifact.from_pil(Image.new("RGB", (1024, 1024)))
    assert default_tokenizer().count_message(Message.user([image])) == 3 + 85 + 170 * 4
    low = ImageArtifact.from_pil(Image.new("RGB", (1024, 1024)), meta={"detail": "low"})
    assert default_tokenizer().count_message(Message.user([low])) == 3 + 85


def test_cl100k_also_available_offline() -> None:
    assert TiktokenTokenizer("cl100k_base").count("hello world") == 2


OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}


def test_missing_encoding_in_cache_dir_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An explicit cache dir without the encoding fails loudly, no silent fallback."""
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path), **OFFLINE)
    code = (
        "from offprompt.tokens import load_encoding\n"
        "from offprompt.errors import TokenizerError\n"
        "try:\n    load_encoding('o200k_base')\nexcept TokenizerError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.stdout.startswith("ERR"), out.stdout + out.stderr
    assert "TIKTOKEN_CACHE_DIR" in out.stdout and "o200k_base" in out.stdout


def test_unknown_encoding_is_a_clear_error() -> None:
    with pytest.raises(TokenizerError, match="no_such_encoding"):
        load_encoding("no_such_encoding")


def test_offline_lookup_works_in_a_fresh_process_without_network() -> None:
    """A new interpreter with no cache env var finds llama-index-core's bundled copy."""
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env.update(OFFLINE)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from offprompt.tokens import default_tokenizer as d; print(d().count('hi there'))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "2"


def test_the_default_encoding_ships_with_offprompt_and_loads_with_an_empty_environment() -> None:
    """First use needs no network and no variable: an MCP client starts servers this way.

    The subprocess has an empty environment, proxies that lead nowhere, and
    llama-index-core's copy hidden, so only offprompt's own ``_tiktoken`` can serve.
    """
    code = (
        "import offprompt.tokens as t\n"
        "t._bundled_cache_dir = lambda: None\n"
        "sources = t._cache_sources('o200k_base')\n"
        "assert len(sources) == 1 and sources[0].endswith('_tiktoken'), sources\n"
        "print(t.default_tokenizer().count('hi there'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(OFFLINE),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_a_user_cache_dir_is_still_preferred_to_the_shipped_copy(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # private-ok: the tokenizer cache's lookup order is the subject
    from offprompt.tokens import _cache_sources

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert _cache_sources("o200k_base") == [str(tmp_path)]
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert _cache_sources("o200k_base")[0].endswith("_tiktoken")
    # cl100k_base is not shipped by offprompt: only llama-index-core's copy, when present.
    assert not any(s.endswith("_tiktoken") for s in _cache_sources("cl100k_base"))
