from __future__ import annotations

import offprompt_langchain


def test_package_imports() -> None:
    assert isinstance(offprompt_langchain.__all__, list)
