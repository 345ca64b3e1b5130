"""``python -m offprompt_demo``: the same as ``offprompt demo``."""

import sys

from offprompt.cli import main

sys.exit(main(["demo", *sys.argv[1:]]))
