"""Where an ``OffpromptSaver`` keeps things: the state keys of a thread's session.

Every key starts with :data:`PREFIX` (``langgraph/``); components are escaped so ``/``
always separates them::

    langgraph/cp/<ns>/<checkpoint id>       a checkpoint's row (see ``_checkpoint_rows``)
    langgraph/blob/<ns>/<channel>/<version>  a channel value too big for its row
    langgraph/writes/<ns>/<checkpoint id>   pending writes of a format 1 or 2 row
    langgraph/head/<ns>                     the latest checkpoint id of a namespace
"""

from __future__ import annotations

from typing import Any

PREFIX = "langgraph/"
_CP = PREFIX + "cp/"
_BLOB = PREFIX + "blob/"
_WRITES = PREFIX + "writes/"
_HEAD = PREFIX + "head/"


def _q(part: str) -> str:
    """Escape a key component so ``/`` always separates components."""
    return part.replace("%", "%25").replace("/", "%2F")


def _uq(part: str) -> str:
    return part.replace("%2F", "/").replace("%25", "%")


def _cp_key(ns: str, checkpoint_id: str) -> str:
    return f"{_CP}{_q(ns)}/{checkpoint_id}"


def _blob_key(ns: str, channel: str, version: Any) -> str:
    return f"{_BLOB}{_q(ns)}/{_q(channel)}/{_q(str(version))}"


def _writes_key(ns: str, checkpoint_id: str) -> str:
    return f"{_WRITES}{_q(ns)}/{checkpoint_id}"


def _head_key(ns: str) -> str:
    return f"{_HEAD}{_q(ns)}"
