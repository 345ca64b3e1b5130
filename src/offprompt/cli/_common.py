"""What every command shares: the home directory, errors, consoles, atomic writes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from offprompt.errors import CLIError, NotFoundError, OffpromptError, UsageError
from offprompt.stores.sqlite import SQLiteStore
from offprompt.task_memory import TaskMemory

__all__ = [
    "CLIError",
    "Context",
    "UsageError",
    "atomic_write",
    "check_input",
    "check_output",
    "read_input",
]


@dataclass
class Context:
    """Where a command finds its data and where it prints.

    Attributes:
        home: The offprompt home directory (``--home``, ``$OFFPROMPT_HOME`` or
            ``./.offprompt``).
        out: Console for results (stdout).
        err: Console for progress and warnings (stderr).
        store_url: ``--store``: a ``postgresql://`` URL; conversations are then on that
            server (a :class:`~offprompt.stores.PostgresStore`) instead of
            ``HOME/memory.db``. Task memory stays in the home.
    """

    home: Path
    out: Console
    err: Console
    store_url: str | None = None

    @property
    def store_path(self) -> Path:
        return self.home / "memory.db"

    @property
    def task_memory_path(self) -> Path:
        return self.home / "qdrant"

    @property
    def store_label(self) -> str:
        """Where conversations are, for messages: the path, or the URL without password."""
        if self.store_url is None:
            return str(self.store_path)
        from offprompt.stores.postgres import redact_dsn

        return redact_dsn(self.store_url)

    def check_home(self) -> None:
        if self.home.exists() and not self.home.is_dir():
            raise CLIError(f"home {self.home} is not a directory")

    @contextlib.contextmanager
    def store(self, *, create: bool) -> Iterator[Any]:
        """The SQLite store at ``HOME/memory.db``; ``None`` if absent and not ``create``.

        With ``--store URL``, the PostgreSQL store there (never ``None``).
        """
        self.check_home()
        if self.store_url is not None:
            try:
                from offprompt.stores import PostgresStore
            except ImportError as exc:
                raise CLIError(str(exc)) from None
            with PostgresStore(self.store_url) as server:
                yield server
            return
        if not create and not self.store_path.exists():
            yield None
            return
        store = SQLiteStore(self.store_path)
        try:
            yield store
        finally:
            store.close()

    @contextlib.contextmanager
    def task_memory(self) -> Iterator[Any]:
        """The task memory at ``HOME/qdrant``; ``None`` if nothing was ever stored there."""
        self.check_home()
        if not self.task_memory_path.exists():
            yield None
            return
        memory = TaskMemory(path=self.task_memory_path)
        try:
            yield memory
        finally:
            memory.close()  # release the embedded Qdrant files for the next process


def default_home() -> Path:
    home = os.environ.get("OFFPROMPT_HOME")
    return Path(home) if home else Path.cwd() / ".offprompt"


#: Largest input file ``import`` and ``migrate`` read, in MiB (``--max-input-mb``).
DEFAULT_MAX_INPUT_MB = 256


def read_input(path: Path, *, max_mb: int = DEFAULT_MAX_INPUT_MB) -> str:
    """The text of an input file, or a one-line error naming what is wrong with it.

    Only regular files are read (a device such as ``/dev/zero``, a FIFO or a directory
    would never end or never start), and at most ``max_mb`` MiB of them: the file is
    read through one descriptor that is checked first, so what is read is what was
    checked.

    Raises:
        UsageError: ``path`` is not a regular file, or is larger than ``max_mb`` MiB.
    """
    import stat

    limit = max_mb * 1024 * 1024
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise NotFoundError(f"input file {path} does not exist", path=str(path)) from None
    except OSError as exc:
        if path.is_dir():
            raise UsageError(f"input {path} is a directory, not a file") from None
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"input {path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"input {path} is not a regular file (a device, pipe or socket)")
        if info.st_size > limit:
            raise UsageError(
                f"input {path} is {info.st_size / 2**20:.1f} MiB, over the {max_mb} MiB limit "
                "(raise it with --max-input-mb)"
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # the file grew after the check
        raise UsageError(f"input {path} grew over the {max_mb} MiB limit while being read")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"{path} is not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})"
        ) from None


def check_input(path: Path, *, max_mb: int = DEFAULT_MAX_INPUT_MB) -> None:
    """For a format read from its file (not as text): ``path`` is a regular file of at
    most ``max_mb`` MiB, or a one-line error says what it is.

    Raises:
        NotFoundError: ``path`` does not exist.
        UsageError: ``path`` is not a regular file, or is larger than ``max_mb`` MiB.
    """
    import stat

    try:
        info = path.stat()
    except FileNotFoundError:
        raise NotFoundError(f"input file {path} does not exist", path=str(path)) from None
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"input {path} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"input {path} is not a regular file (a device, pipe or socket)")
    if info.st_size > max_mb * 1024 * 1024:
        raise UsageError(
            f"input {path} is {info.st_size / 2**20:.1f} MiB, over the {max_mb} MiB limit "
            "(raise it with --max-input-mb)"
        )


def check_output(path: Path) -> None:
    """``path`` can be written: not a directory, in a directory that exists."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise CLIError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise CLIError(f"cannot write {path}: directory {parent} {what}")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory.

    Readers see the old file or the new one, never a partial file; on any error the
    temporary file is removed and ``path`` is left as it was.
    """
    check_output(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as exc:
        Path(tmp_name).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (multi-line messages joined with ``; ``)."""
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, KeyError) and not isinstance(exc, OffpromptError):
        text = f"not found: {text}"
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())
