"""Hypothesis strategies for artifacts and messages, shared by the property tests."""

from __future__ import annotations

import io
from datetime import timezone
from typing import Any

from hypothesis import strategies as st
from PIL import Image

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
from offprompt.messages import Message, ToolCall

texts = st.text(max_size=200)  # any unicode, including surrogates-free astral chars
names = st.text(min_size=1, max_size=30)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)


@st.composite
def images(draw: Any) -> ImageArtifact:
    width = draw(st.integers(1, 12))
    height = draw(st.integers(1, 12))
    mode = draw(st.sampled_from(["RGB", "RGBA", "L"]))
    pixels = draw(
        st.binary(min_size=width * height * len(mode), max_size=width * height * len(mode))
    )
    image = Image.frombytes(mode, (width, height), pixels)
    fmt = draw(st.sampled_from(["png", "webp", "gif"])) if mode != "RGBA" else "png"
    if fmt != "png":
        image = image.convert("RGB")
        buffer = io.BytesIO()
        image.save(buffer, format=fmt.upper(), lossless=True) if fmt == "webp" else image.save(
            buffer, format="GIF"
        )
        return ImageArtifact(buffer.getvalue(), meta=draw(json_objects))
    return ImageArtifact.from_pil(image, meta=draw(json_objects))


tool_calls = st.builds(ToolCall, id=names, name=names, arguments=json_objects)

common = {"meta": json_objects, "reference": st.none() | texts}
scalar_artifacts: st.SearchStrategy[BaseArtifact] = st.one_of(
    st.builds(TextArtifact, texts, **common),
    st.builds(JsonArtifact, json_values, **common),
    st.builds(
        BlobArtifact,
        st.binary(max_size=300),
        mime_type=st.sampled_from(["application/pdf", "text/plain"]),
        **common,
    ),
    images(),
    st.builds(ActionArtifact, tool_calls, **common),
    st.builds(ErrorArtifact, texts, exception=st.none() | texts, **common),
    st.builds(InfoArtifact, texts, **common),
    st.builds(BooleanArtifact, st.booleans(), **common),
    st.builds(GenericArtifact, json_values, **common),
)
artifacts = st.one_of(
    scalar_artifacts,
    st.builds(ListArtifact, st.lists(scalar_artifacts, max_size=4), **common),
)

messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=st.lists(st.one_of(st.builds(TextArtifact, texts), images()), max_size=3),
    tool_calls=st.lists(tool_calls, max_size=2),
    tool_call_id=st.none() | names,
    name=st.none() | names,
    meta=json_objects,
    created_at=st.datetimes(timezones=st.just(timezone.utc)),
)
