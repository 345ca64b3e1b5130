"""Shared set-up for the Strands adapter tests.

Only the model is faked: :class:`strands_testing.ScriptedModel` is a real Strands
``Model`` subclass that answers from a script and records what it was sent.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The tests share helpers in strands_testing.py beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))
