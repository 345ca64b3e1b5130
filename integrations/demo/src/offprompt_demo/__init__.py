"""``offprompt demo``: the guided offline tour, in a distribution of its own.

It depends on both adapters, so it cannot live in the core (which imports no framework);
the ``offprompt`` command finds it through the ``offprompt.demo`` entry point.
"""

from offprompt_demo.demo import SESSION, TOOL, DemoResult, main, run

__all__ = ["SESSION", "TOOL", "DemoResult", "main", "run"]
