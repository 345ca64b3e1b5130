"""What every test directory shares: the throwaway PostgreSQL cluster
(tests/postgres_testing.py) and the markers of tests that need more than Python.

Markers (registered in pyproject.toml):

* ``postgres``: the PostgreSQL server binaries (``initdb``, ``pg_ctl``). Added here to
  every test that uses the ``postgres_cluster`` / ``postgres_dsn`` fixtures or runs
  with a ``"postgres"`` parameter (the stores' contract fixtures).
* ``browser``: Debian's ``chromium``.
* ``netns``: network namespaces (root and iproute2's ``ip``).
* ``slow``: longer-running fault-injection tests (``-m "not slow"`` leaves them out).

A test whose binaries are missing is skipped, saying what to install, when you are not
root (``make test`` could not install them for you). As root it runs and fails loudly:
``.ci/run`` runs as root and installs everything, so there a missing binary is a broken
setup, not a reason to skip. Network namespaces need root anyway, so ``netns`` tests
skip for any user on a machine that cannot make them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import pytest

pytest_plugins = ["postgres_testing"]

_POSTGRES_FIXTURES = {"postgres_cluster", "postgres_dsn"}


@functools.cache
def _no_postgres() -> str | None:
    from postgres_testing import pg_bin

    binaries = pg_bin()
    if binaries is not None and (binaries / "initdb").exists():
        return None
    return (
        "the PostgreSQL server binaries are not installed: run 'apt-get install postgresql' "
        "as root (make test does it when run as root), or set OFFPROMPT_PG_BIN"
    )


@functools.cache
def _no_browser() -> str | None:
    from browser_testing import find_chromium

    if find_chromium() is not None:
        return None
    return (
        "chromium is not installed: run 'apt-get install chromium' as root "
        "(make test does it when run as root)"
    )


@functools.cache
def _no_netns() -> str | None:
    from netns_testing import netns_unavailable

    why = netns_unavailable()
    return None if why is None else f"no network namespaces: {why}"


# marker: (why its requirement is missing or None, whether root runs it regardless)
_REQUIREMENTS: dict[str, tuple[Callable[[], str | None], bool]] = {
    "postgres": (_no_postgres, True),
    "browser": (_no_browser, True),
    "netns": (_no_netns, False),
}


def _uses_postgres(item: pytest.Item) -> bool:
    if _POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == "postgres" for value in params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the PostgreSQL tests; skip the tests whose binaries are missing (not root)."""
    root = os.geteuid() == 0
    for item in items:
        if _uses_postgres(item) and item.get_closest_marker("postgres") is None:
            item.add_marker(pytest.mark.postgres)
        for marker, (why_not, root_runs) in _REQUIREMENTS.items():
            if item.get_closest_marker(marker) is None or (root and root_runs):
                continue
            reason = why_not()
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
