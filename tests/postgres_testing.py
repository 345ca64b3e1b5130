"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` in a temp dir.

PostgreSQL refuses to run as root (``initdb`` and ``postgres`` both exit), and the tests
run as root here. So when the process is root, the cluster runs as the unprivileged
system user :data:`PG_USER` (created with ``useradd --system`` the first time) through
``runuser``, and its directory is ``chown``-ed to that user; as any other user it runs
as that user directly. The binaries come from ``$OFFPROMPT_PG_BIN`` or the newest
``/usr/lib/postgresql/<version>/bin`` (Debian's ``postgresql`` package, which
``make test`` installs when it is missing and the user is root).

The cluster listens on a unix socket in its directory (what the tests use: pytest runs
with ``--disable-socket --allow-unix-socket``, and libpq's sockets are not Python's
anyway) and on TCP at ``listen_addresses`` (127.0.0.1 by default; the multi-host tests
pass the addresses of their network namespaces). Local socket connections are
trusted; TCP connections need the password :data:`PASSWORD` (scram-sha-256), so the
error tests can check it never appears in a message. ``fsync`` is off: the data
survives a killed server process (the OS keeps the pages), not a power cut.

Fixtures (registered by the repository's top ``conftest.py``):

* ``postgres_cluster``: one cluster per test session (per xdist worker), stopped at
  the end.
* ``postgres_dsn``: a fresh database per test (``CREATE DATABASE``), dropped after it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = [
    "PASSWORD",
    "PG_USER",
    "Cluster",
    "ClusterError",
    "pg_bin",
    "start_cluster",
]

PG_USER = "offprompt-pg"
SUPERUSER = "postgres"
PASSWORD = "offprompt-test-secret"
_names = itertools.count()


class ClusterError(RuntimeError):
    """The throwaway cluster could not be made, started or stopped (the log is attached)."""


def pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or ``None`` when not installed."""
    override = os.environ.get("OFFPROMPT_PG_BIN")
    if override:
        return Path(override)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _as_root() -> bool:
    return os.geteuid() == 0


def _ensure_user() -> None:
    """Create the unprivileged system user the cluster runs as (root only, once)."""
    import pwd

    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            check=True,
            capture_output=True,
        )


def _run_as_owner(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = ["runuser", "-u", PG_USER, "--", *argv] if _as_root() else list(argv)
    return subprocess.run(command, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def _chown(path: Path) -> None:
    if _as_root():
        shutil.chown(path, PG_USER, PG_USER)


@dataclass
class Cluster:
    """A running throwaway PostgreSQL cluster.

    Attributes:
        dir: Its directory (``data/``, the socket, ``server.log``).
        port: The TCP port (also names the unix socket ``.s.PGSQL.<port>``).
        listen_addresses: The TCP addresses it listens on (comma-separated).
        bin: The PostgreSQL binaries used.
    """

    dir: Path
    port: int
    listen_addresses: str
    bin: Path
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.dir

    @property
    def log(self) -> Path:
        return self.dir / "server.log"

    @property
    def dsn(self) -> str:
        """The superuser's dsn over the unix socket, database ``postgres`` (trusted)."""
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        """The unix-socket dsn of database ``dbname``."""
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={dbname}"

    def tcp_dsn(self, host: str = "127.0.0.1", dbname: str = "postgres") -> str:
        """A TCP dsn (with :data:`PASSWORD`) of database ``dbname`` at ``host``."""
        return f"postgresql://{SUPERUSER}:{PASSWORD}@{host}:{self.port}/{dbname}"

    def _pg_ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return _run_as_owner(
            [str(self.bin / "pg_ctl"), "-D", str(self.data), *args], timeout=timeout
        )

    def _options(self) -> str:
        settings = {
            "listen_addresses": f"'{self.listen_addresses}'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "fsync": "off",
            "max_connections": "200",
            **self.settings,
        }
        return " ".join(f"-c {k}={v}" for k, v in settings.items())

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        done = self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log), "-o", self._options())
        if done.returncode != 0:
            raise ClusterError(
                f"pg_ctl start failed ({done.returncode}): {done.stderr or done.stdout}\n"
                f"{self.log_tail()}"
            )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: ``smart``, ``fast`` or ``immediate``, a crash)."""
        done = self._pg_ctl("stop", "-w", "-m", mode)
        if done.returncode != 0 and self.running:
            raise ClusterError(f"pg_ctl stop failed: {done.stderr or done.stdout}")

    def restart(self, mode: str = "fast") -> None:
        """Stop and start again on the same port and addresses (``mode`` as in :meth:`stop`)."""
        self.stop(mode)
        self.start()

    @property
    def running(self) -> bool:
        return self._pg_ctl("status").returncode == 0

    def execute(self, sql: str, dbname: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser over the unix socket (autocommit); its rows."""
        import psycopg

        with psycopg.connect(self.dsn_for(dbname), autocommit=True) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (from ``template0``); return its name."""
        name = name or f"t{os.getpid()}_{next(_names)}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def create_schema(self, dbname: str = "postgres") -> str:
        """A new empty schema in ``dbname``; return a dsn whose ``search_path`` is it.

        Much cheaper than a database per test (``CREATE DATABASE`` copies a template).
        """
        name = f"s{os.getpid()}_{next(_names)}"
        self.execute(f'CREATE SCHEMA "{name}"', dbname)
        return f"{self.dsn_for(dbname)} options=-csearch_path={name}"

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def destroy(self) -> None:
        """Stop the server (immediately) and delete its directory."""
        with contextlib.suppress(ClusterError, subprocess.TimeoutExpired):
            if self.running:
                self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


def start_cluster(
    dir: Path | str | None = None,
    *,
    listen_addresses: str = "127.0.0.1",
    port: int | None = None,
    settings: dict[str, str] | None = None,
) -> Cluster:
    """``initdb`` a new cluster in ``dir`` (a new temp dir when ``None``) and start it.

    Args:
        dir: An empty or missing directory; it is made accessible to the cluster's user.
        listen_addresses: TCP addresses to listen on, comma-separated (``""``: socket only).
        port: The port; ``None`` tries random free ports until one binds.
        settings: Extra server settings (``-c name=value``).

    Raises:
        ClusterError: PostgreSQL is not installed, or the cluster would not start.
    """
    binaries = pg_bin()
    if binaries is None or not (binaries / "initdb").exists():
        raise ClusterError(
            "PostgreSQL is not installed: run 'apt-get install postgresql' "
            "(make test does it when run as root), or set OFFPROMPT_PG_BIN"
        )
    if _as_root():
        _ensure_user()
    # Not under pytest's tmp_path: that is 0700 root, which the cluster's user cannot enter.
    base = Path(dir) if dir is not None else Path(tempfile.mkdtemp(prefix="offprompt-pg-"))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    _chown(base)
    pwfile = base / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    _chown(pwfile)
    done = _run_as_owner(
        [
            str(binaries / "initdb"),
            "-D",
            str(base / "data"),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ],
        timeout=120,
    )
    pwfile.unlink()
    if done.returncode != 0:
        raise ClusterError(f"initdb failed: {done.stderr or done.stdout}")
    with (base / "data" / "pg_hba.conf").open("a") as hba:
        # any address: the multi-host tests connect from their namespaces' subnets
        hba.write("host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n")
    attempts = [port] if port is not None else random.sample(range(20_000, 60_000), 8)
    last: ClusterError | None = None
    for candidate in attempts:
        assert candidate is not None
        cluster = Cluster(base, candidate, listen_addresses, binaries, dict(settings or {}))
        try:
            cluster.start()
            return cluster
        except ClusterError as exc:  # port taken: try another
            last = exc
            time.sleep(0.1)
    shutil.rmtree(base, ignore_errors=True)
    raise ClusterError(f"the cluster would not start on any of ports {attempts}: {last}")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway cluster for this test session (this xdist worker).

    Skipped when the server binaries are missing and the process is not root (nobody
    could install them); as root (``.ci/run``) a cluster that cannot start fails.
    """
    binaries = pg_bin()
    if (binaries is None or not (binaries / "initdb").exists()) and not _as_root():
        pytest.skip(
            "the PostgreSQL server binaries are not installed: run 'apt-get install "
            "postgresql' as root, or set OFFPROMPT_PG_BIN"
        )
    try:
        cluster = start_cluster()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def postgres_dsn(postgres_cluster: Cluster) -> Iterator[str]:
    """The unix-socket dsn of a new, empty schema (its ``search_path``), dropped after."""
    dsn = postgres_cluster.create_schema()
    try:
        yield dsn
    finally:
        schema = dsn.rsplit("search_path=", 1)[1]
        postgres_cluster.execute(f'DROP SCHEMA "{schema}" CASCADE')
