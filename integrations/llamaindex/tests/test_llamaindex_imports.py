from __future__ import annotations

import offprompt_llamaindex


def test_package_imports() -> None:
    assert isinstance(offprompt_llamaindex.__all__, list)
