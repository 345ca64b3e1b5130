"""The proxy in front of MCP reference servers no one here wrote (npm's
``server-filesystem`` and ``server-everything``, installed by ``make test``), driven by
the SDK's client, which validates ``structuredContent`` against the listed schema.

One rule on every path to the model: a stored result reaches the client as its
reference in ``content`` and in ``structuredContent``; what is small passes untouched.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from mcp_testing import connect, proxy_of, reference_server, wire
from PIL import Image

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.mcp.proxy import REFERENCE_SCHEMA, schema_with_reference
from offprompt.task_memory import TaskMemory

REFERENCE_START = (
    'Output of "{tool}.call" was stored in memory with memory_name "TaskMemory" and '
    'artifact_namespace "'
)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "data.txt").write_text(
        "\n".join(f"line {i} " + "x" * 60 for i in range(3000)), encoding="utf-8"
    )
    noise = np.random.default_rng(0).integers(0, 255, (300, 400, 3), dtype=np.uint8)
    Image.fromarray(noise).save(root / "noise-400x300.png")  # 360 KB, 255 tokens of pixels
    Image.new("RGB", (20, 20), "red").save(root / "icon.png")
    Image.new("RGB", (1024, 1024), "blue").save(root / "flat-1024.png")  # 765 tokens, 3 KB
    return root


def references(result: dict[str, Any]) -> list[dict[str, Any]]:
    return list((result.get("_meta") or {}).get("offprompt/references", []))


def stored_values(home: Path, namespace: str) -> list[Any]:
    with TaskMemory(path=home / "qdrant") as memory:
        return list(memory.load_artifacts(namespace).value)


def stored_text(home: Path, namespace: str) -> str:
    return "".join(a.value for a in stored_values(home, namespace) if isinstance(a, TextArtifact))


async def call_both(
    upstream: list[str], home: Path, tool: str, arguments: dict[str, Any], *options: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The tool's wire result and listing, from the server alone and through the proxy."""
    out: list[dict[str, Any]] = []
    for command in (upstream, proxy_of(home, upstream, *options)):
        async with connect(command) as session:
            listed = {t.name: wire(t) for t in (await session.list_tools()).tools}
            out += [wire(await session.call_tool(tool, arguments)), listed[tool]]
    direct, direct_tool, proxied, proxied_tool = out
    return direct, direct_tool, proxied, proxied_tool


async def test_a_large_text_file_is_one_reference_in_content_and_in_structured_content(
    home: Path, files: Path
) -> None:
    server = reference_server("filesystem", str(files))
    direct, _, proxied, _ = await call_both(
        server, home, "read_text_file", {"path": str(files / "data.txt")}
    )
    assert len(json.dumps(direct)) > 400_000  # the server sends the file twice
    (block,) = proxied["content"]
    assert block["type"] == "text" and block["text"].startswith(
        REFERENCE_START.format(tool="read_text_file")
    )
    # The server repeats the text as {"content": text}: the same reference replaces it.
    assert proxied["structuredContent"] == {"content": block["text"]}
    assert len(json.dumps(proxied)) < 4_000
    (reference,) = references(proxied)
    assert stored_text(home, reference["artifact_namespace"]) == (files / "data.txt").read_text()


async def test_an_image_cheap_in_pixels_passes_and_its_base64_in_structured_content_is_stored(
    home: Path, files: Path
) -> None:
    """server-filesystem's read_media_file repeats the whole base64 in structuredContent:
    the image itself costs the model 255 tokens and passes, the 480 KB of JSON do not."""
    server = reference_server("filesystem", str(files))
    path = files / "noise-400x300.png"
    direct, direct_tool, proxied, proxied_tool = await call_both(
        server, home, "read_media_file", {"path": str(path)}
    )
    assert proxied["content"] == direct["content"]  # the image, unchanged
    assert direct["content"][0]["data"] == base64.b64encode(path.read_bytes()).decode()
    structured = proxied["structuredContent"]
    assert structured["offprompt"] == "stored" and structured["kind"] == "json"
    assert structured["reference"].startswith(REFERENCE_START.format(tool="read_media_file"))
    assert len(json.dumps(structured)) < 3_000 < len(json.dumps(direct["structuredContent"]))
    # The SDK's client validated it against the listed schema, which admits both.
    assert proxied_tool["outputSchema"] == schema_with_reference(direct_tool["outputSchema"])
    jsonschema.validate(direct["structuredContent"], proxied_tool["outputSchema"])
    (reference,) = references(proxied)
    assert reference["artifact_namespace"] == structured["artifact_namespace"]
    stored = json.loads(stored_text(home, reference["artifact_namespace"]))
    assert stored == direct["structuredContent"]  # every byte of it, as JSON


async def test_an_icon_passes_byte_for_byte(home: Path, files: Path) -> None:
    server = reference_server("filesystem", str(files))
    direct, _, proxied, _ = await call_both(
        server, home, "read_media_file", {"path": str(files / "icon.png")}
    )
    assert proxied == direct and not references(proxied)
    everything = reference_server("everything", "stdio")
    direct, _, proxied, _ = await call_both(everything, home, "get-tiny-image", {})
    assert proxied == direct and not references(proxied)


async def test_an_image_costly_in_pixels_is_stored_once_and_structured_content_points_at_it(
    home: Path, files: Path
) -> None:
    server = reference_server("filesystem", str(files))
    direct, _, proxied, _ = await call_both(
        server, home, "read_media_file", {"path": str(files / "flat-1024.png")}
    )
    assert len(direct["content"][0]["data"]) < 10_000  # small in bytes, large in pixels
    (block,) = proxied["content"]
    assert block["type"] == "text" and "image/png, 1024x1024 pixels" in block["text"]
    assert proxied["structuredContent"] == {
        "content": [{"type": "image", "data": block["text"], "mimeType": "image/png"}]
    }
    (reference,) = references(proxied)
    (image,) = stored_values(home, reference["artifact_namespace"])
    assert isinstance(image, ImageArtifact) and (image.width, image.height) == (1024, 1024)
    assert image.value == (files / "flat-1024.png").read_bytes()


async def test_a_replaced_block_keeps_its_annotations_and_an_embedded_resource_its_uri(
    home: Path,
) -> None:
    everything = reference_server("everything", "stdio")
    direct, _, proxied, _ = await call_both(
        everything,
        home,
        "get-annotated-message",
        {"messageType": "success", "includeImage": True},
        "--min-tokens",
        "100",
    )
    image = next(b for b in direct["content"] if b["type"] == "image")
    assert image["annotations"]  # the server annotates its image
    assert proxied["content"][0] == direct["content"][0]  # the short text passes
    replaced = proxied["content"][1]
    assert replaced["type"] == "text" and replaced["text"].startswith(
        REFERENCE_START.format(tool="get-annotated-message")
    )
    assert replaced["annotations"] == image["annotations"]

    direct, _, proxied, _ = await call_both(
        everything,
        home,
        "get-resource-reference",
        {"resourceType": "Blob", "resourceId": 2},
        "--sensitive",
        "get-resource-reference",
    )
    at = next(i for i, b in enumerate(direct["content"]) if b["type"] == "resource")
    assert direct["content"][at]["resource"]["uri"] == "demo://resource/dynamic/blob/2"
    kept = proxied["content"][at]
    assert kept["type"] == "text" and set(kept) <= {"type", "text", "annotations", "_meta"}
    assert kept["text"].startswith(REFERENCE_START.format(tool="get-resource-reference"))
    assert kept["text"].endswith("It came as the embedded resource demo://resource/dynamic/blob/2.")
    assert len(references(proxied)) == 3  # a sensitive tool: every block stored


def test_the_advertised_schema_admits_the_original_and_the_reference_and_nothing_else() -> None:
    original = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"Row": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}}},
        "required": ["rows"],
    }
    schema = schema_with_reference(original)
    assert schema["type"] == "object" and "$defs" in schema  # $ref pointers still resolve
    jsonschema.validate({"rows": [{"id": 1}]}, schema)
    jsonschema.validate(
        {"offprompt": "stored", "artifact_namespace": "t-1", "reference": "Output of ..."},
        schema,
    )
    for bad in ({"rows": [{"id": "one"}]}, {"offprompt": "stored"}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert REFERENCE_SCHEMA["required"] == ["offprompt", "artifact_namespace", "reference"]
