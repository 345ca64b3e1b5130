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
from mcp_testing import capabilities_of, connect, proxy_of, reference_server, wire
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
    block, link = proxied["content"]
    assert block["type"] == "text" and block["text"].startswith(
        REFERENCE_START.format(tool="read_text_file")
    )
    assert link["type"] == "resource_link" and link["uri"].startswith("offprompt://outputs/")
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
    image, link = proxied["content"]
    assert [image] == direct["content"]  # the image, unchanged; a link to the stored JSON
    assert link["uri"] == "offprompt://outputs/" + references(proxied)[0]["artifact_namespace"]
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
    # An image costs at most 765 tokens of pixels, below the default threshold (1,200):
    # the rule under test needs a threshold it can pass.
    direct, _, proxied, _ = await call_both(
        server,
        home,
        "read_media_file",
        {"path": str(files / "flat-1024.png")},
        "--min-tokens",
        "500",
    )
    assert len(direct["content"][0]["data"]) < 10_000  # small in bytes, large in pixels
    block, link = proxied["content"]
    assert block["type"] == "text" and "image/png, 1024x1024 pixels" in block["text"]
    assert link["type"] == "resource_link" and link.get("mimeType") is None
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
    blocks = [b for b in proxied["content"] if b["type"] != "resource_link"]
    assert len(proxied["content"]) - len(blocks) == len(references(proxied))  # a link each
    kept = blocks[at]
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


# --- the protocol around the tools: logging, subscriptions, capabilities (item 9) ---


async def test_the_proxy_claims_what_server_everything_claims_but_tasks(home: Path) -> None:
    server = reference_server("everything")
    listings: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for command in (server, proxy_of(home, server)):
        async with connect(command) as session:
            capabilities = capabilities_of(session)
            listed = {t.name: wire(t) for t in (await session.list_tools()).tools}
            listings.append((capabilities, listed))
    (direct_caps, direct_tools), (proxied_caps, proxied_tools) = listings
    required = {
        name
        for name, tool in direct_tools.items()
        if ((tool.get("execution") or {}).get("taskSupport")) == "required"
    }
    assert required == {"simulate-research-query"} and direct_caps.get("tasks")
    # Tasks left the spec: the proxy advertises none, so it lists no tool that needs them.
    assert proxied_caps.get("tasks") is None
    assert set(direct_tools) - set(proxied_tools) == required
    for name, tool in proxied_tools.items():
        assert ((tool.get("execution") or {}).get("taskSupport")) != "required", name
    assert proxied_caps["logging"] is not None
    assert proxied_caps["resources"]["subscribe"] is True
    assert proxied_caps["resources"]["listChanged"] is True
    assert proxied_caps["tools"]["listChanged"] is True
    assert proxied_caps["prompts"]["listChanged"] is True


async def test_set_level_and_the_upstreams_log_messages_pass_through(home: Path) -> None:
    import anyio

    logged: list[dict[str, Any]] = []
    arrived = anyio.Event()

    async def on_log(params: Any) -> None:
        logged.append(wire(params))
        arrived.set()

    server = reference_server("everything")
    async with connect(proxy_of(home, server), logging_callback=on_log) as session:
        await session.set_logging_level("debug")  # was "Method not found"
        await session.call_tool("toggle-simulated-logging", {})
        with anyio.fail_after(15):
            await arrived.wait()  # the server sends one at once, then one every 5 s
        await session.call_tool("toggle-simulated-logging", {})
    assert logged[0]["level"] in {
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    }
    assert "message" in str(logged[0]["data"])


async def test_a_subscription_passes_and_its_updates_reach_the_client(home: Path) -> None:
    import anyio

    updated: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(str(root.params.uri))
            arrived.set()

    server = reference_server("everything")
    async with connect(proxy_of(home, server), message_handler=on_message) as session:
        listed = await session.list_resources()
        uri = str(listed.resources[0].uri)
        await session.subscribe_resource(uri)
        await session.call_tool("toggle-subscriber-updates", {})
        with anyio.fail_after(15):
            await arrived.wait()
        await session.unsubscribe_resource(uri)
        await session.call_tool("toggle-subscriber-updates", {})
    assert updated[0] == uri


# --- stored outputs as MCP resources (item 7) ---


async def test_a_stored_output_is_a_resource_read_by_page_and_lines(
    home: Path, files: Path
) -> None:
    from mcp_testing import links_of

    server = reference_server("filesystem", str(files))
    lines = (files / "data.txt").read_text().splitlines()
    async with connect(proxy_of(home, server)) as session:
        result = await session.call_tool("read_text_file", {"path": str(files / "data.txt")})
        (uri,) = links_of(result)
        templates = [
            t["uriTemplate"]
            for t in wire(await session.list_resource_templates())["resourceTemplates"]
        ]
        assert "offprompt://outputs/{artifact_namespace}/lines/{first}-{last}" in templates

        first = wire(await session.read_resource(uri))["contents"]
        assert first[0]["uri"] == uri and first[0]["text"].startswith("Page 1 of ")
        assert lines[0] in first[0]["text"]
        second = wire(await session.read_resource(uri + "/pages/2"))["contents"][0]["text"]
        assert second.startswith("Page 2 of ")
        ranged = wire(await session.read_resource(uri + "/lines/10-12"))["contents"][0]["text"]
        assert all(line in ranged for line in lines[9:12])
        assert lines[8] not in ranged and lines[12] not in ranged

        for bad, said in (
            ("offprompt://outputs/never-stored", "Unknown artifact_namespace"),
            (uri + "/pages/99999", "page"),
            (uri + "/sideways", "not a stored output's URI"),
        ):
            with pytest.raises(Exception) as raised:
                await session.read_resource(bad)
            assert said in str(raised.value), (bad, raised.value)


async def test_a_stored_image_reads_back_as_an_image_bounded_to_the_budget(
    home: Path, files: Path
) -> None:
    from mcp_testing import links_of

    server = reference_server("filesystem", str(files))
    original = (files / "flat-1024.png").read_bytes()
    # 765 tokens of pixels, below the default threshold (1,200): stored at 500.
    async with connect(proxy_of(home, server, "--min-tokens", "500")) as session:
        result = await session.call_tool("read_media_file", {"path": str(files / "flat-1024.png")})
        (reference,) = references(wire(result))
        namespace = reference["artifact_namespace"]
        read = wire(await session.call_tool("read_memory", {"artifact_namespace": namespace}))
        image = next(b for b in read["content"] if b["type"] == "image")
        assert base64.b64decode(image["data"]) == original  # 765 tokens: fits, as stored
        (uri,) = links_of(result)
        (blob,) = wire(await session.read_resource(uri))["contents"]
        assert blob["mimeType"] == "image/png" and base64.b64decode(blob["blob"]) == original

    # A budget below the image's pixel cost: a smaller copy, and the model is told.
    async with connect(proxy_of(home, server, "--max-output-tokens", "300")) as session:
        read = wire(await session.call_tool("read_memory", {"artifact_namespace": namespace}))
    image = next(b for b in read["content"] if b["type"] == "image")
    import io

    from PIL import Image as PILImage

    from offprompt.tokens import image_tokens

    with PILImage.open(io.BytesIO(base64.b64decode(image["data"]))) as shown:
        width, height = shown.size
    assert width == height and image_tokens(width, height) <= 300 < image_tokens(1024, 1024)
    note = f"Shown scaled to {width}x{height}"
    assert any(note in (b.get("text") or "") for b in read["content"])
    (stored,) = stored_values(home, namespace)
    assert stored.value == original  # the stored image stays whole
