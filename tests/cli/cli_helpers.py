"""Helpers for the CLI tests: files in each format written by the real frameworks."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from PIL import Image


def png(color: str = "red", size: tuple[int, int] = (24, 16)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def langchain_messages() -> list:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage("You are terse.", id="m0"),
        HumanMessage("Weather in Zürich? 🌦 <b>now</b>", id="m1"),
        AIMessage(
            "",
            id="m2",
            tool_calls=[{"id": "call_1", "name": "weather", "args": {"city": "Zürich", "days": 2}}],
        ),
        ToolMessage("rain, 12°C", tool_call_id="call_1", name="weather", id="m3"),
        AIMessage("Rainy, 12°C.", id="m4"),
    ]


def write_langchain(path: Path) -> list:
    from langchain_core.messages import messages_to_dict

    messages = langchain_messages()
    path.write_text(json.dumps(messages_to_dict(messages), ensure_ascii=False), encoding="utf-8")
    return messages


def write_chatstore(path: Path) -> None:
    """A SimpleChatStore file with two sessions, one with an image, from real ChatMessages.

    ``SimpleChatStore.persist()`` itself fails under pydantic 2.14 with llama-index-core
    0.14.25 (its ``WrapSerializer`` calls ``handler(value, info)``, which pydantic 2.14 reads
    as an index key), so the document ``persist()`` writes (``model_dump_json()`` of the
    store: ``{"store": {key: [ChatMessage dump]}, "class_name": "SimpleChatStore"}``) is
    composed from the real messages' own dumps; ``from_persist_path`` must load it back.
    """
    from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock
    from llama_index.core.storage.chat_store import SimpleChatStore

    sessions = {}
    sessions["alice"] = [
        ChatMessage(role="user", content="Hi, I am Alice."),
        ChatMessage(role="assistant", content="Hello Alice!"),
    ]
    sessions["bob"] = [
        ChatMessage(
            role="user", blocks=[TextBlock(text="What is this?"), ImageBlock(image=png("blue"))]
        ),
        ChatMessage(role="assistant", content="A blue rectangle."),
        ChatMessage(role="user", content="Thanks"),
        ChatMessage(role="assistant", content="You're welcome."),
    ]
    document = {
        "store": {
            key: [m.model_dump(mode="json") for m in messages] for key, messages in sessions.items()
        },
        "class_name": "SimpleChatStore",
    }
    path.write_text(
        json.dumps(document, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
    )
    loaded = SimpleChatStore.from_persist_path(str(path))
    assert loaded.get_messages("bob")[0].blocks[1].image is not None


def write_griptape(path: Path) -> None:
    import griptape.artifacts as gt
    from griptape.memory.structure import ConversationMemory, Run

    memory = ConversationMemory(autoload=False)
    memory.add_run(Run(input=gt.TextArtifact("Name a colour."), output=gt.TextArtifact("Teal.")))
    memory.add_run(Run(input=gt.TextArtifact("Another?"), output=gt.TextArtifact("Ochre.")))
    path.write_text(memory.to_json(), encoding="utf-8")


def one_error_line(process: subprocess.CompletedProcess[str]) -> str:
    """The stderr of a failed command, checked to be one ``offprompt: error:`` line."""
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("offprompt: error: "), process.stderr
    assert "Traceback" not in process.stderr
    return lines[0]
