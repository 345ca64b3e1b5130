"""Images in conversation history are stored once per partition and come back whole."""

from __future__ import annotations

from pathlib import Path

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.conversation import ConversationMemory
from offprompt.messages import Message
from offprompt.scope import Scope
from offprompt.stores import BaseStore, SQLiteStore

from .conftest import png


def _shot(color: str = "red") -> ImageArtifact:
    return ImageArtifact(value=png(color), format="png", width=64, height=48)


def test_a_repeated_screenshot_is_stored_once(durable_store: BaseStore) -> None:
    shot = _shot()
    memory = ConversationMemory(durable_store, "s")
    for i in range(100):
        memory.add_messages(
            [Message.user([TextArtifact(value=f"step {i}"), _shot()]), Message.assistant("ok")]
        )
    assert durable_store.blob_count() == 1
    back = memory.messages()
    assert len(back) == 200
    assert back[0].images[0].value == shot.value and back[-2].images[0].value == shot.value
    assert back[0].images[0].width == 64 and back[0].images[0].format == "png"
    # Deleting messages frees the blob only when nothing references it any more.
    durable_store.delete_range("s", 0, 100)
    assert durable_store.blob_count() == 1
    durable_store.delete_session("s")
    assert durable_store.blob_count() == 0


def test_sqlite_file_holds_the_bytes_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    image = png(size=(256, 192))
    memory = ConversationMemory(store, "s")
    for i in range(100):
        shot = ImageArtifact(value=image, format="png", width=256, height=192)
        memory.add_messages([Message.user([TextArtifact(value=f"step {i}"), shot])])
    store.checkpoint()
    size = store.path.stat().st_size
    # 100 inline copies would be > 100x the image (base64: 133x); one copy plus rows.
    assert len(image) > 100_000
    assert size < 3 * len(image), (size, len(image))
    store.close()


def test_partitions_do_not_share_blobs(durable_store: BaseStore) -> None:
    for tenant in ("a", "b"):
        ConversationMemory(durable_store, "s", scope=Scope(tenant=tenant)).add_messages(
            [Message.user([_shot("green")])]
        )
    assert durable_store.blob_count(scope=Scope(tenant="a")) == 1
    assert durable_store.blob_count(scope=Scope(tenant="b")) == 1
    durable_store.delete_session("s", scope=Scope(tenant="a"))
    assert durable_store.blob_count(scope=Scope(tenant="a")) == 0
    (msg,) = durable_store.read("s", scope=Scope(tenant="b"))
    assert msg.message.images[0].value == png("green")


def test_blobs_and_text_parts_round_trip_byte_identical(store: BaseStore) -> None:
    from offprompt.artifacts import BlobArtifact

    message = Message.user(
        [
            TextArtifact(value="unicode ✓ Zürich"),
            _shot("blue"),
            BlobArtifact(value=b"\x00\x01pdf", mime_type="application/pdf"),
        ]
    )
    store.append("s", [message], [5])
    (back,) = store.read("s")
    assert back.message.to_dict() == message.to_dict()
