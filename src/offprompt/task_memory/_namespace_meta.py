"""The namespace metadata ``TaskMemory`` commits to its catalog, and helpers over it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


def totals(meta: dict[str, Any]) -> None:
    meta["bytes"] = sum(int(e["bytes"]) for e in meta["artifacts"])
    meta["tokens"] = sum(int(e["tokens"]) for e in meta["artifacts"])
    meta["chunks"] = sum(int(e["chunks"]) for e in meta["artifacts"])


def written_at(meta: Mapping[str, Any]) -> float:
    """POSIX time of a namespace's last write (its ``updated_at`` / ``created_at``)."""
    stamp = meta.get("updated_at") or meta.get("created_at")
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return 0.0
