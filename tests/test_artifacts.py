from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from PIL import Image, ImageChops
from strategies import artifacts, images

from offprompt.artifacts import (
    ActionArtifact,
    BaseArtifact,
    BlobArtifact,
    BooleanArtifact,
    ErrorArtifact,
    GenericArtifact,
    ImageArtifact,
    InfoArtifact,
    JsonArtifact,
    ListArtifact,
    TextArtifact,
)
from offprompt.errors import (
    DeserializationError,
    OffpromptError,
    SerializationError,
    UnknownTypeError,
    ValidationError,
)
from offprompt.messages import ToolCall


@settings(max_examples=150, deadline=None)
@given(artifacts)
def test_every_artifact_round_trips_through_json(artifact: BaseArtifact) -> None:
    wire = json.dumps(artifact.to_dict())  # really JSON, not just a dict
    restored = BaseArtifact.from_dict(json.loads(wire))
    assert type(restored) is type(artifact)
    assert restored == artifact
    assert restored.to_text() == artifact.to_text()


@settings(max_examples=40, deadline=None)
@given(images())
def test_images_round_trip_pixel_identical(image: ImageArtifact) -> None:
    restored = BaseArtifact.from_json(image.to_json())
    assert isinstance(restored, ImageArtifact)
    before, after = image.to_pil(), restored.to_pil()
    assert before.size == after.size == (image.width, image.height)
    assert before.mode == after.mode
    assert ImageChops.difference(before.convert("RGBA"), after.convert("RGBA")).getbbox() is None


def test_name_defaults_to_id_and_can_be_set() -> None:
    art = TextArtifact("x")
    assert art.name == art.id and len(art.id) == 32
    assert TextArtifact("x", name="ns").name == "ns"


def test_text_truthiness_concatenation_and_tokens() -> None:
    assert not TextArtifact(" \n\t")
    assert TextArtifact(" a ")
    joined = TextArtifact("off") + TextArtifact("prompt")
    assert joined.value == "offprompt" and len(joined) == 9
    assert TextArtifact("hello world").token_count() == 2


def test_list_artifact_helpers() -> None:
    empty = ListArtifact([])
    assert empty.child_type is None and not empty.has_items() and not empty.is_type(TextArtifact)
    items = ListArtifact([TextArtifact("a"), TextArtifact("b")])
    assert items.child_type is TextArtifact and items.is_type(TextArtifact)
    assert items.to_text() == "a\n\nb" and len(items) == 2
    mixed = ListArtifact([TextArtifact("a"), InfoArtifact("b")])
    assert not mixed.is_type(TextArtifact)


def test_blob_is_base64_on_the_wire_and_describes_itself() -> None:
    blob = BlobArtifact(b"\x00\xff binary", mime_type="application/pdf")
    assert blob.to_dict()["value"] == blob.base64
    assert blob.to_bytes() == b"\x00\xff binary" and len(blob) == 9
    assert "application/pdf" in blob.to_text() and "9 bytes" in blob.to_text()
    assert BlobArtifact(b"caf\xc3\xa9", mime_type="text/plain").to_text() == "café"


def test_image_reads_its_header_and_never_dumps_bytes() -> None:
    image = ImageArtifact.from_pil(Image.new("RGB", (64, 48), "blue"))
    assert (image.format, image.width, image.height, image.mime_type) == (
        "png",
        64,
        48,
        "image/png",
    )
    assert image.to_data_url().startswith("data:image/png;base64,iVBOR")
    assert image.to_text() == f"Image (png, 64x48 pixels, {len(image.value)} bytes)"


def test_boolean_parsing() -> None:
    assert BooleanArtifact.parse_bool(" True ").value is True
    assert BooleanArtifact.parse_bool("no").value is False
    with pytest.raises(ValidationError, match="'maybe'"):
        BooleanArtifact.parse_bool("maybe")


def test_error_artifact_from_exception() -> None:
    err = ErrorArtifact.from_exception(KeyError("missing"))
    assert err.exception == "KeyError: 'missing'" and err.to_text() == "'missing'"


def test_action_artifact_text() -> None:
    action = ActionArtifact(ToolCall(id="1", name="search", arguments={"q": "ü"}))
    assert action.to_text() == 'search({"q": "ü"})'


def test_json_artifact_normalises() -> None:
    assert JsonArtifact((1, 2, {"a": (3,)})).value == [1, 2, {"a": [3]}]


@pytest.mark.parametrize(
    ("make", "error", "mentions"),
    [
        (
            lambda: BaseArtifact.from_dict({"type": "PickleArtifact", "value": "x"}),
            UnknownTypeError,
            "PickleArtifact",
        ),
        (lambda: BaseArtifact.from_dict({"value": "x"}), DeserializationError, "'type'"),
        (lambda: BaseArtifact.from_dict(["TextArtifact"]), DeserializationError, "list"),  # type: ignore[arg-type]
        (
            lambda: BaseArtifact.from_dict({"type": "TextArtifact", "value": 3}),
            DeserializationError,
            "TextArtifact.value",
        ),
        (
            lambda: BaseArtifact.from_dict({"type": "TextArtifact", "value": "x", "evil": 1}),
            DeserializationError,
            "evil",
        ),
        (lambda: BaseArtifact.from_json("{not json"), DeserializationError, "malformed JSON"),
        (
            lambda: TextArtifact.from_dict({"type": "BlobArtifact", "value": ""}),
            DeserializationError,
            "not a TextArtifact",
        ),
        (lambda: JsonArtifact({1, 2}), ValidationError, "set"),
        (lambda: JsonArtifact(float("nan")), ValidationError, "JSON"),
        (lambda: GenericArtifact(object()).to_dict(), SerializationError, "GenericArtifact.value"),
        (lambda: ImageArtifact(b"GIF89a but not really"), ValidationError, "not a readable image"),
        (lambda: BlobArtifact("not base64!"), ValidationError, "base64"),
        (lambda: TextArtifact("x", meta={"when": object()}), ValidationError, "meta"),
        (lambda: TextArtifact("x", value="y"), ValidationError, "twice"),
    ],
)
def test_bad_input_raises_named_offprompt_errors(make, error, mentions) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=mentions) as caught:
        make()
    assert isinstance(caught.value, OffpromptError)


def test_image_format_mismatch_is_refused() -> None:
    png = ImageArtifact.from_pil(Image.new("RGB", (2, 2)))
    with pytest.raises(ValidationError, match="'jpeg'"):
        ImageArtifact(png.value, format="jpeg")


def test_unicode_and_large_text_round_trip() -> None:
    text = "Ünïcødé 🚀 \u202e mixed " * 50_000  # ~1.2 MB
    art = TextArtifact(text)
    assert BaseArtifact.from_json(art.to_json()).value == text


def test_list_of_dicts_is_rebuilt_through_the_registry() -> None:
    restored = ListArtifact(value=[{"type": "InfoArtifact", "value": "i"}])
    assert isinstance(restored.value[0], InfoArtifact)


def test_list_artifact_iterates_over_its_artifacts() -> None:
    """Issue 15 item 6: iterating a ListArtifact gave pydantic's (field, value) pairs."""
    foo, bar = TextArtifact("foo"), BlobArtifact(b"bar")
    items = ListArtifact([foo, bar])
    assert list(items) == [foo, bar]
    assert [a.value for a in items] == ["foo", b"bar"]
    assert foo in items and TextArtifact("other") not in items
    assert list(reversed(items)) == [bar, foo]
    assert list(ListArtifact([])) == []


@pytest.mark.parametrize(
    "artifact",
    [
        TextArtifact("abc"),
        JsonArtifact({"a": 1}),
        BlobArtifact(b"xyz"),
        InfoArtifact("i"),
        ErrorArtifact("e"),
        BooleanArtifact(True),
        GenericArtifact({"k": "v"}),
    ],
    ids=lambda a: type(a).__name__,
)
def test_other_artifacts_refuse_iteration_instead_of_yielding_fields(
    artifact: BaseArtifact,
) -> None:
    with pytest.raises(TypeError, match=f"{type(artifact).__name__} is not iterable"):
        list(artifact)
    assert artifact.model_dump()["type"] == type(artifact).__name__  # fields stay reachable


def test_load_artifacts_iterates_like_a_sequence() -> None:
    from offprompt.task_memory import TaskMemory

    memory = TaskMemory()
    memory.process_output(
        "web", "get", ListArtifact([TextArtifact("one"), TextArtifact("two")], name="ns")
    )
    loaded = memory.load_artifacts("ns")
    assert [a.to_text() for a in loaded] == ["one", "two"]
    assert all(isinstance(a, TextArtifact) for a in memory.load_artifacts("ns"))
