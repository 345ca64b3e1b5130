"""One page count everywhere (issue 42, item 5): the card, read_memory's header, the
refusal of a page too far and the CLI state the same number, an estimate marked "about"
until the pages are cut, then the exact count, the same in each."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import RangeError
from offprompt.task_memory import TaskMemory
from offprompt.task_memory.tools import memory_tool_specs

LOG = Path(__file__).parent / "fixtures" / "loghub" / "BGL_2k.log.gz"


def _log_text() -> str:
    # 2,000 real log lines (Loghub's BGL sample), ~315 KB: above the size whose pages
    # the card cuts at once.
    return gzip.decompress(LOG.read_bytes()).decode("utf-8")


@pytest.mark.parametrize("index", ["sync", "background"])
def test_the_card_the_tools_and_a_refusal_state_one_page_count(tmp_path: Path, index: str) -> None:
    text = _log_text()
    assert len(text.encode()) > 256 * 1024
    with TaskMemory(path=tmp_path / "m", index=index) as memory:
        card = memory.process_output("logs", "call", TextArtifact(text, name="log")).value
        counted = re.search(r"(~)?(\d[\d,]*) pages of", card)
        estimated, stated = bool(counted[1]), int(counted[2].replace(",", ""))
        assert estimated == (index == "background"), card  # sync: indexed, so exact
        tools = {spec.name: spec for spec in memory_tool_specs(memory)}
        header = tools["read_memory"].call(artifact_namespace="log").text.splitlines()[0]
        about = re.search(r"Page 1 of (about )?([\d,]+)", header)
        if about[1]:  # still an estimate: the card's, word for word
            assert int(about[2].replace(",", "")) == stated, (card, header)
        with pytest.raises(RangeError) as refused:
            memory.read("log", 100_000)
        final = int(re.search(r"between 1 and (\d+)", str(refused.value))[1])
        # Every page is cut now: the exact count, the same in read, the tool and stats.
        assert "about" not in str(refused.value)
        assert memory.read("log", final).meta["pages"] == final
        assert "pages_estimated" not in memory.read("log", 1).meta
        header = tools["read_memory"].call(artifact_namespace="log", page=2).text.splitlines()[0]
        assert header.startswith(f"Page 2 of {final} (lines ")
        assert memory.wait_indexed("log", timeout=60)
        assert memory.stats("log").pages == final
        if estimated:
            assert abs(stated - final) <= max(2, final // 10)  # the estimate was close
        else:
            assert stated == final
        joined = "".join(memory.read("log", p).value for p in range(1, final + 1))
        assert joined == text
