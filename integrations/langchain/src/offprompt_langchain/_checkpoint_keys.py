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
CP_PREFIX = PREFIX + "cp/"
BLOB_PREFIX = PREFIX + "blob/"
WRITES_PREFIX = PREFIX + "writes/"
_HEAD = PREFIX + "head/"


def quote_part(part: str) -> str:
    """Escape a key component so ``/`` always separates components."""
    return part.replace("%", "%25").replace("/", "%2F")


def unquote_part(part: str) -> str:
    return part.replace("%2F", "/").replace("%25", "%")


def cp_key(ns: str, checkpoint_id: str) -> str:
    return f"{CP_PREFIX}{quote_part(ns)}/{checkpoint_id}"


def blob_key(ns: str, channel: str, version: Any) -> str:
    return f"{BLOB_PREFIX}{quote_part(ns)}/{quote_part(channel)}/{quote_part(str(version))}"


def writes_key(ns: str, checkpoint_id: str) -> str:
    return f"{WRITES_PREFIX}{quote_part(ns)}/{checkpoint_id}"


def head_key(ns: str) -> str:
    return f"{_HEAD}{quote_part(ns)}"
