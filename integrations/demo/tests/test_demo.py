"""``offprompt demo`` end to end: the real command in a subprocess, then its stores.

The demo runs the real LangChain agent and middleware, the embedded Qdrant task memory,
the SQLite store and the LlamaIndex adapter; only the two chat models are scripted (and
they read the real messages they get: a missing reference, query result or history
changes their answers, which these tests would see).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from offprompt_demo import data as demo_data
from rich.console import Console

from offprompt.cli import main as cli_main
from offprompt.errors import ValidationError

CLI = [sys.executable, "-m", "offprompt.cli"]
REFERENCE = re.compile(
    r'Output of "fetch_server_log\.call" was stored in memory with memory_name "TaskMemory" '
    r'and artifact_namespace "(?P<ns>fetch_server_log-[0-9A-Za-z_.-]+)"\.'
)


def _env(**extra: str) -> dict[str, str]:
    drop = ("OFFPROMPT_HOME", "OFFPROMPT_DEBUG", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(COLUMNS="200", NO_COLOR="1", PYTHONIOENCODING="utf-8", **extra)
    return env


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli_main(list(args))
    return code, capsys.readouterr().out


def test_demo_runs_offline_and_leaves_data_the_cli_sees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from offprompt_demo.demo import SESSION, run

    from offprompt.stores import SQLiteStore
    from offprompt.task_memory import TaskMemory

    home = tmp_path / "home dir ☃"
    process = subprocess.run(
        [*CLI, "--home", str(home), "demo"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=180,
    )
    assert process.returncode == 0, process.stderr
    out = process.stdout

    # What a newcomer reads, step by step.
    assert "scripted" in out and "no network, no API key" in out
    assert "returned 4.0 MB" in out
    document = demo_data.server_log()
    assert f"{len(document.encode()):,} bytes" in out
    reference = REFERENCE.search(out)
    assert reference is not None, out
    namespace = reference["ns"]
    kept = re.search(r"Tokens kept out of the prompt: ([\d,]+) \(([\d,]+) -> (\d+), ", out)
    assert kept is not None
    total, ref_tokens = int(kept[2].replace(",", "")), int(kept[3])
    # The sentence then the card (issue 13): at most 300 tokens, whatever the log's size.
    assert total > 1_000_000 and 40 < ref_tokens <= 300
    assert "[stored output] kind: text | 4,000,016 bytes" in out
    assert int(kept[1].replace(",", "")) == total - ref_tokens
    assert demo_data.ROOT_CAUSE in out  # the line query_memory found, shown in full
    assert (
        "assistant: Checkout failed because the connection pool on db-primary-7 was exhausted"
        in out
    )
    assert "Roll back release v4.18.2." in out
    assert f"Session {SESSION} in {home.resolve() / 'memory.db'}: 6 messages" in out
    assert "reads the 6 messages LangChain wrote" in out
    assert "roll back release v4.18.2, and watch db-primary-7" in out
    assert "the session now has 8 messages" in out
    for hint in (
        f"offprompt --home {home.resolve()} inspect",
        f"offprompt --home {home.resolve()} show {SESSION} --html demo.html",
        f"offprompt --home {home.resolve()} query {namespace} 'rollback requested'",
    ):
        assert hint in out
    assert "Replaced the previous demo run" not in out
    assert process.stderr == ""

    # The stores: the session holds the reference, not the log; the log is in Qdrant.
    store = SQLiteStore(home / "memory.db")
    try:
        stored = store.read(SESSION)
        assert [s.message.role for s in stored] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
        assert max(len(s.message.text) for s in stored) < 20_000
        assert REFERENCE.match(stored[2].message.text)
    finally:
        store.close()
    memory = TaskMemory(path=home / "qdrant")
    try:
        assert memory.namespaces() == [namespace]
        loaded = memory.load_artifacts(namespace).value
        assert "".join(a.value for a in loaded) == document  # byte-identical
    finally:
        memory.vector_store.close()

    # The CLI sees what the demo left.
    code, text = _cli(capsys, "--home", str(home), "inspect", "--json")
    data = json.loads(text)
    assert code == 0
    assert [(s["session"], s["messages"]) for s in data["sessions"]] == [(SESSION, 8)]
    assert [(n["namespace"], n["tool"]) for n in data["namespaces"]] == [
        (namespace, "fetch_server_log")
    ]
    code, text = _cli(
        capsys, "--home", str(home), "query", namespace, "rollback requested", "--top", "2"
    )
    assert code == 0 and "rollback of release v4.18.2 to v4.18.1 requested" in text

    # A second run (in-process, a smaller log) replaces the first; with OPENAI_API_KEY
    # set it says it stays scripted and touches no network.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    buffer = io.StringIO()
    result = run(home, console=Console(file=buffer, width=200), size_bytes=300_000)
    printed = buffer.getvalue()
    assert "OPENAI_API_KEY is set; the demo still uses the scripted models" in printed
    assert result.replaced == 8 and "(8 messages) and the log it stored were deleted" in printed
    assert result.namespace != namespace
    assert result.messages_saved == 6 and result.messages_after == 8
    assert "v4.18.2" in result.follow_up_answer
    memory = TaskMemory(path=home / "qdrant")
    try:
        assert memory.namespaces() == [result.namespace]  # the first run's log is gone
    finally:
        memory.vector_store.close()


def test_demo_without_adapters_prints_the_install_hint(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # A None entry in sys.modules makes that import fail, as if it were not installed.
    code = (
        "import sys; sys.modules['offprompt_llamaindex'] = None\n"
        "from offprompt.cli import main\n"
        f"sys.exit(main(['--home', {str(home)!r}, 'demo']))\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert process.returncode == 1
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "pip install 'offprompt-langchain[agents]' offprompt-llamaindex" in lines[0]
    assert "offprompt_llamaindex is not importable" in lines[0]
    assert process.stdout == "" and not home.exists()


def test_demo_refuses_a_home_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OFFPROMPT_HOME", raising=False)
    home = tmp_path / "not-a-dir"
    home.write_text("keep me", encoding="utf-8")
    assert cli_main(["--home", str(home), "demo"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"offprompt: error: home {home.resolve()} is not a directory"
    ]
    assert home.read_text(encoding="utf-8") == "keep me"


def test_follow_up_model_answers_only_from_history_it_was_given() -> None:
    from llama_index.core.llms import ChatMessage

    # private-ok: the demo model's reply rule is the subject
    from offprompt_demo.demo import FOLLOW_UP, _follow_up_reply

    question = ChatMessage(role="user", content=FOLLOW_UP)
    assert _follow_up_reply([question]).startswith("I don't know")
    earlier = ChatMessage(
        role="assistant",
        content="the connection pool on db-x-1 was exhausted after release v9.1.0 was deployed",
    )
    assert _follow_up_reply([earlier, question]) == (
        "From earlier in this session: roll back release v9.1.0, and watch db-x-1, whose "
        "connection pool ran dry."
    )


def test_server_log_is_deterministic_and_holds_each_fact_once() -> None:
    log = demo_data.server_log(200_000)
    assert log == demo_data.server_log(200_000)
    assert log != demo_data.server_log(200_000, seed=1)
    assert 200_000 <= len(log.encode()) < 200_300 and log.isascii()
    for fact in demo_data.FACTS.values():
        assert log.count(fact) == 1
    stamps = [line[:24] for line in log.splitlines()]
    assert stamps == sorted(stamps) and stamps[-1] > "2026-03-14T06"
    with pytest.raises(ValidationError, match="at least 10000"):
        demo_data.server_log(9_999)
