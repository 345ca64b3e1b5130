"""``python -m offprompt.cli``: the same as the ``offprompt`` console script."""

import sys

from offprompt.cli import main

sys.exit(main())
