"""ADK's own artifact-service tests, ported, run against ADK's service and ours.

Ported from google/adk-python ``tests/unittests/artifacts/test_artifact_service.py``
(Apache-2.0, Copyright 2025 Google LLC): each test keeps its upstream name; the GCS
and S3 mocks are left out. The ``artifact_service`` fixture yields ADK's
``InMemoryArtifactService`` (the self-check) and ``OffpromptArtifactService`` on a
SQLite file and on an ``InMemoryStore``. The tests after ``test_list_versions`` pin
the 2.x contract those services share (version metadata, ``user:`` scope, references,
rewind tombstones, ADK's input errors).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.artifacts import InMemoryArtifactService
from google.adk.artifacts.artifact_util import _new_rewind_tombstone, get_artifact_uri
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types
from offprompt_adk import OffpromptArtifactService

from offprompt.stores import InMemoryStore

BACKENDS = ["adk_in_memory", "offprompt_sqlite", "offprompt_in_memory_store"]


@pytest.fixture(params=BACKENDS)
async def artifact_service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "adk_in_memory":
        service: Any = InMemoryArtifactService()
    elif request.param == "offprompt_sqlite":
        service = OffpromptArtifactService(path=tmp_path / "memory.db")
    else:
        service = OffpromptArtifactService(store=InMemoryStore())
    yield service
    if isinstance(service, OffpromptArtifactService):
        service.close()


def _scheme(service: Any) -> str:
    """The URI scheme of a service's canonical_uri."""
    return "offprompt" if isinstance(service, OffpromptArtifactService) else "memory"


async def test_load_empty(artifact_service: Any) -> None:
    assert not await artifact_service.load_artifact(
        app_name="test_app", user_id="test_user", session_id="session_id", filename="filename"
    )


async def test_save_load_delete(artifact_service: Any) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    app_name, user_id, session_id, filename = "app0", "user0", "123", "file456"
    await artifact_service.save_artifact(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        filename=filename,
        artifact=artifact,
    )
    assert (
        await artifact_service.load_artifact(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
        )
        == artifact
    )
    await artifact_service.delete_artifact(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
    )
    assert not await artifact_service.load_artifact(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
    )


async def test_list_keys(artifact_service: Any) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    filenames = ["filename" + str(i) for i in range(5)]
    for f in filenames:
        await artifact_service.save_artifact(
            app_name="app0", user_id="user0", session_id="123", filename=f, artifact=artifact
        )
    assert (
        await artifact_service.list_artifact_keys(
            app_name="app0", user_id="user0", session_id="123"
        )
        == filenames
    )


async def test_list_versions(artifact_service: Any) -> None:
    versions = [
        types.Part.from_bytes(data=i.to_bytes(2, byteorder="big"), mime_type="text/plain")
        for i in range(3)
    ]
    for part in versions:
        await artifact_service.save_artifact(
            app_name="app0", user_id="user0", session_id="123", filename="filename", artifact=part
        )
    assert await artifact_service.list_versions(
        app_name="app0", user_id="user0", session_id="123", filename="filename"
    ) == list(range(3))
    for i, part in enumerate(versions):
        assert (
            await artifact_service.load_artifact(
                app_name="app0", user_id="user0", session_id="123", filename="filename", version=i
            )
            == part
        )


async def test_artifact_versions_carry_metadata(artifact_service: Any) -> None:
    common = {"app_name": "app0", "user_id": "user0", "session_id": "123", "filename": "f.png"}
    await artifact_service.save_artifact(
        artifact=types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"),
        custom_metadata={"source": "camera"},
        **common,
    )
    await artifact_service.save_artifact(artifact=types.Part.from_text(text="note"), **common)
    listed = await artifact_service.list_artifact_versions(**common)
    assert [(v.version, v.mime_type, v.custom_metadata) for v in listed] == [
        (0, "image/png", {"source": "camera"}),
        (1, "text/plain", {}),
    ]
    scheme = _scheme(artifact_service)
    assert listed[1].canonical_uri == (
        f"{scheme}://apps/app0/users/user0/sessions/123/artifacts/f.png/versions/1"
    )
    latest = await artifact_service.get_artifact_version(**common)
    assert latest == listed[1]
    assert await artifact_service.get_artifact_version(version=0, **common) == listed[0]
    assert await artifact_service.get_artifact_version(version=2, **common) is None
    assert await artifact_service.load_artifact(version=5, **common) is None


async def test_user_namespace_is_shared_by_sessions(artifact_service: Any) -> None:
    part = types.Part.from_text(text="profile")
    await artifact_service.save_artifact(
        app_name="app0", user_id="user0", session_id="s1", filename="user:profile", artifact=part
    )
    await artifact_service.save_artifact(
        app_name="app0", user_id="user0", session_id="s1", filename="own.txt", artifact=part
    )
    assert (
        await artifact_service.load_artifact(
            app_name="app0", user_id="user0", session_id="s2", filename="user:profile"
        )
        == part
    )
    assert await artifact_service.list_artifact_keys(
        app_name="app0", user_id="user0", session_id="s2"
    ) == ["user:profile"]
    assert await artifact_service.list_artifact_keys(
        app_name="app0", user_id="user0", session_id="s1"
    ) == ["own.txt", "user:profile"]
    assert await artifact_service.list_artifact_keys(app_name="app0", user_id="user0") == [
        "user:profile"
    ]
    assert (
        await artifact_service.list_artifact_keys(app_name="app0", user_id="other", session_id="s1")
        == []
    )
    versions = await artifact_service.list_artifact_versions(
        app_name="app0", user_id="user0", filename="user:profile"
    )
    assert versions[0].canonical_uri == (
        f"{_scheme(artifact_service)}://apps/app0/users/user0/artifacts/user:profile/versions/0"
    )


async def test_rewind_tombstone_loads_as_absent(artifact_service: Any) -> None:
    common = {"app_name": "app0", "user_id": "user0", "session_id": "123", "filename": "f"}
    first = types.Part.from_text(text="v0")
    await artifact_service.save_artifact(artifact=first, **common)
    assert await artifact_service.save_artifact(artifact=_new_rewind_tombstone(), **common) == 1
    assert await artifact_service.load_artifact(**common) is None
    assert await artifact_service.load_artifact(version=0, **common) == first
    assert await artifact_service.list_versions(**common) == [0, 1]


async def test_artifact_reference_is_followed(artifact_service: Any) -> None:
    target = types.Part.from_bytes(data=b"payload", mime_type="application/pdf")
    await artifact_service.save_artifact(
        app_name="app0", user_id="user0", session_id="123", filename="doc.pdf", artifact=target
    )
    uri = get_artifact_uri(
        app_name="app0", user_id="user0", session_id="123", filename="doc.pdf", version=0
    )
    reference = types.Part(file_data=types.FileData(file_uri=uri, mime_type="application/pdf"))
    await artifact_service.save_artifact(
        app_name="app0", user_id="user0", session_id="123", filename="link", artifact=reference
    )
    assert (
        await artifact_service.load_artifact(
            app_name="app0", user_id="user0", session_id="123", filename="link"
        )
        == target
    )


async def test_dict_artifact_is_normalized(artifact_service: Any) -> None:
    await artifact_service.save_artifact(
        app_name="app0",
        user_id="user0",
        session_id="123",
        filename="d",
        artifact={"inlineData": {"mimeType": "text/csv", "data": b"a,b"}},
    )
    loaded = await artifact_service.load_artifact(
        app_name="app0", user_id="user0", session_id="123", filename="d"
    )
    assert loaded == types.Part.from_bytes(data=b"a,b", mime_type="text/csv")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"session_id": None}, "Session ID must be provided for session-scoped artifacts."),
        ({"session_id": "user"}, "session_id must not be or start with the reserved value 'user'."),
        ({"user_id": "../x"}, "user_id '../x' must not contain traversal segments."),
        ({"app_name": ""}, "app_name must not be empty."),
        ({"artifact": types.Part()}, "Not supported artifact type."),
    ],
)
async def test_bad_input_raises_adk_error(
    artifact_service: Any, kwargs: dict[str, Any], message: str
) -> None:
    call: dict[str, Any] = {
        "app_name": "app0",
        "user_id": "user0",
        "session_id": "123",
        "filename": "f",
        "artifact": types.Part.from_text(text="x"),
    }
    call.update(kwargs)
    with pytest.raises(InputValidationError) as raised:
        await artifact_service.save_artifact(**call)
    assert str(raised.value) == message
    assert (
        await artifact_service.list_artifact_keys(
            app_name="app0", user_id="user0", session_id="123"
        )
        == []
    )
