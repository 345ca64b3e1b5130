"""Private temporary directories of embedded Qdrant shards, and their cleanup after a crash.

An embedded index without ``path=`` (``TaskMemory()``, and every process but the first
on one ``TaskMemory(path=DIR)``) lives in ``$TMPDIR/offprompt-edge-XXXXXXXX/``, removed
on close. A process killed before it closes cannot remove it, so each directory holds
an owner lock (``.owner.lock``, an exclusive ``flock`` the process keeps while the
index is open; the kernel releases it when the process dies, however it dies). Every
new private directory first removes the ones whose owner lock is free: their process
is gone. The lock file is locked before it gets its name, so a directory is never seen
with an unlocked owner lock while its process lives. Where ``fcntl`` is missing
(Windows) directories are still removed on close, not swept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO

__all__ = ["PREFIX", "ScratchDir", "sweep_stale"]

PREFIX = "offprompt-edge-"
_OWNER = ".owner.lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def sweep_stale(root: str | None = None) -> list[str]:
    """Remove the private directories under ``root`` (the temp dir) whose process died.

    Returns the directories removed. A directory whose owner lock is held (its process
    is alive, this one included) or that has no owner lock yet is left alone.
    """
    if fcntl is None:
        return []
    removed: list[str] = []
    base = Path(root if root is not None else tempfile.gettempdir())
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for directory in candidates:
        try:
            handle = open(directory / _OWNER, "rb")  # noqa: SIM115 - closed below
        except OSError:
            continue  # no owner lock (being created, or not ours): leave it
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process is alive
            shutil.rmtree(directory, ignore_errors=True)
            if not directory.exists():
                removed.append(str(directory))
        finally:
            handle.close()
    return removed


class ScratchDir:
    """A private temporary directory, locked by this process until :meth:`remove`.

    Creating one first removes the directories of dead processes (:func:`sweep_stale`).
    """

    def __init__(self) -> None:
        sweep_stale()
        self.path = tempfile.mkdtemp(prefix=PREFIX)
        self._lock: IO[bytes] | None = None
        if fcntl is None:
            return
        try:
            staging = os.path.join(self.path, _OWNER + ".new")
            lock = open(staging, "wb")  # noqa: SIM115 - held until remove()
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            os.rename(staging, os.path.join(self.path, _OWNER))  # locked before it is named
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        self._lock = lock

    def remove(self) -> None:
        """Delete the directory, then release its owner lock. Calling it twice is harmless."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None
