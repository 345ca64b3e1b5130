"""``OffpromptArtifactService``: ADK's ``BaseArtifactService`` on an offprompt store.

Every saved version is one JSON state document (the ``types.Part`` as ADK serialises
it, bytes included, and its ``ArtifactVersion``), in the partition of the app and user
(see :mod:`offprompt_adk._layout`); a session's artifacts are the state of a store
session of that id, the ``user:`` artifacts that of a separate partition. Versions
count from 0 and are never rewritten: a session rewind's tombstone is one more
version, which loads as absent, as in every ADK service. Input is checked by ADK's own
rules (``InputValidationError``, same text), so code written against
``InMemoryArtifactService`` behaves the same here.

``canonical_uri`` is
``offprompt://apps/{app}/users/{user}[/sessions/{session}]/artifacts/{filename}/versions/{n}``.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, cast

from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import (
    ArtifactVersion,
    BaseArtifactService,
    ensure_part,
)
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from offprompt.scope import Scope
from offprompt.stores import BaseStore
from offprompt_adk._layout import StoreHolder, user_scope

__all__ = ["OffpromptArtifactService", "canonical_uri"]

_SESSION_RUN = "adk-artifacts"
_USER_RUN = "adk-user-artifacts"
_USER_SESSION = "user"


def canonical_uri(
    app_name: str, user_id: str, filename: str, version: int, session_id: str | None = None
) -> str:
    """The ``offprompt://`` URI of one artifact version."""
    where = f"offprompt://apps/{app_name}/users/{user_id}"
    if session_id is not None:
        where += f"/sessions/{session_id}"
    return f"{where}/artifacts/{filename}/versions/{version}"


def _is_user(filename: str) -> bool:
    return filename.startswith("user:")


def _head_key(filename: str) -> str:
    return json.dumps([filename])


def _version_key(filename: str, version: int) -> str:
    return json.dumps([filename, version])


def _mime_type(
    artifact: types.Part, app_name: str, user_id: str, session_id: str | None
) -> str | None:
    if artifact.inline_data is not None:
        return artifact.inline_data.mime_type
    if artifact.text is not None:
        return "text/plain"
    file_data = artifact.file_data
    if file_data is None:
        raise InputValidationError("Not supported artifact type.")
    if not artifact_util.is_artifact_ref(artifact):
        return file_data.mime_type
    parsed = artifact_util.parse_artifact_uri(cast(str, file_data.file_uri))
    if not parsed:
        raise InputValidationError(f"Invalid artifact reference URI: {file_data.file_uri}")
    artifact_util.validate_artifact_reference_scope(
        app_name=app_name, user_id=user_id, session_id=session_id, parsed_uri=parsed
    )
    return None  # known once the reference is loaded


class OffpromptArtifactService(BaseArtifactService):
    """Versioned ADK artifacts in an offprompt store: a SQLite file, or any store.

    Pass it as ``Runner(artifact_service=...)``; I/O runs in worker threads.

    Args:
        path: A SQLite file (shared per file in this process); with neither ``path``
            nor ``store``, the default file.
        store: Any offprompt store; it stays the caller's to close.

    Raises:
        ValidationError: Both ``path`` and ``store``, or a bad one.

    Example:
        >>> import asyncio
        >>> from google.genai import types
        >>> from offprompt.stores import InMemoryStore
        >>> service = OffpromptArtifactService(store=InMemoryStore())
        >>> part = types.Part.from_text(text="hello")
        >>> asyncio.run(service.save_artifact(app_name="a", user_id="u", session_id="s", filename="f.txt", artifact=part))
        0
        >>> asyncio.run(service.load_artifact(app_name="a", user_id="u", session_id="s", filename="f.txt")) == part
        True
    """

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, store: BaseStore | None = None
    ) -> None:
        self._holder = StoreHolder(path=path, store=store)

    @property
    def store(self) -> BaseStore:
        """The offprompt store the artifacts live in."""
        return self._holder.store

    def close(self) -> None:
        """Release the store if this service opened it (``path=``); idempotent."""
        self._holder.close()

    # -- where ----------------------------------------------------------------------------

    def _where(
        self, app_name: str, user_id: str, filename: str, session_id: str | None
    ) -> tuple[str, Scope]:
        """The store session and partition of ``filename`` (ADK's checks first)."""
        artifact_util.validate_path_segment(app_name, "app_name")
        artifact_util.validate_path_segment(user_id, "user_id")
        if _is_user(filename):
            return _USER_SESSION, user_scope(app_name, user_id, _USER_RUN)
        if session_id is None:
            raise InputValidationError("Session ID must be provided for session-scoped artifacts.")
        artifact_util.validate_path_segment(session_id, "session_id")
        return session_id, user_scope(app_name, user_id, _SESSION_RUN)

    def _entries(self, where: tuple[str, Scope], filename: str) -> list[dict[str, Any]]:
        session, scope = where
        head = self.store.get_state(session, _head_key(filename), scope=scope)
        count = int(head["versions"]) if isinstance(head, dict) else 0
        found = []
        for version in range(count):
            entry = self.store.get_state(session, _version_key(filename, version), scope=scope)
            if isinstance(entry, dict):
                found.append(entry)
        return found

    def _entry(
        self, where: tuple[str, Scope], filename: str, version: int | None
    ) -> dict[str, Any] | None:
        session, scope = where
        head = self.store.get_state(session, _head_key(filename), scope=scope)
        count = int(head["versions"]) if isinstance(head, dict) else 0
        if version is None:
            version = count - 1
        if not 0 <= version < count:
            return None
        entry = self.store.get_state(session, _version_key(filename, version), scope=scope)
        return entry if isinstance(entry, dict) else None

    # -- the service ----------------------------------------------------------------------

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save ``artifact`` as the next version of ``filename``; return that version.

        Raises:
            InputValidationError: ADK's checks (a session-scoped file without a session,
                a bad id, an unsupported part, a reference out of scope).
        """
        if not _is_user(filename):
            if session_id is None:
                raise InputValidationError(
                    "Session ID must be provided for session-scoped artifacts."
                )
            # private-ok: ADK's own check, so its error is ADK's
            artifact_util._validate_session_id_for_flat_storage(session_id)
        part = ensure_part(artifact)
        where = self._where(app_name, user_id, filename, session_id)
        mime_type = _mime_type(part, app_name, user_id, session_id)
        data = part.model_dump_json(exclude_none=True)
        scoped = None if _is_user(filename) else session_id
        meta = copy.deepcopy(custom_metadata) if custom_metadata else {}

        def work() -> int:
            session, scope = where
            head = self.store.get_state(session, _head_key(filename), scope=scope)
            version = int(head["versions"]) if isinstance(head, dict) else 0
            record = ArtifactVersion(
                version=version,
                canonical_uri=canonical_uri(app_name, user_id, filename, version, scoped),
                custom_metadata=meta,
                mime_type=mime_type,
            )
            entry = {"part": data, "version": record.model_dump(mode="json")}
            self.store.set_state(session, _version_key(filename, version), entry, scope=scope)
            self.store.set_state(
                session, _head_key(filename), {"versions": version + 1}, scope=scope
            )
            return version

        return await self._holder.run(work)

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        """The version (the latest by default), or ``None``; references are followed."""
        # private-ok: ADK's own reference depth limit
        return await self._load(
            app_name,
            user_id,
            filename,
            session_id,
            version=version,
            depth=artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH,
        )

    async def _load(
        self,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None,
        *,
        version: int | None,
        depth: int,
    ) -> types.Part | None:
        where = self._where(app_name, user_id, filename, session_id)
        entry = await self._holder.run(lambda: self._entry(where, filename, version))
        if entry is None:
            return None
        part = types.Part.model_validate_json(entry["part"])
        if artifact_util.is_artifact_ref(part):
            file_data = part.file_data
            assert file_data is not None
            parsed = artifact_util.resolve_artifact_reference(
                file_uri=cast(str, file_data.file_uri),
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                remaining_depth=depth,
            )
            return await self._load(
                parsed.app_name,
                parsed.user_id,
                parsed.filename,
                parsed.session_id,
                version=parsed.version,
                depth=depth - 1,
            )
        # private-ok: ADK's own tombstone test, so a rewind loads as in ADK
        if part == types.Part() or artifact_util._is_rewind_tombstone(part):
            return None
        return part

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        """The session's and the user's artifact filenames, sorted."""
        artifact_util.validate_path_segment(app_name, "app_name")
        artifact_util.validate_path_segment(user_id, "user_id")
        if session_id is not None:
            artifact_util.validate_path_segment(session_id, "session_id")

        def names(session: str, scope: Scope) -> list[str]:
            keys = self.store.state_keys(session, "[", scope=scope)
            return [parsed[0] for parsed in map(json.loads, keys) if len(parsed) == 1]

        def work() -> list[str]:
            found = names(_USER_SESSION, user_scope(app_name, user_id, _USER_RUN))
            if session_id:
                found += names(session_id, user_scope(app_name, user_id, _SESSION_RUN))
            return sorted(found)

        return await self._holder.run(work)

    async def delete_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> None:
        """Delete every version of ``filename`` (no error if there is none)."""
        where = self._where(app_name, user_id, filename, session_id)

        def work() -> None:
            session, scope = where
            count = len(self._entries(where, filename))
            for version in range(count):
                self.store.delete_state(session, _version_key(filename, version), scope=scope)
            self.store.delete_state(session, _head_key(filename), scope=scope)

        await self._holder.run(work)

    async def list_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[int]:
        """Every version number of ``filename``, oldest first."""
        found = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        return [record.version for record in found]

    async def list_artifact_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[ArtifactVersion]:
        """Every version's metadata, oldest first."""
        where = self._where(app_name, user_id, filename, session_id)
        entries = await self._holder.run(lambda: self._entries(where, filename))
        return [ArtifactVersion.model_validate(entry["version"]) for entry in entries]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        """One version's metadata (the latest by default), or ``None``."""
        where = self._where(app_name, user_id, filename, session_id)
        entry = await self._holder.run(lambda: self._entry(where, filename, version))
        return None if entry is None else ArtifactVersion.model_validate(entry["version"])
