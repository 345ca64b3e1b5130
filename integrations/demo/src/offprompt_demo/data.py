"""The document of ``offprompt demo``: a multi-megabyte server log, made deterministically.

:func:`server_log` writes one night of a checkout service's log (about 4 MB by default)
from a fixed seed, so every run and every machine sees the same bytes. A handful of
lines in it are the facts an on-call engineer would look for; they are listed in
:data:`FACTS` so the demo (and its tests) can check that the agent found them. Nothing
is downloaded and nothing is shipped as a data file.
"""

from __future__ import annotations

import random

from offprompt.errors import ValidationError

__all__ = ["DB_HOST", "FACTS", "INCIDENT", "RELEASE", "ROOT_CAUSE", "server_log"]

RELEASE = "v4.18.2"
"""The release whose deploy caused the incident."""

DB_HOST = "db-primary-7"
"""The database host whose connection pool ran dry."""

INCIDENT = "INC-20731"
"""The incident ticket opened for the outage."""

ROOT_CAUSE = (
    f"CRIT  checkout-api[pod-3c9e] connection pool exhausted on {DB_HOST} (512/512 in use) "
    f"since deploy of release {RELEASE}; orders failing with HTTP 503"
)
"""The one line that explains the outage (after its timestamp)."""

FACTS: dict[float, str] = {
    0.52: ROOT_CAUSE,
    0.53: f"ALERT pager[oncall] {INCIDENT} opened: checkout error rate 38% (threshold 2%)",
    0.71: f"INFO  deployer[ci-42] rollback of release {RELEASE} to v4.18.1 requested by oncall",
}
"""Where (as a fraction of the log) each distinctive line is placed, and its text."""

_DAY = "2026-03-14"
_ROUTES = ("/cart", "/cart/items", "/checkout", "/checkout/confirm", "/orders", "/health")
_SERVICES = ("checkout-api", "cart-svc", "inventory", "pricing", "session-store")
_METHODS = ("GET", "GET", "GET", "POST", "PUT", "DELETE")
_NOTES = (
    "cache hit ratio {p}%",
    "gc pause {n}ms",
    "queue depth {n}",
    "slow request {n}ms",
    "feature flag new-tax-engine evaluated for tenant t-{n}",
)


def _stamp(ms: int) -> str:
    seconds, milli = divmod(ms, 1000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{_DAY}T{hours:02d}:{minute:02d}:{sec:02d}.{milli:03d}Z"


def _line(rng: random.Random, stamp: str) -> str:
    service = rng.choice(_SERVICES)
    pod = f"pod-{rng.getrandbits(16):04x}"
    roll = rng.random()
    if roll < 0.82:
        status = rng.choice((200, 200, 200, 201, 204, 304, 404))
        return (
            f"{stamp} INFO  {service}[{pod}] {rng.choice(_METHODS)} "
            f"{rng.choice(_ROUTES)}/{rng.randrange(10_000, 99_999)} {status} "
            f"{rng.randrange(2, 180)}ms user=u-{rng.randrange(10_000, 99_999)} "
            f"trace={rng.getrandbits(64):016x}\n"
        )
    if roll < 0.97:
        note = rng.choice(_NOTES).format(p=rng.randrange(60, 99), n=rng.randrange(1, 900))
        return f"{stamp} DEBUG {service}[{pod}] {note}\n"
    return (
        f"{stamp} WARN  {service}[{pod}] upstream {rng.choice(_SERVICES)} answered in "
        f"{rng.randrange(300, 2000)}ms (retry {rng.randrange(1, 3)} of 3)\n"
    )


def server_log(size_bytes: int = 4_000_000, *, seed: int = 20260314) -> str:
    """One night of a checkout service's log, about ``size_bytes`` bytes long.

    The same ``size_bytes`` and ``seed`` always give the same text. The lines of
    :data:`FACTS` appear once each, at their fraction of the log.

    Args:
        size_bytes: Approximate size of the log in UTF-8 bytes (at least 10,000).
        seed: Seed of the generator.

    Returns:
        The log, newline-terminated lines, ASCII only.

    Example:
        >>> log = server_log(20_000)
        >>> ROOT_CAUSE in log and log == server_log(20_000)
        True
    """
    if size_bytes < 10_000:
        raise ValidationError(f"size_bytes must be at least 10000, got {size_bytes}")
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    pending = sorted(FACTS.items())
    # Spread the lines over about eight hours, whatever the size (~110 bytes a line).
    step = max(2, 2 * 8 * 3_600_000 * 110 // size_bytes)
    ms = 0
    while size < size_bytes:
        ms += rng.randrange(1, step)
        stamp = _stamp(ms)
        if pending and size >= pending[0][0] * size_bytes:
            line = f"{stamp} {pending.pop(0)[1]}\n"
        else:
            line = _line(rng, stamp)
        parts.append(line)
        size += len(line)
    return "".join(parts)
