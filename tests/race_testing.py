"""Rounds for the race and fault tests of issue 41.

``make test`` runs each race a few rounds; the stress run repeats them many times
(CONTRIBUTING.md, "Stress runs")::

    OFFPROMPT_STRESS_ROUNDS=50 .venv/bin/python -m pytest -m race -p no:randomly
"""

from __future__ import annotations

import os


def rounds(default: int) -> int:
    """How many rounds a race test runs: ``default``, or ``$OFFPROMPT_STRESS_ROUNDS``."""
    raw = os.environ.get("OFFPROMPT_STRESS_ROUNDS", "")
    return int(raw) if raw.strip() else default
